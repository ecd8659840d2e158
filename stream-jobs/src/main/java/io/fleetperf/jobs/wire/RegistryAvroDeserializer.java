package io.fleetperf.jobs.wire;

import io.fleetperf.jobs.samples.EndOfStream;
import io.fleetperf.jobs.samples.StreamWatermark;
import java.io.IOException;
import java.io.InterruptedIOException;
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
 * skipped; it never stops the job. A registry that does not answer is waited for, never a reason to
 * skip.
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

  public RegistryAvroDeserializer(
      String registryUrl, String schemaFile, Class<T> type, Mapper<T> mapper) {
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
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<T> out)
      throws IOException {
    try {
      // the end-of-stream marker and the stream's watermark promise travel as headers beside the
      // Avro body (samples.EndOfStream, samples.StreamWatermark)
      T value = mapper.apply(decode(record.value()));
      out.collect(
          StreamWatermark.apply(EndOfStream.apply(value, record.headers()), record.headers()));
    } catch (InterruptedIOException e) {
      throw e; // cancelled while waiting for the registry: the record is read again after a restart
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "skipping undecodable record {}-{}@{}: {}",
          record.topic(),
          record.partition(),
          record.offset(),
          e.toString());
    }
  }

  GenericRecord decode(byte[] message) throws IOException {
    int id = ConfluentWire.schemaId(message);
    GenericDatumReader<GenericRecord> datumReader = readers.get(id);
    if (datumReader == null) {
      datumReader = new GenericDatumReader<>(schemaWaitingForTheRegistry(id), reader);
      readers.put(id, datumReader);
    }
    decoder =
        DecoderFactory.get()
            .binaryDecoder(
                message, ConfluentWire.HEADER, message.length - ConfluentWire.HEADER, decoder);
    GenericRecord record = datumReader.read(reuse.get(id), decoder);
    reuse.put(id, record);
    return record;
  }

  /**
   * The writer schema of an id, waiting (backoff 1 s doubling to 30 s) while the registry is away:
   * a registry outage used to make every record of a schema not cached yet "undecodable" and
   * skipped, so its windows lost samples (tests/integration/test_faults.py, docs/faults.md F5).
   * Waiting holds the source's task, so checkpoints wait too; an outage longer than the checkpoint
   * timeout fails the job, which restarts from its last checkpoint and waits here again.
   */
  Schema schemaWaitingForTheRegistry(int id) throws IOException {
    long backoff = FIRST_BACKOFF_MS;
    while (true) {
      try {
        return registry.schemaById(id);
      } catch (RegistryClient.UnavailableException e) {
        LOG.warn(
            "schema id {}: {}; retrying in {} ms (records are not skipped)",
            id,
            e.getMessage(),
            backoff);
        try {
          Thread.sleep(backoff);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("cancelled waiting for the registry");
        }
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  static final long FIRST_BACKOFF_MS = 1_000;
  static final long MAX_BACKOFF_MS = 30_000;

  @Override
  public TypeInformation<T> getProducedType() {
    return TypeInformation.of(type);
  }
}
