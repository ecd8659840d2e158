package io.fleetperf.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fleetperf.jobs.flags.BaselineSettings;
import io.fleetperf.jobs.flags.FlagDetector;
import io.fleetperf.jobs.flags.FlagRule;
import java.io.IOException;
import java.io.Reader;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * The job's settings, read from one JSON file ({@code --settings FILE}) that the Python side writes
 * from config/fleetperf.toml after its FLEETPERF__SECTION__KEY overrides ({@code
 * fleetperf.config.job_settings}, written by {@code ./fleetperf up} to {@code
 * <state>/job-settings.json}). There are no defaults here: a missing key is an error naming the key
 * and the file, so config/fleetperf.toml stays the one place where values are defined. Topics are
 * looked up by their key in [topics]; name, schema file and subject come with them.
 */
public final class JobSettings implements Serializable {
  /** Keys of [topics] the job reads and writes. */
  public static final String CPU_SAMPLES = "cpu_samples";

  public static final String HPM_SAMPLES = "hpm_samples";
  public static final String NET_PORT_SAMPLES = "net_port_samples";
  public static final String ZVM_GUEST_SAMPLES = "zvm_guest_samples";
  public static final String ZVM_SYSTEM_SAMPLES = "zvm_system_samples";
  public static final String DERIVED_WINDOWS = "derived_windows";
  public static final String ANOMALY_FLAGS = "anomaly_flags";
  public static final String DEAD_LETTERS = "dead_letters";

  /** One [topics.KEY] table: topic name, Avro schema file of schemas/, registry subject. */
  public static final class Topic implements Serializable {
    public final String key;
    public final String name;
    public final String schema;
    public final String subject;

    Topic(String key, String name, String schema, String subject) {
      this.key = key;
      this.name = name;
      this.schema = schema;
      this.subject = subject;
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private final String origin;
  public final String bootstrap;

  /**
   * Kafka client properties of every sink of the job (kafka.producer: how they batch), as Python's
   * config.producer_properties names them from [kafka] for the collectors' producers too; applied
   * as they are, so no property name is spelled here.
   */
  public final Map<String, String> producerProperties;

  public final String registryUrl;
  private final Map<String, Topic> topics;

  /** No T/V below this many virtual CPU seconds in a window. */
  public final double tvMinVirtualS;

  /** The flag rules and baselines (a properties file, config/flag-rules.properties by default). */
  public final String flagRules;

  public final int flagMaxGapWindows;

  /** Exactly once into Kafka (transactions committed on checkpoints) or at least once. */
  public final boolean exactlyOnce;

  /**
   * Where checkpoints are kept and, on start, restored from (the newest complete one); empty: none.
   */
  public final String checkpointDir;

  public final String groupId;
  public final Duration window;
  public final Duration outOfOrderness;
  public final Duration idleFlush;
  public final Duration checkpointInterval;
  public final Duration streamRetain;

  /** REST port of the MiniCluster; 0 = Flink's default. */
  public final int restPort;

  /** Operator parallelism; 0 = Flink's default (all cores on the local MiniCluster). */
  public final int parallelism;

  private JobSettings(JsonNode root, String origin) {
    this.origin = origin;
    JsonNode kafka = node(root, "kafka");
    bootstrap = text(kafka, "bootstrap");
    producerProperties = properties(kafka, "producer");
    registryUrl = text(node(root, "registry"), "url");
    Map<String, Topic> t = new LinkedHashMap<>();
    JsonNode topicsNode = node(root, "topics");
    topicsNode
        .fieldNames()
        .forEachRemaining(
            key -> {
              JsonNode spec = node(topicsNode, key);
              t.put(
                  key,
                  new Topic(key, text(spec, "name"), text(spec, "schema"), text(spec, "subject")));
            });
    topics = Collections.unmodifiableMap(t);
    JsonNode flink = node(root, "flink");
    tvMinVirtualS = number(flink, "tv_min_virtual_seconds");
    flagRules = text(flink, "flag_rules");
    flagMaxGapWindows = integer(flink, "flag_max_gap_windows");
    String delivery = text(flink, "delivery");
    if (!delivery.equals("exactly-once") && !delivery.equals("at-least-once")) {
      throw new IllegalArgumentException(
          origin + ": flink.delivery must be exactly-once or at-least-once, got " + delivery);
    }
    exactlyOnce = delivery.equals("exactly-once");
    checkpointDir = flink.has("checkpoint_dir") ? text(flink, "checkpoint_dir") : "";
    groupId = text(flink, "group_id");
    window = Duration.ofSeconds(integer(flink, "window_seconds"));
    outOfOrderness = Duration.ofSeconds(integer(flink, "out_of_orderness_seconds"));
    idleFlush = Duration.ofSeconds(integer(flink, "idle_flush_seconds"));
    checkpointInterval = Duration.ofSeconds(integer(flink, "checkpoint_interval_seconds"));
    streamRetain = Duration.ofSeconds(integer(flink, "stream_retain_seconds"));
    restPort = integer(flink, "rest_port");
    parallelism = integer(flink, "parallelism");
  }

  /** A topic the job must have. */
  public Topic topic(String key) {
    Topic t = topics.get(key);
    if (t == null) {
      throw new IllegalArgumentException(origin + ": missing topics." + key);
    }
    return t;
  }

  /**
   * A topic the job uses when configured (an input the deployment does not have is not consumed).
   */
  public Optional<Topic> optionalTopic(String key) {
    return Optional.ofNullable(topics.get(key));
  }

  /** The flag rules and baseline settings of flink.flag_rules. */
  public FlagDetector flagDetector() {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(Path.of(flagRules))) {
      p.load(r);
    } catch (IOException e) {
      throw new UncheckedIOException(origin + ": cannot read flink.flag_rules " + flagRules, e);
    }
    return new FlagDetector(
        FlagRule.fromProperties(p), BaselineSettings.fromProperties(p), flagMaxGapWindows);
  }

