package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.windows.DerivedMetric;
import io.fleetperf.jobs.windows.DerivedWindow;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;

/** DerivedWindow as the derived-windows topic's schema (schemas/derived_window.avsc). */
public class DerivedWindowSerializer extends ConfluentAvroSerializer<DerivedWindow> {
  /** The schema's fields in its order; timestamp-millis fields are longs on the wire. */
  static final Direct<DerivedWindow> DIRECT =
      new Direct<>(
          List.of(
              "entity_id:STRING",
              "entity_name:STRING",
              "window_start:LONG",
              "window_end:LONG",
              "is_final:BOOLEAN",
              "emitted_at:LONG",
              "metrics:ARRAY<metric:STRING,value:DOUBLE,samples:INT>"),
          (w, out) -> {
            DerivedMetric f = w.first();
            out.writeString(f.entityId);
            out.writeString(f.entityName);
            out.writeLong(f.windowStart);
            out.writeLong(f.windowEnd);
            out.writeBoolean(f.isFinal);
            out.writeLong(f.emittedAt);
            out.writeArrayStart();
            out.setItemCount(w.metrics.length);
            for (DerivedMetric m : w.metrics) {
              out.startItem();
              out.writeString(m.metric);
              out.writeDouble(m.value);
              out.writeInt(m.samples);
            }
            out.writeArrayEnd();
          });

  public DerivedWindowSerializer(String registryUrl, String subject, String schemaFile) {
    super(registryUrl, subject, schemaFile, DerivedWindowSerializer::fill, DIRECT);
  }

  /** The generic writer's record (public: bench/SerdeBench.java fills Flink's format with it). */
  public static void fill(DerivedWindow w, GenericRecord r) {
    DerivedMetric f = w.first();
    r.put("entity_id", f.entityId);
    r.put("entity_name", f.entityName);
    r.put("window_start", f.windowStart);
    r.put("window_end", f.windowEnd);
    r.put("is_final", f.isFinal);
    r.put("emitted_at", f.emittedAt);
    Schema item = r.getSchema().getField("metrics").schema().getElementType();
    List<GenericRecord> metrics = new ArrayList<>(w.metrics.length);
    for (DerivedMetric m : w.metrics) {
      GenericRecord v = new GenericData.Record(item);
      v.put("metric", m.metric);
      v.put("value", m.value);
      v.put("samples", m.samples);
      metrics.add(v);
    }
    r.put("metrics", metrics);
  }
}
