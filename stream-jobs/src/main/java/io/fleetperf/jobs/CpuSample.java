package io.fleetperf.jobs;

import org.apache.avro.generic.GenericRecord;

/** The fields of schemas/cpu_sample.avsc the CPU window job reads (a Flink POJO). */
public class CpuSample extends BaseSample {
  public double intervalS;
  public Double stealPct;
  public Double physc;
  public Double entitled;

  public CpuSample() {}

  public CpuSample(
      String hostId, String hostname, long ts, double intervalS, Double stealPct, Double physc, Double entitled) {
    this(hostId, hostname, ts, intervalS, stealPct, physc, entitled, "");
  }

  public CpuSample(
      String hostId, String hostname, long ts, double intervalS, Double stealPct, Double physc, Double entitled,
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

  static CpuSample fromAvro(GenericRecord r) {
    return new CpuSample(
        r.get("host_id").toString(),
        r.get("hostname").toString(),
        (Long) r.get("ts"),
        (Double) r.get("interval_s"),
        (Double) r.get("steal_pct"),
        (Double) r.get("physc"),
        (Double) r.get("entitled"),
        r.get("origin_file").toString());
  }
}
