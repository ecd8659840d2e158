package io.fleetperf.jobs.windows;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.fleetperf.jobs.samples.CpuSample;
import io.fleetperf.jobs.samples.ZvmCpuSample;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** busy_pct and cpu_cores against numbers worked out by hand (in the comments). */
class UtilisationWindowTest {
  private static Map<String, Double> values(List<DerivedMetric> metrics) {
    return metrics.stream().collect(Collectors.toMap(m -> m.metric, m -> m.value));
  }

  private static Map<String, Double> cpu(CpuSample... samples) {
    CpuWindowAccumulator acc = new CpuWindowAccumulator();
    for (CpuSample s : samples) {
      acc.add(s);
    }
    return values(acc.metrics(0, 60_000, true, 1));
  }

  private static Map<String, Double> zvm(ZvmCpuSample... samples) {
    TvWindowAccumulator acc = new TvWindowAccumulator(0.01);
    for (ZvmCpuSample s : samples) {
      acc.add(s);
    }
    return values(acc.metrics(0, 60_000, true, 1));
  }

  @Test
  void linuxWithoutSteal() {
    // 10 s at idle 80 % and 50 s at idle 40 % on 4 CPUs:
    // busy = (20×10 + 60×50) / 60 = 3200/60 = 53.333…; cores = (0.8×10 + 2.4×50) / 60 = 128/60 =
    // 2.1333…
    Map<String, Double> m =
        cpu(
            new CpuSample("centos", "centos", 0, 10, null, null, null).withIdle(80.0, 4),
            new CpuSample("centos", "centos", 10_000, 50, null, null, null).withIdle(40.0, 4));
    assertEquals(3200.0 / 60, m.get("busy_pct"), 1e-12);
    assertEquals(128.0 / 60, m.get("cpu_cores"), 1e-12);
    assertFalse(m.containsKey("steal_pct"));
    assertFalse(m.containsKey("physc"));
    assertEquals(2, m.size());
  }

  @Test
  void linuxWithSteal() {
    // idle 70 %, steal 10 %, 2 CPUs, 60 s: busy 30 % (steal counts as busy), cores 0.6, steal 10 %
    Map<String, Double> m =
        cpu(new CpuSample("kvm", "kvm", 0, 60, 10.0, null, null).withIdle(70.0, 2));
    assertEquals(30.0, m.get("busy_pct"), 1e-12);
    assertEquals(0.6, m.get("cpu_cores"), 1e-12);
    assertEquals(10.0, m.get("steal_pct"), 1e-12);
  }

  @Test
  void aixCoresArePhysc() {
    // 8 logical CPUs (SMT threads) at idle 50 % but physc 1.5: cores 1.5, not 50 % × 8 = 4
    Map<String, Double> m =
        cpu(new CpuSample("aix", "aix", 0, 60, null, 1.5, 2.0).withIdle(50.0, 8));
    assertEquals(50.0, m.get("busy_pct"), 1e-12);
    assertEquals(1.5, m.get("cpu_cores"), 1e-12);
    assertEquals(1.5, m.get("physc"), 1e-12);
    assertEquals(75.0, m.get("entc_pct"), 1e-12);
  }

  @Test
  void unreadableIdleGivesNoBusy() {
    Map<String, Double> m =
        cpu(
            new CpuSample("h", "h", 0, 60, null, null, null).withIdle(101.0, 4),
            new CpuSample("h", "h", 60_000, 60, null, null, null).withIdle(null, 4));
    assertFalse(m.containsKey("busy_pct"));
    assertFalse(m.containsKey("cpu_cores"));
  }

  @Test
  void zvmGuestCoresAreCpuSecondsPerSecond() {
    // 12 s of CPU in 60 s and 3 s in 30 s: 15 / 90 = 0.1666… cores; a guest has no busy %
    Map<String, Double> m =
        zvm(
            new ZvmCpuSample("VM1/LNX", 60_000, 60, 12.0, 11.0),
            new ZvmCpuSample("VM1/LNX", 90_000, 30, 3.0, 2.5));
    assertEquals(15.0 / 90, m.get("cpu_cores"), 1e-12);
    assertFalse(m.containsKey("busy_pct"));
  }

  @Test
  void zvmSystemCoresAreBusyTimesProcessors() {
    // busy 40 % of 6 online processors: 2.4 cores
    ZvmCpuSample s = new ZvmCpuSample("VM1", 60_000, 60, 144.0, 120.0);
    s.busyPct = 40.0;
    s.onlineCpus = 6.0;
    Map<String, Double> m = zvm(s);
    assertEquals(40.0, m.get("busy_pct"), 1e-12);
    assertEquals(2.4, m.get("cpu_cores"), 1e-12);
  }

  @Test
  void mergeAddsTheSums() {
    CpuWindowAccumulator a =
        new CpuWindowAccumulator()
            .with(new CpuSample("h", "h", 0, 10, null, null, null).withIdle(80.0, 4));
    CpuWindowAccumulator b =
        new CpuWindowAccumulator()
            .with(new CpuSample("h", "h", 10_000, 50, null, null, null).withIdle(40.0, 4));
    Map<String, Double> m = values(a.merge(b).metrics(0, 60_000, true, 1));
    assertEquals(3200.0 / 60, m.get("busy_pct"), 1e-12);
    assertEquals(128.0 / 60, m.get("cpu_cores"), 1e-12);
  }
}
