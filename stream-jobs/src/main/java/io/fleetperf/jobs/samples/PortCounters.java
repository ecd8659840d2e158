package io.fleetperf.jobs.samples;

import org.apache.avro.generic.GenericRecord;

/** Cumulative packet counters of one member port at one time (schemas/net_port_sample.avsc). */
public class PortCounters {
  public String hostId;
  public String hostname;
  public String aggregation;
  public String adapter;
  public long ts;
  public Long txPackets;
  public Long rxPackets;

  /**
   * LACP state of the member port: false when Actor or Partner is not IN_SYNC or the aggregation is
   * not Aggregated (seed 000 L12817); null when the source does not report it.
   */
  public Boolean inSync;

  public PortCounters() {}

  public PortCounters(
      String hostId, String aggregation, String adapter, long ts, Long txPackets, Long rxPackets) {
    this.hostId = hostId;
    this.hostname = hostId;
    this.aggregation = aggregation;
    this.adapter = adapter;
    this.ts = ts;
    this.txPackets = txPackets;
    this.rxPackets = rxPackets;
  }

  public static PortCounters fromAvro(GenericRecord r) {
    Object agg = r.get("aggregation");
    PortCounters p =
        new PortCounters(
            r.get("host_id").toString(),
            agg == null ? null : agg.toString(),
            r.get("adapter").toString(),
            (Long) r.get("ts"),
            (Long) r.get("tx_packets"),
            (Long) r.get("rx_packets"));
    p.hostname = r.get("hostname").toString();
    p.inSync = inSync(r.get("actor_sync"), r.get("partner_sync"), r.get("aggregation_status"));
    return p;
  }

  public static Boolean inSync(Object actor, Object partner, Object status) {
    if (actor == null && partner == null && status == null) {
      return null;
    }
    boolean ok = actor == null || "IN_SYNC".equals(actor.toString());
    ok &= partner == null || "IN_SYNC".equals(partner.toString());
    ok &= status == null || "Aggregated".equals(status.toString());
    return ok;
  }

  /** Deltas are per port; the port's counters are its own stream. */
  public String portKey() {
    return hostId + "|" + aggregation + "|" + adapter;
  }
}
