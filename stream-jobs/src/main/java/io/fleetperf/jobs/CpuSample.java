package io.fleetperf.jobs;

/** The fields of schemas/cpu_sample.avsc the CPU window job reads (a Flink POJO). */
public class CpuSample {
  public String hostId;
  public String hostname;
  public long ts;
  public double intervalS;
  public Double stealPct;
  public Double physc;
  public Double entitled;

  public CpuSample() {}

  public CpuSample(
      String hostId, String hostname, long ts, double intervalS, Double stealPct, Double physc, Double entitled) {
    this.hostId = hostId;
    this.hostname = hostname;
    this.ts = ts;
    this.intervalS = intervalS;
    this.stealPct = stealPct;
    this.physc = physc;
    this.entitled = entitled;
  }
}
