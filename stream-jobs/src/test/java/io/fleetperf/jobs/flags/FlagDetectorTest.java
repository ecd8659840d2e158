package io.fleetperf.jobs.flags;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.windows.DerivedMetric;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Golden cases of DOMAIN.md against the shipped rules (config/flag-rules.properties). */
class FlagDetectorTest {
  private static final Path REPO = Path.of(System.getProperty("user.dir")).getParent();

  private static FlagDetector shipped() throws IOException {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(REPO.resolve("config/flag-rules.properties"))) {
      p.load(r);
    }
    return new FlagDetector(FlagRule.fromProperties(p), BaselineSettings.fromProperties(p), 5);
  }

  private static List<AnomalyFlag> run(FlagDetector d, String metric, double... values) {
    FlagDetector.State s = new FlagDetector.State();
    List<AnomalyFlag> out = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      out.addAll(d.evaluate(s, window("e", metric, i, values[i]), 1000 + i));
    }
    return out;
  }

  private static DerivedMetric window(String entity, String metric, int minute, double value) {
    return new DerivedMetric(
        entity, entity, metric, minute * 60_000L, (minute + 1) * 60_000L, value, 1, true, 0);
  }

  private static Set<String> incidents(List<AnomalyFlag> flags, String rule) {
    Set<String> ids = new TreeSet<>();
    flags.stream().filter(f -> f.rule.equals(rule)).forEach(f -> ids.add(f.incidentId));
    return ids;
  }

  @Test
  void watchesTheMetricsOfItsRulesAndBaselinesOnly() {
    Properties p = new Properties();
    p.setProperty("rule.high.metric", "tv_ratio");
    p.setProperty("rule.high.op", ">");
    p.setProperty("rule.high.threshold", "1.3");
    p.setProperty("baseline.metrics", "busy_pct, steal_pct");
    FlagDetector d =
        new FlagDetector(FlagRule.fromProperties(p), BaselineSettings.fromProperties(p), 5);
    assertTrue(d.watches("tv_ratio"));
    assertTrue(d.watches("busy_pct"));
    assertTrue(d.watches("steal_pct"));
    assertFalse(d.watches("entc_pct"));
    assertFalse(d.watches("tv"));
  }

  @Test
  void fcx112GuestsGiveNoTvFlag() throws IOException {
    // LNKDB2 .823/.818 and LNKIHS .012/.011 every minute; RSCS .002/.001 has no tv_ratio at all
    // (guarded)
    assertTrue(run(shipped(), "tv_ratio", 1.0061, 1.0061, 1.0061, 1.0061).isEmpty());
    assertTrue(run(shipped(), "tv_ratio", 1.0909, 1.0909, 1.0909, 1.0909).isEmpty());
  }

  @Test
  void tvRisingAboveLimitIsOneIncident() throws IOException {
    List<AnomalyFlag> flags =
        run(shipped(), "tv_ratio", 1.10, 1.12, 1.35, 1.42, 1.51, 1.38, 1.33, 1.15, 1.12);
    assertEquals(1, incidents(flags, "tv_ratio_high").size());
    List<AnomalyFlag> windows = flags.stream().filter(f -> f.incidentEnd == null).toList();
    assertEquals(5, windows.size()); // minutes 2..6, the first three once the minimum was reached
    AnomalyFlag closing = flags.get(flags.size() - 1);
    assertEquals(7 * 60_000L, closing.incidentEnd);
    assertEquals(1.51, closing.incidentPeak);
    assertEquals(5, closing.incidentWindows);
    assertEquals(2 * 60_000L, closing.incidentStart);
    assertTrue(closing.explanation.contains("seed 004 L2481"), closing.explanation);
    // two windows above the limit are not sustained
    assertTrue(run(shipped(), "tv_ratio", 1.1, 1.4, 1.4, 1.1).isEmpty());
  }

  @Test
  void slbGoldenCases() throws IOException {
    assertEquals(1, incidents(run(shipped(), "slb_miss_rate", 1.2955), "slb_miss_high").size());
    assertTrue(run(shipped(), "slb_miss_rate", 0.0011).isEmpty());
  }

  /**
   * The Stolen column of the Toolkit's "Time TotCPU ... Stolen" panels, keyed by the 0-based index
   * of the panel's first row (seed 004_6a0ab28471d5b377.txt: L3476-3486, L3596-3608, L3643-3653,
   * L3682-3691, L3744-3753; Examples 7-6, 7-10, 7-12 FBA VDISK, 7-14 DIAGNOSE VDISK, 7-16).
   */
  private static final java.util.Map<Integer, double[]> STOLEN_PANELS =
      new java.util.LinkedHashMap<>();

  static {
    STOLEN_PANELS.put(3475, new double[] {0, 0.2, 0.2, 0.2, 0.2, 0.1, 0.2, 0.2, 0.1, 0.2, 0.2});
    STOLEN_PANELS.put(
        3595, new double[] {0, 0.2, 0.2, 0.2, 0.2, 0.2, 0.1, 0.2, 0.7, 0.2, 0.1, 0.2, 0.2});
    STOLEN_PANELS.put(
        3642, new double[] {5.2, 16.8, 16.5, 17.2, 16.8, 13.7, 14.2, 13.7, 14, 14.3, 14});
    STOLEN_PANELS.put(3681, new double[] {3.8, 11.9, 13.9, 14.3, 14.5, 12.9, 13.6, 14.2, 14, 14.1});
    STOLEN_PANELS.put(3743, new double[] {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
  }

  @Test
  void toolkitStealFlagsTheVdiskRunsOnly() throws IOException {
    List<Integer> flagged = new ArrayList<>();
    for (java.util.Map.Entry<Integer, double[]> panel : STOLEN_PANELS.entrySet()) {
      double[] values = panel.getValue();
      assertTrue(values.length >= 10, "panel at L" + panel.getKey());
      if (!incidents(run(shipped(), "steal_pct", values), "steal_high").isEmpty()) {
        flagged.add(panel.getKey());
      }
    }
    assertEquals(List.of(3642, 3681), flagged);
  }

  @Test
  void steadyBusyHostIsNotBaselineFlaggedButASuddenChangeIs() throws IOException {
    Random rnd = new Random(7);
    double[] steady = new double[400];
    for (int i = 0; i < steady.length; i++) {
      steady[i] = Math.min(99.5, 95 + rnd.nextGaussian());
    }
    assertTrue(run(shipped(), "busy_pct", steady).isEmpty());
    double[] change = java.util.Arrays.copyOf(steady, 420);
    for (int i = 400; i < 420; i++) {
      change[i] = 40 + rnd.nextGaussian();
    }
    List<AnomalyFlag> flags = run(shipped(), "busy_pct", change);
    assertEquals(1, incidents(flags, "baseline").size());
    AnomalyFlag first = flags.get(0);
    assertEquals(400 * 60_000L, first.incidentStart);
    assertNotNull(first.baseline);
    assertTrue(first.explanation.contains("usual"), first.explanation);
  }

  @Test
  void noBaselineFlagsDuringWarmup() throws IOException {
    double[] values = new double[40];
    for (int i = 0; i < values.length; i++) {
      values[i] = i < 30 ? 5 : 60;
    }
    assertTrue(run(shipped(), "busy_pct", values).isEmpty());
  }

  @Test
  void burstsTheEntityAlwaysHasAreItsNormal() throws IOException {
    // steal 24 % for 10 of every 30 minutes, 4.8 % otherwise (a busy neighbour on a schedule)
    double[] values = new double[600];
    for (int i = 0; i < values.length; i++) {
      values[i] = (i / 10) % 3 == 0 ? 24 : 4.8;
    }
    List<AnomalyFlag> flags = run(shipped(), "steal_pct", values);
    assertTrue(incidents(flags, "baseline").isEmpty());
    // the 10-minute bursts above 10 % are sustained steal by the rule, each its own incident
    assertEquals(20, incidents(flags, "steal_high").size());
  }

  @Test
  void replayedAndEarlyWindowsCountOnce() throws IOException {
    FlagDetector d = shipped();
    FlagDetector.State s = new FlagDetector.State();
    DerivedMetric early = window("e", "slb_miss_rate", 0, 2.0);
    early.isFinal = false;
    assertTrue(d.evaluate(s, early, 1).isEmpty());
    assertEquals(1, d.evaluate(s, window("e", "slb_miss_rate", 0, 2.0), 2).size());
    assertTrue(d.evaluate(s, window("e", "slb_miss_rate", 0, 2.0), 3).isEmpty());
  }

  /** The quantiles' input the way it was computed before the sorted copy: sort the history. */
  private static double[] sortedByHand(FlagDetector.State s) {
    double[] copy = java.util.Arrays.copyOf(s.history, s.count);
    java.util.Arrays.sort(copy);
    return copy;
  }

  private static double[] noisyWithTies(int n, long seed) {
    Random rnd = new Random(seed);
    double[] values = new double[n];
    for (int i = 0; i < n; i++) {
      // ties, a signed zero, NaN now and then, and a level change the band must follow
      double v = Math.round((i < n / 2 ? 20 : 60) + 3 * rnd.nextGaussian());
      values[i] = i % 97 == 5 ? Double.NaN : i % 89 == 3 ? -0.0 : v;
    }
    return values;
  }

  @Test
  void sortedHistoryStaysTheSortedHistory() throws IOException {
    FlagDetector d = shipped();
    FlagDetector.State s = new FlagDetector.State();
    double[] values = noisyWithTies(1000, 11);
    for (int i = 0; i < values.length; i++) {
      d.evaluate(s, window("e", "busy_pct", i, values[i]), i);
      assertTrue(java.util.Arrays.equals(sortedByHand(s), s.sorted), "after window " + i);
    }
    assertEquals(240, s.count);
  }

  @Test
  void stateWithoutTheSortedCopyGivesTheSameFlags() throws IOException {
    // a checkpoint written before the sorted copy existed restores with sorted == null
    FlagDetector d = shipped();
    double[] values = noisyWithTies(900, 5);
    FlagDetector.State kept = new FlagDetector.State();
    FlagDetector.State restored = new FlagDetector.State();
    List<AnomalyFlag> a = new ArrayList<>();
    List<AnomalyFlag> b = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      if (i % 250 == 249) {
        restored.sorted = null;
      }
      a.addAll(d.evaluate(kept, window("e", "busy_pct", i, values[i]), i));
      b.addAll(d.evaluate(restored, window("e", "busy_pct", i, values[i]), i));
    }
    assertTrue(incidents(a, "baseline").size() >= 1, "the level change is flagged");
    assertEquals(
        a.stream().map(f -> f.windowStart + f.rule + f.incidentEnd).toList(),
        b.stream().map(f -> f.windowStart + f.rule + f.incidentEnd).toList());
  }

  @Test
  void aSortedCopyOutOfStepIsRebuilt() throws IOException {
    FlagDetector d = shipped();
    FlagDetector.State s = new FlagDetector.State();
    for (int i = 0; i < 300; i++) {
      d.evaluate(s, window("e", "busy_pct", i, i % 7), i);
    }
    java.util.Arrays.fill(s.sorted, 1e9); // the value leaving the ring is not in it
    d.evaluate(s, window("e", "busy_pct", 300, 3), 300);
    d.evaluate(s, window("e", "busy_pct", 301, 3), 301);
    assertTrue(java.util.Arrays.equals(sortedByHand(s), s.sorted));
  }

  @Test
  void aChangedHistoryLengthKeepsTheNewestWindows() {
    Properties p = new Properties();
    p.setProperty("baseline.metrics", "busy_pct");
    p.setProperty("baseline.history_windows", "10");
    FlagDetector ten = new FlagDetector(List.of(), BaselineSettings.fromProperties(p), 5);
    p.setProperty("baseline.history_windows", "4");
    FlagDetector four = new FlagDetector(List.of(), BaselineSettings.fromProperties(p), 5);
    p.setProperty("baseline.history_windows", "6");
    FlagDetector six = new FlagDetector(List.of(), BaselineSettings.fromProperties(p), 5);
    FlagDetector.State s = new FlagDetector.State();
    for (int i = 0; i < 13; i++) {
      ten.evaluate(s, window("e", "busy_pct", i, i), i); // the ring has wrapped: 3..12
    }
    four.evaluate(s, window("e", "busy_pct", 13, 13), 13); // newest 4 of 3..12, then 13
    assertEquals(
        List.of(10.0, 11.0, 12.0, 13.0), java.util.Arrays.stream(s.sorted).boxed().toList());
    six.evaluate(s, window("e", "busy_pct", 14, 14), 14); // 4 kept, one added, room for 6
    assertEquals(5, s.count);
    assertEquals(
        List.of(10.0, 11.0, 12.0, 13.0, 14.0), java.util.Arrays.stream(s.sorted).boxed().toList());
    assertTrue(java.util.Arrays.equals(sortedByHand(s), s.sorted));
  }
}
