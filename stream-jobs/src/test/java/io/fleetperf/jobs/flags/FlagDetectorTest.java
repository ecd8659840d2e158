package io.fleetperf.jobs.flags;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
