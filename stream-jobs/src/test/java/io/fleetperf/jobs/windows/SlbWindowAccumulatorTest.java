package io.fleetperf.jobs.windows;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.samples.HpmSample;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Golden cases of DOMAIN.md: seed 000 hpmstat before (L8292-8332) and after (L8352-8392) LSA. */
class SlbWindowAccumulatorTest {
  private static final HpmSample BEFORE =
      new HpmSample("h", 0, 160.115119955, 72329260L, 15710L, 20894033L, 5584383071L, 66322682987L);
  private static final HpmSample AFTER =
      new HpmSample("h", 0, 160.005281724, 25347L, 15090L, 189529L, 2371507258L, 66319381743L);

  private static Map<String, Double> metrics(HpmSample... samples) {
    SlbWindowAccumulator acc = new SlbWindowAccumulator();
    for (HpmSample s : samples) {
      acc.add(s);
    }
    return acc.metrics(0, 60_000, true, 1).stream()
        .collect(Collectors.toMap(m -> m.metric, m -> m.value));
  }

  private static double round3(double v) {
    return Math.round(v * 1000) / 1000.0;
  }

  @Test
  void beforeLsa() {
    Map<String, Double> m = metrics(BEFORE);
    assertEquals(1.295, round3(m.get("dslb_miss_rate")));
    assertEquals(0.374, round3(m.get("ierat_miss_rate")));
    assertEquals(11.876, round3(m.get("cpi")));
    assertEquals(34.877, round3(m.get("mips")));
    assertEquals(
        100.0 * 72344970 / 5584383071L, m.get("slb_miss_rate"), 1e-12); // PM_SLB_MISS = DSLB + ISLB
    assertTrue(m.get("slb_miss_rate") > 0.5);
  }

  @Test
  void afterLsa() {
    Map<String, Double> m = metrics(AFTER);
    assertEquals(0.001, round3(m.get("dslb_miss_rate")));
    assertEquals(0.008, round3(m.get("ierat_miss_rate")));
    assertEquals(0.001, round3(m.get("islb_miss_rate")));
    assertEquals(27.965, round3(m.get("cpi")));
    assertEquals(14.821, round3(m.get("mips")));
    assertTrue(m.get("slb_miss_rate") < 0.5);
  }

  @Test
  void aWindowIsARatioOfSumsNotAMeanOfRatios() {
    Map<String, Double> m = metrics(BEFORE, AFTER);
    double expected = 100.0 * (72329260L + 25347L) / (5584383071L + 2371507258L);
    assertEquals(expected, m.get("dslb_miss_rate"), 1e-12);
    assertEquals((1.295 + 0.001) / 2, 0.648, 1e-9); // what a mean of ratios would wrongly give
    assertTrue(Math.abs(m.get("dslb_miss_rate") - 0.648) > 0.1);
  }

  @Test
  void aReportWithoutACounterYieldsNoMetricForIt() {
    HpmSample partial = new HpmSample("h", 0, 10.0, null, 5L, null, 1000L, null);
    Map<String, Double> m = metrics(partial);
    assertEquals(Map.of("islb_miss_rate", 0.5, "mips", 1000 / 10.0 / 1e6), m);
  }
}
