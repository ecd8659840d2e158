package io.fleetperf.jobs;

import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * Per-host tumbling event-time windows over CpuSample records: steal_pct, physc and entc_pct.
 * cpu-samples topic -> windows keyed by host_id -> derived-metrics topic.
 */
public final class CpuWindowJob {
  private CpuWindowJob() {}

  public static void main(String[] args) throws Exception {
    JobOptions o = JobOptions.parse(args);
    Configuration conf = new Configuration();
    if (o.restPort > 0) {
      conf.set(RestOptions.PORT, o.restPort);
      conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.enableCheckpointing(o.checkpointInterval.toMillis());
    build(env, o);
    env.execute("fleetperf-cpu-window");
  }

  static void build(StreamExecutionEnvironment env, JobOptions o) {
    KafkaSource<CpuSample> source =
        KafkaSource.<CpuSample>builder()
            .setBootstrapServers(o.bootstrap)
            .setTopics(o.sourceTopic)
            .setGroupId(o.groupId)
            .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
            .setDeserializer(new CpuSampleDeserializer(o.registryUrl))
            .build();

    WatermarkStrategy<CpuSample> watermarks =
        WatermarkStrategy.<CpuSample>forBoundedOutOfOrderness(o.outOfOrderness)
            .withTimestampAssigner((s, previous) -> s.ts)
            .withIdleness(Duration.ofSeconds(30));

    DataStream<DerivedMetric> metrics =
        env.fromSource(source, watermarks, "cpu-samples")
            .keyBy(s -> s.hostId)
            .window(TumblingEventTimeWindows.of(o.window))
            .trigger(new EventTimeOrIdleTrigger(o.idleFlush))
            .aggregate(new Sum(), new Emit())
            .name("cpu-window");

    KafkaSink<DerivedMetric> sink =
        KafkaSink.<DerivedMetric>builder()
            .setBootstrapServers(o.bootstrap)
            .setRecordSerializer(
                KafkaRecordSerializationSchema.<DerivedMetric>builder()
                    .setTopic(o.sinkTopic)
                    .setKeySerializationSchema(m -> m.entityId.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                    .setValueSerializationSchema(new DerivedMetricSerializer(o.registryUrl, o.sinkTopic + "-value"))
                    .build())
            .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
            .build();
    metrics.sinkTo(sink).name("derived-metrics");
  }

  static final class Sum implements AggregateFunction<CpuSample, CpuWindowAccumulator, CpuWindowAccumulator> {
    @Override
    public CpuWindowAccumulator createAccumulator() {
      return new CpuWindowAccumulator();
    }

    @Override
    public CpuWindowAccumulator add(CpuSample value, CpuWindowAccumulator acc) {
      return acc.add(value);
    }

    @Override
    public CpuWindowAccumulator getResult(CpuWindowAccumulator acc) {
      return acc;
    }

    @Override
    public CpuWindowAccumulator merge(CpuWindowAccumulator a, CpuWindowAccumulator b) {
      return a.merge(b);
    }
  }

  static final class Emit extends ProcessWindowFunction<CpuWindowAccumulator, DerivedMetric, String, TimeWindow> {
    @Override
    public void process(
        String hostId, Context ctx, Iterable<CpuWindowAccumulator> sums, Collector<DerivedMetric> out) {
      TimeWindow w = ctx.window();
      boolean isFinal = ctx.currentWatermark() >= w.maxTimestamp();
      long now = System.currentTimeMillis();
      for (CpuWindowAccumulator acc : sums) {
        for (DerivedMetric m : acc.metrics(hostId, w.getStart(), w.getEnd(), isFinal, now)) {
          out.collect(m);
        }
      }
    }
  }
}
