package io.fleetperf.jobs.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.windows.DerivedMetric;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Random;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.junit.jupiter.api.Test;

/**
 * The derived metrics' direct writer gives Avro's own bytes: every message is compared with the
 * Confluent header plus what Avro's GenericDatumWriter writes for the same record of
 * schemas/derived_metric.avsc (the oracle we did not write), on seeded random values: empty,
 * non-ASCII and long strings, extreme and special doubles, int and long limits.
 */
class DerivedMetricSerializerTest {
  private static final String[] TEXT = {
    "", "a", "lpar-ü-東京", "x".repeat(300), "host|with|pipes", "\u0000nul", "😀 astral"
  };

  private static final double[] DOUBLES = {
    0.0,
    -0.0,
    1.5,
    -1e300,
    Double.MIN_VALUE,
    Double.MAX_VALUE,
    Double.NaN,
    Double.POSITIVE_INFINITY,
    Double.NEGATIVE_INFINITY
  };

  static DerivedMetric random(Random rnd) {
    DerivedMetric m = new DerivedMetric();
    m.entityId = TEXT[rnd.nextInt(TEXT.length)];
    m.entityName = TEXT[rnd.nextInt(TEXT.length)];
    m.metric = TEXT[rnd.nextInt(TEXT.length)];
    m.windowStart = rnd.nextBoolean() ? rnd.nextLong() : rnd.nextInt(1 << 20);
    m.windowEnd = rnd.nextBoolean() ? Long.MIN_VALUE : Long.MAX_VALUE - rnd.nextInt(3);
    m.value = rnd.nextBoolean() ? DOUBLES[rnd.nextInt(DOUBLES.length)] : rnd.nextGaussian();
    m.samples = rnd.nextBoolean() ? rnd.nextInt() : rnd.nextInt(100) - 50;
    m.isFinal = rnd.nextBoolean();
    m.emittedAt = rnd.nextLong();
    return m;
  }

  private static byte[] avrosOwn(Schema schema, int id, DerivedMetric m) throws IOException {
    GenericRecord r = new GenericData.Record(schema);
    DerivedMetricSerializer.fill(m, r);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ConfluentWire.header(id));
    BinaryEncoder e = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(schema).write(r, e);
    e.flush();
    return out.toByteArray();
  }

  @Test
  void directBytesAreAvrosOwnOnTheShippedSchema() throws IOException {
    Schema schema = Schemas.load("derived_metric.avsc");
    DerivedMetricSerializer s = new DerivedMetricSerializer("unused", "unused", "unused");
    s.prepare(schema, 4242);
    assertTrue(s.writesDirectly(), "the shipped schema's fields are the direct writer's");
    Random rnd = new Random(20261130L);
    for (int i = 0; i < 5000; i++) {
      DerivedMetric m = random(rnd);
      assertArrayEquals(avrosOwn(schema, 4242, m), s.serialize(m), m.toString());
    }
  }

  @Test
  void aSchemaWithOtherFieldsIsWrittenByTheGenericWriter() throws IOException {
    // the same schema with a field added at the end and one with two fields swapped: the direct
    // writer does not fit either, and the bytes are still the generic writer's
    Schema shipped = Schemas.load("derived_metric.avsc");
    String json = shipped.toString();
    Schema added =
        new Schema.Parser()
            .parse(
                json.substring(0, json.lastIndexOf(']'))
                    + ",{\"name\":\"extra\",\"type\":[\"null\",\"int\"],\"default\":null}]}");
    Schema swapped =
        new Schema.Parser()
            .parse(
                json.replace("\"name\":\"metric\"", "\"name\":\"metric_tmp\"")
                    .replace("\"name\":\"entity_name\"", "\"name\":\"metric\"")
                    .replace("\"name\":\"metric_tmp\"", "\"name\":\"entity_name\""));
    for (Schema schema : new Schema[] {added, swapped}) {
      DerivedMetricSerializer s = new DerivedMetricSerializer("unused", "unused", "unused");
      s.prepare(schema, 7);
      assertFalse(s.writesDirectly(), schema.toString());
      Random rnd = new Random(7L);
      for (int i = 0; i < 200; i++) {
        DerivedMetric m = random(rnd);
        assertArrayEquals(avrosOwn(schema, 7, m), s.serialize(m));
      }
    }
  }
}
