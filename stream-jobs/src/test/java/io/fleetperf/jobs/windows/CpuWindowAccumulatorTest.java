package io.fleetperf.jobs.windows;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.samples.CpuSample;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class CpuWindowAccumulatorTest {
  private static Map<String, Double> values(CpuWindowAccumulator acc) {
    return acc.metrics(0, 60_000, true, 1).stream()
        .collect(Collectors.toMap(m -> m.metric, m -> m.value));
  }

  @Test
  void entitlementConsumedMatchesTheSeedsGoldenCases() {
    // 000 L15301-15321: physc 5.10 at ent 2.00 -> entc 255 %
    assertEquals(
        255.0,
        values(new CpuWindowAccumulator().with(new CpuSample("h", "h", 0, 60, null, 5.10, 2.00)))
            .get("entc_pct"),
        1e-9);
    // 002 Table 11: physc 2.00 at ent 1.00 -> %entc 200
    assertEquals(
        200.0,
        values(new CpuWindowAccumulator().with(new CpuSample("h", "h", 0, 60, null, 2.00, 1.00)))
            .get("entc_pct"),
        1e-9);
  }

  @Test
  void ratiosAreRatiosOfTimeWeightedSumsNotMeansOfRatios() {
    CpuWindowAccumulator acc =
        new CpuWindowAccumulator()
            .with(new CpuSample("h", "h", 0, 10, 30.0, 1.0, 0.5))
            .with(new CpuSample("h", "h", 10_000, 50, 0.0, 0.2, 2.0));
    Map<String, Double> v = values(acc);
    assertEquals((30.0 * 10 + 0.0 * 50) / 60, v.get("steal_pct"), 1e-12);
    assertEquals((1.0 * 10 + 0.2 * 50) / 60, v.get("physc"), 1e-12);
    // mean of per-sample ratios would be (200 + 10) / 2 = 105
    assertEquals(100.0 * (1.0 * 10 + 0.2 * 50) / (0.5 * 10 + 2.0 * 50), v.get("entc_pct"), 1e-12);
  }

  @Test
  void vpsNeededIsTheRoundedUpPeakAndPoolUseNeedsPoolAuthority() {
    // nmon corpus LPAR T0001/T0002: physc 1.257 and 1.429 of a 16-processor pool
    CpuWindowAccumulator acc =
        new CpuWindowAccumulator()
            .with(new CpuSample("h", "h", 0, 30, null, 1.257, 1.30).withPool(16.0, 10.0))
            .with(new CpuSample("h", "h", 30_000, 30, null, 1.429, 1.30).withPool(16.0, 6.0));
    Map<String, Double> v = values(acc);
    assertEquals(2.0, v.get("vps_needed"), 0); // roundup(1.429) + vpm_xvcpus 0 (000 L7364)
    assertEquals(8.0, v.get("pool_used"), 1e-12); // (6 x 30 + 10 x 30) / 60
    assertEquals(50.0, v.get("pool_used_pct"), 1e-12);
    assertEquals(
        3.0,
        values(new CpuWindowAccumulator().with(new CpuSample("h", "h", 0, 60, null, 2.01, 1.0)))
            .get("vps_needed"),
        0);
    // PoolIdle 0: no pool utilization authority (the corpus file) -> no pool figures invented
    Map<String, Double> blind =
        values(
            new CpuWindowAccumulator()
                .with(new CpuSample("h", "h", 0, 60, null, 1.257, 1.30).withPool(16.0, 0.0)));
    assertTrue(!blind.containsKey("pool_used") && blind.containsKey("vps_needed"));
    // merging keeps the peak and the pool sums
    assertEquals(
        v,
        values(
            new CpuWindowAccumulator()
                .with(new CpuSample("h", "h", 0, 30, null, 1.257, 1.30).withPool(16.0, 10.0))
                .merge(
                    new CpuWindowAccumulator()
                        .with(
                            new CpuSample("h", "h", 30_000, 30, null, 1.429, 1.30)
                                .withPool(16.0, 6.0)))));
  }

  @Test
  void metricsWithoutInputAreNotInvented() {
    CpuWindowAccumulator linux =
        new CpuWindowAccumulator().with(new CpuSample("h", "h", 0, 60, 4.0, null, null));
    assertEquals(
        List.of("steal_pct"),
        linux.metrics(0, 60_000, true, 1).stream().map(m -> m.metric).toList());
    CpuWindowAccumulator oldNmon =
        new CpuWindowAccumulator().with(new CpuSample("h", "h", 0, 60, null, null, null));
    assertTrue(oldNmon.metrics(0, 60_000, true, 1).isEmpty());
  }

  @Test
  void mergeEqualsAddingEverythingToOne() {
    CpuSample a = new CpuSample("h", "h", 0, 10, 1.0, 0.5, 1.0);
    CpuSample b = new CpuSample("h", "h", 10_000, 20, 3.0, 1.5, 1.0);
    Map<String, Double> merged =
        values(new CpuWindowAccumulator().with(a).merge(new CpuWindowAccumulator().with(b)));
    assertEquals(values(new CpuWindowAccumulator().with(a).with(b)), merged);
  }
}
