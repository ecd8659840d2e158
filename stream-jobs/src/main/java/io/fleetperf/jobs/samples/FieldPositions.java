package io.fleetperf.jobs.samples;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;

/**
 * The fields a mapper reads, by their position in the record's schema, looked up once per schema:
 * GenericRecord.get(String) looks the name up in the schema's field map on every call (String
 * hashing and equals were 6 % of the job's Java samples on a fleet's backlog, JFR session 20). A
 * field the schema lacks (a record of an older schema version) reads as null.
 */
public final class FieldPositions {
  private final String[] names;

  /** The positions of {@code names} in the schema of the records read last. */
  private volatile Resolved last;

  private record Resolved(Schema schema, int[] positions) {}

  private FieldPositions(String[] names) {
    this.names = names;
  }

  /**
   * The Avro field names a mapper reads, in the order it asks for them by index. They are the input
   * records' field names, not metric names, even where the two agree (steal_pct):
   * tests/unit/test_contract.py exempts what is written inside this call.
   */
  public static FieldPositions fields(String... names) {
    return new FieldPositions(names.clone());
  }

  /** The value of the i-th named field in r, null where r's schema has no such field. */
  public Object get(GenericRecord r, int i) {
    Resolved known = last;
    Schema s = r.getSchema();
    if (known == null || known.schema != s) {
      int[] positions = new int[names.length];
      for (int n = 0; n < names.length; n++) {
        Schema.Field f = s.getField(names[n]);
        positions[n] = f == null ? -1 : f.pos();
      }
      known = new Resolved(s, positions);
      last = known;
    }
    int p = known.positions[i];
    return p < 0 ? null : r.get(p);
  }
}
