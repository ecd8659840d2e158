package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.samples.EndOfStream;
import java.io.IOException;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads Confluent-framed Avro records of one topic into POJOs: the writer schema comes from the
 * registry by id and is resolved against our reader schema (schemas/), so producers may evolve
 * compatibly. A record that cannot be decoded is logged with topic, partition and offset and
 * skipped; it never stops the job.
 */
public class RegistryAvroDeserializer<T> implements KafkaRecordDeserializationSchema<T> {
  /** GenericRecord -> POJO, shipped with the job. */
  public interface Mapper<T> extends Function<GenericRecord, T>, Serializable {}

  private static final Logger LOG = LoggerFactory.getLogger(RegistryAvroDeserializer.class);
  private final String registryUrl;
  private final String schemaFile;
  private final Class<T> type;
  private final Mapper<T> mapper;
  private transient RegistryClient registry;
  private transient Schema reader;
  private transient Map<Integer, GenericDatumReader<GenericRecord>> readers;
  private transient BinaryDecoder decoder;
  // the record decoded last, refilled by the next decode of the same writer schema: the mappers
  // copy what they need, so its Utf8 buffers and nested objects can be reused
  private transient Map<Integer, GenericRecord> reuse;

  public RegistryAvroDeserializer(String registryUrl, String schemaFile, Class<T> type, Mapper<T> mapper) {
    this.registryUrl = registryUrl;
    this.schemaFile = schemaFile;
    this.type = type;
    this.mapper = mapper;
  }

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    registry = new RegistryClient(registryUrl);
    reader = Schemas.load(schemaFile);
    readers = new HashMap<>();
    reuse = new HashMap<>();
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<T> out) {
    try {
      // the end-of-stream marker travels as a header beside the Avro body (samples.EndOfStream)
      out.collect(EndOfStream.apply(mapper.apply(decode(record.value())), record.headers()));
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "skipping undecodable record {}-{}@{}: {}",
          record.topic(), record.partition(), record.offset(), e.toString());
    }
  }

  GenericRecord decode(byte[] message) throws IOException {
    int id = ConfluentWire.schemaId(message);
    GenericDatumReader<GenericRecord> datumReader = readers.get(id);
    if (datumReader == null) {
      datumReader = new GenericDatumReader<>(registry.schemaById(id), reader);
      readers.put(id, datumReader);
    }
    decoder =
        DecoderFactory.get()
            .binaryDecoder(message, ConfluentWire.HEADER, message.length - ConfluentWire.HEADER, decoder);
    GenericRecord record = datumReader.read(reuse.get(id), decoder);
    reuse.put(id, record);
    return record;
  }

  @Override
  public TypeInformation<T> getProducedType() {
    return TypeInformation.of(type);
  }
}
