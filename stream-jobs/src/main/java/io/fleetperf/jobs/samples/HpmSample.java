package io.fleetperf.jobs.samples;

import java.util.Map;
import org.apache.avro.generic.GenericRecord;

/** The counters of schemas/hpm_sample.avsc the SLB windows need (a Flink POJO). */
public class HpmSample extends BaseSample {
  public Double durationS;
  public Long dslb;
  public Long islb;
  public Long ierat;
  public Long instructions;
  public Long cycles;

  public HpmSample() {}

  public HpmSample(
      String hostId,
      long ts,
      Double durationS,
      Long dslb,
      Long islb,
      Long ierat,
      Long instructions,
      Long cycles) {
    this.hostId = hostId;
    this.hostname = hostId;
    this.ts = ts;
    this.stream = "";
    this.durationS = durationS;
    this.dslb = dslb;
    this.islb = islb;
    this.ierat = ierat;
    this.instructions = instructions;
    this.cycles = cycles;
  }

  public static HpmSample fromAvro(GenericRecord r) {
    @SuppressWarnings("unchecked")
    Map<Object, Object> counters = (Map<Object, Object>) r.get("counters");
    HpmSample s =
        new HpmSample(
            r.get("host_id").toString(),
            (Long) r.get("ts"),
            (Double) r.get("duration_s"),
            counter(counters, "PM_DSLB_MISS"),
            counter(counters, "PM_ISLB_MISS"),
            counter(counters, "PM_IERAT_MISS"),
            counter(counters, "PM_RUN_INST_CMPL"),
            counter(counters, "PM_RUN_CYC"));
    s.hostname = r.get("hostname").toString();
    s.stream = r.get("origin").toString();
    return s;
  }

  private static Long counter(Map<Object, Object> counters, String name) {
    for (Map.Entry<Object, Object> e : counters.entrySet()) {
      if (e.getKey().toString().equals(name)) {
        return (Long) e.getValue();
      }
    }
    return null;
  }
}
