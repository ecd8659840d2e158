"""sadc collector throughput per core, side by side with sysstat's own `sadf -j` on the same files
in the same run: the corpus files, a file recorded here now, and a large file built from it (its
statistics records repeated with advancing uptime and time). Ours: decode + sar's figures + the Avro
record dicts (what `fleetperf parse sadc` / `ingest` do before the producer), and the same as JSON
lines (what sadf -j does). Each runs in one process on one core; figures are best of --repeat."""

from __future__ import annotations

import argparse
import json
import resource
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fleetperf.sources.sysstat.reader import Record, open_bytes  # noqa: E402
from fleetperf.sources.sysstat.records import Options, records_of_bytes  # noqa: E402
from fleetperf.stack import install  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "sysstat" / "binary"
READABLE = ("data-9.1.6", "data-10.3.1", "data-11.6.5", "data-12.0.0", "data-ppc-11.7.2", "data-extra-12.1.7")


def grow(source: Path, copies: int, target: Path) -> Path:
    """`source` (a 0x2175 little-endian file) with its statistics records repeated `copies` times,
    uptime and time advanced by the recorded interval each copy, so every record is a new interval."""
    data = source.read_bytes()
    sa = open_bytes(data)
    stats = [r for r in sa.records() if isinstance(r, Record) and r.kind == "stats"]
    step_cs = stats[-1].uptime_cs - stats[0].uptime_cs + (stats[1].uptime_cs - stats[0].uptime_cs)
    step_s = stats[-1].ust_time - stats[0].ust_time + (stats[1].ust_time - stats[0].ust_time)
    body = [data[r.offset : r.end] for r in stats]
    with open(target, "wb") as out:
        out.write(data[: stats[0].offset])
        for c in range(copies):
            for rec in body:
                uptime, ust = struct.unpack_from("<QQ", rec, 0)
                out.write(struct.pack("<QQ", uptime + c * step_cs, ust + c * step_s) + rec[16:])
    return target


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def ours(path: Path, as_json: bool) -> tuple[float, int, int]:
    """(cpu seconds, records, values) of decoding one file."""
    data = path.read_bytes()
    started = _cpu_seconds()
    records = values = 0
    sink = 0
    for e in records_of_bytes(data, str(path), Options()):
        records += 1
        if e.topic_key == "sysstat_samples":
            values += len(e.record["metrics"])
        if as_json:
            sink += len(json.dumps(e.record))
    return _cpu_seconds() - started, records, values


def sadf(sadf_bin: Path, path: Path) -> float:
    """CPU seconds (user + system of the child) of `sadf -j FILE -- -A`, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([str(sadf_bin), "-j", str(path), "--", "-A"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _stats_records(path: Path) -> int:
    return sum(1 for r in open_bytes(path.read_bytes()).records() if isinstance(r, Record) and r.kind == "stats")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=2000, help="repetitions of the fresh file's records (large file)")
    ap.add_argument("--samples", type=int, default=10, help="records of the fresh file sadc writes (1 s apart)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sadc_bin, sadf_bin = install.sysstat()
    work = Path(tempfile.mkdtemp(prefix="fleetperf-sadc-bench-"))
    fresh = work / "sa-fresh"
    subprocess.run([str(sadc_bin), "-S", "XALL", "1", str(args.samples), str(fresh)], check=True)
    big = grow(fresh, args.copies, work / "sa-large")
    files = [("corpus (6 readable files)", [CORPUS / n for n in READABLE]), ("fresh", [fresh]), ("large", [big])]

    print(f"{'input':<26} {'MB':>8} {'records':>9} {'values':>10} | {'ours rec/s':>11} {'ours MB/s':>9}"
          f" {'ours+json MB/s':>14} | {'sadf -j MB/s':>12} {'sadf rec/s':>11}")  # fmt: skip
    for label, paths in files:
        size = sum(p.stat().st_size for p in paths) / 1e6
        best = best_json = best_sadf = float("inf")
        records = values = 0
        for _ in range(args.repeat):
            t = tj = ts = 0.0
            records = values = 0
            for p in paths:
                cpu, n, v = ours(p, False)
                t += cpu
                records += n
                values += v
                tj += ours(p, True)[0]
                ts += sadf(sadf_bin, p)
            best, best_json, best_sadf = min(best, t), min(best_json, tj), min(best_sadf, ts)
        sa_records = sum(_stats_records(p) for p in paths)
        print(
            f"{label:<26} {size:>8.2f} {records:>9} {values:>10} | {records / best:>11,.0f} {size / best:>9.2f}"
            f" {size / best_json:>14.2f} | {size / best_sadf:>12.2f} {sa_records / best_sadf:>11,.0f}"
        )
    print(f"(files kept in {work}; 'records' = Avro records we publish, 'sadf rec/s' = file records per second;"
          " CPU seconds of one process, i.e. per core)")  # fmt: skip


if __name__ == "__main__":
    main()
