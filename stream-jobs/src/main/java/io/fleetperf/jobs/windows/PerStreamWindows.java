package io.fleetperf.jobs.windows;

import io.fleetperf.jobs.samples.Sample;
import io.fleetperf.jobs.samples.StreamWatermark;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Tumbling event-time windows with one event clock per source stream (host and file, see {@link
 * Sample#streamKey()}) instead of one watermark per Kafka partition. What a window sums and which
 * metrics it yields is the accumulator's business ({@link CpuWindowAccumulator}, {@link
 * SlbWindowAccumulator}).
 *
 * <p>Why: a file written by nmon or sadc is an ordered stream of one host, but a fleet backfill
 * interleaves files of many hosts and periods, and users backfill last year's archive of a host
 * while today's file of the same host streams live. With a shared watermark (or one clock per host)
 * the older data would be dropped as late. With one clock per stream, each file's windows close on
 * that file's own time: a window closes when the stream's newest sample is {@code outOfOrderness}
 * past its end.
 *
 * <p>A stream whose collector promises its own order (its watermark promise, {@link
 * Sample#promised()}: "no later record of this stream has a timestamp below this", sent by a live
 * collector that knows the stream's sampling interval) also closes a window once the highest
 * promise so far reaches the window's end, without the out-of-orderness allowance: the promise is
 * about this stream's own later records, so there is nothing out of order left to wait for. Live
 * nmon at a 10 s interval thus closes a window on the snapshot before or at its end, not on the one
 * at end + 10 s. The promise travels with the records (a Kafka header), so a collector that spools
 * during a Kafka outage holds it back with its samples; nothing here depends on the wall clock.
 * Streams without promises close as before.
 *
 * <p>A stream that goes quiet for {@code idle} of processing time emits early results for its open
 * windows (is_final=false), so the last minutes of a file do not wait for data that may never come;
 * the final result replaces them downstream (ReplacingMergeTree on emitted_at). A stream quiet for
 * {@code retain} is considered ended: its open windows are emitted as final and its clock stays,
 * marked, one more {@code retain} (then it is dropped), so a sample that still comes for one of
 * those windows is late, not the start of a second final. Samples for a window already closed go to
 * the late side output.
 *
 * <p>A stream that says it has ended (its end-of-stream marker, {@link Sample#endOfStream()}: the
 * collector reached the end of the file) does not wait for {@code retain}: its open windows are
 * emitted as final at once and dropped. Its clock stays, marked, until {@code retain} has passed,
 * so a sample of the ended stream that still comes (the file was appended to after all) is late
 * rather than the start of a partial window that would replace a complete final one downstream.
 */
public class PerStreamWindows<T extends Sample, A extends WindowAccumulator<T>>
    extends KeyedProcessFunction<String, T, DerivedWindow> {
  private final OutputTag<T> late;
  private final Class<A> accumulatorClass;
  private final SerializableSupplier<A> newAccumulator;

  private final long size;
  private final long outOfOrderness;
  private final long idle;
  private final long retain;
  private transient MapState<Long, A> open;
  private transient ValueState<StreamClock> clock;

  /**
   * Processing-time timers are rounded up to whole seconds and a stream keeps one: the idle check,
   * registered only when its second changes (Flink's timer service hashes every registration, even
   * a duplicate); the end-of-stream check is registered by the idle check. Measured with
   * bench/flink_throughput.py, see docs/capacity.md.
   */
  static final long TIMER_GRANULARITY_MS = 1000;

  static long timerAt(long t) {
    return Math.floorDiv(t + TIMER_GRANULARITY_MS - 1, TIMER_GRANULARITY_MS) * TIMER_GRANULARITY_MS;
  }

  /** Everything a stream keeps besides its open windows: one state lookup per sample. */
  public static class StreamClock {
    /** Newest sample time (event time). */
    public long newest = Long.MIN_VALUE;

    /** Processing time of the newest arrival. */
    public long lastArrival;

    /** Early results emitted since the last arrival. */
    public boolean flushed;

    /** Earliest time at which an open window closes (its end + out-of-orderness). */
    public long nextClose = Long.MAX_VALUE;

    /** The idle and end-of-stream timers registered last. */
    public long idleTimer;

    public long retainTimer;

    /**
     * Windows starting before this were emitted final by the stream's end-of-stream marker
     * (Long.MIN_VALUE: no marker yet). Added with the marker; Flink's POJO serializer restores
     * clocks of older checkpoints with the default.
     */
    public long finalBefore = Long.MIN_VALUE;

    /**
     * The highest watermark promise of the stream so far (event time; {@link StreamWatermark#NONE}:
     * none): windows ending at or before it are closed. Added with the promise; Flink's POJO
     * serializer restores clocks of older checkpoints through the no-argument constructor, so they
     * get NONE (and a restore that set the field to Java's 0 instead would close only windows
     * ending before 1970: harmless either way). No state-layout change (Checkpoints.STATE_LAYOUT):
     * a field added to a POJO is a compatible evolution.
     */
    public long promised = StreamWatermark.NONE;

    public StreamClock() {}
  }

  /** A Supplier Flink can ship with the job. */
  public interface SerializableSupplier<A> extends Supplier<A>, java.io.Serializable {}

  public PerStreamWindows(
      Class<A> accumulatorClass,
      SerializableSupplier<A> newAccumulator,
      OutputTag<T> late,
      long sizeMillis,
      long outOfOrdernessMillis,
      long idleMillis,
      long retainMillis) {
    this.accumulatorClass = accumulatorClass;
    this.newAccumulator = newAccumulator;
    this.late = late;
    this.size = sizeMillis;
    this.outOfOrderness = outOfOrdernessMillis;
    this.idle = idleMillis;
    this.retain = Math.max(retainMillis, idleMillis);
  }

  @Override
  public void open(OpenContext context) {
    open =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "open-windows", Types.LONG, TypeInformation.of(accumulatorClass)));
    clock =
        getRuntimeContext().getState(new ValueStateDescriptor<>("stream-clock", StreamClock.class));
  }

  /** Start of the tumbling window holding {@code ts}. */
  static long windowStart(long ts, long size) {
    return ts - Math.floorMod(ts, size);
  }

  @Override
  public void processElement(T s, Context ctx, Collector<DerivedWindow> out) throws Exception {
    StreamClock c = clock.value();
    if (s.endOfStream()) {
      endOfStream(s, c, ctx, out);
      return;
    }
    if (c == null) {
      c = new StreamClock();
      // windows restored without a clock (state of an older job version) still close in time
      c.nextClose = earliestClose();
    }
    long start = windowStart(s.ts(), size);
    if (start < c.finalBefore || closed(start, c)) {
      // its window was emitted final (by the clock, a promise, the end-of-stream marker) or, never
      // opened, is closed already: late. A sample below the stream's promise whose window is still
      // open broke the promise, but nothing was emitted for it yet: it is counted.
      ctx.output(late, s);
      return;
    }
    A acc = open.get(start);
    if (acc == null) {
      acc = newAccumulator.get();
      c.nextClose = Math.min(c.nextClose, start + size + outOfOrderness);
    }
    acc.add(s);
    open.put(start, acc);
    boolean advanced = false;
    if (s.ts() > c.newest) {
      c.newest = s.ts();
      advanced = true;
    }
    if (s.promised() > c.promised) {
      // the record's own sample is in already: its promise is about the records after it
      c.promised = s.promised();
      advanced = true;
    }
    if (advanced && (c.newest >= c.nextClose || promiseReaches(c))) {
      closeUpTo(c, out);
    }
    long now = ctx.timerService().currentProcessingTime();
    c.lastArrival = now;
    c.flushed = false;
    long idleAt = timerAt(now + idle);
    if (idleAt != c.idleTimer) {
      ctx.timerService().registerProcessingTimeTimer(idleAt);
      c.idleTimer = idleAt;
    }
    clock.update(c);
  }

  /**
   * The stream's marker: every open window is final now. The marker is a copy of the stream's last
   * record (its values were added when the record itself came), so it is not added again. A marker
   * of a stream without state (unknown, or ended already) changes nothing.
   */
  private void endOfStream(T marker, StreamClock c, Context ctx, Collector<DerivedWindow> out)
      throws Exception {
    if (c == null && open.isEmpty()) {
      return;
    }
    if (c == null) {
      c = new StreamClock();
    }
    long end = finalAll(out);
    long newest = Math.max(c.newest, marker.ts());
    c.finalBefore = Math.max(c.finalBefore, Math.max(end, windowStart(newest, size) + size));
    c.newest = newest;
    c.nextClose = Long.MAX_VALUE;
    c.flushed = true;
    // the marked clock is dropped by the end-of-stream check after `retain`, as a quiet stream's
    long now = ctx.timerService().currentProcessingTime();
    c.lastArrival = now;
    long retainAt = timerAt(now + retain);
    if (retainAt != c.retainTimer) {
      ctx.timerService().registerProcessingTimeTimer(retainAt);
      c.retainTimer = retainAt;
    }
    clock.update(c);
  }

  /** Every open window emitted final and dropped; the end of the latest (Long.MIN_VALUE: none). */
  private long finalAll(Collector<DerivedWindow> out) throws Exception {
    long end = Long.MIN_VALUE;
    for (Map.Entry<Long, A> e : open.entries()) {
      emit(e.getKey(), e.getValue(), true, out);
      end = Math.max(end, e.getKey() + size);
    }
    open.clear();
    return end;
  }

  /**
   * The window starting at {@code start} is closed for the stream: its newest sample is the
   * allowance past the window's end, or its promise reached the end.
   */
  private boolean closed(long start, StreamClock c) {
    long end = start + size;
    return (c.newest != Long.MIN_VALUE && end + outOfOrderness <= c.newest)
        || (c.promised != StreamWatermark.NONE && end <= c.promised);
  }

  /** The promise closes the earliest open window ({@code nextClose} is its end + the allowance). */
  private boolean promiseReaches(StreamClock c) {
    return c.promised != StreamWatermark.NONE
        && c.nextClose != Long.MAX_VALUE
        && c.promised >= c.nextClose - outOfOrderness;
  }

  private long earliestClose() throws Exception {
    long earliest = Long.MAX_VALUE;
    for (Long start : open.keys()) {
      earliest = Math.min(earliest, start + size + outOfOrderness);
    }
    return earliest;
  }

  private void closeUpTo(StreamClock c, Collector<DerivedWindow> out) throws Exception {
    List<Long> done = new ArrayList<>();
    long earliest = Long.MAX_VALUE;
    for (Map.Entry<Long, A> e : open.entries()) {
      if (closed(e.getKey(), c)) {
        emit(e.getKey(), e.getValue(), true, out);
        done.add(e.getKey());
      } else {
        earliest = Math.min(earliest, e.getKey() + size + outOfOrderness);
      }
    }
    for (Long start : done) {
      open.remove(start);
    }
    c.nextClose = earliest;
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<DerivedWindow> out)
      throws Exception {
    StreamClock c = clock.value();
    if (c == null) {
      return;
    }
    if (timestamp >= c.lastArrival + retain) {
      if (open.isEmpty()) {
        clock.clear(); // nothing open: a stream ended a `retain` ago (by marker or by silence)
        return;
      }
      // quiet for `retain`: the stream has ended, its open windows are final. Its clock stays one
      // more `retain`, marked like an end-of-stream marker's, so a sample of the stream that still
      // comes for one of those windows (the collector was held up longer than `retain`: a registry
      // or broker outage) goes to the late output instead of opening a partial window whose second
      // final would replace the first downstream and be counted twice by the rollups (found by
      // tests/integration/test_faults.py: docs/faults.md F1).
      long end = finalAll(out);
      c.finalBefore = Math.max(c.finalBefore, end);
      c.nextClose = Long.MAX_VALUE;
      c.flushed = true;
      long dropAt = timerAt(timestamp + retain);
      if (dropAt != c.retainTimer) {
        ctx.timerService().registerProcessingTimeTimer(dropAt);
        c.retainTimer = dropAt;
      }
      clock.update(c);
      return;
    }
    if (timestamp < c.lastArrival + idle) {
      return; // a later sample moved the idle check; its own timer comes
    }
    if (!c.flushed) {
      for (Map.Entry<Long, A> e : open.entries()) {
        emit(e.getKey(), e.getValue(), false, out);
      }
      c.flushed = true;
    }
    long retainAt = timerAt(c.lastArrival + retain);
    if (retainAt != c.retainTimer) {
      ctx.timerService().registerProcessingTimeTimer(retainAt);
      c.retainTimer = retainAt;
    }
    clock.update(c);
  }

  private void emit(long start, A acc, boolean isFinal, Collector<DerivedWindow> out) {
    for (DerivedWindow w :
        DerivedWindow.of(acc.metrics(start, start + size, isFinal, System.currentTimeMillis()))) {
      out.collect(w);
    }
  }
}
