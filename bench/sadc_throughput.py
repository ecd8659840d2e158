"""sadc collector beside sysstat's own `sadf -j FILE -- -A`, same files, same run, CPU seconds (user +
system) of a fresh process each, median of --repeat runs, start-up included: what a user sees who types
either command. Files:

* daily: a file recorded here now by Debian's sadc (`sadc -S XALL 1 SAMPLES`), by default 144 records,
  the records of a day sampled every 10 minutes (sampled every second, to have it in minutes);
* large: that file's records repeated --copies times, each copy after a RESTART record and later in time
  (counters start again as after a reboot: every interval a good one), tens of MB;
* the corpus's readable files, when ../shared/corpus is present.

Columns: `parse sadc` (`python -m fleetperf.cli.main parse sadc FILE`, JSON lines to /dev/null), its
start-up alone (the same on a 1-record file), the reader in-process (records_of_file + json.dumps, no
start-up), `sadf -j -- -A`, and the peak RSS of both commands on that file."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fleetperf.sources.sysstat.reader import Record, open_bytes  # noqa: E402
from fleetperf.sources.sysstat.records import Options, records_of_file  # noqa: E402

SADC = Path("/usr/lib/sysstat/sadc")
SADF = Path("/usr/bin/sadf")
CORPUS = ROOT.parent / "shared" / "corpus" / "sysstat" / "binary"
READABLE = ("data-9.1.6", "data-10.3.1", "data-11.6.5", "data-12.0.0", "data-ppc-11.7.2", "data-extra-12.1.7")
ENV = {**os.environ, "LC_ALL": "C", "TZ": "UTC", "PYTHONPATH": str(ROOT / "src")}


def grow(source: Path, copies: int, target: Path) -> Path:
    """`source` (0x2175, little-endian, a record header with extra_next) with its statistics records
    repeated `copies` times, each copy after a RESTART record, times and hh:mm:ss advanced."""
    data = source.read_bytes()
    sa = open_bytes(data)
    stats = [r for r in sa.records() if isinstance(r, Record) and r.kind == "stats"]
    span = stats[-1].ust_time - stats[0].ust_time + 2
    with open(target, "wb") as out:
        out.write(data[: stats[0].offset])
        for c in range(copies):
            for i, r in enumerate(stats):
                rec = data[r.offset : r.end]
                uptime, ust = struct.unpack_from("<QQ", rec, 0)
                if i == 0 and c:
                    t = time.gmtime(ust + c * span - 1)
                    restart = struct.pack("<QQI4Bi", uptime - 100, ust + c * span - 1, 0, 2, t.tm_hour, t.tm_min,
                                          t.tm_sec, sa.header.cpu_nr)  # fmt: skip
                    out.write(restart)
                t = time.gmtime(ust + c * span)
                clock = bytes([rec[20], t.tm_hour, t.tm_min, t.tm_sec])
                out.write(struct.pack("<QQ", uptime, ust + c * span) + rec[16:20] + clock + rec[24:])
    return target


def child(cmd: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, int]:
    """(CPU seconds, peak RSS in kB) of one run of `cmd`, output discarded. Through /usr/bin/time: the
    rusage of a child forked from this (large) process would count the parent's pages in its peak RSS."""
    with tempfile.NamedTemporaryFile("r") as report:
        timed = ["/usr/bin/time", "-o", report.name, "-f", "%U %S %M", *cmd]
        code = subprocess.run(timed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV).returncode
        if code not in ok:
            raise RuntimeError(f"{cmd} exited with {code}")
        user, system, rss = report.read().split()[-3:]
    return float(user) + float(system), int(rss)


def in_process(path: Path) -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    started = r.ru_utime + r.ru_stime
    for e in records_of_file(path, Options()):
        json.dumps(e.record)
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime - started


def median(runs: list[float]) -> float:
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=144, help="records of the daily file (sadc, 1 s apart)")
    ap.add_argument("--copies", type=int, default=80, help="copies of the daily file's records in the large file")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=Path, help="folder for the files (default: a new temporary one)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fleetperf-sadc-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    daily = work / "sa-daily"
    if not daily.exists():
        print(f"recording {args.samples} samples with {SADC} ...", file=sys.stderr)
        subprocess.run([str(SADC), "-S", "XALL", "1", str(args.samples), str(daily)], check=True)
    large = work / f"sa-large-{args.copies}"
    if not large.exists():
        grow(daily, args.copies, large)
    one = work / "sa-one"
    if not one.exists():
        subprocess.run([str(SADC), "-S", "XALL", "1", "1", str(one)], check=True)
    parse = [sys.executable, "-m", "fleetperf.cli.main", "parse", "sadc"]
    sadf = [str(SADF), "-j"]

    startup = median([child([*parse, str(one)], ok=(0, 3))[0] for _ in range(args.repeat)])
    print(f"start-up of `parse sadc` (1-record file): {startup:.3f} CPU s (median of {args.repeat})")
    files = [("daily", [daily]), ("large", [large])]
    if CORPUS.is_dir():  # those this sadf reads too (it refuses the formats before 0x2175 without sadf -c)
        readable = [CORPUS / n for n in READABLE if subprocess.run([*sadf, str(CORPUS / n)], capture_output=True,
                                                                   env=ENV).returncode == 0]  # fmt: skip
        files.append((f"corpus ({len(readable)} files)", readable))
    print(f"{'file':<20} {'MB':>7} {'records':>8} | {'parse sadc s':>12} {'in-process s':>12} {'sadf -j -A s':>12}"
          f" {'ratio':>6} | {'RSS parse MB':>12} {'RSS sadf MB':>11}")  # fmt: skip
    for label, paths in files:
        size = sum(p.stat().st_size for p in paths) / 1e6
        n = sum(1 for p in paths for r in open_bytes(p.read_bytes()).records() if isinstance(r, Record))
        ours, mine, theirs, rss_ours, rss_theirs = [], [], [], 0, 0
        for _ in range(args.repeat):
            t = t_in = t_sadf = 0.0
            for p in paths:
                cpu, rss = child([*parse, str(p)], ok=(0, 3))  # 3: dead letters (the ppc corpus file)
                t += cpu
                rss_ours = max(rss_ours, rss)
                t_in += in_process(p)
                cpu, rss = child([*sadf, str(p), "--", "-A"])
                t_sadf += cpu
                rss_theirs = max(rss_theirs, rss)
            ours.append(t)
            mine.append(t_in)
            theirs.append(t_sadf)
        o, m, s = median(ours), median(mine), median(theirs)
        ratio = o / s if s else float("inf")
        print(f"{label:<20} {size:>7.2f} {n:>8} | {o:>12.3f} {m:>12.3f} {s:>12.3f} {ratio:>6.2f} |"
              f" {rss_ours / 1024:>12.1f} {rss_theirs / 1024:>11.1f}")  # fmt: skip
    print(f"(files in {work}; CPU seconds of one process, i.e. per core; ratio = parse sadc / sadf)")


if __name__ == "__main__":
    main()
