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
    // kafka.producer: the client properties Python's config.producer_properties names from [kafka]
    // (what the collectors' producers set too); before, the sinks had the Kafka client's defaults
    // (no compression, 16 KB batches). Applied as given: a property the job never heard of too.
    String json =
        shippedJson()
            .replace("\"linger.ms\": 20", "\"linger.ms\": 7, \"acks\": \"all\"")
            .replace("\"compression.type\": \"lz4\"", "\"compression.type\": \"zstd\"");
    java.util.Properties p =
        DerivedMetricsJob.producerProperties(JobSettings.fromJson(json, "job-settings.json"));
    assertEquals("zstd", p.getProperty("compression.type"));
    assertEquals("7", p.getProperty("linger.ms"));
    assertEquals("1000000", p.getProperty("batch.size"));
    assertEquals("all", p.getProperty("acks"));
    assertEquals("600000", p.getProperty("transaction.timeout.ms"));
    assertEquals(5, p.size());
    String without = shippedJson().replace("\"producer\":", "\"other\":");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> JobSettings.fromJson(without, "/x/s.json"));
    assertTrue(e.getMessage().contains("producer"), e.getMessage());
    String nested = shippedJson().replace("\"linger.ms\": 20", "\"linger.ms\": {\"x\": 1}");
    e =
        assertThrows(
            IllegalArgumentException.class, () -> JobSettings.fromJson(nested, "/x/s.json"));
    assertTrue(e.getMessage().contains("producer.linger.ms"), e.getMessage());
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
