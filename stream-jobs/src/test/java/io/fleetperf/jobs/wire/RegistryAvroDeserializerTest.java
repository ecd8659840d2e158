package io.fleetperf.jobs.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The registry's answers as the job must treat them: no answer or a 5xx is waited out (the record
 * is decoded once the registry is back, never skipped); a 4xx is a record that cannot be decoded.
 * The registry here is a loopback HTTP server answering what Apicurio's ccompat API answers.
 */
class RegistryAvroDeserializerTest {
  private HttpServer server;

  private String serve(int failures, int failStatus, AtomicInteger calls) throws IOException {
    Schema schema = Schemas.load("cpu_sample.avsc");
    byte[] ok = new ObjectMapper().writeValueAsBytes(Map.of("schema", schema.toString()));
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/schemas/ids/7",
        exchange -> {
          int n = calls.incrementAndGet();
          byte[] body =
              n <= failures ? "{\"error_code\":50001}".getBytes(StandardCharsets.UTF_8) : ok;
          exchange.sendResponseHeaders(n <= failures ? failStatus : 200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  private static RegistryAvroDeserializer<GenericRecord> deserializer(String url) {
    RegistryAvroDeserializer<GenericRecord> d =
        new RegistryAvroDeserializer<>(url, "cpu_sample.avsc", GenericRecord.class, r -> r);
    d.open(null);
    return d;
  }

  @Test
  void aRegistryAnswering503IsWaitedForNotSkipped() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    RegistryAvroDeserializer<GenericRecord> d = deserializer(serve(2, 503, calls));
    Schema schema = d.schemaWaitingForTheRegistry(7);
    assertEquals("CpuSample", schema.getName());
    assertEquals(3, calls.get()); // two 503s waited out (1 s, then 2 s), then the schema
  }

  @Test
  void aSchemaTheRegistryDoesNotKnowIsNotRetried() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    RegistryAvroDeserializer<GenericRecord> d = deserializer(serve(1, 404, calls));
    assertThrows(IOException.class, () -> d.schemaWaitingForTheRegistry(7));
    assertEquals(1, calls.get());
  }
}