  public static JobSettings parse(String[] args) {
    if (args.length != 2 || !args[0].equals("--settings")) {
      throw new IllegalArgumentException(
          "usage: --settings FILE.json (written by ./fleetperf up from"
              + " config/fleetperf.toml: fleetperf.config.job_settings)");
    }
    return read(Path.of(args[1]));
  }

  public static JobSettings read(Path file) {
    try {
      return fromJson(Files.readString(file), file.toString());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read job settings " + file, e);
    }
  }

  public static JobSettings fromJson(String json, String origin) {
    try {
      return new JobSettings(JSON.readTree(json), origin);
    } catch (IOException e) {
      throw new IllegalArgumentException(origin + ": not JSON: " + e.getMessage(), e);
    }
  }

  private JsonNode node(JsonNode parent, String key) {
    JsonNode n = parent.get(key);
    if (n == null || !n.isObject()) {
      throw new IllegalArgumentException(origin + ": missing section " + key);
    }
    return n;
  }

  /** An object of client properties: each value a string, number or boolean, kept as its text. */
  private Map<String, String> properties(JsonNode parent, String key) {
    JsonNode n = node(parent, key);
    Map<String, String> p = new LinkedHashMap<>();
    n.fields()
        .forEachRemaining(
            e -> {
              JsonNode v = e.getValue();
              if (!v.isValueNode() || v.isNull()) {
                throw new IllegalArgumentException(
                    origin + ": " + key + "." + e.getKey() + " must be a value, got " + v);
              }
              p.put(e.getKey(), v.asText());
            });
    if (p.isEmpty()) {
      throw new IllegalArgumentException(origin + ": " + key + " names no property");
    }
    return Collections.unmodifiableMap(p);
  }

  private JsonNode value(JsonNode parent, String key) {
    JsonNode n = parent.get(key);
    if (n == null || n.isNull()) {
      throw new IllegalArgumentException(origin + ": missing " + key);
    }
    return n;
  }

  private String text(JsonNode parent, String key) {
    JsonNode n = value(parent, key);
    if (!n.isTextual()) {
      throw new IllegalArgumentException(origin + ": " + key + " must be a string, got " + n);
    }
    return n.asText();
  }

  private int integer(JsonNode parent, String key) {
    JsonNode n = value(parent, key);
    if (!n.canConvertToInt() || !n.isIntegralNumber()) {
      throw new IllegalArgumentException(origin + ": " + key + " must be an integer, got " + n);
    }
    return n.intValue();
  }

  private double number(JsonNode parent, String key) {
    JsonNode n = value(parent, key);
    if (!n.isNumber()) {
      throw new IllegalArgumentException(origin + ": " + key + " must be a number, got " + n);
    }
    return n.doubleValue();
  }
}
