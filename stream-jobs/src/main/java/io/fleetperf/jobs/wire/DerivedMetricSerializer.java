package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.windows.DerivedMetric;
import java.util.List;
import org.apache.avro.generic.GenericRecord;

/** DerivedMetric as the derived-metrics topic's schema (schemas/derived_metric.avsc). */
public class DerivedMetricSerializer extends ConfluentAvroSerializer<DerivedMetric> {
  /** The schema's fields in its order; timestamp-millis fields are longs on the wire. */
  static final Direct<DerivedMetric> DIRECT =
      new Direct<>(
          List.of(
              "entity_id:STRING",
              "entity_name:STRING",
              "metric:STRING",
              "window_start:LONG",
              "window_end:LONG",
              "value:DOUBLE",
              "samples:INT",
              "is_final:BOOLEAN",
              "emitted_at:LONG"),
          (m, out) -> {
            out.writeString(m.entityId);
            out.writeString(m.entityName);
            out.writeString(m.metric);
            out.writeLong(m.windowStart);
            out.writeLong(m.windowEnd);
            out.writeDouble(m.value);
            out.writeInt(m.samples);
            out.writeBoolean(m.isFinal);
            out.writeLong(m.emittedAt);
          });

  public DerivedMetricSerializer(String registryUrl, String subject, String schemaFile) {
    super(registryUrl, subject, schemaFile, DerivedMetricSerializer::fill, DIRECT);
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
