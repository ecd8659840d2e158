package io.fleetperf.jobs;

import io.fleetperf.jobs.flags.AnomalyFlag;
import io.fleetperf.jobs.flags.FlagDetector;
import io.fleetperf.jobs.flags.FlagFunction;
import io.fleetperf.jobs.samples.CounterDeltas;
import io.fleetperf.jobs.samples.CpuSample;
import io.fleetperf.jobs.samples.HpmSample;
import io.fleetperf.jobs.samples.LateSample;
import io.fleetperf.jobs.samples.PortCounters;
import io.fleetperf.jobs.samples.PortDelta;
import io.fleetperf.jobs.samples.Sample;
import io.fleetperf.jobs.samples.ZvmCpuSample;
import io.fleetperf.jobs.windows.CpuWindowAccumulator;
import io.fleetperf.jobs.windows.DerivedMetric;
import io.fleetperf.jobs.windows.DerivedWindow;
import io.fleetperf.jobs.windows.LacpWindowAccumulator;
import io.fleetperf.jobs.windows.PerStreamWindows;
import io.fleetperf.jobs.windows.SlbWindowAccumulator;
import io.fleetperf.jobs.windows.TvWindowAccumulator;
import io.fleetperf.jobs.windows.WindowAccumulator;
import io.fleetperf.jobs.wire.AnomalyFlagSerializer;
import io.fleetperf.jobs.wire.DerivedWindowSerializer;
import io.fleetperf.jobs.wire.LateSampleSerializer;
import io.fleetperf.jobs.wire.RegistryAvroDeserializer;
import java.util.Optional;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * Derived metrics: tumbling event-time windows per entity and source stream ({@link
 * PerStreamWindows}) over the cpu, hpm, net-port and z/VM sample topics, one accumulator per input
 * (which metrics each yields: config/metrics.toml), into the derived-windows topic (one record per
 * entity and window with all its metrics); final windows' metrics feed the rule and baseline flags
 * of the anomaly-flags topic. Settings: {@link JobSettings}.
 */
public final class DerivedMetricsJob {
  private DerivedMetricsJob() {}

