package io.fleetperf.jobs.wire;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import org.apache.avro.Schema;

/** Loads the .avsc files of schemas/ that the build copies onto the classpath. */
public final class Schemas {
  private Schemas() {}

  public static Schema load(String file) {
    try (InputStream in = Schemas.class.getResourceAsStream("/schemas/" + file)) {
      if (in == null) {
        throw new IllegalStateException("schema not on classpath: schemas/" + file);
      }
      return new Schema.Parser().parse(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
