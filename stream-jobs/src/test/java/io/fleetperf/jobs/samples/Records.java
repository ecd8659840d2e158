package io.fleetperf.jobs.samples;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;

/** Input records for the mappers' tests. */
final class Records {
  private Records() {}

  /** A record of the schema with every field at its default (null where it has none). */
  static GenericRecord withDefaults(Schema schema) {
    GenericRecord r = new GenericData.Record(schema);
    for (Schema.Field f : schema.getFields()) {
      r.put(f.pos(), f.hasDefaultValue() ? GenericData.get().getDefaultValue(f) : null);
    }
    return r;
  }
}
