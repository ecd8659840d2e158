package io.fleetperf.jobs.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fleetperf.jobs.windows.DerivedMetric;
import io.fleetperf.jobs.windows.DerivedWindow;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.junit.jupiter.api.Test;

/**
 * The derived windows' direct writer gives Avro's own bytes: every message is compared with the
 * Confluent header plus what Avro's GenericDatumWriter writes for the same record of
 * schemas/derived_window.avsc (the oracle we did not write), on seeded random windows of one to
 * eight metrics: empty, non-ASCII and long strings, extreme and special doubles, int and long
 * limits. Avro's reader gives every metric back.
 */
class DerivedWindowSerializerTest {
  private static final String[] TEXT = {
    "", "a", "lpar-ü-東京", "x".repeat(300), "host|with|pipes", "\u0000nul", "😀 astral"
  };

  private static final double[] DOUBLES = {
    0.0,
    -0.0,
    1.5,
    -1e300,
    Double.MIN_VALUE,
    Double.MAX_VALUE,
    Double.NaN,
    Double.POSITIVE_INFINITY,
    Double.NEGATIVE_INFINITY
  };

  static DerivedWindow random(Random rnd) {
    String id = TEXT[rnd.nextInt(TEXT.length)];
    String name = TEXT[rnd.nextInt(TEXT.length)];
    long start = rnd.nextBoolean() ? rnd.nextLong() : rnd.nextInt(1 << 20);
    long end = rnd.nextBoolean() ? Long.MIN_VALUE : Long.MAX_VALUE - rnd.nextInt(3);
    boolean isFinal = rnd.nextBoolean();
    long emitted = rnd.nextLong();
    DerivedMetric[] metrics = new DerivedMetric[1 + rnd.nextInt(8)];
    for (int i = 0; i < metrics.length; i++) {
      metrics[i] =
          new DerivedMetric(
              id,
              name,
              TEXT[rnd.nextInt(TEXT.length)],
              start,
              end,
              rnd.nextBoolean() ? DOUBLES[rnd.nextInt(DOUBLES.length)] : rnd.nextGaussian(),
              rnd.nextBoolean() ? rnd.nextInt() : rnd.nextInt(100) - 50,
              isFinal,
              emitted);
    }
    return new DerivedWindow(metrics);
  }

  private static byte[] avrosOwn(Schema schema, int id, DerivedWindow w) throws IOException {
    GenericRecord r = new GenericData.Record(schema);
    DerivedWindowSerializer.fill(w, r);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ConfluentWire.header(id));
    BinaryEncoder e = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(schema).write(r, e);
    e.flush();
    return out.toByteArray();
  }

  @Test
  void directBytesAreAvrosOwnOnTheShippedSchema() throws IOException {
    Schema schema = Schemas.load("derived_window.avsc");
    DerivedWindowSerializer s = new DerivedWindowSerializer("unused", "unused", "unused");
    s.prepare(schema, 4242);
    assertTrue(s.writesDirectly(), "the shipped schema's fields are the direct writer's");
    Random rnd = new Random(20261130L);
    GenericDatumReader<GenericRecord> reader = new GenericDatumReader<>(schema);
    for (int i = 0; i < 5000; i++) {
      DerivedWindow w = random(rnd);
      byte[] bytes = s.serialize(w);
      assertArrayEquals(avrosOwn(schema, 4242, w), bytes, w.toString());
      GenericRecord back =
          reader.read(null, DecoderFactory.get().binaryDecoder(bytes, 5, bytes.length - 5, null));
      assertEquals(w.first().entityId, back.get("entity_id").toString());
      assertEquals(w.first().windowStart, back.get("window_start"));
      assertEquals(w.first().isFinal, back.get("is_final"));
      @SuppressWarnings("unchecked")
      List<GenericRecord> metrics = (List<GenericRecord>) back.get("metrics");
      assertEquals(w.metrics.length, metrics.size());
      for (int j = 0; j < metrics.size(); j++) {
        assertEquals(w.metrics[j].metric, metrics.get(j).get("metric").toString());
        assertEquals(w.metrics[j].value, (double) metrics.get(j).get("value"));
        assertEquals(w.metrics[j].samples, (int) metrics.get(j).get("samples"));
      }
    }
  }

  @Test
  void aSchemaWithOtherFieldsIsWrittenByTheGenericWriter() throws IOException {
    // the same schema with a field added to the metric records, and one with two fields swapped:
    // the direct writer fits neither, and the bytes are still the generic writer's
    String json = Schemas.load("derived_window.avsc").toString();
    Schema added =
        new Schema.Parser()
            .parse(
                json.replace(
                    "{\"name\":\"samples\",\"type\":\"int\"",
                    "{\"name\":\"unit\",\"type\":[\"null\",\"string\"],\"default\":null},"
                        + "{\"name\":\"samples\",\"type\":\"int\""));
    Schema swapped =
        new Schema.Parser()
            .parse(
                json.replace("\"name\":\"entity_id\"", "\"name\":\"tmp\"")
                    .replace("\"name\":\"entity_name\"", "\"name\":\"entity_id\"")
                    .replace("\"name\":\"tmp\"", "\"name\":\"entity_name\""));
    for (Schema schema : new Schema[] {added, swapped}) {
      DerivedWindowSerializer s = new DerivedWindowSerializer("unused", "unused", "unused");
      s.prepare(schema, 7);
      assertFalse(s.writesDirectly(), schema.toString());
      Random rnd = new Random(7L);
      for (int i = 0; i < 200; i++) {
        DerivedWindow w = random(rnd);
        assertArrayEquals(avrosOwn(schema, 7, w), s.serialize(w));
      }
    }
  }

  @Test
  void oneRecordPerRunOfOneEntitysWindow() {
    DerivedMetric a1 = new DerivedMetric("a", "A", "physc", 0, 60_000, 1.0, 6, true, 9);
    DerivedMetric a2 = new DerivedMetric("a", "A", "entc_pct", 0, 60_000, 2.0, 6, true, 9);
    DerivedMetric b1 = new DerivedMetric("b", "B", "physc", 0, 60_000, 3.0, 6, true, 9);
    List<DerivedWindow> ws = DerivedWindow.of(List.of(a1, a2, b1));
    assertEquals(2, ws.size());
    assertEquals(List.of(a1, a2), Arrays.asList(ws.get(0).metrics));
    assertEquals(List.of(b1), Arrays.asList(ws.get(1).metrics));
    assertEquals(List.of(), DerivedWindow.of(List.of()));
  }
}
