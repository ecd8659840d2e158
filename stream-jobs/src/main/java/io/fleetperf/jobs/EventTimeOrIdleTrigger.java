package io.fleetperf.jobs;

import java.time.Duration;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.triggers.TriggerResult;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/**
 * Fires a window when the watermark passes its end (final result), and also early when no new
 * element has reached it for {@code idle} of processing time. nmon files arrive in bursts: without
 * the early firing, the last minutes of a backfilled file would wait for data that may never come.
 * Downstream keeps the newest emission per window, so an early result is replaced by the final one.
 */
public class EventTimeOrIdleTrigger extends Trigger<Object, TimeWindow> {
  private final long idleMillis;
  private final ValueStateDescriptor<Long> lastSeen = new ValueStateDescriptor<>("last-element-at", Long.class);

  public EventTimeOrIdleTrigger(Duration idle) {
    this.idleMillis = idle.toMillis();
  }

  @Override
  public TriggerResult onElement(Object element, long timestamp, TimeWindow window, TriggerContext ctx)
      throws Exception {
    if (window.maxTimestamp() <= ctx.getCurrentWatermark()) {
      return TriggerResult.FIRE;
    }
    ctx.registerEventTimeTimer(window.maxTimestamp());
    long now = ctx.getCurrentProcessingTime();
    ctx.getPartitionedState(lastSeen).update(now);
    ctx.registerProcessingTimeTimer(now + idleMillis);
    return TriggerResult.CONTINUE;
  }

  @Override
  public TriggerResult onEventTime(long time, TimeWindow window, TriggerContext ctx) {
    return time == window.maxTimestamp() ? TriggerResult.FIRE_AND_PURGE : TriggerResult.CONTINUE;
  }

  @Override
  public TriggerResult onProcessingTime(long time, TimeWindow window, TriggerContext ctx) throws Exception {
    // Every element registers a timer; only the one that finds the window quiet since then fires.
    Long last = ctx.getPartitionedState(lastSeen).value();
    return last != null && time >= last + idleMillis ? TriggerResult.FIRE : TriggerResult.CONTINUE;
  }

  @Override
  public void clear(TimeWindow window, TriggerContext ctx) {
    ctx.deleteEventTimeTimer(window.maxTimestamp());
    ctx.getPartitionedState(lastSeen).clear();
  }

  @Override
  public String toString() {
    return "EventTimeOrIdleTrigger(idle=" + idleMillis + "ms)";
  }
}
