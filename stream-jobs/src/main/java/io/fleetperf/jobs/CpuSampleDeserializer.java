package io.fleetperf.jobs;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
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
 * Reads Confluent-framed CpuSample records: the writer schema comes from the registry by id and is
 * resolved against our reader schema, so producers may evolve compatibly. A record that cannot be
 * decoded is logged with topic, partition and offset and skipped; it never stops the job.
 */
public class CpuSampleDeserializer implements KafkaRecordDeserializationSchema<CpuSample> {
  private static final Logger LOG = LoggerFactory.getLogger(CpuSampleDeserializer.class);
  private final String registryUrl;
  private transient RegistryClient registry;
  private transient Schema reader;
  private transient Map<Integer, GenericDatumReader<GenericRecord>> readers;
  private transient BinaryDecoder decoder;

  public CpuSampleDeserializer(String registryUrl) {
    this.registryUrl = registryUrl;
  }

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    registry = new RegistryClient(registryUrl);
    reader = Schemas.load("cpu_sample.avsc");
    readers = new HashMap<>();
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<CpuSample> out) {
    try {
      out.collect(decode(record.value()));
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "skipping undecodable record {}-{}@{}: {}",
          record.topic(), record.partition(), record.offset(), e.toString());
    }
  }

  CpuSample decode(byte[] message) throws IOException {
    int id = ConfluentWire.schemaId(message);
    GenericDatumReader<GenericRecord> datumReader = readers.get(id);
    if (datumReader == null) {
      datumReader = new GenericDatumReader<>(registry.schemaById(id), reader);
      readers.put(id, datumReader);
    }
    decoder =
        DecoderFactory.get()
            .binaryDecoder(message, ConfluentWire.HEADER, message.length - ConfluentWire.HEADER, decoder);
    GenericRecord r = datumReader.read(null, decoder);
    return new CpuSample(
        r.get("host_id").toString(),
        r.get("hostname").toString(),
        (Long) r.get("ts"),
        (Double) r.get("interval_s"),
        (Double) r.get("steal_pct"),
        (Double) r.get("physc"),
        (Double) r.get("entitled"),
        r.get("origin_file").toString());
  }

  @Override
  public TypeInformation<CpuSample> getProducedType() {
    return TypeInformation.of(CpuSample.class);
  }
}
