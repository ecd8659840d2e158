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

/** Writes DerivedMetric as Confluent-framed Avro, registering the schema under the subject at open. */
public class DerivedMetricSerializer implements SerializationSchema<DerivedMetric> {
  private final String registryUrl;
  private final String subject;
  private transient Schema schema;
  private transient GenericDatumWriter<GenericRecord> writer;
  private transient byte[] header;
  private transient BinaryEncoder encoder;

  public DerivedMetricSerializer(String registryUrl, String subject) {
    this.registryUrl = registryUrl;
    this.subject = subject;
  }

  @Override
  public void open(InitializationContext context) throws Exception {
    schema = Schemas.load("derived_metric.avsc");
    writer = new GenericDatumWriter<>(schema);
    header = ConfluentWire.header(new RegistryClient(registryUrl).register(subject, schema));
  }

  @Override
  public byte[] serialize(DerivedMetric m) {
    GenericRecord r = new GenericData.Record(schema);
    r.put("entity_id", m.entityId);
    r.put("entity_name", m.entityName);
    r.put("metric", m.metric);
    r.put("window_start", m.windowStart);
    r.put("window_end", m.windowEnd);
    r.put("value", m.value);
    r.put("samples", m.samples);
    r.put("is_final", m.isFinal);
    r.put("emitted_at", m.emittedAt);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(96);
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
