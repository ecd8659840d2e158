package io.fleetperf.jobs.samples;

import org.apache.avro.generic.GenericRecord;

/**
 * CPU time of a z/VM guest (schemas/zvm_guest_sample.avsc) or a whole z/VM system
 * (zvm_system_sample.avsc) over one interval, whichever z/VM source wrote it (a Flink POJO). hostId
 * is the entity: guest_id or the system name.
 */
public class ZvmCpuSample extends BaseSample {
  /** Total CPU seconds (virtual + CP on the entity's behalf) and virtual CPU seconds. */
  public Double totalS;

  public Double virtualS;
  public double intervalS;

  /** System samples only: processor busy %, capture ratio, eligible-list users, paging rates. */
  public Double busyPct;

  /** System samples only: online processors (cpu_cores = busy × processors / 100). */
  public Double onlineCpus;

  public Double captureRatio;
  public Double usersInElist;
  public Double pagingXstoreRate;
  public Double pagingDasdRate;

  public ZvmCpuSample() {}

  public ZvmCpuSample(String entity, long ts, double intervalS, Double totalS, Double virtualS) {
    this.hostId = entity;
    this.hostname = entity;
    this.ts = ts;
    this.intervalS = intervalS;
    this.totalS = totalS;
    this.virtualS = virtualS;
  }

  public static ZvmCpuSample fromGuestAvro(GenericRecord r) {
    ZvmCpuSample s =
        new ZvmCpuSample(
            r.get("guest_id").toString(),
            (Long) r.get("ts"),
            (Double) r.get("interval_s"),
            (Double) r.get("tcpu_s"),
            (Double) r.get("vcpu_s"));
    s.hostname = r.get("guest_id").toString();
    // one report file (or monitor stream) per system: rows of one stream are in time order
    s.stream = r.get("source") + "|" + r.get("zvm_system");
    return s;
  }

  public static ZvmCpuSample fromSystemAvro(GenericRecord r) {
    ZvmCpuSample s =
        new ZvmCpuSample(
            r.get("zvm_system").toString(),
            (Long) r.get("ts"),
            (Double) r.get("interval_s"),
            (Double) r.get("total_cpu_s"),
            (Double) r.get("virtual_cpu_s"));
    s.stream = r.get("source").toString();
    s.busyPct = (Double) r.get("busy_pct");
    s.onlineCpus = (Double) r.get("online_cpus");
    s.captureRatio = (Double) r.get("capture_ratio");
    s.usersInElist = (Double) r.get("users_in_elist");
    s.pagingXstoreRate = (Double) r.get("paging_xstore_rate");
    s.pagingDasdRate = (Double) r.get("paging_dasd_rate");
    return s;
  }
}
