package io.fleetperf.jobs;

import java.util.ArrayList;
import java.util.List;

/**
 * Sums of one host's CPU samples in one window. Ratios over a window are ratios of these sums
 * (time-weighted by each sample's interval), never means of per-sample ratios.
 */
public class CpuWindowAccumulator implements WindowAccumulator<CpuSample> {
  public String hostId;
  public String hostname;
  public int samples;
  /** Σ interval and Σ steal% × interval over samples that report steal. */
  public double stealSeconds;
  public double stealWeighted;
  /** Σ interval, Σ physc × interval and Σ entitled × interval over samples that report both. */
  public double lparSeconds;
  public double physcWeighted;
  public double entitledWeighted;

  @Override
  public void add(CpuSample s) {
    with(s);
  }

  /** add() that returns this, for building accumulators in tests. */
  public CpuWindowAccumulator with(CpuSample s) {
    hostId = s.hostId;
    hostname = s.hostname;
    samples++;
    double dt = s.intervalS > 0 ? s.intervalS : 1.0;
    if (s.stealPct != null) {
      stealSeconds += dt;
      stealWeighted += s.stealPct * dt;
    }
    if (s.physc != null && s.entitled != null) {
      lparSeconds += dt;
      physcWeighted += s.physc * dt;
      entitledWeighted += s.entitled * dt;
    }
    return this;
  }

  public CpuWindowAccumulator merge(CpuWindowAccumulator o) {
    if (hostname == null) {
      hostId = o.hostId;
      hostname = o.hostname;
    }
    samples += o.samples;
    stealSeconds += o.stealSeconds;
    stealWeighted += o.stealWeighted;
    lparSeconds += o.lparSeconds;
    physcWeighted += o.physcWeighted;
    entitledWeighted += o.entitledWeighted;
    return this;
  }

  /**
   * steal_pct: % of CPU time stolen by the hypervisor; entc_pct: physc / entitled × 100 (AIX ec);
   * physc: physical processors consumed, time-weighted mean.
   */
  @Override
  public List<DerivedMetric> metrics(long windowStart, long windowEnd, boolean isFinal, long emittedAt) {
    List<DerivedMetric> out = new ArrayList<>(3);
    if (stealSeconds > 0) {
      out.add(metric("steal_pct", stealWeighted / stealSeconds, windowStart, windowEnd, isFinal, emittedAt));
    }
    if (lparSeconds > 0) {
      out.add(metric("physc", physcWeighted / lparSeconds, windowStart, windowEnd, isFinal, emittedAt));
      if (entitledWeighted > 0) {
        out.add(
            metric("entc_pct", 100.0 * physcWeighted / entitledWeighted, windowStart, windowEnd, isFinal,
                emittedAt));
      }
    }
    return out;
  }

  private DerivedMetric metric(
      String name, double value, long start, long end, boolean isFinal, long emittedAt) {
    return new DerivedMetric(hostId, hostname, name, start, end, value, samples, isFinal, emittedAt);
  }
}
