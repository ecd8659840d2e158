package io.fleetperf.jobs.wire;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.function.BiConsumer;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.Encoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.flink.api.common.serialization.SerializationSchema;

/**
 * Writes T as Confluent-framed Avro of one schemas/ file, registering the schema under the subject
 * at open. What goes into the record's fields is the {@code fill} function's business.
 *
 * <p>A serializer may also give a {@link Direct} writer: the schema's fields in order, each with
 * the Avro type it writes, and a function writing them straight to the encoder. It is used only
 * when the schema file has exactly those fields and types (checked at open); the bytes are the
 * generic writer's (JUnit compares both). Why: the derived metrics are the job's most numerous
 * output, and building a GenericRecord by field name and walking it with GenericDatumWriter was a
 * tenth of the job's Java samples (JFR on a fleet's backlog, session 20).
 */
public class ConfluentAvroSerializer<T> implements SerializationSchema<T> {
  /** Copies a value's fields into the Avro record (a function Flink can ship). */
  public interface Filler<T> extends BiConsumer<T, GenericRecord>, Serializable {}

  /** Writes a value's fields, in the schema's order, to an Avro encoder. */
  public interface FieldsWriter<T> extends Serializable {
    void write(T value, Encoder out) throws IOException;
  }

  /** A schema's fields (name and the one Avro type written for it) and their direct writer. */
  public static final class Direct<T> implements Serializable {
    final List<String> fields;
    final FieldsWriter<T> writer;

    /**
     * {@code fields}: "name:type" per field in the schema's order, e.g. "value:DOUBLE"; an array of
     * records as "name:ARRAY<name:type,...>" with its items' fields.
     */
    public Direct(List<String> fields, FieldsWriter<T> writer) {
      this.fields = List.copyOf(fields);
      this.writer = writer;
    }

    /** True where the schema's fields are these, in this order, of these non-union types. */
    boolean fits(Schema schema) {
      List<Schema.Field> actual = schema.getFields();
      if (actual.size() != fields.size()) {
        return false;
      }
      for (int i = 0; i < fields.size(); i++) {
        Schema.Field f = actual.get(i);
        if (!fields.get(i).equals(f.name() + ":" + describe(f.schema()))) {
          return false;
        }
      }
      return true;
    }

    private static String describe(Schema s) {
      if (s.getType() == Schema.Type.ARRAY && s.getElementType().getType() == Schema.Type.RECORD) {
        StringBuilder b = new StringBuilder("ARRAY<");
        for (Schema.Field f : s.getElementType().getFields()) {
          b.append(b.length() > 6 ? "," : "").append(f.name()).append(':');
          b.append(describe(f.schema()));
        }
        return b.append('>').toString();
      }
      return s.getType().toString();
    }
  }

  private final String registryUrl;
  private final String subject;
  private final String schemaFile;
  private final Filler<T> fill;
  private final Direct<T> direct;
  private transient Schema schema;
  private transient GenericDatumWriter<GenericRecord> writer;
  private transient FieldsWriter<T> directWriter;
  private transient byte[] header;
  private transient ByteArrayOutputStream bytes;
  private transient BinaryEncoder encoder;

  public ConfluentAvroSerializer(
      String registryUrl, String subject, String schemaFile, Filler<T> fill) {
    this(registryUrl, subject, schemaFile, fill, null);
  }

  public ConfluentAvroSerializer(
      String registryUrl, String subject, String schemaFile, Filler<T> fill, Direct<T> direct) {
    this.registryUrl = registryUrl;
    this.subject = subject;
    this.schemaFile = schemaFile;
    this.fill = fill;
    this.direct = direct;
  }

  @Override
  public void open(InitializationContext context) throws Exception {
    Schema s = Schemas.load(schemaFile);
    prepare(s, new RegistryClient(registryUrl).register(subject, s));
  }

  /** Everything open() does but asking the registry (tests give the id themselves). */
  void prepare(Schema s, int schemaId) {
    schema = s;
    writer = new GenericDatumWriter<>(schema);
    directWriter = direct != null && direct.fits(schema) ? direct.writer : null;
    header = ConfluentWire.header(schemaId);
    bytes = new ByteArrayOutputStream(256);
  }

  /** True when values are written by the Direct writer (the schema file has its fields). */
  boolean writesDirectly() {
    return directWriter != null;
  }

  @Override
  public byte[] serialize(T value) {
    bytes.reset();
    bytes.writeBytes(header);
    encoder = EncoderFactory.get().binaryEncoder(bytes, encoder);
    try {
      if (directWriter != null) {
        directWriter.write(value, encoder);
      } else {
        GenericRecord r = new GenericData.Record(schema);
        fill.accept(value, r);
        writer.write(r, encoder);
      }
      encoder.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }
}