  public static void main(String[] args) throws Exception {
    JobSettings o = JobSettings.parse(args);
    Configuration conf = new Configuration();
    if (o.parallelism > 0) {
      conf.set(CoreOptions.DEFAULT_PARALLELISM, o.parallelism);
    }
    if (o.restPort > 0) {
      conf.set(RestOptions.PORT, o.restPort);
      conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
    }
    if (!o.checkpointDir.isEmpty()) {
      java.nio.file.Path dir = java.nio.file.Path.of(o.checkpointDir).toAbsolutePath();
      conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
      conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir.toUri().toString());
      conf.set(
          CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
          ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
      conf.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
      // a restart (crash, kill, upgrade) continues from the newest complete checkpoint: window
      // state,
      // Kafka offsets and the open transactions' fate all come from there
      Checkpoints.restorable(dir)
          .ifPresent(
              chk -> {
                System.out.println("restoring from checkpoint " + chk);
                conf.set(StateRecoveryOptions.SAVEPOINT_PATH, chk.toString());
                // an operator removed by an upgrade must not block the restore of the others
                conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
              });
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.enableCheckpointing(o.checkpointInterval.toMillis(), CheckpointingMode.EXACTLY_ONCE);
    build(env, o);
    env.execute("fleetperf-derived-metrics");
  }

  /** The final metrics of a window the flags watch. */
  static final class WatchedFinals implements FlatMapFunction<DerivedWindow, DerivedMetric> {
    private final FlagDetector detector;

    WatchedFinals(FlagDetector detector) {
      this.detector = detector;
    }

    @Override
    public void flatMap(DerivedWindow w, Collector<DerivedMetric> out) {
      for (DerivedMetric m : w.metrics) {
        if (m.isFinal && detector.watches(m.metric)) {
          out.collect(m);
        }
      }
    }
  }

  /** The late side outputs of the windows built by one build() call. */
  private static final ThreadLocal<java.util.List<DataStream<LateSample>>> LATE =
      ThreadLocal.withInitial(java.util.ArrayList::new);

  static void build(StreamExecutionEnvironment env, JobSettings o) {
    LATE.get().clear();
    // Without object reuse Flink deep-copies every record handed to a chained operator (the window
    // operators' derived metrics to their sink and to the flags' filter: PojoSerializer.copy by
    // reflection, 4 % of the job's Java samples on a fleet's backlog, JFR session 20). Safe here:
    // no operator keeps or changes a record it received through a chain (each emits new objects,
    // the sinks serialise at once), and records arriving over the network are always fresh
    // objects (Flink's network input never reuses them).
    env.getConfig().enableObjectReuse();
    // Event time is kept per host and source stream inside PerStreamWindows, not as a
    // partition-wide watermark. One window operator per input, in this order (the first keeps the
    // uid and transactional id prefix of the one derived-metrics sink of earlier versions).
    java.util.Map<String, DataStream<DerivedWindow>> outputs = new java.util.LinkedHashMap<>();
    outputs.put(
        "cpu",
        windows(
            o,
            source(env, o, o.topic(JobSettings.CPU_SAMPLES), CpuSample.class, CpuSample::fromAvro),
            CpuSample.class,
            CpuWindowAccumulator.class,
            CpuWindowAccumulator::new,
            "cpu"));
    o.optionalTopic(JobSettings.HPM_SAMPLES)
        .ifPresent(
            hpm ->
                outputs.put(
                    "slb",
                    windows(
                        o,
                        source(env, o, hpm, HpmSample.class, HpmSample::fromAvro),
                        HpmSample.class,
                        SlbWindowAccumulator.class,
                        SlbWindowAccumulator::new,
                        "slb")));
    Optional<JobSettings.Topic> ports = o.optionalTopic(JobSettings.NET_PORT_SAMPLES);
    if (ports.isPresent()) {
      DataStream<PortDelta> deltas =
          source(env, o, ports.get(), PortCounters.class, PortCounters::fromAvro)
              .keyBy(PortCounters::portKey, Types.STRING)
              .process(new CounterDeltas(), TypeInformation.of(PortDelta.class))
              .name("port-deltas")
              .uid("port-deltas");
      outputs.put(
          "lacp",
          windows(
              o,
              deltas,
              PortDelta.class,
              LacpWindowAccumulator.class,
              LacpWindowAccumulator::new,
              "lacp"));
    }
    double floor = o.tvMinVirtualS;
    o.optionalTopic(JobSettings.ZVM_GUEST_SAMPLES)
        .ifPresent(
            guests ->
                outputs.put(
                    "zvm-guest",
                    windows(
                        o,
                        source(env, o, guests, ZvmCpuSample.class, ZvmCpuSample::fromGuestAvro),
                        ZvmCpuSample.class,
                        TvWindowAccumulator.class,
                        () -> new TvWindowAccumulator(floor),
                        "zvm-guest")));
    o.optionalTopic(JobSettings.ZVM_SYSTEM_SAMPLES)
        .ifPresent(
            systems ->
                outputs.put(
                    "zvm-system",
                    windows(
                        o,
                        source(env, o, systems, ZvmCpuSample.class, ZvmCpuSample::fromSystemAvro),
                        ZvmCpuSample.class,
                        TvWindowAccumulator.class,
                        () -> new TvWindowAccumulator(floor),
                        "zvm-system")));

    // Each window operator writes its derived windows itself, through a Kafka sink chained to it,
    // and picks the final metrics the flags watch itself: a union of the window operators' outputs
    // cannot be chained, so every derived metric crossed the network stack twice (to the one sink,
    // to the flags' filter), (de)serialised as a POJO each time (JFR on a fleet's backfill: 25 % of
    // the job's samples in that exchange). Only the watched final metrics cross it now, to the
    // flags keyed by entity and metric. One Kafka record per window, not per metric: writing a
    // record cost about 6 us of the job's CPU, a third of it on a fleet's backlog (session 21).
    JobSettings.Topic derived = o.topic(JobSettings.DERIVED_WINDOWS);
    Optional<JobSettings.Topic> flagTopic = o.optionalTopic(JobSettings.ANOMALY_FLAGS);
    FlagDetector detector = flagTopic.isPresent() ? o.flagDetector() : null;
    DataStream<DerivedMetric> watched = null;
    for (java.util.Map.Entry<String, DataStream<DerivedWindow>> e : outputs.entrySet()) {
      String name = e.getKey();
      boolean first = name.equals("cpu");
      e.getValue()
          .sinkTo(
              kafkaSink(
                  o,
                  derived.name,
                  first ? "derived" : "derived-" + name,
                  new DerivedWindowSerializer(o.registryUrl, derived.subject, derived.schema),
                  w -> w.first().entityId))
          .name(name + "-derived-metrics")
          .uid(first ? "derived-metrics-sink" : "derived-metrics-sink-" + name);
      if (detector != null) {
        DataStream<DerivedMetric> finals =
            e.getValue()
                .flatMap(new WatchedFinals(detector), TypeInformation.of(DerivedMetric.class))
                .name(name + "-final-windows");
        watched = watched == null ? finals : watched.union(finals);
      }
    }

    DataStream<LateSample> late = null;
    for (DataStream<LateSample> l : LATE.get()) {
      late = late == null ? l : late.union(l);
    }
    Optional<JobSettings.Topic> deadLetters = o.optionalTopic(JobSettings.DEAD_LETTERS);
    if (late != null && deadLetters.isPresent()) {
      JobSettings.Topic dl = deadLetters.get();
      late.sinkTo(
              kafkaSink(
                  o,
                  dl.name,
                  "late",
                  new LateSampleSerializer(
                      o.registryUrl, dl.subject, dl.schema, o.outOfOrderness.toMillis()),
                  l -> l.stream))
          .name("late-samples")
          .uid("late-samples-sink");
    } else if (late != null) {
      late.print("late sample").name("late-samples");
    }

    if (watched != null) {
      JobSettings.Topic ft = flagTopic.get();
      DataStream<AnomalyFlag> flags =
          watched
              .keyBy(FlagFunction::key, Types.STRING)
              .process(new FlagFunction(detector), TypeInformation.of(AnomalyFlag.class))
              .name("flags")
              .uid("flags");
      flags
          .sinkTo(
              kafkaSink(
                  o,
                  ft.name,
                  "flags",
                  new AnomalyFlagSerializer(o.registryUrl, ft.subject, ft.schema),
                  f -> f.entityId))
          .name("anomaly-flags")
          .uid("anomaly-flags-sink");
    }
  }

  /**
   * Below the broker's transaction.max.timeout.ms (15 min by default), above any checkpoint pause.
   */
  private static final String TRANSACTION_TIMEOUT_MS = "600000";

  /** A key for Kafka's partitioning (the entity), as a function Flink can ship. */
  interface KeyOf<T> extends java.util.function.Function<T, String>, java.io.Serializable {}

  /** Exactly once: one transaction per checkpoint, under a prefix per output. */
  private static <T> KafkaSink<T> kafkaSink(
      JobSettings o, String topic, String prefix, SerializationSchema<T> value, KeyOf<T> key) {
    return KafkaSink.<T>builder()
        .setBootstrapServers(o.bootstrap)
        .setRecordSerializer(
            KafkaRecordSerializationSchema.<T>builder()
                .setTopic(topic)
                .setKeySerializationSchema(
                    v -> key.apply(v).getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .setValueSerializationSchema(value)
                .build())
        .setDeliveryGuarantee(
            o.exactlyOnce ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE)
        .setTransactionalIdPrefix(o.groupId + "-" + prefix)
        .setKafkaProducerConfig(producerProperties(o))
        .build();
  }

  /** The Kafka client properties of every sink of the job: batching as the settings give it. */
  static java.util.Properties producerProperties(JobSettings o) {
    java.util.Properties p = new java.util.Properties();
    p.setProperty("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS);
    p.putAll(o.producerProperties);
    return p;
  }

  private static <T> DataStream<T> source(
      StreamExecutionEnvironment env,
      JobSettings o,
      JobSettings.Topic topic,
      Class<T> type,
      RegistryAvroDeserializer.Mapper<T> mapper) {
    KafkaSource<T> source =
        KafkaSource.<T>builder()
            .setBootstrapServers(o.bootstrap)
            .setTopics(topic.name)
            .setGroupId(o.groupId)
            .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
            .setDeserializer(
                new RegistryAvroDeserializer<>(o.registryUrl, topic.schema, type, mapper))
            .build();
    // the uid keeps the topic name: a restore finds the source's offsets under it
    return env.fromSource(source, WatermarkStrategy.noWatermarks(), topic.name)
        .uid("source-" + topic.name);
  }

  private static <T extends Sample, A extends WindowAccumulator<T>>
      DataStream<DerivedWindow> windows(
          JobSettings o,
          DataStream<T> samples,
          Class<T> sampleType,
          Class<A> accumulator,
          PerStreamWindows.SerializableSupplier<A> newAccumulator,
          String name) {
    OutputTag<T> late = new OutputTag<>("late-" + name, TypeInformation.of(sampleType));
    SingleOutputStreamOperator<DerivedWindow> out =
        samples
            .keyBy(Sample::streamKey, Types.STRING)
            .process(
                new PerStreamWindows<>(
                    accumulator,
                    newAccumulator,
                    late,
                    o.window.toMillis(),
                    o.outOfOrderness.toMillis(),
                    o.idleFlush.toMillis(),
                    o.streamRetain.toMillis()),
                TypeInformation.of(DerivedWindow.class))
            .name(name + "-windows")
            .uid(name + "-windows");
    DataStream<LateSample> lateSamples =
        out.getSideOutput(late)
            .map(s -> new LateSample(name, s), TypeInformation.of(LateSample.class))
            .name(name + "-late");
    LATE.get().add(lateSamples);
    return out;
  }
}
