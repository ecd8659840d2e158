package io.fleetperf.jobs.samples;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Cumulative port counters -> deltas between a port's successive samples (keyed by port). A counter
 * below its previous value was reset (entstat -reset, reboot): the new value is the count since the
 * reset. The first sample of a port only sets the baseline.
 */
public class CounterDeltas extends KeyedProcessFunction<String, PortCounters, PortDelta> {
  private transient ValueState<PortCounters> previous;

  @Override
  public void open(OpenContext context) {
    previous =
        getRuntimeContext().getState(new ValueStateDescriptor<>("previous", PortCounters.class));
  }

  @Override
  public void processElement(PortCounters now, Context ctx, Collector<PortDelta> out)
      throws Exception {
    if (now.aggregation == null || now.txPackets == null || now.rxPackets == null) {
      return; // not a member port, or no packet counters
    }
    PortCounters before = previous.value();
    if (before != null && now.ts <= before.ts) {
      return; // an older or repeated sample (replay): its delta was counted already
    }
    previous.update(now);
    if (before == null) {
      return;
    }
    PortDelta d =
        new PortDelta(
            now.hostId,
            now.hostname,
            now.aggregation,
            now.adapter,
            now.ts,
            delta(before.txPackets, now.txPackets),
            delta(before.rxPackets, now.rxPackets));
    d.inSync = now.inSync;
    out.collect(d);
  }

  static long delta(long before, long now) {
    return now >= before ? now - before : now;
  }
}
