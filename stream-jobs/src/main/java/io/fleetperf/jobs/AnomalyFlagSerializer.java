package io.fleetperf.jobs;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.flink.api.common.serialization.SerializationSchema;

/** Writes AnomalyFlag as Confluent-framed Avro (schemas/anomaly_flag.avsc). */
public class AnomalyFlagSerializer implements SerializationSchema<AnomalyFlag> {
  private final String registryUrl;
  private final String subject;
  private transient Schema schema;
  private transient GenericDatumWriter<GenericRecord> writer;
  private transient byte[] header;
  private transient BinaryEncoder encoder;

  public AnomalyFlagSerializer(String registryUrl, String subject) {
    this.registryUrl = registryUrl;
    this.subject = subject;
  }

  @Override
  public void open(InitializationContext context) throws Exception {
    schema = Schemas.load("anomaly_flag.avsc");
    writer = new GenericDatumWriter<>(schema);
    header = ConfluentWire.header(new RegistryClient(registryUrl).register(subject, schema));
  }

  @Override
  public byte[] serialize(AnomalyFlag f) {
    GenericRecord r = new GenericData.Record(schema);
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
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    bytes.writeBytes(header);
    encoder = EncoderFactory.get().binaryEncoder(bytes, encoder);
    try {
      writer.write(r, encoder);
      encoder.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }
}
