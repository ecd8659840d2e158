import io.fleetperf.jobs.flags.BaselineSettings;
import io.fleetperf.jobs.flags.FlagDetector;
import io.fleetperf.jobs.flags.FlagRule;
import io.fleetperf.jobs.windows.DerivedMetric;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;

/**
 * Microseconds per final window through {@link FlagDetector#evaluate} with the shipped rules
 * (config/flag-rules.properties), side by side in one run: the detector as it is (the history's
 * sorted copy kept window by window) and as it was (a sorted copy of the history made every window:
 * the copy dropped before each call, so the detector rebuilds it the old way). Noisy values, as a
 * simulated fleet's busy_pct has; a backfill of 2 days at 60 s is 2,880 windows per host and
 * metric. One thread, no Flink. Run: bench/run.sh 0 FlagBench [hosts] [windows].
 */
public final class FlagBench {
  private FlagBench() {}

  public static void main(String[] args) throws IOException {
    int hosts = args.length > 0 ? Integer.parseInt(args[0]) : 150;
    int windows = args.length > 1 ? Integer.parseInt(args[1]) : 2880;
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(Path.of("../config/flag-rules.properties"))) {
      p.load(r);
    }
    FlagDetector d =
        new FlagDetector(FlagRule.fromProperties(p), BaselineSettings.fromProperties(p), 5);
    List<double[]> series = new ArrayList<>();
    Random rnd = new Random(24);
    for (int h = 0; h < hosts; h++) {
      double[] v = new double[windows];
      for (int w = 0; w < windows; w++) {
        v[w] = Math.max(0, 30 + 10 * Math.sin(w / 90.0) + 5 * rnd.nextGaussian());
      }
      series.add(v);
    }
    System.out.printf("%d hosts x %d windows of busy_pct, us per window:%n", hosts, windows);
    for (int round = 0; round < 4; round++) {
      double kept = run(d, series, false);
      double resorted = run(d, series, true);
      System.out.printf(
          "round %d: sorted copy kept %.2f, sorted every window %.2f (%.1fx)%s%n",
          round, kept, resorted, resorted / kept, round == 0 ? " (warm-up)" : "");
    }
  }

  private static double run(FlagDetector d, List<double[]> series, boolean resort) {
    long flags = 0;
    long n = 0;
    long t0 = System.nanoTime();
    for (double[] values : series) {
      FlagDetector.State s = new FlagDetector.State();
      for (int w = 0; w < values.length; w++) {
        if (resort) {
          s.sorted = null;
        }
        DerivedMetric m =
            new DerivedMetric(
                "h", "h", "busy_pct", w * 60_000L, (w + 1) * 60_000L, values[w], 1, true, 0);
        flags += d.evaluate(s, m, 0).size();
        n++;
      }
    }
    double us = (System.nanoTime() - t0) / 1e3 / n;
    if (flags < 0) {
      throw new AssertionError(); // keeps the result alive
    }
    return us;
  }
}
