package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.samples.LateSample;
import java.time.Instant;

/** Late samples as dead letters (schemas/dead_letter.avsc): they are kept and counted, not lost. */
public class LateSampleSerializer extends ConfluentAvroSerializer<LateSample> {
  public LateSampleSerializer(
      String registryUrl, String subject, String schemaFile, long outOfOrdernessMillis) {
    super(
        registryUrl,
        subject,
        schemaFile,
        (s, r) -> {
          r.put("source", "flink-late:" + s.kind);
          r.put("origin_file", s.stream);
          r.put("line", 0L);
          r.put("byte_offset", 0L);
          r.put(
              "error",
              "sample arrived after its window closed (stream clock past window end + "
                  + outOfOrdernessMillis / 1000
                  + " s); not in any derived metric");
          r.put("raw", s.entity + " " + Instant.ofEpochMilli(s.ts));
          r.put("detected_at", s.detectedAt);
        });
  }
}
