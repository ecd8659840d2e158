package io.fleetperf.jobs.samples;

/** A sample that arrived after its window had closed for its stream (a Flink POJO). */
public class LateSample {
  public String kind;
  public String stream;
  public String entity;
  public long ts;
  public long detectedAt;

  public LateSample() {}

  public LateSample(String kind, Sample s) {
    this.kind = kind;
    this.stream = s.streamKey();
    this.entity = s.hostId();
    this.ts = s.ts();
    this.detectedAt = System.currentTimeMillis();
  }
}
