package io.fleetperf.jobs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.fleetperf.jobs.wire.Schemas;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.util.Utf8;
import org.junit.jupiter.api.Test;

/**
 * CpuSample.fromAvro reads each field by its position in the record's own schema: every field it
 * maps is set to a distinct value here, so a misspelt name (read as null) fails.
 */
class CpuSampleTest {
  private static GenericRecord record(Schema schema, double physc) {
    GenericRecord r = Records.withDefaults(schema);
    r.put("host_id", new Utf8("00F6-1"));
    r.put("hostname", "lpar1");
    r.put("ts", 1_700_000_000_000L);
    r.put("interval_s", 60.0);
    r.put("physc", physc);
    r.put("origin_file", "a.nmon");
    if (schema.getField("pool_cpus") != null) {
      r.put("steal_pct", 0.75);
      r.put("entitled", 2.0);
      r.put("pool_cpus", 16.0);
      r.put("pool_idle", 4.5);
      r.put("idle_pct", 12.5);
      r.put("cpus", 8);
    }
    return r;
  }

  @Test
  void readsTheShippedSchemaAndAnOlderOneWithoutThePoolFields() {
    Schema shipped = Schemas.load("cpu_sample.avsc");
    SchemaBuilder.FieldAssembler<Schema> older =
        SchemaBuilder.record("CpuSample").namespace("io.fleetperf.v1").fields();
    // an older writer's fields in another order, without the pool and utilisation ones
    for (String name :
        new String[] {"origin_file", "ts", "host_id", "hostname", "interval_s", "physc"}) {
      older = older.name(name).type(shipped.getField(name).schema()).noDefault();
    }
    Schema old = older.endRecord();
    // alternate the two schemas so that the cached positions are replaced each time
    for (int i = 0; i < 4; i++) {
      CpuSample a = CpuSample.fromAvro(record(shipped, 1.25 + i));
      assertEquals("00F6-1", a.hostId);
      assertEquals("lpar1", a.hostname);
      assertEquals(1_700_000_000_000L, a.ts);
      assertEquals(60.0, a.intervalS);
      assertEquals(1.25 + i, a.physc);
      assertEquals(0.75, a.stealPct);
      assertEquals(2.0, a.entitled);
      assertEquals("a.nmon", a.stream);
      assertEquals(16.0, a.poolCpus);
      assertEquals(4.5, a.poolIdle);
      assertEquals(12.5, a.idlePct);
      assertEquals(8, a.cpus);
      CpuSample b = CpuSample.fromAvro(record(old, 2.5 + i));
      assertEquals("00F6-1", b.hostId);
      assertEquals("a.nmon", b.stream);
      assertEquals(2.5 + i, b.physc);
      assertEquals(1_700_000_000_000L, b.ts);
      assertNull(b.poolCpus);
      assertNull(b.poolIdle);
      assertNull(b.idlePct);
      assertNull(b.cpus);
      assertNull(b.stealPct);
    }
  }
}
