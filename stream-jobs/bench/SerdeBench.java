import com.sun.net.httpserver.HttpServer;
import io.fleetperf.jobs.samples.CpuSample;
import io.fleetperf.jobs.windows.DerivedMetric;
import io.fleetperf.jobs.windows.DerivedWindow;
import io.fleetperf.jobs.wire.DerivedWindowSerializer;
import io.fleetperf.jobs.wire.RegistryAvroDeserializer;
import io.fleetperf.jobs.wire.Schemas;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.flink.formats.avro.RegistryAvroDeserializationSchema;
import org.apache.flink.formats.avro.RegistryAvroSerializationSchema;
import org.apache.flink.formats.avro.SchemaCoder;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Records per second of the job's hand-written Confluent serde against Flink's registry Avro format
 * (flink-avro's RegistryAvroDeserializationSchema / RegistryAvroSerializationSchema, the classes
 * flink-avro-confluent-registry's Confluent variants extend). Flink's side gets a schema coder with
 * the same framing and a map lookup per record, which is what the Confluent client's cache does.
 * Same records, same POJO at the end, one thread, no Kafka. Run: bench/run.sh.
 */
public final class SerdeBench {
  static final int ID = 1;

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
    Schema cpu = Schemas.load("cpu_sample.avsc");
    Schema derived = Schemas.load("derived_window.avsc");
    HttpServer registry = stubRegistry(cpu);
    String url = "http://127.0.0.1:" + registry.getAddress().getPort();
    List<byte[]> messages = messages(cpu, 10_000);

    RegistryAvroDeserializer<CpuSample> ours =
        new RegistryAvroDeserializer<>(
            url, "cpu_sample.avsc", CpuSample.class, CpuSample::fromAvro);
    ours.open(null);
    RegistryAvroDeserializationSchema<GenericRecord> flinks =
        new RegistryAvroDeserializationSchema<>(
            GenericRecord.class, cpu, () -> new MapCoder(Map.of(ID, cpu)));
    flinks.open(null);
    DerivedWindowSerializer oursOut =
        new DerivedWindowSerializer(url, "d-value", "derived_window.avsc");
    oursOut.open(null);
    RegistryAvroSerializationSchema<GenericRecord> flinksOut =
        RegistryAvroSerializationSchema.forGeneric(
            derived, () -> new MapCoder(Map.of(ID, derived)));
    flinksOut.open(null);
    // a window of four metrics, about what an nmon host's window yields (docs/warehouse.md)
    DerivedMetric[] ms = new DerivedMetric[4];
    String[] names = {"steal_pct", "physc", "entc_pct", "busy_pct"};
    for (int i = 0; i < ms.length; i++) {
      ms[i] =
          new DerivedMetric(
              "host0001",
              "host0001",
              names[i],
              1_700_000_000_000L,
              1_700_000_060_000L,
              3.25,
              6,
              true,
              1_700_000_065_000L);
    }
    DerivedMetric m = ms[0];
    DerivedWindow w = new DerivedWindow(ms);

    long[] sink = new long[1];
    Collector<CpuSample> collect =
        new Collector<>() {
          @Override
          public void collect(CpuSample s) {
            sink[0] += s.ts;
          }

          @Override
          public void close() {}
        };
    for (int round = 0; round < 4; round++) {
      String tag = round == 0 ? "warm-up " : "round " + round;
      long t = System.nanoTime();
      for (int i = 0; i < n; i++) {
        byte[] b = messages.get(i % messages.size());
        ours.deserialize(new ConsumerRecord<>("t", 0, i, null, b), collect);
      }
      report(tag, "read  hand-written", n, t);
      t = System.nanoTime();
      for (int i = 0; i < n; i++) {
        byte[] b = messages.get(i % messages.size());
        collect.collect(CpuSample.fromAvro(flinks.deserialize(b)));
      }
      report(tag, "read  flink-avro   ", n, t);
      t = System.nanoTime();
      for (int i = 0; i < n; i++) {
        m.value = i;
        sink[0] += oursOut.serialize(w).length;
      }
      report(tag, "write hand-written", n, t);
      t = System.nanoTime();
      for (int i = 0; i < n; i++) {
        m.value = i;
        GenericRecord r = new GenericData.Record(derived);
        DerivedWindowSerializer.fill(w, r);
        sink[0] += flinksOut.serialize(r).length;
      }
      report(tag, "write flink-avro   ", n, t);
    }
    registry.stop(0);
    System.out.println("(checksum " + sink[0] + ")");
  }

  static void report(String tag, String what, int n, long started) {
    double s = (System.nanoTime() - started) / 1e9;
    System.out.printf("%s %s %,10.0f records/s%n", tag, what, n / s);
  }

  static List<byte[]> messages(Schema cpu, int count) throws IOException {
    GenericDatumWriter<GenericRecord> writer = new GenericDatumWriter<>(cpu);
    List<byte[]> out = new ArrayList<>();
    BinaryEncoder enc = null;
    for (int i = 0; i < count; i++) {
      GenericRecord r = new GenericData.Record(cpu);
      r.put("host_id", String.format("F1S-%04d", i % 1500));
      r.put("hostname", String.format("host%04d", i % 1500));
      r.put("ts", 1_700_000_000_000L + i * 10_000L);
      r.put("interval_s", 10.0);
      r.put("source", "nmon");
      r.put("user_pct", 20.0 + i % 7);
      r.put("sys_pct", 5.0);
      r.put("wait_pct", 1.0);
      r.put("idle_pct", 70.0);
      r.put("steal_pct", i % 3 == 0 ? null : 2.5);
      r.put("cpus", 8);
      r.put("physc", 1.25);
      r.put("entitled", 2.0);
      r.put("virtual_cpus", 4);
      r.put("pool_cpus", 16.0);
      r.put("pool_idle", 7.5);
      r.put("origin_file", "/perflog/NMON/host_240101_0000.nmon");
      r.put("origin_snapshot", "T" + i);
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      bytes.writeBytes(ByteBuffer.allocate(5).put((byte) 0).putInt(ID).array());
      enc = EncoderFactory.get().binaryEncoder(bytes, enc);
      writer.write(r, enc);
      enc.flush();
      out.add(bytes.toByteArray());
    }
    return out;
  }

  /**
   * Confluent framing (magic 0, 4-byte id) with a cached id -> schema map, as the Confluent client
   * caches.
   */
  static final class MapCoder implements SchemaCoder {
    private final Map<Integer, Schema> byId;
    private final Map<Schema, Integer> ids = new ConcurrentHashMap<>();

    MapCoder(Map<Integer, Schema> byId) {
      this.byId = byId;
      byId.forEach((id, s) -> ids.put(s, id));
    }

    @Override
    public Schema readSchema(InputStream in) throws IOException {
      DataInputStream data = new DataInputStream(in);
      if (data.readByte() != 0) {
        throw new IOException("unknown magic byte");
      }
      return byId.get(data.readInt());
    }

    @Override
    public void writeSchema(Schema schema, OutputStream out) throws IOException {
      DataOutputStream data = new DataOutputStream(out);
      data.writeByte(0);
      data.writeInt(ids.get(schema));
    }
  }

  static HttpServer stubRegistry(Schema schema) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        exchange -> {
          String body =
              exchange.getRequestURI().getPath().startsWith("/schemas/ids/")
                  ? "{\"schema\":"
                      + com.fasterxml.jackson.databind.json.JsonMapper.builder()
                          .build()
                          .writeValueAsString(schema.toString())
                      + "}"
                  : "{\"id\":" + ID + "}";
          byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, bytes.length);
          exchange.getResponseBody().write(bytes);
          exchange.close();
        });
    server.start();
    return server;
  }
}
