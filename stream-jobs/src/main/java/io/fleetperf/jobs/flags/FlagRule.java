package io.fleetperf.jobs.flags;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;

/**
 * One threshold rule: metric, direction, threshold, and for how many consecutive final windows it
 * must hold before an incident opens. Rules come from the properties file named by [flink]
 * flag_rules in config/fleetperf.toml (config/flag-rules.properties: rule.NAME.metric=..., ...).
 */
public class FlagRule implements Serializable {
  public String name;
  public String metric;

  /** ">" or "<". */
  public String op;

  public double threshold;
  public int minWindows;
  public String severity;

  /** Where the threshold comes from, e.g. "seed 004 L2481". */
  public String source;

  /** One line a user reads: what the rule means. */
  public String why;

  public FlagRule() {}

  public FlagRule(
      String name,
      String metric,
      String op,
      double threshold,
      int minWindows,
      String severity,
      String source,
      String why) {
    this.name = name;
    this.metric = metric;
    this.op = op;
    this.threshold = threshold;
    this.minWindows = minWindows;
    this.severity = severity;
    this.source = source;
    this.why = why;
    if (!">".equals(op) && !"<".equals(op)) {
      throw new IllegalArgumentException("rule " + name + ": op must be > or <, got " + op);
    }
  }

  boolean breaks(double value) {
    return ">".equals(op) ? value > threshold : value < threshold;
  }

  /** The worse of two observed values in this rule's direction. */
  double worse(double a, double b) {
    return ">".equals(op) ? Math.max(a, b) : Math.min(a, b);
  }

  public static List<FlagRule> fromProperties(Properties p) {
    TreeSet<String> names = new TreeSet<>();
    for (String key : p.stringPropertyNames()) {
      if (key.startsWith("rule.")) {
        names.add(key.substring(5, key.indexOf('.', 5)));
      }
    }
    List<FlagRule> rules = new ArrayList<>();
    for (String n : names) {
      String k = "rule." + n + ".";
      rules.add(
          new FlagRule(
              n,
              need(p, k + "metric"),
              need(p, k + "op"),
              Double.parseDouble(need(p, k + "threshold")),
              Integer.parseInt(p.getProperty(k + "min_windows", "1")),
              p.getProperty(k + "severity", "warning"),
              p.getProperty(k + "source", ""),
              p.getProperty(k + "why", n)));
    }
    return rules;
  }

  static String need(Properties p, String key) {
    String v = p.getProperty(key);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("flag rules: missing " + key);
    }
    return v;
  }
}
