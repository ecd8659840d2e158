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
  /** The source stream the sample came from (origin file); samples of one stream are in order. */
  public String stream;

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

  /** Key of the event clock: one per host and source stream. */
  public String streamKey() {
    return hostId + "|" + stream;
  }
}
