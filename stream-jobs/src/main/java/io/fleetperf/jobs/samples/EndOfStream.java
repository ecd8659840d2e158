package io.fleetperf.jobs.samples;

import org.apache.kafka.common.header.Headers;

/**
 * The end-of-stream marker on the wire: a Kafka record header. A collector that reaches the end of
 * a file, report or collection sends each stream's last record once more with this header (Python:
 * {@code fleetperf.ingest.end_of_stream.HEADER}); the same Kafka key puts it in the same partition
 * behind every record of the stream. Why a header and not an Avro field or a topic of its own:
 * stream-jobs/README.md, "Finished streams".
 */
public final class EndOfStream {
  public static final String HEADER = "fleetperf-end-of-stream";

  private EndOfStream() {}

  /** The record carries the marker header. */
  public static boolean marked(Headers headers) {
    return headers != null && headers.lastHeader(HEADER) != null;
  }

  /**
   * Marks a decoded sample (inputs that are not {@link BaseSample}s have no per-stream windows).
   */
  public static <T> T apply(T value, Headers headers) {
    if (value instanceof BaseSample sample && marked(headers)) {
      sample.endOfStream = true;
    }
    return value;
  }
}
