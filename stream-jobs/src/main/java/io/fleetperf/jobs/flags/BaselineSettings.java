package io.fleetperf.jobs.flags;

import java.io.Serializable;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

/**
 * Baseline flags: a final window is unusual for its entity when its value leaves the band the
 * entity's own last {@code history} windows spanned, [q_low - margin, q_high + margin], where
 * margin = max(band width × widthFactor, absMargin, relMargin × |median|). Quantiles rather than a
 * mean and standard deviation so bursts the entity always has (a host whose steal peaks every half
 * hour) set the band instead of being flagged, and a steadily busy host (95 % all day) is not
 * unusual. No flag until {@code warmup} windows of history exist (new entities are not flagged for
 * lack of history). Flagged windows still enter the history: a lasting change becomes the new
 * normal and its incident closes.
 */
public class BaselineSettings implements Serializable {
  public Set<String> metrics = new HashSet<>();
  public int history = 240;
  public int warmup = 60;
  public double lowQuantile = 0.05;
  public double highQuantile = 0.95;
  public double widthFactor = 1.0;
  public double absMargin = 5.0;

  /**
   * baseline.abs_margin.METRIC: the floor in the metric's own unit (cores for physc, ratio for tv).
   */
  public java.util.HashMap<String, Double> absMargins = new java.util.HashMap<>();

  public double relMargin = 0.25;
  public int minWindows = 3;
  public String severity = "info";

  public static BaselineSettings fromProperties(Properties p) {
    BaselineSettings b = new BaselineSettings();
    String metrics = p.getProperty("baseline.metrics", "");
    for (String m : metrics.split(",")) {
      if (!m.isBlank()) {
        b.metrics.add(m.trim());
      }
    }
    b.history = Integer.parseInt(p.getProperty("baseline.history_windows", "240"));
    b.warmup = Integer.parseInt(p.getProperty("baseline.warmup_windows", "60"));
    b.lowQuantile = Double.parseDouble(p.getProperty("baseline.low_quantile", "0.05"));
    b.highQuantile = Double.parseDouble(p.getProperty("baseline.high_quantile", "0.95"));
    b.widthFactor = Double.parseDouble(p.getProperty("baseline.width_factor", "1.0"));
    b.absMargin = Double.parseDouble(p.getProperty("baseline.abs_margin", "5.0"));
    for (String key : p.stringPropertyNames()) {
      if (key.startsWith("baseline.abs_margin.")) {
        b.absMargins.put(
            key.substring("baseline.abs_margin.".length()), Double.parseDouble(p.getProperty(key)));
      }
    }
    b.relMargin = Double.parseDouble(p.getProperty("baseline.rel_margin", "0.25"));
    b.minWindows = Integer.parseInt(p.getProperty("baseline.min_windows", "3"));
    b.severity = p.getProperty("baseline.severity", "info");
    return b;
  }

  double absMargin(String metric) {
    return absMargins.getOrDefault(metric, absMargin);
  }
}
