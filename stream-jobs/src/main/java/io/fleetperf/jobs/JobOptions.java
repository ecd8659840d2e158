package io.fleetperf.jobs;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Command-line options of the job. The values come from config/fleetperf.toml through the CLI
 * that starts the job, so topic names and ports are defined in one place only.
 */
public final class JobOptions {
  public final String bootstrap;
  public final String registryUrl;
  public final String sourceTopic;
  public final String sinkTopic;
  /** hpmstat reports (SLB windows); empty: not consumed. */
  public final String hpmTopic;
  /** per-port network counters (LACP hash skew); empty: not consumed. */
  public final String portTopic;
  /** z/VM guest and z/VM system samples (T/V, CP overhead); empty: not consumed. */
  public final String zvmGuestTopic;
  public final String zvmSystemTopic;
  /** No T/V below this many virtual CPU seconds in a window. */
  public final double tvMinVirtualS;
  /** Anomaly flags: output topic (empty: no flags) and the rules file the CLI writes from config. */
  public final String flagTopic;
  public final String flagRules;
  public final int flagMaxGapWindows;
  /** Exactly once into Kafka (transactions committed on checkpoints) unless "at-least-once". */
  public final boolean exactlyOnce;
  /** Where checkpoints are kept and, on start, restored from (the newest complete one); empty: none. */
  public final String checkpointDir;
  /** Late samples go here as dead letters; empty: printed to the log. */
  public final String deadLetterTopic;
  public final String groupId;
  public final Duration window;
  public final Duration outOfOrderness;
  public final Duration idleFlush;
  public final Duration checkpointInterval;
  public final Duration streamRetain;
  public final int restPort;
  /** Operator parallelism; 0 = Flink's default (all cores on the local MiniCluster). */
  public final int parallelism;

  private JobOptions(Map<String, String> m) {
    bootstrap = required(m, "bootstrap");
    registryUrl = required(m, "registry");
    sourceTopic = required(m, "source-topic");
    sinkTopic = required(m, "sink-topic");
    hpmTopic = m.getOrDefault("hpm-topic", "");
    portTopic = m.getOrDefault("port-topic", "");
    zvmGuestTopic = m.getOrDefault("zvm-guest-topic", "");
    zvmSystemTopic = m.getOrDefault("zvm-system-topic", "");
    tvMinVirtualS = Double.parseDouble(m.getOrDefault("tv-min-virtual-seconds", "0.01"));
    flagTopic = m.getOrDefault("flag-topic", "");
    flagRules = m.getOrDefault("flag-rules", "");
    flagMaxGapWindows = Integer.parseInt(m.getOrDefault("flag-max-gap-windows", "5"));
    exactlyOnce = !"at-least-once".equals(m.getOrDefault("delivery", "exactly-once"));
    checkpointDir = m.getOrDefault("checkpoint-dir", "");
    deadLetterTopic = m.getOrDefault("dead-letter-topic", "");
    groupId = m.getOrDefault("group-id", "fleetperf-cpu-window");
    window = Duration.ofSeconds(Long.parseLong(m.getOrDefault("window-seconds", "60")));
    outOfOrderness = Duration.ofSeconds(Long.parseLong(m.getOrDefault("out-of-orderness-seconds", "5")));
    idleFlush = Duration.ofSeconds(Long.parseLong(m.getOrDefault("idle-flush-seconds", "5")));
    checkpointInterval =
        Duration.ofSeconds(Long.parseLong(m.getOrDefault("checkpoint-interval-seconds", "10")));
    streamRetain = Duration.ofSeconds(Long.parseLong(m.getOrDefault("stream-retain-seconds", "1800")));
    restPort = Integer.parseInt(m.getOrDefault("rest-port", "0"));
    parallelism = Integer.parseInt(m.getOrDefault("parallelism", "0"));
  }

  /** The flag rules and baseline settings of --flag-rules. */
  public FlagDetector flagDetector() {
    java.util.Properties p = new java.util.Properties();
    try (java.io.Reader r = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(flagRules))) {
      p.load(r);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot read --flag-rules " + flagRules, e);
    }
    return new FlagDetector(FlagRule.fromProperties(p), BaselineSettings.fromProperties(p), flagMaxGapWindows);
  }

  public static JobOptions parse(String[] args) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --name value pairs, got: " + a + usage());
      }
      m.put(a.substring(2), args[++i]);
    }
    return new JobOptions(m);
  }

  private static String required(Map<String, String> m, String key) {
    String v = m.get(key);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("missing --" + key + usage());
    }
    return v;
  }

  private static String usage() {
    return "\nusage: --bootstrap HOST:PORT --registry URL --source-topic T --sink-topic T"
        + " [--hpm-topic T] [--port-topic T] [--zvm-guest-topic T] [--zvm-system-topic T]"
        + " [--tv-min-virtual-seconds 0.01]"
        + " [--flag-topic T --flag-rules FILE.properties] [--flag-max-gap-windows 5]"
        + " [--delivery exactly-once|at-least-once] [--checkpoint-dir DIR] [--dead-letter-topic T]"
        + " [--group-id G] [--window-seconds 60] [--out-of-orderness-seconds 5]"
        + " [--idle-flush-seconds 5] [--checkpoint-interval-seconds 10] [--stream-retain-seconds 1800] [--rest-port P]"
        + " [--parallelism N]";
  }
}
