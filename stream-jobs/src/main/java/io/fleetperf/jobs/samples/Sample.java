package io.fleetperf.jobs.samples;

/** A timestamped input of one host from one source stream (a file or a live feed). */
public interface Sample {
  long ts();

  String hostId();

  String hostname();

  /** Key of the event clock: one per host and source stream. */
  String streamKey();

  /**
   * True for a stream's end-of-stream marker: a copy of the stream's last record that the collector
   * sent with the Kafka header {@link EndOfStream#HEADER} once it reached the end of the file,
   * report or collection. Its values were counted already; it only says that the stream is over.
   */
  default boolean endOfStream() {
    return false;
  }

  /**
   * The record's watermark promise: no later record of this stream has a timestamp below it (the
   * Kafka header {@link StreamWatermark#HEADER}); {@link StreamWatermark#NONE} without one.
   */
  default long promised() {
    return StreamWatermark.NONE;
  }
}
