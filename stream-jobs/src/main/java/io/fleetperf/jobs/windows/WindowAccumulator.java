package io.fleetperf.jobs.windows;

import io.fleetperf.jobs.samples.Sample;
import java.util.List;

/** Sums of one entity's samples in one window; metrics are ratios of these sums. */
public interface WindowAccumulator<T extends Sample> {
  void add(T sample);

  List<DerivedMetric> metrics(long windowStart, long windowEnd, boolean isFinal, long emittedAt);
}
