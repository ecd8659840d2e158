package io.fleetperf.jobs.windows;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.samples.ZvmCpuSample;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Golden cases of DOMAIN.md: FCX112 (004 L899-926, 60 s) and FCX162 (004 L3892-3907). */
class TvWindowAccumulatorTest {
  private static Map<String, Double> metrics(ZvmCpuSample... samples) {
    TvWindowAccumulator acc = new TvWindowAccumulator(0.01);
    for (ZvmCpuSample s : samples) {
      acc.add(s);
    }
    return acc.metrics(0, 60_000, true, 1).stream()
        .collect(Collectors.toMap(m -> m.metric, m -> m.value));
  }

  private static ZvmCpuSample guest(double tcpu, double vcpu) {
    return new ZvmCpuSample("VMLINUX7/G", 60_000, 60, tcpu, vcpu);
  }

  private static double round2(double v) {
    return Math.round(v * 100) / 100.0;
  }

  @Test
  void fcx112Guests() {
    assertEquals(1.01, round2(metrics(guest(.823, .818)).get("tv_ratio"))); // LNKDB2
    assertEquals(1.09, round2(metrics(guest(.012, .011)).get("tv_ratio"))); // LNKIHS
    assertEquals(
        100.0 * (.823 - .818) / .823, metrics(guest(.823, .818)).get("cp_overhead_pct"), 1e-12);
  }

  @Test
  void rscsIsGuarded() {
    // .002 / .001 prints as 2.00 but one thousandth of a second says nothing about CP overhead
    Map<String, Double> m = metrics(guest(.002, .001));
    assertFalse(m.containsKey("tv_ratio"));
    assertFalse(m.containsKey("cp_overhead_pct"));
  }

  @Test
  void ratioOfSumsNotMeanOfRatios() {
    Map<String, Double> m = metrics(guest(5.279, 4.352), guest(.002, .001));
    assertEquals((5.279 + .002) / (4.352 + .001), m.get("tv_ratio"), 1e-12);
    assertEquals(1.21, round2(metrics(guest(5.279, 4.352)).get("tv_ratio"))); // FCX162 G73VM1
  }

  @Test
  void unreadableTimesGiveNoRatio() {
    assertFalse(
        metrics(guest(.823, .818), new ZvmCpuSample("g", 0, 60, null, null))
            .containsKey("tv_ratio"));
  }

  @Test
  void systemMeansAreIntervalWeighted() {
    ZvmCpuSample a = new ZvmCpuSample("ZVM1", 0, 300, 5445.0, 4995.4);
    a.busyPct = 49.5;
    a.pagingXstoreRate = 14.6;
    ZvmCpuSample b = new ZvmCpuSample("ZVM1", 0, 100, 1000.0, 900.0);
    b.busyPct = 60.0;
    Map<String, Double> m = metrics(a, b);
    assertEquals((49.5 * 300 + 60.0 * 100) / 400, m.get("busy_pct"), 1e-12);
    assertEquals(14.6, m.get("paging_xstore_rate"), 1e-12); // only a carries it
    assertEquals(6445.0 / 5895.4, m.get("tv_ratio"), 1e-12);
    assertTrue(m.get("tv_ratio") < 1.30);
  }
}
