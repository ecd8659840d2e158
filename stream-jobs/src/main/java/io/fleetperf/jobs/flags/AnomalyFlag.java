package io.fleetperf.jobs.flags;

/** One row of schemas/anomaly_flag.avsc: a flagged final window and the incident it belongs to. */
public class AnomalyFlag {
  public String entityId;
  public String entityName;
  public String metric;
  public String rule;

  /** "rule" or "baseline". */
  public String kind;

  public long windowStart;
  public long windowEnd;
  public double observed;
  public Double threshold;
  public Double baseline;
  public String severity;
  public String explanation;
  public String incidentId;
  public long incidentStart;

  /** Set on the incident's last window once the metric is back to normal. */
  public Long incidentEnd;

  public double incidentPeak;
  public int incidentWindows;
  public long emittedAt;

  public AnomalyFlag() {}

  AnomalyFlag copy() {
    AnomalyFlag f = new AnomalyFlag();
    f.entityId = entityId;
    f.entityName = entityName;
    f.metric = metric;
    f.rule = rule;
    f.kind = kind;
    f.windowStart = windowStart;
    f.windowEnd = windowEnd;
    f.observed = observed;
    f.threshold = threshold;
    f.baseline = baseline;
    f.severity = severity;
    f.explanation = explanation;
    f.incidentId = incidentId;
    f.incidentStart = incidentStart;
    f.incidentEnd = incidentEnd;
    f.incidentPeak = incidentPeak;
    f.incidentWindows = incidentWindows;
    f.emittedAt = emittedAt;
    return f;
  }

  @Override
  public String toString() {
    return entityId
        + " "
        + rule
        + " ["
        + windowStart
        + "] "
        + observed
        + " incident "
        + incidentId
        + (incidentEnd == null ? " open" : " closed");
  }
}
