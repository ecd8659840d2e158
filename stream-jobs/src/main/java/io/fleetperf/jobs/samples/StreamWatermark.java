package io.fleetperf.jobs.samples;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * A stream's watermark promise on the wire: a Kafka record header on a sample record, the time in
 * epoch milliseconds as ASCII digits, meaning "no later record of this sample's stream has a
 * timestamp below this". A live collector that knows its stream's sampling interval sends it with
 * every sample (Python: {@code fleetperf.ingest.watermark.HEADER}, which says which sources promise
 * and what the promise rests on). Like {@link EndOfStream#HEADER} it rides on the record itself, so
 * it is in the stream's partition, in the stream's order, and is held back with the record while
 * the collector spools during a Kafka outage: no wall clock is involved. {@code PerStreamWindows}
 * closes a window once its stream's promise reaches the window's end.
 */
public final class StreamWatermark {
  public static final String HEADER = "fleetperf-stream-watermark";

  /** No promise: the record had no header, or one that is not a decimal long. */
  public static final long NONE = Long.MIN_VALUE;

  private StreamWatermark() {}

  /**
   * The promise a record carries, or {@link #NONE}. A header that does not parse is ignored (the
   * sample is taken as one without a promise: its windows close as before), not a reason to drop
   * the sample.
   */
  public static long promised(Headers headers) {
    if (headers == null) {
      return NONE;
    }
    Header header = headers.lastHeader(HEADER);
    if (header == null || header.value() == null) {
      return NONE;
    }
    try {
      return Long.parseLong(new String(header.value(), StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      return NONE;
    }
  }

  /**
   * Puts the record's promise on a decoded sample (inputs that are not {@link BaseSample}s have
   * none).
   */
  public static <T> T apply(T value, Headers headers) {
    if (value instanceof BaseSample sample) {
      sample.promised = promised(headers);
    }
    return value;
  }
}
