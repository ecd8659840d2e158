package io.fleetperf.jobs.windows;

/** One row of schemas/derived_metric.avsc (a Flink POJO). */
public class DerivedMetric {
  public String entityId;
  public String entityName;
  public String metric;
  public long windowStart;
  public long windowEnd;
  public double value;
  public int samples;
  public boolean isFinal;
  public long emittedAt;

  public DerivedMetric() {}

  public DerivedMetric(
      String entityId,
      String entityName,
      String metric,
      long windowStart,
      long windowEnd,
      double value,
      int samples,
      boolean isFinal,
      long emittedAt) {
    this.entityId = entityId;
    this.entityName = entityName;
    this.metric = metric;
    this.windowStart = windowStart;
    this.windowEnd = windowEnd;
    this.value = value;
    this.samples = samples;
    this.isFinal = isFinal;
    this.emittedAt = emittedAt;
  }

  @Override
  public String toString() {
    return entityId
        + " "
        + metric
        + " ["
        + windowStart
        + ","
        + windowEnd
        + ") = "
        + value
        + " n="
        + samples;
  }
}
