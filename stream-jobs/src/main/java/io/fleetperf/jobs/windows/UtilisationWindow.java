package io.fleetperf.jobs.windows;

import java.util.List;

/**
 * The CPU utilisation family of one entity in one window, for every source (the formulas' only
 * home; {@link CpuWindowAccumulator} and {@link TvWindowAccumulator} feed it per sample).
 *
 * <ul>
 *   <li>busy_pct = Σ busy% × interval / Σ interval over samples that report busy (nmon, sadc: 100 −
 *       idle%, so iowait and steal count as busy, as sar's %idle complement does; z/VM system: the
 *       processors' busy %).
 *   <li>cpu_cores = Σ cores × interval / Σ interval: CPU consumed in cores, whichever way the
 *       source gives it per sample (see {@link #cpuSampleCores} and {@link #zvmCores}).
 * </ul>
 */
public class UtilisationWindow {
  public double busySeconds;
  public double busyWeighted;
  public double coreSeconds;
  public double coreWeighted;

  /**
   * busy % from an idle %; null when idle is absent or not a percentage (never a guessed value).
   */
  static Double busyFromIdle(Double idlePct) {
    if (idlePct == null || !(idlePct >= 0 && idlePct <= 100)) {
      return null;
    }
    return 100.0 - idlePct;
  }

  /**
   * Cores of one cpu_samples record: AIX physc where the LPAR section gives it (logical CPUs are
   * SMT threads there, busy × CPUs would overstate), else busy × logical CPUs / 100 (Linux, x86,
   * sadc).
   */
  static Double cpuSampleCores(Double busyPct, Integer cpus, Double physc) {
    if (physc != null) {
      return physc;
    }
    if (busyPct == null || cpus == null || cpus <= 0) {
      return null;
    }
    return busyPct * cpus / 100.0;
  }

  /**
   * Cores of one z/VM record: a system's busy × online processors / 100; a guest's total CPU
   * seconds per interval second (also a system record that has no busy %).
   */
  static Double zvmCores(Double busyPct, Double onlineCpus, Double totalS, double intervalS) {
    if (busyPct != null && onlineCpus != null && onlineCpus > 0) {
      return busyPct * onlineCpus / 100.0;
    }
    if (totalS != null && intervalS > 0) {
      return totalS / intervalS;
    }
    return null;
  }

  public void add(Double busyPct, Double cores, double dt) {
    if (busyPct != null) {
      busySeconds += dt;
      busyWeighted += busyPct * dt;
    }
    if (cores != null) {
      coreSeconds += dt;
      coreWeighted += cores * dt;
    }
  }

  public void merge(UtilisationWindow o) {
    busySeconds += o.busySeconds;
    busyWeighted += o.busyWeighted;
    coreSeconds += o.coreSeconds;
    coreWeighted += o.coreWeighted;
  }

  void emit(
      List<DerivedMetric> out,
      String entityId,
      String entityName,
      int samples,
      long start,
      long end,
      boolean isFinal,
      long emittedAt) {
    if (busySeconds > 0) {
      out.add(
          new DerivedMetric(
              entityId,
              entityName,
              Metrics.BUSY_PCT,
              start,
              end,
              busyWeighted / busySeconds,
              samples,
              isFinal,
              emittedAt));
    }
    if (coreSeconds > 0) {
      out.add(
          new DerivedMetric(
              entityId,
              entityName,
              Metrics.CPU_CORES,
              start,
              end,
              coreWeighted / coreSeconds,
              samples,
              isFinal,
              emittedAt));
    }
  }
}
