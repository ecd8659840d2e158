package io.fleetperf.jobs.flags;

import io.fleetperf.jobs.windows.DerivedMetric;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Rule and baseline flags of one entity's metric, window by window (final windows only, in order).
 * Consecutive breaking windows merge into one incident: it opens once a rule has held for its
 * minimum number of windows (all those windows are flagged), grows while it holds, and closes at
 * the first normal window (the incident's last row is re-emitted with its end). More than {@code
 * maxGapWindows} windows without data also end a streak: sustained means seen sustained. Pure
 * logic; {@link FlagFunction} keeps the state in Flink.
 */
public final class FlagDetector implements java.io.Serializable {
  public static final String BASELINE = "baseline";

  /** Everything kept per entity and metric. */
  public static class State {
    public double[] history = new double[0];

    /**
     * history[0..count) in ascending order, kept up to date window by window (one removal and one
     * insertion) instead of sorting a copy every window: that sort was a third of the job's Java
     * samples on a simulated fleet's backfill (JFR, bench/backfill.py --dir). Null in state written
     * before it existed, or after baseline.history_windows changed: rebuilt from history then.
     */
    public double[] sorted;

    public int count;
    public int next;
    public long lastWindowStart = Long.MIN_VALUE;
    public long lastWindowEnd = Long.MIN_VALUE;
    public HashMap<String, Run> runs = new HashMap<>();
  }

  /** One rule's streak and open incident. */
  public static class Run {
    public List<AnomalyFlag> pending = new ArrayList<>();
    public boolean open;
    public String incidentId;
    public long start;
    public double peak;
    public int windows;
    public AnomalyFlag last;
  }

  private final List<FlagRule> rules;
  private final BaselineSettings baseline;
  private final int maxGapWindows;

  /**
   * The metrics a baseline or a rule reads, gathered once: watches() runs for every derived metric
   * the job emits (a fleet's backfill: ~620 k), and streamed over the rules there each time.
   */
  private final Set<String> watched = new HashSet<>();

  public FlagDetector(List<FlagRule> rules, BaselineSettings baseline, int maxGapWindows) {
    this.rules = rules;
    this.baseline = baseline;
    this.maxGapWindows = maxGapWindows;
    watched.addAll(baseline.metrics);
    for (FlagRule rule : rules) {
      watched.add(rule.metric);
    }
  }

  public boolean watches(String metric) {
    return watched.contains(metric);
  }

  public List<AnomalyFlag> evaluate(State s, DerivedMetric m, long now) {
    List<AnomalyFlag> out = new ArrayList<>();
    if (!m.isFinal || m.windowStart <= s.lastWindowStart) {
      return out; // early results are replaced later; a window seen twice (replay) counts once
    }
    long size = Math.max(1, m.windowEnd - m.windowStart);
    if (s.lastWindowEnd != Long.MIN_VALUE
        && m.windowStart - s.lastWindowEnd > maxGapWindows * size) {
      for (Run run : s.runs.values()) {
        close(run, out, now);
      }
    }
    s.lastWindowStart = m.windowStart;
    s.lastWindowEnd = m.windowEnd;
    for (FlagRule rule : rules) {
      if (!rule.metric.equals(m.metric)) {
        continue;
      }
      Run run = s.runs.computeIfAbsent(rule.name, k -> new Run());
      if (rule.breaks(m.value)) {
        int streak = (run.open ? run.windows : run.pending.size()) + 1;
        AnomalyFlag f =
            flag(
                m,
                rule.name,
                "rule",
                rule.threshold,
                null,
                rule.severity,
                String.format(
                    Locale.ROOT,
                    "%s %.4g %s %.4g for %d window(s): %s (%s)",
                    m.metric,
                    m.value,
                    rule.op,
                    rule.threshold,
                    streak,
                    rule.why,
                    rule.source),
                now);
        extend(run, f, rule.minWindows, rule.worse(run.open ? run.peak : m.value, m.value), out);
      } else {
        run.pending.clear();
        close(run, out, now);
      }
    }
    if (baseline.metrics.contains(m.metric)) {
      baselineStep(s, m, now, out);
    }
    return out;
  }

  private void baselineStep(State s, DerivedMetric m, long now, List<AnomalyFlag> out) {
    Run run = s.runs.computeIfAbsent(BASELINE, k -> new Run());
    if (s.count >= baseline.warmup) {
      double[] sorted = sortedHistory(s);
      double lo = quantile(sorted, baseline.lowQuantile);
      double hi = quantile(sorted, baseline.highQuantile);
      double median = quantile(sorted, 0.5);
      double margin =
          Math.max(
              (hi - lo) * baseline.widthFactor,
              Math.max(baseline.absMargin(m.metric), baseline.relMargin * Math.abs(median)));
      boolean above = m.value > hi + margin;
      if (above || m.value < lo - margin) {
        double edge = above ? hi + margin : lo - margin;
        AnomalyFlag f =
            flag(
                m,
                BASELINE,
                BASELINE,
                edge,
                median,
                baseline.severity,
                String.format(
                    Locale.ROOT,
                    "%s %.4g outside this entity's usual %.4g..%.4g (median %.4g of its last %d windows)",
                    m.metric,
                    m.value,
                    lo - margin,
                    hi + margin,
                    median,
                    s.count),
                now);
        double peak =
            run.open && Math.abs(run.peak - median) > Math.abs(m.value - median)
                ? run.peak
                : m.value;
        extend(run, f, baseline.minWindows, peak, out);
      } else {
        run.pending.clear();
        close(run, out, now);
      }
    }
    if (s.history.length != baseline.history) {
      resize(s, baseline.history);
    }
    double[] sorted = sortedHistory(s);
    s.sorted =
        s.count == baseline.history
            ? replace(sorted, s.history[s.next], m.value)
            : insert(sorted, m.value);
    s.history[s.next] = m.value;
    s.next = (s.next + 1) % baseline.history;
    s.count = Math.min(s.count + 1, baseline.history);
  }

