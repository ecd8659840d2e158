package io.fleetperf.jobs;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.flink.api.common.serialization.SerializationSchema;

/** Late samples as dead letters (schemas/dead_letter.avsc): they are kept and counted, not lost. */
public class LateSampleSerializer implements SerializationSchema<LateSample> {
  private final String registryUrl;
  private final String subject;
  private final long outOfOrdernessMillis;
  private transient Schema schema;
  private transient GenericDatumWriter<GenericRecord> writer;
  private transient byte[] header;
  private transient BinaryEncoder encoder;

  public LateSampleSerializer(String registryUrl, String subject, long outOfOrdernessMillis) {
    this.registryUrl = registryUrl;
    this.subject = subject;
    this.outOfOrdernessMillis = outOfOrdernessMillis;
  }

  @Override
  public void open(InitializationContext context) throws Exception {
    schema = Schemas.load("dead_letter.avsc");
    writer = new GenericDatumWriter<>(schema);
    header = ConfluentWire.header(new RegistryClient(registryUrl).register(subject, schema));
  }

  @Override
  public byte[] serialize(LateSample s) {
    GenericRecord r = new GenericData.Record(schema);
    r.put("source", "flink-late:" + s.kind);
    r.put("origin_file", s.stream);
    r.put("line", 0L);
    r.put("byte_offset", 0L);
    r.put("error", "sample arrived after its window closed (stream clock past window end + "
        + outOfOrdernessMillis / 1000 + " s); not in any derived metric");
    r.put("raw", s.entity + " " + Instant.ofEpochMilli(s.ts));
    r.put("detected_at", s.detectedAt);
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
