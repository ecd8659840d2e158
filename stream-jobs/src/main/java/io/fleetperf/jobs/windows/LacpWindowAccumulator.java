package io.fleetperf.jobs.windows;

import io.fleetperf.jobs.samples.PortDelta;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * LACP hash skew of one aggregation per direction (DOMAIN.md; seed 000 L5947, L6069-6177): each
 * port's share of the packets its aggregation moved in the window, recomputed from the members
 * (never from printed totals).
 *
 * <ul>
 *   <li>lacp_hash_skew_tx / _rx = max share × N ports (1.0 = perfectly even, N = all on one port)
 *   <li>lacp_cv_tx / _rx = coefficient of variation of the per-port packets
 *   <li>lacp_active_ports = ports that moved packets in either direction
 *   <li>lacp_ports_out_of_sync = member ports whose LACP state was not Aggregated / IN_SYNC at any
 *       sample of the window (seed 000 L12817: anything else is a failure); only when reported
 * </ul>
 */
public class LacpWindowAccumulator implements WindowAccumulator<PortDelta> {
  public String entityId;
  public String entityName;
  public int samples;
  public Map<String, Long> tx = new HashMap<>();
  public Map<String, Long> rx = new HashMap<>();
  public Map<String, Boolean> inSync = new HashMap<>();

  @Override
  public void add(PortDelta d) {
    entityId = d.hostId + "|" + d.aggregation;
    entityName = d.hostname + "/" + d.aggregation;
    samples++;
    tx.merge(d.adapter, d.tx, Long::sum);
    rx.merge(d.adapter, d.rx, Long::sum);
    if (d.inSync != null) {
      inSync.merge(d.adapter, d.inSync, Boolean::logicalAnd);
    }
  }

  @Override
  public List<DerivedMetric> metrics(long start, long end, boolean isFinal, long emittedAt) {
    List<DerivedMetric> out = new ArrayList<>(5);
    direction(
        out, tx, Metrics.LACP_HASH_SKEW_TX, Metrics.LACP_CV_TX, start, end, isFinal, emittedAt);
    direction(
        out, rx, Metrics.LACP_HASH_SKEW_RX, Metrics.LACP_CV_RX, start, end, isFinal, emittedAt);
    if (!out.isEmpty()) {
      long active =
          tx.keySet().stream().filter(p -> tx.get(p) + rx.getOrDefault(p, 0L) > 0).count();
      out.add(metric(Metrics.LACP_ACTIVE_PORTS, active, start, end, isFinal, emittedAt));
    }
    if (!inSync.isEmpty()) {
      long bad = inSync.values().stream().filter(ok -> !ok).count();
      out.add(metric(Metrics.LACP_PORTS_OUT_OF_SYNC, bad, start, end, isFinal, emittedAt));
    }
    return out;
  }

  private void direction(
      List<DerivedMetric> out,
      Map<String, Long> perPort,
      String skewName,
      String cvName,
      long start,
      long end,
      boolean isFinal,
      long emittedAt) {
    double[] skew = skew(perPort);
    if (skew != null) {
      out.add(metric(skewName, skew[0], start, end, isFinal, emittedAt));
      out.add(metric(cvName, skew[1], start, end, isFinal, emittedAt));
    }
  }

  /** {max share × N, coefficient of variation}, or null when the direction moved nothing. */
  static double[] skew(Map<String, Long> perPort) {
    long total = perPort.values().stream().mapToLong(Long::longValue).sum();
    int n = perPort.size();
    if (n == 0 || total == 0) {
      return null;
    }
    double mean = (double) total / n;
    double var = perPort.values().stream().mapToDouble(c -> (c - mean) * (c - mean)).sum() / n;
    long max = perPort.values().stream().mapToLong(Long::longValue).max().orElse(0);
    return new double[] {(double) max / total * n, Math.sqrt(var) / mean};
  }

  private DerivedMetric metric(
      String name, double value, long start, long end, boolean isFinal, long emittedAt) {
    return new DerivedMetric(
        entityId, entityName, name, start, end, value, samples, isFinal, emittedAt);
  }
}
