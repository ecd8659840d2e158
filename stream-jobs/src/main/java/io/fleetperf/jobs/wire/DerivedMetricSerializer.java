package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.windows.DerivedMetric;
import org.apache.avro.generic.GenericRecord;

/** DerivedMetric as the derived-metrics topic's schema (schemas/derived_metric.avsc). */
public class DerivedMetricSerializer extends ConfluentAvroSerializer<DerivedMetric> {
  public DerivedMetricSerializer(String registryUrl, String subject, String schemaFile) {
    super(registryUrl, subject, schemaFile, DerivedMetricSerializer::fill);
  }

  static void fill(DerivedMetric m, GenericRecord r) {
    r.put("entity_id", m.entityId);
    r.put("entity_name", m.entityName);
    r.put("metric", m.metric);
    r.put("window_start", m.windowStart);
    r.put("window_end", m.windowEnd);
    r.put("value", m.value);
    r.put("samples", m.samples);
    r.put("is_final", m.isFinal);
    r.put("emitted_at", m.emittedAt);
  }
}
