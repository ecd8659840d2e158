package io.fleetperf.jobs.flags;

import io.fleetperf.jobs.windows.DerivedMetric;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * {@link FlagDetector} per entity and metric, its state in Flink (keyed: scales out, no global
 * state).
 */
public class FlagFunction extends KeyedProcessFunction<String, DerivedMetric, AnomalyFlag> {
  private final FlagDetector detector;
  private transient ValueState<FlagDetector.State> state;

  public FlagFunction(FlagDetector detector) {
    this.detector = detector;
  }

  @Override
  public void open(OpenContext context) {
    state =
        getRuntimeContext()
            .getState(
                new ValueStateDescriptor<>(
                    "flag-state", TypeInformation.of(FlagDetector.State.class)));
  }

  @Override
  public void processElement(DerivedMetric m, Context ctx, Collector<AnomalyFlag> out)
      throws Exception {
    FlagDetector.State s = state.value();
    if (s == null) {
      s = new FlagDetector.State();
    }
    for (AnomalyFlag f : detector.evaluate(s, m, System.currentTimeMillis())) {
      out.collect(f);
    }
    state.update(s);
  }

  public static String key(DerivedMetric m) {
    return m.entityId + "|" + m.metric;
  }
}
