"""`parse sadc` beside sysstat's own `sadf -j FILE -- -A`, same files, same run, CPU seconds (user +
system) of a fresh process each, median of --repeat runs, start-up included: what a user sees who types
either command. `parse sadc` runs four ways side by side: "python" (`python -m fleetperf.cli.main parse sadc`
with FLEETPERF_SADC_PARSER=python: the reader, sar's arithmetic and the JSON all in Python), "native" (the same
command with the Rust module of sources/sysstat/native: items, arithmetic, range checks and JSON lines in native
code), "fleetperf-sadc" (that crate's standalone binary, no Python at all) and "./fleetperf" (what a user types:
the launcher, which checks its stamps and runs the binary, which hands anything it does not vouch for to the
Python command). Files:

* daily: a file recorded here now by Debian's sadc (`sadc -S XALL 1 SAMPLES`), by default 144 records,
  the records of a day sampled every 10 minutes (sampled every second, to have it in minutes);
* large: that file's records repeated --copies times, each copy after a RESTART record and later in time
  (counters start again as after a reboot: every interval a good one), tens of MB;
* the corpus's readable files, when ../shared/corpus is present.

Columns: CPU seconds of `python -m fleetperf.cli.main parse sadc FILE` (JSON lines to /dev/null), its
ratio to `sadf -j -- -A`, peak RSS of the command. The start-up line is the same command on a 1-record
file.

Both run with compiled bytecode cached (PYTHONPYCACHEPREFIX in the work folder, as an installed package
has it): with PYTHONDONTWRITEBYTECODE set, every start compiles the package again, which no user pays."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SADC = Path("/usr/lib/sysstat/sadc")
SADF = Path("/usr/bin/sadf")
BIN = ROOT / "src" / "fleetperf" / "sources" / "sysstat" / "native" / "target" / "release" / "fleetperf-sadc"
CORPUS = ROOT.parent / "shared" / "corpus" / "sysstat" / "binary"
READABLE = ("data-9.1.6", "data-10.3.1", "data-11.6.5", "data-12.0.0", "data-ppc-11.7.2", "data-extra-12.1.7")


def grow(source: Path, copies: int, target: Path) -> Path:
    """`source` (0x2175, little-endian, a record header with extra_next) with its statistics records
    repeated `copies` times, each copy after a RESTART record, times and hh:mm:ss advanced."""
    from fleetperf.sources.sysstat.reader import Record, open_bytes

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


def env_for(tree: Path, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {
        "LC_ALL": "C",
        "TZ": "UTC",
        "PYTHONPATH": str(tree / "src"),
        "PYTHONPYCACHEPREFIX": str(work / "pycache" / tree.name),
    }


def child(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, int]:
    """(CPU seconds, peak RSS in kB) of one run of `cmd`, output discarded. CPU from wait4's rusage
    (microseconds; /usr/bin/time's 10 ms steps are all of sadf's time on a daily file), RSS from
    /usr/bin/time: a child started from this process inherits its peak RSS across exec (measured: sadf
    "65 MB" after this process had read the large file), one started from `time` does not."""
    with tempfile.NamedTemporaryFile("r") as report:
        timed = ["/usr/bin/time", "-o", report.name, "-f", "%M", *cmd]
        proc = subprocess.Popen(timed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)  # `time` itself and the command it waited for
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in ok:
            raise RuntimeError(f"{cmd} exited with {proc.returncode}")
        rss = int(report.read().split()[-1])
    return usage.ru_utime + usage.ru_stime, rss


def work_only(paths: list[str]) -> None:
    """(child mode) CPU seconds of `parse sadc`'s loop over `paths` once everything is imported: the
    per-file work without the CLI's start-up, printed as a number."""
    import io

    from fleetperf import config
    from fleetperf.sources.sysstat.records import Options, records_of_file

    s = config.load()
    names = {k: s.topic(k).name for k in s.topics}
    encode = json.JSONEncoder(allow_nan=False).encode
    with open(os.devnull, "wb") as raw:
        out = io.TextIOWrapper(raw, encoding="utf-8")
        t = time.process_time()
        for p in paths:
            for e in records_of_file(Path(p), Options(), names):
                if isinstance(e, tuple):  # the native path's lines, as cli/commands/parse.py writes them
                    out.flush()
                    raw.write(e.text)
                else:
                    out.write(encode({"topic": names[e.topic_key], "key": e.key, "value": e.record}) + "\n")
        out.flush()
        print(time.process_time() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=144, help="records of the daily file (sadc, 1 s apart)")
    ap.add_argument("--copies", type=int, default=80, help="copies of the daily file's records in the large file")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=Path, help="folder for the files (default: a new temporary one)")
    ap.add_argument("--work-only", nargs="+", help=argparse.SUPPRESS)  # child mode
    args = ap.parse_args()
    if args.work_only:
        work_only(args.work_only)
        return
    sys.path.insert(0, str(ROOT / "src"))
    from fleetperf.sources.sysstat.reader import Record, native_available, open_bytes

    if not native_available():
        print("the native sadc module is not built (./fleetperf builds it when cargo is there)", file=sys.stderr)
        sys.exit(2)
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
    if not BIN.exists():
        print(f"{BIN} is not built (./fleetperf builds it when cargo is there)", file=sys.stderr)
        sys.exit(2)
    plain = env_for(ROOT, work)
    envs = {"python": plain | {"FLEETPERF_SADC_PARSER": "python"}, "native": plain}
    parse = [sys.executable, "-m", "fleetperf.cli.main", "parse", "sadc"]
    binary = [str(BIN)]
    bin_env = plain | {"FLEETPERF_SADC_ROOT": str(ROOT), "FLEETPERF_SADC_FALLBACK": sys.executable}
    launcher = [str(ROOT / "fleetperf"), "parse", "sadc"]
    runs = [("python", parse, envs["python"]), ("native", parse, envs["native"]), ("fleetperf-sadc", binary, bin_env),
            ("./fleetperf", launcher, plain)]  # fmt: skip
    for _name, cmd, env in runs:  # compile and cache the bytecode, build what the launcher builds (not timed)
        child([*cmd, str(one)], env, ok=(0, 3))

    print(f"parse sadc, python vs native, beside sadf -j -- -A; CPU s (user + system), median of {args.repeat}")
    head = (f"{'file':<20} {'MB':>6} {'records':>7} | {'command':<14} | {'CPU s':>8} {'/ sadf':>7} |"
            f" {'MB/CPU s':>8} | {'peak RSS MB':>11} | {'work s':>7} {'/ sadf':>7}")  # fmt: skip
    print(head)
    print("-" * len(head))
    starts = {name: statistics.median(child([*cmd, str(one)], env, ok=(0, 3))[0]
                                      for _ in range(args.repeat)) for name, cmd, env in runs}  # fmt: skip
    sadf = [str(SADF), "-j"]
    sadf_start = statistics.median(child([*sadf, str(one), "--", "-A"], plain)[0] for _ in range(args.repeat))
    for name in starts:
        r = starts[name] / sadf_start if sadf_start else float("inf")
        print(f"{'start-up (1 record)':<20} {'':>6} {1:>7} | {name:<14} | {starts[name]:>8.3f} {r:>7.1f} |")
    print(f"{'':<20} {'':>6} {'':>7} | {'sadf -j -A':<14} | {sadf_start:>8.3f} {1:>7.1f} |")

    files = [("daily", [daily]), ("large", [large])]
    if CORPUS.is_dir():  # those this sadf reads too (it refuses the formats before 0x2175 without sadf -c)
        readable = [CORPUS / n for n in READABLE if subprocess.run([*sadf, str(CORPUS / n)], capture_output=True,
                                                                   env=plain).returncode == 0]  # fmt: skip
        files.append((f"corpus ({len(readable)} files)", readable))
    for label, paths in files:
        size = sum(p.stat().st_size for p in paths) / 1e6
        n = sum(1 for p in paths for r in open_bytes(p.read_bytes()).records() if isinstance(r, Record))
        rows = []
        for name, cmd, env in [*runs, ("sadf -j -A", sadf, plain)]:
            times, rss_max = [], 0
            for _ in range(args.repeat):
                t = 0.0
                for p in paths:
                    # 3: dead letters (the ppc file)
                    cpu, rss = child([*cmd, str(p), "--", "-A"] if cmd is sadf else [*cmd, str(p)], env, ok=(0, 3))
                    t += cpu
                    rss_max = max(rss_max, rss)
                times.append(t)
            rows.append((name, statistics.median(times), rss_max))
        theirs = rows[-1][1]
        for i, (name, t, rss) in enumerate(rows):
            what = f"{label:<20} {size:>6.2f} {n:>7}" if i == 0 else f"{'':<20} {'':>6} {'':>7}"
            ratio = t / theirs if theirs else float("inf")
            line = f"{what} | {name:<14} | {t:>8.3f} {ratio:>7.2f} | {size / t if t else 0:>8.1f} | {rss / 1024:>11.1f}"
            if name in envs:  # the same loop in-process, after the imports (sadf's start-up is ~0.003 s)
                env = envs[name]
                w = statistics.median(
                    float(subprocess.run([sys.executable, __file__, "--work-only", *map(str, paths)], env=env,
                                         check=True, capture_output=True, text=True).stdout)
                    for _ in range(args.repeat)
                )  # fmt: skip
                line += f" | {w:>7.3f} {w / theirs if theirs else float('inf'):>7.2f}"
            print(line)
    print(f"(files in {work}; CPU seconds of one process, i.e. per core; / sadf = CPU s over sadf -j -A's;"
          " work s: the parse loop alone, in a process of its own after its imports and settings)")  # fmt: skip


if __name__ == "__main__":
    main()
