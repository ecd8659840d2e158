package io.fleetperf.jobs.windows;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.fleetperf.jobs.samples.CounterDeltas;
import io.fleetperf.jobs.samples.PortCounters;
import io.fleetperf.jobs.samples.PortDelta;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/** LACP hash skew: golden case of DOMAIN.md (000 L6069-6177) and counter deltas with resets. */
class LacpTest {
  @Test
  void hashDefaultTableSkewFromMemberCounters() {
    LacpWindowAccumulator acc = new LacpWindowAccumulator();
    Map<String, long[]> ports = new LinkedHashMap<>();
    ports.put("ent0", new long[] {811028335L, 1239805118L});
    ports.put("ent1", new long[] {1127872165L, 2184361773L});
    ports.put("ent4", new long[] {8604105240L, 2203568387L});
    ports.put("ent6", new long[] {19992956659L, 4671940746L});
    ports.forEach((port, c) -> acc.add(new PortDelta("vios", "vios", "ent8", port, 0, c[0], c[1])));
    Map<String, Double> m =
        acc.metrics(0, 60_000, true, 1).stream()
            .collect(Collectors.toMap(x -> x.metric, x -> x.value));
    // largest transmit share 65.47 % of 4 ports: 0.6547 x 4
    assertEquals(19992956659.0 / 30535962399.0 * 4, m.get("lacp_hash_skew_tx"), 1e-12);
    assertEquals(2.62, Math.round(m.get("lacp_hash_skew_tx") * 100) / 100.0);
    assertEquals(4671940746.0 / 10299676024.0 * 4, m.get("lacp_hash_skew_rx"), 1e-12);
    assertEquals(4.0, m.get("lacp_active_ports"));
    assertEquals("vios|ent8", acc.metrics(0, 1, true, 1).get(0).entityId);
  }

  @Test
  void portOutOfSyncIsCounted() {
    LacpWindowAccumulator acc = new LacpWindowAccumulator();
    PortDelta ok = new PortDelta("vios", "vios", "ent8", "ent0", 0, 10, 10);
    ok.inSync = true;
    PortDelta bad = new PortDelta("vios", "vios", "ent8", "ent1", 0, 0, 0);
    bad.inSync = PortCounters.inSync("IN_SYNC", "OUT_OF_SYNC", null);
    acc.add(ok);
    acc.add(bad);
    java.util.Map<String, Double> m = new java.util.HashMap<>();
    acc.metrics(0, 60_000, true, 1).forEach(x -> m.put(x.metric, x.value));
    org.junit.jupiter.api.Assertions.assertEquals(1.0, m.get("lacp_ports_out_of_sync"));
    org.junit.jupiter.api.Assertions.assertEquals(
        false, PortCounters.inSync(null, null, "Not Aggregated"));
    org.junit.jupiter.api.Assertions.assertNull(PortCounters.inSync(null, null, null));
  }

  @Test
  void evenTrafficIsOneAndSilenceIsNoMetric() {
    assertEquals(1.0, LacpWindowAccumulator.skew(Map.of("a", 5L, "b", 5L))[0], 1e-12);
    assertEquals(0.0, LacpWindowAccumulator.skew(Map.of("a", 5L, "b", 5L))[1], 1e-12);
    assertNull(LacpWindowAccumulator.skew(Map.of("a", 0L, "b", 0L)));
  }

  @Test
  void deltasBetweenSamplesWithResetAndReplay() throws Exception {
    KeyedOneInputStreamOperatorTestHarness<String, PortCounters, PortDelta> h =
        new KeyedOneInputStreamOperatorTestHarness<>(
            new KeyedProcessOperator<>(new CounterDeltas()), PortCounters::portKey, Types.STRING);
    h.open();
    h.processElement(new StreamRecord<>(new PortCounters("h", "ent8", "ent0", 1_000, 100L, 50L)));
    h.processElement(new StreamRecord<>(new PortCounters("h", "ent8", "ent0", 2_000, 180L, 70L)));
    h.processElement(
        new StreamRecord<>(new PortCounters("h", "ent8", "ent0", 2_000, 180L, 70L))); // replay
    h.processElement(
        new StreamRecord<>(new PortCounters("h", "ent8", "ent0", 3_000, 15L, 5L))); // reset
    h.processElement(
        new StreamRecord<>(new PortCounters("h", null, "ent8", 3_000, 999L, 999L))); // not a member
    List<long[]> deltas =
        h.extractOutputValues().stream().map(d -> new long[] {d.ts, d.tx, d.rx}).toList();
    assertEquals(2, deltas.size());
    assertEquals(
        List.of(2_000L, 80L, 20L), List.of(deltas.get(0)[0], deltas.get(0)[1], deltas.get(0)[2]));
    assertEquals(
        List.of(3_000L, 15L, 5L), List.of(deltas.get(1)[0], deltas.get(1)[1], deltas.get(1)[2]));
    h.close();
  }
}
