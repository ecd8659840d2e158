package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.flags.AnomalyFlag;
import org.apache.avro.generic.GenericRecord;

/** AnomalyFlag as the anomaly-flags topic's schema (schemas/anomaly_flag.avsc). */
public class AnomalyFlagSerializer extends ConfluentAvroSerializer<AnomalyFlag> {
  public AnomalyFlagSerializer(String registryUrl, String subject, String schemaFile) {
    super(registryUrl, subject, schemaFile, AnomalyFlagSerializer::fill);
  }

  static void fill(AnomalyFlag f, GenericRecord r) {
    r.put("entity_id", f.entityId);
    r.put("entity_name", f.entityName);
    r.put("metric", f.metric);
    r.put("rule", f.rule);
    r.put("kind", f.kind);
    r.put("window_start", f.windowStart);
    r.put("window_end", f.windowEnd);
    r.put("observed", f.observed);
    r.put("threshold", f.threshold);
    r.put("baseline", f.baseline);
    r.put("severity", f.severity);
    r.put("explanation", f.explanation);
    r.put("incident_id", f.incidentId);
    r.put("incident_start", f.incidentStart);
    r.put("incident_end", f.incidentEnd);
    r.put("incident_peak", f.incidentPeak);
    r.put("incident_windows", f.incidentWindows);
    r.put("emitted_at", f.emittedAt);
  }
}
