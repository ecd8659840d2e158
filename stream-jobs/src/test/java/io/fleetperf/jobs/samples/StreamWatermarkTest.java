package io.fleetperf.jobs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class StreamWatermarkTest {
  private static RecordHeaders with(String name, String value) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(name, value.getBytes(StandardCharsets.US_ASCII));
    return headers;
  }

  private static CpuSample sample() {
    return new CpuSample("h", "h", 1_772_352_000_000L, 10, null, null, null);
  }

  @Test
  void theHeaderCarriesThePromiseInEpochMillisecondsAsAsciiDigits() {
    // what fleetperf.ingest.watermark sends for an nmon sample at 2026-03-01 08:00:00 UTC, 10 s
    // interval
    CpuSample s = StreamWatermark.apply(sample(), with(StreamWatermark.HEADER, "1772352009000"));
    assertEquals(1_772_352_009_000L, s.promised());
    assertFalse(s.endOfStream());
  }

  @Test
  void noHeaderOrAnUnreadableOneIsNoPromise() {
    assertEquals(StreamWatermark.NONE, StreamWatermark.apply(sample(), null).promised());
    assertEquals(
        StreamWatermark.NONE, StreamWatermark.apply(sample(), new RecordHeaders()).promised());
    assertEquals(
        StreamWatermark.NONE, StreamWatermark.apply(sample(), with("other", "5")).promised());
    assertEquals(
        StreamWatermark.NONE,
        StreamWatermark.apply(sample(), with(StreamWatermark.HEADER, "12.5")).promised());
    assertEquals(
        StreamWatermark.NONE,
        StreamWatermark.apply(sample(), with(StreamWatermark.HEADER, "")).promised());
    // port counters are not windowed per stream: the header is ignored on them
    PortCounters port =
        StreamWatermark.apply(
            new PortCounters("h", "ent0", "ent1", 0, 1L, 1L), with(StreamWatermark.HEADER, "5"));
    assertFalse(port instanceof Sample);
  }

  @Test
  void aMarkerAndAPromiseOnOneRecordAreBothRead() {
    RecordHeaders both = with(StreamWatermark.HEADER, "42");
    both.add(EndOfStream.HEADER, "1".getBytes(StandardCharsets.US_ASCII));
    CpuSample s = StreamWatermark.apply(EndOfStream.apply(sample(), both), both);
    assertEquals(42L, s.promised());
    assertEquals(true, s.endOfStream());
  }
}
