package io.fleetperf.jobs.windows;

import io.fleetperf.jobs.samples.CpuSample;
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

  /** Largest physc of the window (for VPs needed). */
  public double maxPhysc = -1;

  /**
   * Σ interval, Σ (pool − idle) × interval and Σ pool × interval over samples with a pool idle > 0.
   */
  public double poolSeconds;

  public double poolUsedWeighted;
  public double poolCpusWeighted;

  /** busy_pct and cpu_cores (every host, whatever else it reports). */
  public UtilisationWindow utilisation = new UtilisationWindow();

  /** AIX schedo vpm_xvcpus: extra VPs kept unfolded (0 is AIX's default). */
  static final int VPM_XVCPUS = 0;

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
    Double busy = UtilisationWindow.busyFromIdle(s.idlePct);
    utilisation.add(busy, UtilisationWindow.cpuSampleCores(busy, s.cpus, s.physc), dt);
    if (s.stealPct != null) {
      stealSeconds += dt;
      stealWeighted += s.stealPct * dt;
    }
    if (s.physc != null && s.entitled != null) {
      lparSeconds += dt;
      physcWeighted += s.physc * dt;
      entitledWeighted += s.entitled * dt;
    }
    if (s.physc != null) {
      maxPhysc = Math.max(maxPhysc, s.physc);
    }
    // PoolIdle is 0 both for a saturated pool and for an LPAR without pool utilization authority:
    // only a positive value says the LPAR can see the pool
    if (s.poolCpus != null && s.poolIdle != null && s.poolIdle > 0) {
      poolSeconds += dt;
      poolUsedWeighted += (s.poolCpus - s.poolIdle) * dt;
      poolCpusWeighted += s.poolCpus * dt;
    }
    return this;
  }

  public CpuWindowAccumulator merge(CpuWindowAccumulator o) {
    if (hostname == null) {
      hostId = o.hostId;
      hostname = o.hostname;
    }
    samples += o.samples;
    utilisation.merge(o.utilisation);
    stealSeconds += o.stealSeconds;
    stealWeighted += o.stealWeighted;
    lparSeconds += o.lparSeconds;
    physcWeighted += o.physcWeighted;
    entitledWeighted += o.entitledWeighted;
    maxPhysc = Math.max(maxPhysc, o.maxPhysc);
    poolSeconds += o.poolSeconds;
    poolUsedWeighted += o.poolUsedWeighted;
    poolCpusWeighted += o.poolCpusWeighted;
    return this;
  }

  /**
   * steal_pct: % of CPU time stolen by the hypervisor; entc_pct: physc / entitled × 100 (AIX ec);
   * physc: physical processors consumed, time-weighted mean; vps_needed: virtual processors the
   * window's peak needs, roundup(max physc) + vpm_xvcpus (000 L7364); pool_used: processors of the
   * LPAR's shared pool in use (pool − idle, time-weighted) and pool_used_pct of the pool size.
   */
  @Override
  public List<DerivedMetric> metrics(
      long windowStart, long windowEnd, boolean isFinal, long emittedAt) {
    List<DerivedMetric> out = new ArrayList<>(8);
    utilisation.emit(out, hostId, hostname, samples, windowStart, windowEnd, isFinal, emittedAt);
    if (stealSeconds > 0) {
      out.add(
          metric(
              Metrics.STEAL_PCT,
              stealWeighted / stealSeconds,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    if (lparSeconds > 0) {
      out.add(
          metric(
              Metrics.PHYSC,
              physcWeighted / lparSeconds,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
      if (entitledWeighted > 0) {
        out.add(
            metric(
                Metrics.ENTC_PCT,
                100.0 * physcWeighted / entitledWeighted,
                windowStart,
                windowEnd,
                isFinal,
                emittedAt));
      }
    }
    if (maxPhysc >= 0) {
      // a hair over a whole processor is measurement noise, not one more VP
      double vps = Math.ceil(maxPhysc - 1e-9) + VPM_XVCPUS;
      out.add(
          metric(Metrics.VPS_NEEDED, Math.max(vps, 1), windowStart, windowEnd, isFinal, emittedAt));
    }
    if (poolSeconds > 0) {
      out.add(
          metric(
              Metrics.POOL_USED,
              poolUsedWeighted / poolSeconds,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
      out.add(
          metric(
              Metrics.POOL_USED_PCT,
              100.0 * poolUsedWeighted / poolCpusWeighted,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    return out;
  }

  private DerivedMetric metric(
      String name, double value, long start, long end, boolean isFinal, long emittedAt) {
    return new DerivedMetric(
        hostId, hostname, name, start, end, value, samples, isFinal, emittedAt);
  }
}
