"""sadc collector beside sysstat's own `sadf -j FILE -- -A`, same files, same run, CPU seconds (user +
system) of a fresh process each, median of --repeat runs, start-up included: what a user sees who types
either command. The collector runs twice, side by side: "before" (src/fleetperf/sources/sysstat as of
--before, default the commit before issue 20's speed work) and "after" (this tree); everything else in
both is this tree's, so the difference is the collector's alone. Files:

* daily: a file recorded here now by Debian's sadc (`sadc -S XALL 1 SAMPLES`), by default 144 records,
  the records of a day sampled every 10 minutes (sampled every second, to have it in minutes);
* large: that file's records repeated --copies times, each copy after a RESTART record and later in time
  (counters start again as after a reboot: every interval a good one), tens of MB;
* the corpus's readable files, when ../shared/corpus is present.

Columns: `parse sadc` (`python -m fleetperf.cli.main parse sadc FILE`, JSON lines to /dev/null) and its
ratio to `sadf -j -- -A`; then, in a process of its own, where that time goes: the reader alone
(records_of_file: decode, sar's arithmetic, range checks, the records), its decoding alone
(SaFile.records(): the bytes to counters) and the JSON the parse command makes of those records
(json.dumps of each message, as cli/commands/parse.py does: a floor under any reader behind `parse`);
peak RSS of the command. The start-up line is the same command on a 1-record file.

Both run with compiled bytecode cached (PYTHONPYCACHEPREFIX in the work folder, as an installed package
has it): with PYTHONDONTWRITEBYTECODE set, every start compiles the package again (0.39 s instead of
0.14 s of start-up measured here), which no user pays."""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
CORPUS = ROOT.parent / "shared" / "corpus" / "sysstat" / "binary"
READABLE = ("data-9.1.6", "data-10.3.1", "data-11.6.5", "data-12.0.0", "data-ppc-11.7.2", "data-extra-12.1.7")
# the last commit before the speed work of issue 20 (item 7) on the collector
BEFORE = "15c9d89"
FOLDER = "src/fleetperf/sources/sysstat"


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


def before_tree(work: Path, rev: str) -> Path:
    """A copy of this tree's src/ whose collector folder is that of `rev`; config and schemas shared."""
    tree = work / f"before-{rev}"
    if (tree / FOLDER).is_dir():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "target", "*.so"))
    shutil.rmtree(tree / FOLDER)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, FOLDER], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    for shared in ("config", "schemas", "sql"):
        (tree / shared).symlink_to(ROOT / shared)
    return tree


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


