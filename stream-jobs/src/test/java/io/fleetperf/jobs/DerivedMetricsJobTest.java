package io.fleetperf.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job graph and its settings. src/test/resources/job-settings.json is what
 * fleetperf.config.job_settings writes from config/fleetperf.toml (tests/unit/test_contract.py
 * keeps the two equal), with the flag rules path relative to stream-jobs/.
 */
class DerivedMetricsJobTest {
  static String shippedJson() throws IOException {
    try (InputStream in = DerivedMetricsJobTest.class.getResourceAsStream("/job-settings.json")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void jobGraphWithFlagsBuilds() throws IOException {
    // every function Flink ships to the task managers must serialize: building the graph checks it
    JobSettings o = JobSettings.fromJson(shippedJson(), "job-settings.json");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    DerivedMetricsJob.build(env, o);
    assertTrue(env.getStreamGraph().getStreamNodes().size() > 10);
  }

  @Test
  void topicsCarryTheirSchemaAndSubjectFromTheSettings() throws IOException {
    JobSettings o = JobSettings.fromJson(shippedJson(), "job-settings.json");
    JobSettings.Topic cpu = o.topic(JobSettings.CPU_SAMPLES);
    assertEquals("fleetperf.cpu-samples.v1", cpu.name);
    assertEquals("cpu_sample.avsc", cpu.schema);
    assertEquals("fleetperf.cpu-samples.v1-value", cpu.subject);
    assertEquals(60_000, o.window.toMillis());
    assertTrue(o.exactlyOnce);
    assertFalse(o.optionalTopic("no_such_topic").isPresent());
  }

  @Test
  void sinksBatchAsTheSettingsSay() throws IOException {
    // [kafka] producer_* of config/fleetperf.toml, what the collectors' producers use too; before,
    // the sinks had the Kafka client's defaults (no compression, 16 KB batches)
    String json =
        shippedJson()
            .replace("\"producer_linger_ms\": 20", "\"producer_linger_ms\": 7")
            .replace("\"producer_compression\": \"lz4\"", "\"producer_compression\": \"zstd\"");
    java.util.Properties p =
        DerivedMetricsJob.producerProperties(JobSettings.fromJson(json, "job-settings.json"));
    assertEquals("zstd", p.getProperty("compression.type"));
    assertEquals("7", p.getProperty("linger.ms"));
    assertEquals("1000000", p.getProperty("batch.size"));
    assertEquals("600000", p.getProperty("transaction.timeout.ms"));
    String without = shippedJson().replace("\"producer_batch_bytes\"", "\"other\"");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> JobSettings.fromJson(without, "/x/s.json"));
    assertTrue(e.getMessage().contains("producer_batch_bytes"), e.getMessage());
  }

  @Test
  void aMissingKeyNamesTheKeyAndTheFile() throws IOException {
    String json = shippedJson().replace("\"window_seconds\"", "\"window_secs\"");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> JobSettings.fromJson(json, "/x/job-settings.json"));
    assertEquals("/x/job-settings.json: missing window_seconds", e.getMessage());
    String badDelivery = shippedJson().replace("\"exactly-once\"", "\"twice\"");
    assertThrows(IllegalArgumentException.class, () -> JobSettings.fromJson(badDelivery, "f"));
    assertThrows(
        IllegalArgumentException.class, () -> JobSettings.parse(new String[] {"--bootstrap", "x"}));
  }

  @Test
  void checkpointsOfAnotherStateLayoutAreMovedAside(@TempDir Path root) throws IOException {
    Path old = root.resolve("0123abcd/chk-7");
    Files.createDirectories(old);
    Files.writeString(old.resolve("_metadata"), "x");
    assertTrue(Checkpoints.newest(root).isPresent());
    assertFalse(Checkpoints.restorable(root).isPresent());
    assertTrue(Files.exists(root.resolve("superseded-layout-1/0123abcd/chk-7/_metadata")));
    assertEquals(
        Checkpoints.STATE_LAYOUT + "\n", Files.readString(root.resolve(Checkpoints.LAYOUT_FILE)));
    Path current = root.resolve("4567ef01/chk-9");
    Files.createDirectories(current);
    Files.writeString(current.resolve("_metadata"), "x");
    assertEquals(current, Checkpoints.restorable(root).orElseThrow());
  }
}
