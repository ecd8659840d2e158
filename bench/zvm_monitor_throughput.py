"""z/VM CP monitor collector throughput per core: records/s and MB/s of decoding (MONWRITE file
and monreader stream) and of decoding + turning records into Avro record dicts, on a synthetic
monitor data set written per the layouts (no public capture exists): --guests guests with two
virtual CPUs each, --cpus processors, --linux of the guests with APPLDATA OS, --intervals samples."""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from fleetperf.sources.zvm.monitor import MonRecord, read_monwrite, read_stream, unix_us_to_tod  # noqa: E402
from fleetperf.sources.zvm.monitor_records import Options, records_of_bytes  # noqa: E402
from tests import zvm_writer as w  # noqa: E402


def synthetic(guests: int, cpus: int, linux: int, intervals: int) -> list[bytes]:
    recs = [w.record(1, 4, unix_us_to_tod(0), {"system_id": "BENCHVM"})]
    start = 1_700_000_000_000_000
    for i in range(intervals):
        tod = unix_us_to_tod(start + i * 60_000_000)
        for g in range(guests):
            for vcpu in range(2):
                t = (i * 1000 + g) << 12
                recs.append(w.record(4, 3, tod, {"userid": f"LNX{g:05d}", "vcpu_address": vcpu,
                                                 "total_cpu_time": t * 3, "virtual_cpu_time": t * 2}))  # fmt: skip
        for c in range(cpus):
            recs.append(w.record(0, 2, tod, {"cpu_address": c, "wait_time": (i * 30_000_000) << 12,
                                             "problem_state_time": (i * 20_000_000) << 12}))  # fmt: skip
        for g in range(linux):
            per = {"user": i * 100, "system": i * 50, "idle": i * 5000, "steal": i * 30}
            recs.append(w.appldata_os(f"LNX{g:05d}", tod, [per, per]))
        recs.append(w.record(1, 11, tod))
    return recs


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--guests", type=int, default=500)
    ap.add_argument("--cpus", type=int, default=16)
    ap.add_argument("--linux", type=int, default=200)
    ap.add_argument("--intervals", type=int, default=60)
    args = ap.parse_args()
    recs = synthetic(args.guests, args.cpus, args.linux, args.intervals)
    files = {"MONWRITE file": w.monwrite_file(recs), "monreader stream": w.monreader_stream(recs, 16)}
    print(f"{len(recs):,} monitor records ({args.guests} guests x 2 vCPUs, {args.cpus} processors, "
          f"{args.linux} Linux guests with APPLDATA, {args.intervals} intervals)")  # fmt: skip
    print(f"{'input':<18} {'MB':>7} | {'decode rec/s':>13} {'MB/s':>7} | {'+ Avro dicts rec/s':>19} {'out':>8}")
    for label, data in files.items():
        reader = read_monwrite if label.startswith("MON") else read_stream
        t = _cpu()
        n = sum(1 for i in reader(data)[1] if isinstance(i, MonRecord))
        decode = _cpu() - t
        t = _cpu()
        emitted, _ = records_of_bytes(data, label, Options())
        out = sum(1 for _ in emitted)
        full = _cpu() - t
        mb = len(data) / 1e6
        print(f"{label:<18} {mb:>7.1f} | {n / decode:>13,.0f} {mb / decode:>7.1f} | {n / full:>19,.0f} {out:>8,}")
    print("(CPU seconds of one process: per core; 'out' = Avro records made)")


if __name__ == "__main__":
    main()
