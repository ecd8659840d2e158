package io.fleetperf.jobs.windows;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.samples.CpuSample;
import io.fleetperf.jobs.samples.StreamWatermark;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.OutputTag;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PerStreamWindowsTest {
  private static final long MIN = 60_000;
  private static final OutputTag<CpuSample> LATE =
      new OutputTag<>("late", TypeInformation.of(CpuSample.class));
  private KeyedOneInputStreamOperatorTestHarness<String, CpuSample, DerivedWindow> harness;

  @BeforeEach
  void setUp() throws Exception {
    harness = newHarness();
    harness.open();
    harness.setProcessingTime(0);
  }

  private static KeyedOneInputStreamOperatorTestHarness<String, CpuSample, DerivedWindow>
      newHarness() throws Exception {
    return new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(
            new PerStreamWindows<>(
                CpuWindowAccumulator.class,
                CpuWindowAccumulator::new,
                LATE,
                MIN,
                5_000,
                3_000,
                20_000)),
        CpuSample::streamKey,
        Types.STRING);
  }

  /**
   * A live sample with its stream's watermark promise (the Kafka header StreamWatermark.HEADER).
   */
  private void promised(String host, long ts, double steal, long promise) throws Exception {
    CpuSample s = new CpuSample(host, host, ts, 10, steal, null, null, "file1");
    s.promised = promise;
    harness.processElement(new StreamRecord<>(s));
  }

  @AfterEach
  void tearDown() throws Exception {
    harness.close();
  }

  private void steal(String host, long ts, double steal) throws Exception {
    steal(host, "file1", ts, steal);
  }

  private void steal(String host, String file, long ts, double steal) throws Exception {
    harness.processElement(
        new StreamRecord<>(new CpuSample(host, host, ts, 10, steal, null, null, file)));
  }

  private void endOfStream(String host, String file, long ts) throws Exception {
    // the marker is a copy of the stream's last record, sent again with the end-of-stream header
    CpuSample marker = new CpuSample(host, host, ts, 10, 99.0, null, null, file);
    marker.endOfStream = true;
    harness.processElement(new StreamRecord<>(marker));
  }

  /** The metrics of every window record emitted so far, in order. */
  private List<DerivedMetric> output() {
    List<DerivedWindow> windows = harness.extractOutputValues();
    for (DerivedWindow w : windows) {
      // one record per window: its metrics share the entity and window the record carries
      for (DerivedMetric m : w.metrics) {
        assertEquals(w.first().entityId, m.entityId);
        assertEquals(w.first().windowStart, m.windowStart);
        assertEquals(w.first().isFinal, m.isFinal);
      }
    }
    return windows.stream().flatMap(w -> java.util.Arrays.stream(w.metrics)).toList();
  }

  @Test
  void windowClosesOnItsHostsClockAfterTheOutOfOrdernessAllowance() throws Exception {
    steal("a", 10_000, 2.0);
    steal("a", 50_000, 4.0);
    steal("a", 62_000, 9.0); // next window, but within 5 s of the first one's end
    assertTrue(output().isEmpty());
    steal("a", 58_000, 6.0); // out of order, still accepted
    steal("a", 65_000, 9.0); // clock reaches end + 5 s: window [0, 60 s) is final
    List<DerivedMetric> out = output();
    assertEquals(1, out.size());
    assertEquals(4.0, out.get(0).value, 1e-12);
    assertEquals(3, out.get(0).samples);
    assertTrue(out.get(0).isFinal);
    assertEquals(0, out.get(0).windowStart);
    assertEquals(MIN, out.get(0).windowEnd);
  }

  @Test
  void hostsKeepTheirOwnClocksSoAnOldFileOfAnotherHostIsNotLate() throws Exception {
    steal("new", 400 * MIN, 1.0);
    steal("new", 402 * MIN, 1.0);
    steal("old", 10_000, 7.0); // years "behind" host "new": still a fresh window for host "old"
    steal("old", 2 * MIN, 7.0);
    assertEquals(List.of("new", "old"), output().stream().map(m -> m.entityId).toList());
    assertTrue(harness.getSideOutput(LATE) == null || harness.getSideOutput(LATE).isEmpty());
  }

  @Test
  void lastYearsFileOfAHostIsNotLateBehindTodaysLiveFile() throws Exception {
    steal("a", "today.nmon", 400 * MIN, 1.0);
    steal("a", "today.nmon", 402 * MIN, 1.0);
    steal("a", "lastyear.nmon", 10_000, 7.0);
    steal("a", "lastyear.nmon", 2 * MIN, 7.0);
    List<DerivedMetric> out = output();
    assertEquals(2, out.size());
    assertEquals(List.of("a", "a"), out.stream().map(m -> m.entityId).toList());
    assertEquals(0, out.get(1).windowStart);
    assertEquals(7.0, out.get(1).value, 1e-12);
  }

  @Test
  void anEndedStreamIsEmittedAsFinalAndItsStateDropped() throws Exception {
    steal("a", 10_000, 2.0);
    harness.setProcessingTime(3_000);
    assertFalse(output().get(0).isFinal);
    harness.setProcessingTime(20_000);
    List<DerivedMetric> out = output();
    assertEquals(2, out.size());
    assertTrue(out.get(1).isFinal);
    assertEquals(2.0, out.get(1).value, 1e-12);
    // one more `retain` the ended stream's clock stays: a sample for the window already final
    // (its collector was held up, e.g. by a registry outage) is late, never a second final
    steal("a", 5_000, 4.0);
    assertEquals(1, harness.getSideOutput(LATE).size());
    harness.setProcessingTime(23_000);
    assertEquals(2, output().size()); // no early result and no second final of [0, 60 s)
    harness.setProcessingTime(40_000);
    assertEquals(2, output().size());
    assertEquals(0, harness.numKeyedStateEntries()); // then the clock is dropped
    steal("a", 6_000, 4.0); // a stream gone that long starts afresh
    assertEquals(1, harness.getSideOutput(LATE).size());
  }

  @Test
  void aStreamHeldUpLongerThanRetainGetsNoSecondFinalForTheWindowItPausedIn() throws Exception {
    steal("a", 10_000, 2.0);
    steal("a", 20_000, 4.0);
    harness.setProcessingTime(20_000); // the collector waits for the registry: retain passes
    List<DerivedMetric> finals = output().stream().filter(m -> m.isFinal).toList();
    assertEquals(1, finals.size());
    assertEquals(2, finals.get(0).samples);
    harness.setProcessingTime(21_000); // it comes back with the rest of the window and the next
    steal("a", 30_000, 6.0);
    steal("a", 70_000, 1.0);
    steal("a", 130_000, 1.0); // closes [60 s, 120 s)
    List<DerivedMetric> all = output().stream().filter(m -> m.isFinal).toList();
    assertEquals(List.of(0L, MIN), all.stream().map(m -> m.windowStart).toList());
    assertEquals(1, harness.getSideOutput(LATE).size()); // the 30 s sample, visible as late
  }

  @Test
  void endOfStreamMarkerFinalisesEveryOpenWindowOfItsStreamAtOnce() throws Exception {
    steal("a", 10_000, 2.0);
    steal("a", 50_000, 4.0);
    steal("a", 62_000, 8.0); // [0, 60 s) still open: the clock is within the 5 s allowance
    harness.setProcessingTime(1_000); // before the idle flush (3 s): nothing emitted yet
    assertTrue(output().isEmpty());
    endOfStream("a", "file1", 62_000);
    List<DerivedMetric> out = output();
    assertEquals(2, out.size());
    assertTrue(out.stream().allMatch(m -> m.isFinal));
    assertEquals(List.of(0L, MIN), out.stream().map(m -> m.windowStart).toList());
    assertEquals(3.0, out.get(0).value, 1e-12);
    assertEquals(2, out.get(0).samples);
    assertEquals(
        8.0, out.get(1).value, 1e-12); // the marker's own values (99) are not counted again
    assertEquals(1, out.get(1).samples);
    // nothing more comes for them: no early result at the idle check, no second final at retain
    harness.setProcessingTime(30_000);
    assertEquals(2, output().size());
    assertEquals(0, harness.numKeyedStateEntries());
    assertEquals(0, harness.numProcessingTimeTimers());
    assertTrue(harness.getSideOutput(LATE) == null);
  }

  @Test
  void endOfStreamLeavesOtherStreamsAlone() throws Exception {
    steal("a", "file1", 10_000, 2.0);
    steal("a", "file2", 10_000, 5.0); // the same host's other file is another stream
    steal("b", "file1", 10_000, 7.0);
    endOfStream("a", "file1", 10_000);
    List<DerivedMetric> out = output();
    assertEquals(1, out.size());
    assertEquals(2.0, out.get(0).value, 1e-12);
    // the others go on on their own clocks: their windows close when their data says so
    steal("a", "file2", 70_000, 5.0);
    steal("b", "file1", 70_000, 7.0);
    out = output();
    assertEquals(3, out.size());
    assertEquals(5.0, out.get(1).value, 1e-12);
    assertEquals(7.0, out.get(2).value, 1e-12);
    assertEquals(List.of("a", "b"), out.subList(1, 3).stream().map(m -> m.entityId).toList());
  }

  @Test
  void endOfStreamOfAnUnknownOrEndedStreamIsHarmless() throws Exception {
    endOfStream("ghost", "file1", 10_000);
    assertTrue(output().isEmpty());
    assertEquals(0, harness.numKeyedStateEntries());
    assertEquals(0, harness.numProcessingTimeTimers());
    steal("a", 10_000, 2.0);
    endOfStream("a", "file1", 10_000);
    endOfStream("a", "file1", 10_000); // a repeated marker (a resent file end)
    assertEquals(1, output().size());
    assertTrue(harness.getSideOutput(LATE) == null);
  }

  @Test
  void sampleOfAnEndedStreamIsLateForItsFinalWindowsButStartsNewOnes() throws Exception {
    steal("a", 10_000, 2.0);
    endOfStream("a", "file1", 10_000);
    steal(
        "a", 20_000,
        50.0); // its window was final already: replacing it by a partial one would be wrong
    assertEquals(1, harness.getSideOutput(LATE).size());
    steal("a", 70_000, 3.0); // the file grew after all: a later window is a window like any other
    steal("a", 130_000, 3.0);
    List<DerivedMetric> out = output();
    assertEquals(2, out.size());
    assertEquals(MIN, out.get(1).windowStart);
    assertEquals(3.0, out.get(1).value, 1e-12);
  }

  @Test
  void sampleForAnAlreadyClosedWindowGoesToTheLateOutput() throws Exception {
    steal("a", 10_000, 1.0);
    steal("a", 2 * MIN, 1.0);
    int before = output().size();
    steal("a", 20_000, 50.0);
    assertEquals(before, output().size());
    assertEquals(1, harness.getSideOutput(LATE).size());
  }

  @Test
  void quietHostGetsAnEarlyResultThenTheFinalOneReplacesIt() throws Exception {
    steal("a", 10_000, 2.0);
    harness.setProcessingTime(2_000);
    assertTrue(output().isEmpty());
    harness.setProcessingTime(3_000); // quiet for the idle period
    List<DerivedMetric> early = output();
    assertEquals(1, early.size());
    assertFalse(early.get(0).isFinal);
    assertEquals(2.0, early.get(0).value, 1e-12);

    steal("a", 20_000, 4.0);
    steal("a", 70_000, 0.0);
    List<DerivedMetric> all = output();
    DerivedMetric last = all.get(all.size() - 1);
    assertTrue(last.isFinal);
    assertEquals(3.0, last.value, 1e-12);
    assertEquals(2, last.samples);
  }

  @Test
  void timersOfEarlierSamplesDoNotFlushABusyHost() throws Exception {
    steal("a", 10_000, 2.0);
    harness.setProcessingTime(2_000);
    steal("a", 20_000, 2.0);
    harness.setProcessingTime(3_500); // first sample's timer fires, but the host was active at 2 s
    assertTrue(output().isEmpty());
    harness.setProcessingTime(5_000);
    assertEquals(1, output().size());
  }

  @Test
  void samplesOfOneSecondShareTheirTimers() throws Exception {
    for (int i = 0; i < 50; i++) {
      harness.setProcessingTime(10_001 + i * 10); // 50 samples within one second
      steal("a", 10_000 + i * 100, 1.0);
    }
    // one idle check (3 s) rounded up to a whole second, not one per sample
    assertEquals(1, harness.numProcessingTimeTimers());
    harness.setProcessingTime(14_000); // quiet: early results, and the end-of-stream check (20 s)
    assertEquals(1, output().size());
    assertEquals(1, harness.numProcessingTimeTimers());
    harness.setProcessingTime(31_000); // quiet for 20 s after 10.491 s: the stream has ended
    assertEquals(2, output().size());
    assertTrue(output().get(1).isFinal);
    assertEquals(
        1, harness.numProcessingTimeTimers()); // the ended stream's clock is dropped at 51 s
    harness.setProcessingTime(51_000);
    assertEquals(0, harness.numProcessingTimeTimers());
    assertEquals(0, harness.numKeyedStateEntries());
    assertEquals(2, output().size());
    assertEquals(13_000, PerStreamWindows.timerAt(13_000));
    assertEquals(14_000, PerStreamWindows.timerAt(13_001));
  }

  // nmon at a 10 s interval promises ts + 10 s - 1 s (fleetperf.ingest.watermark: SLACK_MS)
  private static final long PROMISE = 9_000;

  @Test
  void aPromiseClosesTheWindowOnItsLastSampleNotOnASampleAfterTheAllowance() throws Exception {
    for (long ts = 5_000; ts <= 45_000; ts += 10_000) {
      promised("a", ts, 2.0, ts + PROMISE);
    }
    assertTrue(output().isEmpty()); // promise 54 s: the window [0, 60 s) may still get a sample
    promised("a", 55_000, 8.0, 55_000 + PROMISE); // its last sample promises 64 s: final at once
    List<DerivedMetric> out = output();
    assertEquals(1, out.size());
    assertTrue(out.get(0).isFinal);
    assertEquals(0, out.get(0).windowStart);
    assertEquals(6, out.get(0).samples);
    assertEquals(3.0, out.get(0).value, 1e-12);
    assertTrue(harness.getSideOutput(LATE) == null);
  }

  @Test
  void samplesOnTheWindowBoundaryCloseItOnTheFirstSampleAtItsEnd() throws Exception {
    // the live benchmark's nmon writes at multiples of 10 s: the last sample of [0, 60 s) is at
    // 50 s and promises 59 s only (the 1 s slack), so the window closes on the sample at 60 s,
    // where the allowance alone would wait for the one at 70 s
    for (long ts = 0; ts <= 50_000; ts += 10_000) {
      promised("a", ts, 2.0, ts + PROMISE);
    }
    assertTrue(output().isEmpty());
    promised("a", 60_000, 4.0, 60_000 + PROMISE);
    List<DerivedMetric> out = output();
    assertEquals(1, out.size());
    assertEquals(0, out.get(0).windowStart);
    assertEquals(6, out.get(0).samples); // the 60 s sample is in the next window, not this one
    assertTrue(out.get(0).isFinal);
  }

  @Test
  void withoutPromisesTheSameSamplesCloseTheWindowOnlyAfterTheAllowance() throws Exception {
    for (long ts = 5_000; ts <= 65_000; ts += 10_000) {
      steal("a", ts, 2.0);
      assertEquals(ts < 65_000 ? 0 : 1, output().size(), "after the sample at " + ts);
    }
    assertEquals(StreamWatermark.NONE, new CpuSample("a", "a", 0, 10, null, null, null).promised());
  }

  @Test
  void aSampleBelowAPromiseIsLateOnceThePromiseClosedItsWindow() throws Exception {
    promised("a", 55_000, 2.0, 64_000); // closes [0, 60 s)
    assertEquals(1, output().size());
    steal("a", 58_000, 50.0); // broke the promise, its window is final: late, not a second final
    assertEquals(1, harness.getSideOutput(LATE).size());
    assertEquals(1, output().size());
    // below the promise but in a window still open (nothing emitted for it yet): counted
    steal("a", 62_000, 4.0);
    promised("a", 125_000, 6.0, 134_000);
    List<DerivedMetric> out = output();
    assertEquals(2, out.size());
    assertEquals(MIN, out.get(1).windowStart);
    assertEquals(4.0, out.get(1).value, 1e-12);
    assertEquals(1, harness.getSideOutput(LATE).size());
  }

  @Test
  void aRecordWithoutAPromiseLeavesTheStreamsPromiseAsItWas() throws Exception {
    promised("a", 50_000, 2.0, 59_000);
    steal("a", 59_500, 4.0); // no header (e.g. a record of the stream sent by an older collector)
    promised("a", 60_000, 6.0, 58_000); // a lower promise than the stream's does not lower it
    assertTrue(output().isEmpty());
    promised("a", 61_000, 6.0, 60_000);
    assertEquals(1, output().size());
    assertEquals(2, output().get(0).samples);
  }

  @Test
  void thePromiseIsCheckpointedWithTheStreamsClock() throws Exception {
    promised("a", 50_000, 2.0, 60_000); // closes [0, 60 s) by the promise alone (newest is 50 s)
    assertEquals(1, output().size());
    OperatorSubtaskState snapshot = harness.snapshot(1, 1);
    harness.close();

    harness = newHarness(); // a restart from the checkpoint
    harness.initializeState(snapshot);
    harness.open();
    harness.setProcessingTime(0);
    steal(
        "a", 55_000,
        9.0); // by the allowance [0, 60 s) is open (50 s + 5 s < 65 s), by the promise not
    assertEquals(1, harness.getSideOutput(LATE).size());
    assertTrue(output().isEmpty());
  }

  @Test
  void windowStartHandlesNegativeAndExactBoundaries() {
    assertEquals(0, PerStreamWindows.windowStart(0, MIN));
    assertEquals(MIN, PerStreamWindows.windowStart(MIN, MIN));
    assertEquals(-MIN, PerStreamWindows.windowStart(-1, MIN));
  }
}