  /**
   * The newest min(count, size) windows of the history, oldest first, in a ring of the new size
   * (baseline.history_windows changed between runs): a plain copy of the ring would count stale or
   * empty slots.
   */
  private static void resize(State s, int size) {
    int len = s.history.length;
    int keep = Math.min(s.count, size);
    double[] ring = new double[size];
    for (int k = 0; k < keep; k++) {
      // the newest value is at next - 1 (the ring is full or filled from 0)
      ring[keep - 1 - k] = s.history[Math.floorMod(s.next - 1 - k, Math.max(1, len))];
    }
    s.history = ring;
    s.count = keep;
    s.next = keep % size;
    s.sorted = null;
  }

  /** s.sorted, rebuilt from the history when it is missing or does not match the count. */
  private static double[] sortedHistory(State s) {
    if (s.sorted == null || s.sorted.length != s.count) {
      s.sorted = Arrays.copyOf(s.history, s.count);
      Arrays.sort(s.sorted);
    }
    return s.sorted;
  }

  /** A sorted array one longer, with v in its place. */
  static double[] insert(double[] sorted, double v) {
    int at = insertionPoint(sorted, sorted.length, v);
    double[] out = new double[sorted.length + 1];
    System.arraycopy(sorted, 0, out, 0, at);
    out[at] = v;
    System.arraycopy(sorted, at, out, at + 1, sorted.length - at);
    return out;
  }

  /**
   * The sorted array (changed in place) with one occurrence of old replaced by v, in its place;
   * null when old is not in it (it always is while sorted holds the history's values).
   */
  static double[] replace(double[] sorted, double old, double v) {
    int n = sorted.length;
    int i = Arrays.binarySearch(sorted, old);
    if (i < 0) {
      return null; // out of step with the history: sortedHistory rebuilds it
    }
    System.arraycopy(sorted, i + 1, sorted, i, n - 1 - i);
    int at = insertionPoint(sorted, n - 1, v);
    System.arraycopy(sorted, at, sorted, at + 1, n - 1 - at);
    sorted[at] = v;
    return sorted;
  }

  /** Where v goes in sorted[0..n), in the order Arrays.sort gives doubles (NaN last). */
  private static int insertionPoint(double[] sorted, int n, double v) {
    int at = Arrays.binarySearch(sorted, 0, n, v);
    return at >= 0 ? at : -at - 1;
  }

  private static double quantile(double[] sorted, double q) {
    double pos = q * (sorted.length - 1);
    int i = (int) Math.floor(pos);
    int j = Math.min(i + 1, sorted.length - 1);
    return sorted[i] + (sorted[j] - sorted[i]) * (pos - i);
  }

  private static void extend(
      Run run, AnomalyFlag f, int minWindows, double peak, List<AnomalyFlag> out) {
    if (run.open) {
      run.windows++;
      run.peak = peak;
      stamp(run, f);
      out.add(f);
      run.last = f;
      return;
    }
    run.pending.add(f);
    if (run.pending.size() < Math.max(1, minWindows)) {
      return;
    }
    run.open = true;
    run.start = run.pending.get(0).windowStart;
    run.incidentId = f.entityId + "|" + f.metric + "|" + f.rule + "|" + run.start;
    run.windows = run.pending.size();
    run.peak = peak;
    for (AnomalyFlag p : run.pending) {
      run.peak = worse(f, run.peak, p.observed);
      stamp(run, p);
      out.add(p);
    }
    run.last = run.pending.get(run.pending.size() - 1);
    run.pending = new ArrayList<>();
  }

  private static double worse(AnomalyFlag f, double a, double b) {
    if (f.baseline != null) {
      return Math.abs(a - f.baseline) >= Math.abs(b - f.baseline) ? a : b;
    }
    return f.observed >= f.threshold ? Math.max(a, b) : Math.min(a, b);
  }

  private static void stamp(Run run, AnomalyFlag f) {
    f.incidentId = run.incidentId;
    f.incidentStart = run.start;
    f.incidentPeak = run.peak;
    f.incidentWindows = run.windows;
  }

  private static void close(Run run, List<AnomalyFlag> out, long now) {
    run.pending.clear();
    if (!run.open) {
      return;
    }
    AnomalyFlag end = run.last.copy();
    stamp(run, end);
    end.incidentEnd = run.last.windowEnd;
    end.emittedAt = now;
    out.add(end);
    run.open = false;
    run.last = null;
  }

  private static AnomalyFlag flag(
      DerivedMetric m,
      String rule,
      String kind,
      double threshold,
      Double baseline,
      String severity,
      String explanation,
      long now) {
    AnomalyFlag f = new AnomalyFlag();
    f.entityId = m.entityId;
    f.entityName = m.entityName;
    f.metric = m.metric;
    f.rule = rule;
    f.kind = kind;
    f.windowStart = m.windowStart;
    f.windowEnd = m.windowEnd;
    f.observed = m.value;
    f.threshold = threshold;
    f.baseline = baseline;
    f.severity = severity;
    f.explanation = explanation;
    f.emittedAt = now;
    return f;
  }
}
