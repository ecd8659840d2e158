package io.fleetperf.jobs.samples;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class EndOfStreamTest {
  @Test
  void theHeaderMarksASampleAndNothingElse() {
    RecordHeaders marked = new RecordHeaders();
    marked.add(EndOfStream.HEADER, "1".getBytes(StandardCharsets.UTF_8));
    RecordHeaders other = new RecordHeaders();
    other.add("something-else", new byte[] {1});

    assertTrue(
        EndOfStream.apply(new CpuSample("h", "h", 0, 10, null, null, null), marked).endOfStream());
    assertFalse(
        EndOfStream.apply(new CpuSample("h", "h", 0, 10, null, null, null), other).endOfStream());
    assertFalse(
        EndOfStream.apply(new CpuSample("h", "h", 0, 10, null, null, null), null).endOfStream());
    // port counters are not windowed per stream: the header is ignored on them
    PortCounters port = EndOfStream.apply(new PortCounters("h", "ent0", "ent1", 0, 1L, 1L), marked);
    assertFalse(port instanceof Sample);
  }
}
