package io.fleetperf.jobs.samples;

/** Packets one member port moved since its previous sample. */
public class PortDelta extends BaseSample {
  public String aggregation;
  public String adapter;
  public long tx;
  public long rx;

  /** The port's LACP state at this sample (see PortCounters#inSync). */
  public Boolean inSync;

  public PortDelta() {}

  public PortDelta(
      String hostId,
      String hostname,
      String aggregation,
      String adapter,
      long ts,
      long tx,
      long rx) {
    this.hostId = hostId;
    this.hostname = hostname;
    this.aggregation = aggregation;
    this.adapter = adapter;
    this.ts = ts;
    this.tx = tx;
    this.rx = rx;
  }

  /** One event clock per aggregation: its ports' samples arrive together. */
  @Override
  public String streamKey() {
    return hostId + "|" + aggregation;
  }
}
