package io.fleetperf.jobs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Optional;
import java.util.stream.Stream;

/** Finds the newest complete checkpoint (a chk-N directory with its _metadata) under a directory. */
final class Checkpoints {
  private Checkpoints() {}

  static Optional<Path> newest(Path root) {
    if (!Files.isDirectory(root)) {
      return Optional.empty();
    }
    try (Stream<Path> jobs = Files.list(root)) {
      return jobs.filter(Files::isDirectory)
          .flatMap(Checkpoints::children)
          .filter(p -> p.getFileName().toString().startsWith("chk-") && Files.exists(p.resolve("_metadata")))
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
