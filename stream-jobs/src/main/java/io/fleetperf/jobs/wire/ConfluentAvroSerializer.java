package io.fleetperf.jobs.wire;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.function.BiConsumer;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.flink.api.common.serialization.SerializationSchema;

/**
 * Writes T as Confluent-framed Avro of one schemas/ file, registering the schema under the subject
 * at open. What goes into the record's fields is the {@code fill} function's business.
 */
public class ConfluentAvroSerializer<T> implements SerializationSchema<T> {
  /** Copies a value's fields into the Avro record (a function Flink can ship). */
  public interface Filler<T> extends BiConsumer<T, GenericRecord>, Serializable {}

  private final String registryUrl;
  private final String subject;
  private final String schemaFile;
  private final Filler<T> fill;
  private transient Schema schema;
  private transient GenericDatumWriter<GenericRecord> writer;
  private transient byte[] header;
  private transient BinaryEncoder encoder;

  public ConfluentAvroSerializer(
      String registryUrl, String subject, String schemaFile, Filler<T> fill) {
    this.registryUrl = registryUrl;
    this.subject = subject;
    this.schemaFile = schemaFile;
    this.fill = fill;
  }

  @Override
  public void open(InitializationContext context) throws Exception {
    schema = Schemas.load(schemaFile);
    writer = new GenericDatumWriter<>(schema);
    header = ConfluentWire.header(new RegistryClient(registryUrl).register(subject, schema));
  }

  @Override
  public byte[] serialize(T value) {
    GenericRecord r = new GenericData.Record(schema);
    fill.accept(value, r);
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
