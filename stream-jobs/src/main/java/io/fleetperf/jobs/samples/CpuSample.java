package io.fleetperf.jobs.samples;

import org.apache.avro.generic.GenericRecord;

/** The fields of schemas/cpu_sample.avsc the CPU window job reads (a Flink POJO). */
public class CpuSample extends BaseSample {
  public double intervalS;
  public Double stealPct;
  public Double physc;
  public Double entitled;

  /** AIX shared pool: its size and its idle processors (null where the source has no pool). */
  public Double poolCpus;

  public Double poolIdle;

  /** Idle % of the host's CPU time and its logical CPUs (utilisation family; null where absent). */
  public Double idlePct;

  public Integer cpus;

  public CpuSample() {}

  public CpuSample(
      String hostId,
      String hostname,
      long ts,
      double intervalS,
      Double stealPct,
      Double physc,
      Double entitled) {
    this(hostId, hostname, ts, intervalS, stealPct, physc, entitled, "");
  }

  public CpuSample(
      String hostId,
      String hostname,
      long ts,
      double intervalS,
      Double stealPct,
      Double physc,
      Double entitled,
      String stream) {
    this.hostId = hostId;
    this.hostname = hostname;
    this.ts = ts;
    this.intervalS = intervalS;
    this.stealPct = stealPct;
    this.physc = physc;
    this.entitled = entitled;
    this.stream = stream;
  }

  /** The same sample with the AIX shared pool seen from this LPAR. */
  public CpuSample withPool(Double poolCpus, Double poolIdle) {
    this.poolCpus = poolCpus;
    this.poolIdle = poolIdle;
    return this;
  }

  /** The same sample with its idle % and logical CPU count. */
  public CpuSample withIdle(Double idlePct, Integer cpus) {
    this.idlePct = idlePct;
    this.cpus = cpus;
    return this;
  }

  private static final FieldPositions FIELDS =
      FieldPositions.fields(
          "host_id",
          "hostname",
          "ts",
          "interval_s",
          "steal_pct",
          "physc",
          "entitled",
          "origin_file",
          "pool_cpus",
          "pool_idle",
          "idle_pct",
          "cpus");

  public static CpuSample fromAvro(GenericRecord r) {
    // records written before the pool fields existed have none (schema evolution): null
    return new CpuSample(
            FIELDS.get(r, 0).toString(),
            FIELDS.get(r, 1).toString(),
            (Long) FIELDS.get(r, 2),
            (Double) FIELDS.get(r, 3),
            (Double) FIELDS.get(r, 4),
            (Double) FIELDS.get(r, 5),
            (Double) FIELDS.get(r, 6),
            FIELDS.get(r, 7).toString())
        .withPool((Double) FIELDS.get(r, 8), (Double) FIELDS.get(r, 9))
        .withIdle((Double) FIELDS.get(r, 10), (Integer) FIELDS.get(r, 11));
  }
}
