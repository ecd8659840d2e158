package io.fleetperf.jobs;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Tumbling event-time windows with one event clock per host instead of one watermark per Kafka
 * partition. A fleet backfill interleaves files of many hosts from different years: with a shared
 * watermark, last year's file of host B would be "late" behind this week's file of host A and be
 * dropped. Here each host's windows close on that host's own clock (its newest sample minus the
 * allowed out-of-orderness), so hosts never hold back or invalidate each other.
 *
 * <p>A window whose host goes quiet for {@code idle} of processing time emits an early result
 * (is_final=false) so the last minutes of a file do not wait for data that may never come; the
 * final result replaces it downstream when the host's clock passes the window. Samples for a
 * window that has already closed go to {@link #LATE}.
 */
public class PerHostCpuWindows extends KeyedProcessFunction<String, CpuSample, DerivedMetric> {
  public static final OutputTag<CpuSample> LATE = new OutputTag<>("late-cpu-samples") {};

  private final long size;
  private final long outOfOrderness;
  private final long idle;
  private transient MapState<Long, CpuWindowAccumulator> open;
  private transient ValueState<Long> newestSample;
  private transient ValueState<Long> lastArrival;

  public PerHostCpuWindows(long sizeMillis, long outOfOrdernessMillis, long idleMillis) {
    this.size = sizeMillis;
    this.outOfOrderness = outOfOrdernessMillis;
    this.idle = idleMillis;
  }

  @Override
  public void open(OpenContext context) {
    open = getRuntimeContext()
        .getMapState(new MapStateDescriptor<>("open-windows", Long.class, CpuWindowAccumulator.class));
    newestSample = getRuntimeContext().getState(new ValueStateDescriptor<>("newest-sample", Long.class));
    lastArrival = getRuntimeContext().getState(new ValueStateDescriptor<>("last-arrival", Long.class));
  }

  /** Start of the tumbling window holding {@code ts}. */
  static long windowStart(long ts, long size) {
    return ts - Math.floorMod(ts, size);
  }

  @Override
  public void processElement(CpuSample s, Context ctx, Collector<DerivedMetric> out) throws Exception {
    long start = windowStart(s.ts, size);
    Long newest = newestSample.value();
    if (newest != null && closed(start, newest)) {
      ctx.output(LATE, s);
      return;
    }
    CpuWindowAccumulator acc = open.get(start);
    open.put(start, (acc == null ? new CpuWindowAccumulator() : acc).add(s));
    if (newest == null || s.ts > newest) {
      newest = s.ts;
      newestSample.update(newest);
      closeUpTo(ctx.getCurrentKey(), newest, out);
    }
    long now = ctx.timerService().currentProcessingTime();
    lastArrival.update(now);
    ctx.timerService().registerProcessingTimeTimer(now + idle);
  }

  private boolean closed(long start, long newest) {
    return start + size + outOfOrderness <= newest;
  }

  private void closeUpTo(String host, long newest, Collector<DerivedMetric> out) throws Exception {
    List<Long> done = new ArrayList<>();
    for (Map.Entry<Long, CpuWindowAccumulator> e : open.entries()) {
      if (closed(e.getKey(), newest)) {
        emit(host, e.getKey(), e.getValue(), true, out);
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
    // every sample registers a timer; only the one that finds the host quiet since then flushes
    if (last == null || timestamp < last + idle) {
      return;
    }
    for (Map.Entry<Long, CpuWindowAccumulator> e : open.entries()) {
      emit(ctx.getCurrentKey(), e.getKey(), e.getValue(), false, out);
    }
    lastArrival.clear();
  }

  private void emit(String host, long start, CpuWindowAccumulator acc, boolean isFinal, Collector<DerivedMetric> out) {
    for (DerivedMetric m : acc.metrics(host, start, start + size, isFinal, System.currentTimeMillis())) {
      out.collect(m);
    }
  }
}
