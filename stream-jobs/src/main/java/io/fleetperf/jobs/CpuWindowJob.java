package io.fleetperf.jobs;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * Per-host tumbling event-time windows over CpuSample records: steal_pct, physc and entc_pct.
 * cpu-samples topic -> windows per host and source stream ({@link PerStreamCpuWindows}) -> derived-metrics topic.
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

    // Event time is kept per host and source stream inside PerStreamCpuWindows, not as a
    // partition-wide watermark.
    SingleOutputStreamOperator<DerivedMetric> metrics =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "cpu-samples")
            .keyBy(CpuSample::streamKey)
            .process(
                new PerStreamCpuWindows(
                    o.window.toMillis(),
                    o.outOfOrderness.toMillis(),
                    o.idleFlush.toMillis(),
                    o.streamRetain.toMillis()))
            .name("cpu-window");
    metrics
        .getSideOutput(PerStreamCpuWindows.LATE)
        .map(s -> s.hostId + " " + s.ts)
        .name("late-samples")
        .print("late cpu sample (window already closed for its stream)");

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
}
