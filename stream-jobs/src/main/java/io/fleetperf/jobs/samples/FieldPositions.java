package io.fleetperf.jobs.samples;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;

/**
 * The positions of some fields in one reader schema, looked up once: GenericRecord.get(String)
 * looks the name up in the schema's field map on every call (String hashing and equals were 6 % of
 * the job's Java samples on a fleet's backlog, JFR session 20). A field the schema lacks (a record
 * of an older schema version) reads as null.
 */
public final class FieldPositions {
  private final Schema schema;
  private final int[] positions;

  private FieldPositions(Schema schema, String[] names) {
    this.schema = schema;
    this.positions = new int[names.length];
    for (int i = 0; i < names.length; i++) {
      Schema.Field f = schema.getField(names[i]);
      positions[i] = f == null ? -1 : f.pos();
    }
  }

  /**
   * The Avro field names a mapper reads, in the order it asks for them by index. They are the input
   * records' field names, not metric names, even where the two agree (steal_pct):
   * tests/unit/test_contract.py exempts what is written inside this call.
   */
  public static String[] fields(String... names) {
    return names;
  }

  /** {@code known} when it is of this record's schema (the same object), else new positions. */
  public static FieldPositions of(FieldPositions known, GenericRecord r, String[] names) {
    Schema s = r.getSchema();
    return known != null && known.schema == s ? known : new FieldPositions(s, names);
  }

  /** The value of the i-th named field, null where the schema has no such field. */
  public Object get(GenericRecord r, int i) {
    int p = positions[i];
    return p < 0 ? null : r.get(p);
  }
}
