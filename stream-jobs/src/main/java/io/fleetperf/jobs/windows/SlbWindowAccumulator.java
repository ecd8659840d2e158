package io.fleetperf.jobs.windows;

import io.fleetperf.jobs.samples.HpmSample;
import java.util.ArrayList;
import java.util.List;

/**
 * POWER translation misses of one LPAR in one window from hpmstat reports (seed 000 L8254-8332):
 * each report's counters cover its own counting period, so a window sums them and divides.
 *
 * <ul>
 *   <li>slb_miss_rate = 100 × Σ(DSLB + ISLB) / Σ instructions (% per instruction; flag above 0.5)
 *   <li>dslb_miss_rate, islb_miss_rate, ierat_miss_rate: the same per counter
 *   <li>cpi = Σ cycles / Σ instructions; mips = Σ instructions / Σ counting duration / 10^6
 * </ul>
 */
public class SlbWindowAccumulator implements WindowAccumulator<HpmSample> {
  public String hostId;
  public String hostname;
  public int samples;
  public long dslb;
  public long islb;
  public long ierat;
  public long instructions;
  public long cycles;
  public double durationS;
  public boolean missingDslb;
  public boolean missingIslb;
  public boolean missingIerat;
  public boolean missingCycles;

  @Override
  public void add(HpmSample s) {
    if (s.instructions == null || s.instructions <= 0) {
      return; // a report without completed instructions says nothing about rates
    }
    hostId = s.hostId;
    hostname = s.hostname;
    samples++;
    instructions += s.instructions;
    durationS += s.durationS == null ? 0 : s.durationS;
    missingDslb |= s.dslb == null;
    missingIslb |= s.islb == null;
    missingIerat |= s.ierat == null;
    missingCycles |= s.cycles == null;
    dslb += s.dslb == null ? 0 : s.dslb;
    islb += s.islb == null ? 0 : s.islb;
    ierat += s.ierat == null ? 0 : s.ierat;
    cycles += s.cycles == null ? 0 : s.cycles;
  }

  @Override
  public List<DerivedMetric> metrics(
      long windowStart, long windowEnd, boolean isFinal, long emittedAt) {
    List<DerivedMetric> out = new ArrayList<>(6);
    if (instructions <= 0) {
      return out;
    }
    double inst = instructions;
    if (!missingDslb && !missingIslb) {
      out.add(
          metric(
              Metrics.SLB_MISS_RATE,
              100.0 * (dslb + islb) / inst,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    if (!missingDslb) {
      out.add(
          metric(
              Metrics.DSLB_MISS_RATE,
              100.0 * dslb / inst,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    if (!missingIslb) {
      out.add(
          metric(
              Metrics.ISLB_MISS_RATE,
              100.0 * islb / inst,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    if (!missingIerat) {
      out.add(
          metric(
              Metrics.IERAT_MISS_RATE,
              100.0 * ierat / inst,
              windowStart,
              windowEnd,
              isFinal,
              emittedAt));
    }
    if (!missingCycles) {
      out.add(metric(Metrics.CPI, cycles / inst, windowStart, windowEnd, isFinal, emittedAt));
    }
    if (durationS > 0) {
      out.add(
          metric(Metrics.MIPS, inst / durationS / 1e6, windowStart, windowEnd, isFinal, emittedAt));
    }
    return out;
  }

  private DerivedMetric metric(
      String name, double value, long start, long end, boolean isFinal, long emittedAt) {
    return new DerivedMetric(
        hostId, hostname, name, start, end, value, samples, isFinal, emittedAt);
  }
}