def breakdown(paths: list[str]) -> None:
    """(child mode, run with the PYTHONPATH of one version) CPU seconds of the reader, of its decoding
    and of json.dumps of the parse command's messages, over `paths`, printed as one JSON object."""
    from fleetperf.sources.sysstat.reader import open_stream
    from fleetperf.sources.sysstat.records import Options, records_of_file

    def cpu() -> float:
        return time.process_time()

    reader = decode = dumps = 0.0
    with open(os.devnull, "w") as out:
        for p in paths:
            t = cpu()
            with open(p, "rb") as handle:
                for _ in open_stream(handle, p).records():
                    pass
            decode += cpu() - t
            # the records in batches of 1000, each dumped as it is complete: holding them all would make the
            # garbage collector's passes (and so the reader's time) grow with the file
            batch = []
            t = cpu()
            for e in records_of_file(Path(p), Options()):
                batch.append(e)
                if len(batch) == 1000:
                    t_json = cpu()
                    for e in batch:
                        message = {"topic": e.topic_key, "key": e.key, "value": e.record}
                        out.write(json.dumps(message, allow_nan=False) + "\n")
                    dumps += cpu() - t_json
                    batch.clear()
            t_json = cpu()
            for e in batch:
                out.write(json.dumps({"topic": e.topic_key, "key": e.key, "value": e.record}, allow_nan=False) + "\n")
            dumps += cpu() - t_json
            reader += cpu() - t
    print(json.dumps({"reader": reader - dumps, "decode": decode, "json": dumps}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=144, help="records of the daily file (sadc, 1 s apart)")
    ap.add_argument("--copies", type=int, default=80, help="copies of the daily file's records in the large file")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--before", default=BEFORE, help=f"revision of {FOLDER} to compare with (default {BEFORE})")
    ap.add_argument("--work", type=Path, help="folder for the files (default: a new temporary one)")
    ap.add_argument("--breakdown", nargs="+", help=argparse.SUPPRESS)  # child mode
    args = ap.parse_args()
    if args.breakdown:
        breakdown(args.breakdown)
        return
    sys.path.insert(0, str(ROOT / "src"))
    from fleetperf.sources.sysstat.reader import Record, open_bytes

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
    versions = [("before", before_tree(work, args.before)), ("after", ROOT)]
    envs = {name: env_for(tree, work) for name, tree in versions}
    parse = [sys.executable, "-m", "fleetperf.cli.main", "parse", "sadc"]
    sadf = [str(SADF), "-j"]
    plain = env_for(ROOT, work)
    for name, _tree in versions:  # compile and cache the bytecode first (not timed)
        child([*parse, str(one)], envs[name], ok=(0, 3))

    print(f"collector before = {FOLDER} at {args.before}, after = this tree; CPU s, median of {args.repeat}")
    head = (f"{'file':<20} {'MB':>6} {'records':>7} | {'code':<10} | {'parse sadc s':>12} {'ratio':>6} |"
            f" {'reader s':>8} {'decode s':>8} {'json s':>7} | {'peak RSS MB':>11}")  # fmt: skip
    print(head)
    print("-" * len(head))
    starts = {name: statistics.median(child([*parse, str(one)], envs[name], ok=(0, 3))[0]
                                      for _ in range(args.repeat)) for name, _ in versions}  # fmt: skip
    sadf_start = statistics.median(child([*sadf, str(one), "--", "-A"], plain)[0] for _ in range(args.repeat))
    for name, _ in versions:
        print(f"{'start-up (1 record)':<20} {'':>6} {1:>7} | {name:<10} | {starts[name]:>12.3f} {'':>6} |")
    print(f"{'':<20} {'':>6} {'':>7} | {'sadf -j -A':<10} | {sadf_start:>12.3f}")

    files = [("daily", [daily]), ("large", [large])]
    if CORPUS.is_dir():  # those this sadf reads too (it refuses the formats before 0x2175 without sadf -c)
        readable = [CORPUS / n for n in READABLE if subprocess.run([*sadf, str(CORPUS / n)], capture_output=True,
                                                                   env=plain).returncode == 0]  # fmt: skip
        files.append((f"corpus ({len(readable)} files)", readable))
    for label, paths in files:
        size = sum(p.stat().st_size for p in paths) / 1e6
        n = sum(1 for p in paths for r in open_bytes(p.read_bytes()).records() if isinstance(r, Record))
        theirs, rss_theirs = [], 0
        for _ in range(args.repeat):
            t = 0.0
            for p in paths:
                cpu, rss = child([*sadf, str(p), "--", "-A"], plain)
                t += cpu
                rss_theirs = max(rss_theirs, rss)
            theirs.append(t)
        s = statistics.median(theirs)
        first = True
        for name, _tree in versions:
            ours, rss_ours, parts = [], 0, []
            for _ in range(args.repeat):
                t = 0.0
                for p in paths:
                    cpu, rss = child([*parse, str(p)], envs[name], ok=(0, 3))  # 3: dead letters (the ppc file)
                    t += cpu
                    rss_ours = max(rss_ours, rss)
                ours.append(t)
                out = subprocess.run([sys.executable, __file__, "--breakdown", *map(str, paths)], env=envs[name],
                                     check=True, capture_output=True, text=True).stdout  # fmt: skip
                parts.append(json.loads(out))
            o = statistics.median(ours)
            r, d, j = (statistics.median(x[k] for x in parts) for k in ("reader", "decode", "json"))
            what = f"{label:<20} {size:>6.2f} {n:>7}" if first else f"{'':<20} {'':>6} {'':>7}"
            first = False
            print(f"{what} | {name:<10} | {o:>12.3f} {o / s if s else float('inf'):>6.1f} |"
                  f" {r:>8.3f} {d:>8.3f} {j:>7.3f} | {rss_ours / 1024:>11.1f}")  # fmt: skip
        print(f"{'':<20} {'':>6} {'':>7} | {'sadf -j -A':<10} | {s:>12.3f} {1:>6.1f} |"
              f" {'':>8} {'':>8} {'':>7} | {rss_theirs / 1024:>11.1f}")  # fmt: skip
    print(
        f"(files in {work}; CPU seconds of one process, i.e. per core; ratio = parse sadc / sadf -j -A;"
        " reader/decode/json: in-process parts of the parse command's work, start-up excluded)"
    )


if __name__ == "__main__":
    main()
