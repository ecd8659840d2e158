package io.fleetperf.jobs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.fleetperf.jobs.wire.Schemas;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.util.Utf8;
import org.junit.jupiter.api.Test;

/**
 * The z/VM mappers read every field they map from records of the shipped schemas (each set to a
 * distinct value, so a misspelt name, read as null by position lookup, fails), twice in turn, so
 * that the positions cached for one schema are not used for the other.
 */
class ZvmCpuSampleTest {
  @Test
  void guestAndSystemRecordsAreReadFieldByField() {
    for (int i = 0; i < 2; i++) {
      GenericRecord g = Records.withDefaults(Schemas.load("zvm_guest_sample.avsc"));
      g.put("guest_id", new Utf8("ZVMA/LINUX01"));
      g.put("zvm_system", "ZVMA");
      g.put("ts", 1_700_000_000_000L + i);
      g.put("interval_s", 60.0);
      g.put("source", "perfkit");
      g.put("tcpu_s", 12.5);
      g.put("vcpu_s", 10.0);
      ZvmCpuSample a = ZvmCpuSample.fromGuestAvro(g);
      assertEquals("ZVMA/LINUX01", a.hostId);
      assertEquals("ZVMA/LINUX01", a.hostname);
      assertEquals(1_700_000_000_000L + i, a.ts);
      assertEquals(60.0, a.intervalS);
      assertEquals(12.5, a.totalS);
      assertEquals(10.0, a.virtualS);
      assertEquals("perfkit|ZVMA", a.stream);

      GenericRecord s = Records.withDefaults(Schemas.load("zvm_system_sample.avsc"));
      s.put("zvm_system", new Utf8("ZVMB"));
      s.put("ts", 1_700_000_060_000L + i);
      s.put("interval_s", 30.0);
      s.put("source", "monwrite");
      s.put("total_cpu_s", 50.0);
      s.put("virtual_cpu_s", 40.0);
      s.put("busy_pct", 81.0);
      s.put("online_cpus", 4.0);
      s.put("capture_ratio", 0.97);
      s.put("users_in_elist", 3.0);
      s.put("paging_xstore_rate", 1.5);
      s.put("paging_dasd_rate", 2.5);
      ZvmCpuSample b = ZvmCpuSample.fromSystemAvro(s);
      assertEquals("ZVMB", b.hostId);
      assertEquals(1_700_000_060_000L + i, b.ts);
      assertEquals(30.0, b.intervalS);
      assertEquals(50.0, b.totalS);
      assertEquals(40.0, b.virtualS);
      assertEquals("monwrite", b.stream);
      assertEquals(81.0, b.busyPct);
      assertEquals(4.0, b.onlineCpus);
      assertEquals(0.97, b.captureRatio);
      assertEquals(3.0, b.usersInElist);
      assertEquals(1.5, b.pagingXstoreRate);
      assertEquals(2.5, b.pagingDasdRate);
    }
  }
}
