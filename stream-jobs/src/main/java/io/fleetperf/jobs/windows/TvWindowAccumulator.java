package io.fleetperf.jobs.windows;

import io.fleetperf.jobs.samples.ZvmCpuSample;
import java.util.ArrayList;
import java.util.List;

/**
 * z/VM CPU of one guest or one z/VM system in one window (seed 004 L2592: T/V = TCPU / VCPU).
 *
 * <ul>
 *   <li>tv_ratio = Σ total CPU s / Σ virtual CPU s (ratio; flag above 1.30, 004 L2481). Not emitted
 *       when Σ virtual is below {@code minVirtualS}: the Toolkit prints CPU seconds with three
 *       decimals, so below 0.010 s the rounding alone moves the ratio by more than 5 % (the RSCS
 *       row .002/.001 = 2.00 of 004 L899-926 is such a case).
 *   <li>cp_overhead_pct = 100 × (Σ total − Σ virtual) / Σ total: share of the entity's CPU time CP
 *       spent on its behalf (same guard).
 *   <li>busy_pct and cpu_cores: {@link UtilisationWindow} (a guest has cpu_cores only).
 *   <li>System samples also give capture_ratio, users_in_elist, paging_xstore_rate and
 *       paging_dasd_rate as interval-weighted means.
 * </ul>
 */
public class TvWindowAccumulator implements WindowAccumulator<ZvmCpuSample> {
  public String entityId;
  public String entityName;
  public int samples;
  public double minVirtualS;
  public double totalS;
  public double virtualS;
  public boolean missingTimes;
  public UtilisationWindow utilisation = new UtilisationWindow();
  public WeightedMean capture = new WeightedMean();
  public WeightedMean elist = new WeightedMean();
  public WeightedMean xstore = new WeightedMean();
  public WeightedMean dasd = new WeightedMean();

  /** Σ value × interval and Σ interval over the samples that carry the value. */
  public static class WeightedMean {
    public double sum;
    public double seconds;

    void add(Double value, double dt) {
      if (value != null) {
        sum += value * dt;
        seconds += dt;
      }
    }
  }

  public TvWindowAccumulator() {}

  public TvWindowAccumulator(double minVirtualS) {
    this.minVirtualS = minVirtualS;
  }

  @Override
  public void add(ZvmCpuSample s) {
    entityId = s.hostId;
    entityName = s.hostname;
    samples++;
    if (s.totalS == null || s.virtualS == null) {
      missingTimes = true;
    } else {
      totalS += s.totalS;
      virtualS += s.virtualS;
    }
    double dt = s.intervalS > 0 ? s.intervalS : 1.0;
    utilisation.add(
        s.busyPct, UtilisationWindow.zvmCores(s.busyPct, s.onlineCpus, s.totalS, s.intervalS), dt);
    capture.add(s.captureRatio, dt);
    elist.add(s.usersInElist, dt);
    xstore.add(s.pagingXstoreRate, dt);
    dasd.add(s.pagingDasdRate, dt);
  }

  @Override
  public List<DerivedMetric> metrics(
      long windowStart, long windowEnd, boolean isFinal, long emittedAt) {
    List<DerivedMetric> out = new ArrayList<>(7);
    if (!missingTimes && virtualS >= minVirtualS && virtualS > 0) {
      out.add(
          metric(Metrics.TV_RATIO, totalS / virtualS, windowStart, windowEnd, isFinal, emittedAt));
      out.add(
          metric(
              Metrics.CP_OVERHEAD_PCT,
              100.0 * (totalS - virtualS) / totalS,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    utilisation.emit(
        out, entityId, entityName, samples, windowStart, windowEnd, isFinal, emittedAt);
    mean(out, Metrics.CAPTURE_RATIO, capture, windowStart, windowEnd, isFinal, emittedAt);
    mean(out, Metrics.USERS_IN_ELIST, elist, windowStart, windowEnd, isFinal, emittedAt);
    mean(out, Metrics.PAGING_XSTORE_RATE, xstore, windowStart, windowEnd, isFinal, emittedAt);
    mean(out, Metrics.PAGING_DASD_RATE, dasd, windowStart, windowEnd, isFinal, emittedAt);
    return out;
  }

  private void mean(
      List<DerivedMetric> out,
      String name,
      WeightedMean m,
      long start,
      long end,
      boolean isFinal,
      long emittedAt) {
    if (m.seconds > 0) {
      out.add(metric(name, m.sum / m.seconds, start, end, isFinal, emittedAt));
    }
  }

  private DerivedMetric metric(
      String name, double value, long start, long end, boolean isFinal, long emittedAt) {
    return new DerivedMetric(
        entityId, entityName, name, start, end, value, samples, isFinal, emittedAt);
  }
}
