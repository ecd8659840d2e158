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

  private static final FieldPositions GUEST_FIELDS =
      FieldPositions.fields(
          "guest_id", "ts", "interval_s", "tcpu_s", "vcpu_s", "source", "zvm_system");

  private static final FieldPositions SYSTEM_FIELDS =
      FieldPositions.fields(
          "zvm_system",
          "ts",
          "interval_s",
          "total_cpu_s",
          "virtual_cpu_s",
          "source",
          "busy_pct",
          "online_cpus",
          "capture_ratio",
          "users_in_elist",
          "paging_xstore_rate",
          "paging_dasd_rate");

  public static ZvmCpuSample fromGuestAvro(GenericRecord r) {
    ZvmCpuSample s =
        new ZvmCpuSample(
            GUEST_FIELDS.get(r, 0).toString(),
            (Long) GUEST_FIELDS.get(r, 1),
            (Double) GUEST_FIELDS.get(r, 2),
            (Double) GUEST_FIELDS.get(r, 3),
            (Double) GUEST_FIELDS.get(r, 4));
    // one report file (or monitor stream) per system: rows of one stream are in time order
    s.stream = GUEST_FIELDS.get(r, 5) + "|" + GUEST_FIELDS.get(r, 6);
    return s;
  }

  public static ZvmCpuSample fromSystemAvro(GenericRecord r) {
    ZvmCpuSample s =
        new ZvmCpuSample(
            SYSTEM_FIELDS.get(r, 0).toString(),
            (Long) SYSTEM_FIELDS.get(r, 1),
            (Double) SYSTEM_FIELDS.get(r, 2),
            (Double) SYSTEM_FIELDS.get(r, 3),
            (Double) SYSTEM_FIELDS.get(r, 4));
    s.stream = SYSTEM_FIELDS.get(r, 5).toString();
    s.busyPct = (Double) SYSTEM_FIELDS.get(r, 6);
    s.onlineCpus = (Double) SYSTEM_FIELDS.get(r, 7);
    s.captureRatio = (Double) SYSTEM_FIELDS.get(r, 8);
    s.usersInElist = (Double) SYSTEM_FIELDS.get(r, 9);
    s.pagingXstoreRate = (Double) SYSTEM_FIELDS.get(r, 10);
    s.pagingDasdRate = (Double) SYSTEM_FIELDS.get(r, 11);
    return s;
  }
}
