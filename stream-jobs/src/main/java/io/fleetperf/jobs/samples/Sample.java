package io.fleetperf.jobs.samples;

/** A timestamped input of one host from one source stream (a file or a live feed). */
public interface Sample {
  long ts();

  String hostId();

  String hostname();

  /** Key of the event clock: one per host and source stream. */
  String streamKey();
}
