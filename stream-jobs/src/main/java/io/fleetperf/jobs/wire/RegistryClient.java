package io.fleetperf.jobs.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;

/** The two calls of the Confluent-compatible registry API the job needs, with a cache. */
public final class RegistryClient {
  /**
   * The registry did not answer (connection refused, timeout, 5xx): a transient failure the caller
   * waits out, never a reason to skip a record. A 4xx answer is a plain IOException.
   */
  public static final class UnavailableException extends IOException {
    public UnavailableException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();
  private final String baseUrl;
  private final HttpClient http;
  private final Map<Integer, Schema> byId = new ConcurrentHashMap<>();

  public RegistryClient(String baseUrl) {
    this.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
    this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  }

  public Schema schemaById(int id) throws IOException {
    Schema cached = byId.get(id);
    if (cached != null) {
      return cached;
    }
    JsonNode body = call(HttpRequest.newBuilder(URI.create(baseUrl + "/schemas/ids/" + id)).GET());
    Schema schema = new Schema.Parser().parse(body.get("schema").asText());
    byId.put(id, schema);
    return schema;
  }

  /** Registers (or finds) the schema under the subject and returns its global id. */
  public int register(String subject, Schema schema) throws IOException {
    String payload = JSON.writeValueAsString(Map.of("schema", schema.toString()));
    JsonNode body =
        call(
            HttpRequest.newBuilder(URI.create(baseUrl + "/subjects/" + subject + "/versions"))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                .POST(HttpRequest.BodyPublishers.ofString(payload)));
    return body.get("id").asInt();
  }

  private JsonNode call(HttpRequest.Builder request) throws IOException {
    HttpResponse<String> response;
    try {
      response =
          http.send(
              request.timeout(Duration.ofSeconds(30)).build(),
              HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted calling the registry");
    } catch (IOException e) { // refused, reset, timed out: nothing was answered
      throw new UnavailableException("registry " + baseUrl + " unreachable: " + e, e);
    }
    String problem =
        "registry "
            + response.uri()
            + " answered "
            + response.statusCode()
            + ": "
            + response.body();
    if (response.statusCode() >= 500) {
      throw new UnavailableException(problem, null);
    }
    if (response.statusCode() / 100 != 2) {
      throw new IOException(problem);
    }
    return JSON.readTree(response.body());
  }
}
