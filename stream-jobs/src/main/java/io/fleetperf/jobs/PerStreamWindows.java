package io.fleetperf.jobs;

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
 * Tumbling event-time windows with one event clock per source stream (host and file, see
 * {@link Sample#streamKey()}) instead of one watermark per Kafka partition. What a window sums and
 * which metrics it yields is the accumulator's business ({@link CpuWindowAccumulator},
 * {@link SlbWindowAccumulator}).
 *
 * <p>Why: a file written by nmon or sadc is an ordered stream of one host, but a fleet backfill
 * interleaves files of many hosts and periods, and users backfill last year's archive of a host
 * while today's file of the same host streams live. With a shared watermark (or one clock per
 * host) the older data would be dropped as late. With one clock per stream, each file's windows
 * close on that file's own time: a window closes when the stream's newest sample is
 * {@code outOfOrderness} past its end.
 *
 * <p>A stream that goes quiet for {@code idle} of processing time emits early results for its open
 * windows (is_final=false), so the last minutes of a file do not wait for data that may never
 * come; the final result replaces them downstream (ReplacingMergeTree on emitted_at). A stream
 * quiet for {@code retain} is considered ended: its open windows are emitted as final and its
 * state is dropped. Samples for a window already closed go to the late side output.
 */
public class PerStreamWindows<T extends Sample, A extends WindowAccumulator<T>>
    extends KeyedProcessFunction<String, T, DerivedMetric> {
  private final OutputTag<T> late;
  private final Class<A> accumulatorClass;
  private final SerializableSupplier<A> newAccumulator;

  private final long size;
  private final long outOfOrderness;
  private final long idle;
  private final long retain;
  private transient MapState<Long, A> open;
  private transient ValueState<Long> newestSample;
  private transient ValueState<Long> lastArrival;
  private transient ValueState<Boolean> flushed;

  /**
   * Processing-time timers are rounded up to whole seconds: Flink keeps one timer per key and
   * time, so a stream's samples within a second share one pair instead of each adding two to the
   * timer queue and firing them later (measured: at-least-once backlog +18 %, exactly-once, bound
   * by checkpoint commits, unchanged; see bench/flink_throughput.py).
   */
  static final long TIMER_GRANULARITY_MS = 1000;

  static long timerAt(long t) {
    return Math.floorDiv(t + TIMER_GRANULARITY_MS - 1, TIMER_GRANULARITY_MS) * TIMER_GRANULARITY_MS;
  }

  /** A Supplier Flink can ship with the job. */
  public interface SerializableSupplier<A> extends Supplier<A>, java.io.Serializable {}

  public PerStreamWindows(
      Class<A> accumulatorClass, SerializableSupplier<A> newAccumulator, OutputTag<T> late, long sizeMillis,
      long outOfOrdernessMillis, long idleMillis, long retainMillis) {
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
    open = getRuntimeContext()
        .getMapState(new MapStateDescriptor<>("open-windows", Types.LONG, TypeInformation.of(accumulatorClass)));
    newestSample = getRuntimeContext().getState(new ValueStateDescriptor<>("newest-sample", Long.class));
    lastArrival = getRuntimeContext().getState(new ValueStateDescriptor<>("last-arrival", Long.class));
    flushed = getRuntimeContext().getState(new ValueStateDescriptor<>("flushed", Boolean.class));
  }

  /** Start of the tumbling window holding {@code ts}. */
  static long windowStart(long ts, long size) {
    return ts - Math.floorMod(ts, size);
  }

  @Override
  public void processElement(T s, Context ctx, Collector<DerivedMetric> out) throws Exception {
    long start = windowStart(s.ts(), size);
    Long newest = newestSample.value();
    if (newest != null && closed(start, newest)) {
      ctx.output(late, s);
      return;
    }
    A acc = open.get(start);
    if (acc == null) {
      acc = newAccumulator.get();
    }
    acc.add(s);
    open.put(start, acc);
    if (newest == null || s.ts() > newest) {
      newest = s.ts();
      newestSample.update(newest);
      closeUpTo(newest, out);
    }
    long now = ctx.timerService().currentProcessingTime();
    lastArrival.update(now);
    flushed.update(false);
    ctx.timerService().registerProcessingTimeTimer(timerAt(now + idle));
    ctx.timerService().registerProcessingTimeTimer(timerAt(now + retain));
  }

  private boolean closed(long start, long newest) {
    return start + size + outOfOrderness <= newest;
  }

  private void closeUpTo(long newest, Collector<DerivedMetric> out) throws Exception {
    List<Long> done = new ArrayList<>();
    for (Map.Entry<Long, A> e : open.entries()) {
      if (closed(e.getKey(), newest)) {
        emit(e.getKey(), e.getValue(), true, out);
        done.add(e.getKey());
      }
    }
    for (Long start : done) {
      open.remove(start);
    }
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<DerivedMetric> out) throws Exception {
    Long last = lastArrival.value();
    if (last == null) {
      return;
    }
    // every sample registers timers; only those that find the stream quiet since then act
    if (timestamp >= last + retain) {
      for (Map.Entry<Long, A> e : open.entries()) {
        emit(e.getKey(), e.getValue(), true, out);
      }
      open.clear();
      newestSample.clear();
      lastArrival.clear();
      flushed.clear();
    } else if (timestamp >= last + idle && !Boolean.TRUE.equals(flushed.value())) {
      for (Map.Entry<Long, A> e : open.entries()) {
        emit(e.getKey(), e.getValue(), false, out);
      }
      flushed.update(true);
    }
  }

  private void emit(long start, A acc, boolean isFinal, Collector<DerivedMetric> out) {
    for (DerivedMetric m : acc.metrics(start, start + size, isFinal, System.currentTimeMillis())) {
      out.collect(m);
    }
  }
}
