package io.fleetperf.jobs;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Finds the newest complete checkpoint (a chk-N directory with its _metadata) under a directory.
 */
final class Checkpoints {
  private Checkpoints() {}

  /**
   * Layout of the job's state. Raise it when a change makes old checkpoints unreadable, e.g. the
   * classes kept in state are renamed or moved (Flink's POJO serializer records class names). 2:
   * the job's classes moved from io.fleetperf.jobs into wire / samples / windows / flags. 3: the
   * window accumulators hold a UtilisationWindow (busy_pct, cpu_cores) and TvWindowAccumulator lost
   * its busy field; a restored accumulator would lack the new object, so start clean.
   */
  static final int STATE_LAYOUT = readLayout();

  /**
   * The number itself is kept in the resource {@code io/fleetperf/jobs/state-layout} (one line),
   * read here and by the cluster submission in Python (fleetperf.stack.cluster.STATE_LAYOUT), which
   * sets aside savepoints and checkpoints of another layout the same way before it restores.
   */
  private static int readLayout() {
    try (InputStream in = Checkpoints.class.getResourceAsStream("state-layout")) {
      if (in == null) {
        throw new IllegalStateException(
            "resource io/fleetperf/jobs/state-layout missing from the job jar");
      }
      return Integer.parseInt(new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static final String LAYOUT_FILE = "state-layout";

  /**
   * The newest checkpoint this version of the job can restore. Checkpoints of another state layout
   * are moved aside (into {@code superseded-layout-N/}, kept for a downgrade) and the job starts
   * without state: its Kafka sources resume from the offsets the consumer group committed with the
   * last checkpoint, so only windows open at that moment are emitted from fewer samples (and
   * replaced by nothing better). Writes the current layout for the next start.
   */
  static Optional<Path> restorable(Path root) {
    try {
      Files.createDirectories(root);
      Path marker = root.resolve(LAYOUT_FILE);
      int layout = Files.exists(marker) ? Integer.parseInt(Files.readString(marker).trim()) : 1;
      if (layout != STATE_LAYOUT) {
        Path aside = root.resolve("superseded-layout-" + layout);
        try (Stream<Path> jobs = Files.list(root)) {
          for (Path job :
              jobs.filter(Files::isDirectory)
                  .filter(p -> !p.getFileName().toString().startsWith("superseded-"))
                  .toList()) {
            Files.createDirectories(aside);
            Files.move(job, aside.resolve(job.getFileName()));
            System.out.println(
                "checkpoint "
                    + job
                    + " has state layout "
                    + layout
                    + ", this job reads "
                    + STATE_LAYOUT
                    + ": moved to "
                    + aside
                    + "; starting from the committed Kafka offsets");
          }
        }
        Files.writeString(marker, STATE_LAYOUT + "\n");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return newest(root);
  }

  static Optional<Path> newest(Path root) {
    if (!Files.isDirectory(root)) {
      return Optional.empty();
    }
    try (Stream<Path> jobs = Files.list(root)) {
      return jobs.filter(Files::isDirectory)
          .filter(p -> !p.getFileName().toString().startsWith("superseded-"))
          .flatMap(Checkpoints::children)
          .filter(
              p ->
                  p.getFileName().toString().startsWith("chk-")
                      && Files.exists(p.resolve("_metadata")))
          .max(Comparator.comparingLong(Checkpoints::modified));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Stream<Path> children(Path dir) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.toList().stream();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static long modified(Path chk) {
    try {
      return Files.getLastModifiedTime(chk.resolve("_metadata")).toMillis();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
