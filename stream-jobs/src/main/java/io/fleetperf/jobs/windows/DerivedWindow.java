package io.fleetperf.jobs.windows;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One record of schemas/derived_window.avsc (a Flink POJO): every metric one window of one entity
 * yielded. The job writes one Kafka record per window instead of one per metric: on a fleet's
 * backlog a third of its CPU was writing those per-metric records (docs/warehouse.md, session 21).
 * The metrics keep their own entity and window fields, so the flags read them unchanged; the
 * window's shared fields are its first metric's.
 */
public class DerivedWindow {
  public DerivedMetric[] metrics;

  public DerivedWindow() {}

  public DerivedWindow(DerivedMetric[] metrics) {
    this.metrics = metrics;
  }

  /**
   * An accumulator's metrics of one window as window records: one per run of metrics of the same
   * entity (every accumulator gives one entity per window today; a run per entity keeps a record's
   * shared fields true for all its metrics if one ever gives more). Empty for no metrics.
   */
  public static List<DerivedWindow> of(List<DerivedMetric> metrics) {
    List<DerivedWindow> out = new ArrayList<>(1);
    int start = 0;
    for (int i = 1; i <= metrics.size(); i++) {
      if (i == metrics.size() || !sameWindow(metrics.get(start), metrics.get(i))) {
        out.add(new DerivedWindow(metrics.subList(start, i).toArray(new DerivedMetric[0])));
        start = i;
      }
    }
    return out;
  }

  private static boolean sameWindow(DerivedMetric a, DerivedMetric b) {
    return Objects.equals(a.entityId, b.entityId)
        && Objects.equals(a.entityName, b.entityName)
        && a.windowStart == b.windowStart
        && a.windowEnd == b.windowEnd
        && a.isFinal == b.isFinal
        && a.emittedAt == b.emittedAt;
  }

  /** The shared fields' source. */
  public DerivedMetric first() {
    return metrics[0];
  }

  @Override
  public String toString() {
    return java.util.Arrays.toString(metrics);
  }
}
