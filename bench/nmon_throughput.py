"""nmon collector throughput per core, the reference Python parser beside the native scanner
(sources/nmon/native): parse only, parse + Avro (Confluent framing, no broker), and file -> Kafka
(with --kafka, to a broker and registry the script starts for itself, so that nothing else
consumes while it measures), on the corpus and on large files
built from the real AIX corpus file (its snapshots repeated with new tags and times). Per core =
CPU seconds of the process, librdkafka's threads included. Also the peak RSS of reading files of
growing size in fresh processes, which must stay flat.

--parse-cli: `fleetperf parse nmon FILE > /dev/null` as a user runs it (fresh process each run,
start-up included): the Python parser, the native scanner's Avro decoded and encoded in Python
(parse before the scanner wrote JSON lines), and the scanner's own JSON lines, through `./fleetperf`
and straight through Python; per core = the child's CPU seconds (user + system), medians of
--runs, the child's peak RSS; on the AIX and the Linux corpus file grown to --copies (--kinds).
--paths picks some of those; --against REV also runs the scanner's JSON lines of an earlier
commit (its tree checked out beside, its scanner built apart; neither touches ./.venv), its runs
alternating with this tree's so that both meet the same machine, and prints the ratio."""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from fastavro import parse_schema, schemaless_writer  # noqa: E402

from fleetperf import config  # noqa: E402
from fleetperf.sources.nmon import native_parser  # noqa: E402
from fleetperf.sources.nmon.parser import parse_file  # noqa: E402

# the child's own peak: VmHWM belongs to its address space, while ru_maxrss survives exec and so
# reports the (larger) benchmark process that forked it
_PEAK = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"

PARSERS = {"python": parse_file, "native": native_parser.parse_file}

CORPUS = ROOT.parent / "shared" / "corpus" / "nmon"


# the corpus files --parse-cli grows: an AIX LPAR's (187 snapshots of ~130 rows) and a Linux
# guest's (1,000 snapshots of ~18 rows, half of them TOP processes: more, shorter cells per MB)
GROWN = {"aix": "aix71_aixlpar_nmon2influxdb.nmon", "linux": "linux_centos7_kvm_nmon16g_1000snap.nmon"}


def grow_aix(copies: int, target: Path) -> Path:
    """The AIX corpus file with its 187 snapshots repeated `copies` times (tags and times advanced)."""
    return grow("aix", copies, target)


def grow(kind: str, copies: int, target: Path) -> Path:
    """A corpus file (GROWN) with its snapshots repeated `copies` times (tags and times advanced,
    a snapshot every 300 s)."""
    src = (CORPUS / GROWN[kind]).read_text().splitlines()
    header = [line for line in src if not line.split(",", 2)[1:2] or not _snap(line)]
    body = [line for line in src if _snap(line)]
    snapshots = sum(1 for line in body if line.startswith("ZZZZ,"))
    first = datetime(2016, 2, 10, 17, 28, 10)
    with open(target, "w") as out:
        out.write("\n".join(header) + "\n")
        for c in range(copies):
            shift = snapshots * c
            for line in body:
                parts = line.split(",")
                pos = 2 if parts[0] == "TOP" else 1
                n = int(parts[pos][1:]) + shift
                parts[pos] = f"T{n:05d}"
                if parts[0] == "ZZZZ":
                    ts = first + timedelta(seconds=300 * (n - 1))
                    parts[2], parts[3] = ts.strftime("%H:%M:%S"), ts.strftime("%d-%b-%Y").upper()
                out.write(",".join(parts) + "\n")
    return target


def _snap(line: str) -> bool:
    parts = line.split(",")
    for p in parts[1:3]:
        if len(p) > 1 and p[0] == "T" and p[1:].isdigit():
            return True
    return False


def measure(path: Path, parser: str, encode: bool) -> dict[str, float]:
    schemas = {}
    if encode:
        settings = config.load()
        for topic in settings.topics.values():
            schemas[topic.key] = parse_schema(json.loads(topic.schema_text()))
    buf = io.BytesIO()
    values = records = 0
    t0 = time.process_time()
    for e in PARSERS[parser](path, UTC):
        records += 1
        values += e.values
        if encode:
            if e.encoded is not None:
                _ = b"\0\0\0\0\1" + e.encoded  # the producer frames it the same way
                continue
            buf.seek(0)
            buf.write(b"\0\0\0\0\1")  # Confluent frame header, as the producer writes it
            schemaless_writer(buf, schemas[e.topic_key], e.record)
    cpu = time.process_time() - t0
    mb = path.stat().st_size / 1e6
    return {"MB": mb, "cpu_s": cpu, "MB/s": mb / cpu, "values/s": values / cpu, "records": records}


def best(run: object, times: int = 3) -> dict[str, float]:
    """The fastest of a few runs: this machine shares its cores with other work (and the broker),
    so a single run can be 30 % off."""
    return max((run() for _ in range(times)), key=lambda r: r["MB/s"])  # type: ignore[operator]


def to_kafka(paths: list[Path], producer: object) -> dict[str, float]:
    """One `ingest` call over the files, as a user runs it; the producer (connection, registry
    look-ups) is made once per benchmark run, outside the figure."""
    from fleetperf.ingest.publish import ingest

    settings = config.load()  # once per command, as the CLI does (0.6 ms: a tenth of a 0.2 MB file)
    t0 = time.process_time()
    w0 = time.monotonic()
    summary = ingest(settings, [str(p) for p in paths], UTC, force=True, progress=False, producer=producer)
    cpu = time.process_time() - t0
    wall = time.monotonic() - w0
    mb = sum(p.stat().st_size for p in paths) / 1e6
    return {"MB": mb, "cpu_s": cpu, "MB/s": mb / cpu, "wall MB/s": mb / wall, "values/s": summary.values / cpu}


def peak_rss_of_ingest(path: Path) -> float:
    """Peak RSS of a fresh process publishing one file to Kafka (parser + producer queue)."""
    code = (
        f"import sys; sys.path[:0] = [{str(ROOT / 'src')!r}, {str(ROOT)!r}]\n"
        "from fleetperf import config\nfrom fleetperf.ingest.publish import ingest\nfrom datetime import UTC\n"
        f"ingest(config.load(), [{str(path)!r}], UTC, force=True, progress=False)\n"
        f"{_PEAK}"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1]) / 1024


def peak_rss_of_parse(path: Path, parser: str) -> float:
    code = (
        f"import sys; sys.path[:0] = [{str(ROOT / 'src')!r}, {str(ROOT)!r}]\n"
        "from fleetperf.sources.nmon.parser import parse_file as python\n"
        "from fleetperf.sources.nmon.native_parser import parse_file as native\n"
        "from pathlib import Path\n"
        f"for _ in {parser}(Path({str(path)!r})): pass\n"
        f"{_PEAK}"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1]) / 1024


# `parse` through Python without the launcher; "avro": NmonSource without read_lines, i.e. the
# scanner's Avro read back with fastavro and encoded by parse's json encoder (before issue 24)
_PARSE = (
    "import sys; sys.path[:0] = [{src!r}, {root!r}]\n"
    "from fleetperf.sources.nmon.source import NmonSource\n"
    "if {avro}: del NmonSource.read_lines\n"
    "from fleetperf.cli.main import main\n"
    "sys.exit(main(['parse', 'nmon', {path!r}]))\n"
)


def _parse_argv(path: Path, mode: str, via: str, tree: Path = ROOT, lib: Path | None = None) -> tuple[list, dict]:
    """`parse nmon path` one way: the argv and environment (tree: whose code; lib: a directory
    whose scanner comes first, an --against build)."""
    env = {k: v for k, v in os.environ.items() if k != "FLEETPERF_NMON_PARSER"}
    if mode == "python":
        env["FLEETPERF_NMON_PARSER"] = "python"
    if via == "./fleetperf":
        return [str(tree / "fleetperf"), "parse", "nmon", str(path)], env
    code = _PARSE.format(src=str(tree / "src"), root=str(tree), avro=mode == "avro", path=str(path))
    if lib is not None:
        code = f"import sys; sys.path.insert(0, {str(lib)!r})\n" + code
    return [sys.executable, "-c", code], env


def _cpu_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU s of the child, wall s) of one run, its output to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.monotonic()
    with open(os.devnull, "wb") as null:
        done = subprocess.run(argv, stdout=null, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.monotonic() - w0
    if done.returncode not in (0, 3):  # 3: some lines dead letters (the AIX file's JFS lines), the rest printed
        raise RuntimeError(f"{argv[:3]}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def _figures(path: Path, runs: list[tuple[float, float]]) -> dict[str, float]:
    """Medians of (CPU s, wall s) runs over `path`."""
    mb = path.stat().st_size / 1e6
    median_cpu = statistics.median(cpu for cpu, _ in runs)
    return {"MB": mb, "cpu_s": median_cpu, "MB/s": mb / median_cpu, "wall_s": statistics.median(w for _, w in runs)}


def parse_cli_runs(path: Path, mode: str, via: str, runs: int) -> dict[str, float]:
    """Medians over `runs` fresh processes of `parse nmon path` one way."""
    argv, env = _parse_argv(path, mode, via)
    return _figures(path, [_cpu_run(argv, env) for _ in range(runs)])


def parse_cli_against(path: Path, runs: int, tree: Path, lib: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Medians of the scanner's JSON lines (python -c) here and in an --against tree, their runs
    alternating (this machine's speed drifts by 2x within minutes: back-to-back series would
    compare the drift)."""
    ours, theirs = _parse_argv(path, "lines", "python -c"), _parse_argv(path, "lines", "python -c", tree, lib)
    mine, old = [], []
    for _ in range(runs):
        mine.append(_cpu_run(*ours))
        old.append(_cpu_run(*theirs))
    return _figures(path, mine), _figures(path, old)


def checkout_against(rev: str, tmp: Path) -> tuple[Path, Path, str]:
    """REV's tree (a detached worktree) and a directory holding its scanner, built from its own
    crate with the project's pip and cargo into tmp (not ./.venv, whose scanner stays ours)."""
    tree, lib = tmp / "against", tmp / "against-lib"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
    crate = tree / "src" / "fleetperf" / "sources" / "nmon" / "native"
    env = os.environ | {"CARGO_TARGET_DIR": str(tmp / "against-target")}
    env["PATH"] = f"{env.get('PATH', '')}:{Path.home() / '.cargo' / 'bin'}"
    print(f"building the nmon scanner of {rev} (Rust, about a minute) ...", file=sys.stderr, flush=True)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    subprocess.run([*pip, "--target", str(lib), str(crate)], check=True, env=env)
    short = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    return tree, lib, short


def parse_cli_peak(path: Path, mode: str) -> float:
    """Peak RSS (VmHWM, MB) of one `parse nmon` process, read from /proc as it exits (a separate run:
    RUSAGE_CHILDREN's ru_maxrss is the largest of all children so far, not this one's)."""
    (python, flag, code), env = _parse_argv(path, mode, "python -c")
    code = code.replace(
        "sys.exit(main(",
        "import atexit, os; atexit.register(lambda: os.write(2, ('VmHWM ' + next(l.split()[1] "
        "for l in open('/proc/self/status') if l.startswith('VmHWM')) + '\\n').encode())); sys.exit(main(",
    )
    with open(os.devnull, "wb") as null:
        done = subprocess.run([python, flag, code], stdout=null, stderr=subprocess.PIPE, env=env, check=False)
    line = next(x for x in done.stderr.decode().splitlines() if x.startswith("VmHWM "))
    return int(line.split()[1]) / 1024


def parse_cli_report(args: argparse.Namespace) -> int:
    modes = [("python", "python -c"), ("avro", "python -c"), ("lines", "python -c"), ("lines", "./fleetperf")]
    modes = [(m, v) for m, v in modes if m in args.paths]
    if not native_parser.lines_available():
        print("native nmon scanner not built (or older than its JSON lines): python only")
        modes = [("python", "python -c")]
    with tempfile.TemporaryDirectory() as tmp:
        against = checkout_against(args.against, Path(tmp)) if args.against else None
        try:
            return _parse_cli_table(args, modes, Path(tmp), against)
        finally:
            if against is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(against[0])], check=False)


def _parse_cli_table(
    args: argparse.Namespace, modes: list[tuple[str, str]], tmp: Path, against: tuple[Path, Path, str] | None
) -> int:
    grown = [grow(k, c, tmp / f"{k}_x{c}.nmon") for k in args.kinds for c in args.copies]
    # the launcher rebuilds a stale scanner before anything else: once, outside the figures
    warm = subprocess.run([str(ROOT / "fleetperf"), "parse", "nmon", str(grown[0])], capture_output=True, check=False)
    if warm.returncode not in (0, 3):  # 3: dead letters (the AIX file's JFS lines), the rest printed
        raise SystemExit(f"fleetperf parse nmon {grown[0]}: exit {warm.returncode}: {warm.stderr.decode()[-500:]}")
    print(f"`parse nmon FILE > /dev/null`, per core = the child's CPU s (start-up included), median of {args.runs}")
    heads = ("file", "MB", "path", "via", "CPU s", "MB/s/core", "wall s", "peak RSS")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (14, 6, 8, 12, 7, 10, 7, 10), strict=True)))
    for path in grown:
        base = None
        for mode, via in modes:
            runs = max(1, args.runs // 2) if mode == "python" and path.stat().st_size > 20e6 else args.runs
            r = parse_cli_runs(path, mode, via, runs)
            peak = parse_cli_peak(path, mode)
            base = base or r["MB/s"]
            print(f"{path.name:>14} {r['MB']:6.1f} {mode:>8} {via:>12} {r['cpu_s']:7.2f} {r['MB/s']:10.1f} "
                  f"{r['wall_s']:7.2f} {peak:7.1f} MB  x{r['MB/s'] / base:.1f}")  # fmt: skip
        if against is not None:
            tree, lib, rev = against
            ours, theirs = parse_cli_against(path, args.runs, tree, lib)
            for who, r in ((rev, theirs), ("this tree", ours)):
                print(f"{path.name:>14} {r['MB']:6.1f} {'lines':>8} {who:>12} {r['cpu_s']:7.2f} {r['MB/s']:10.1f} "
                      f"{r['wall_s']:7.2f}       alternating runs")  # fmt: skip
            print(f"{'':>14} this tree / {rev}: {theirs['cpu_s'] / ours['cpu_s']:.2f}x the MB/s per core")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parse-cli", action="store_true", help="measure `fleetperf parse nmon` to /dev/null only")
    ap.add_argument("--runs", type=int, default=5, help="--parse-cli: runs per figure (median)")
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 10, 40], help="sizes of the grown AIX file")
    ap.add_argument(
        "--kinds",
        nargs="+",
        choices=list(GROWN),
        default=list(GROWN),
        help="--parse-cli: the corpus files grown by --copies (the Linux one is ~same MB per copy)",
    )
    ap.add_argument(
        "--paths",
        nargs="+",
        choices=["python", "avro", "lines"],
        default=["python", "avro", "lines"],
        help="--parse-cli: the ways measured (python and avro take minutes on large files)",
    )
    ap.add_argument(
        "--against",
        metavar="REV",
        help="--parse-cli: also this git revision's JSON lines, runs alternating with this tree's",
    )
    ap.add_argument(
        "--kafka",
        action="store_true",
        help="also publish to Kafka: a broker and registry of its own, nothing consuming",
    )
    args = ap.parse_args()
    if args.parse_cli:
        if args.copies == [1, 10, 40]:
            args.copies = [10, 40]
        return parse_cli_report(args)
    if not args.kafka:
        return report(args, None)
    from fleetperf.stack.local import LocalStack
    from tests.providers import _env_overrides

    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-nmon-") as state:
        os.environ.update(_env_overrides(Path(state)))  # the RSS child processes read them too
        stack = LocalStack(config.load())
        stack.start(only=("kafka", "registry"), echo=lambda line: None)
        try:
            from fleetperf.kafka_avro import ensure_topics

            ensure_topics(config.load())
            return report(args, stack)
        finally:
            stack.stop(echo=lambda line: None)


def report(args: argparse.Namespace, stack: object | None) -> int:
    rows = []
    producer = None
    if stack is not None:
        from fleetperf.kafka_avro import AvroProducer

        producer = AvroProducer(config.load())
    with tempfile.TemporaryDirectory() as tmp:
        files = sorted(CORPUS.glob("*.nmon"))
        grown = [grow_aix(c, Path(tmp) / f"aix_x{c}.nmon") for c in args.copies]
        if producer is not None:
            # a fresh broker answers slowly until its JIT has compiled the produce path (the first
            # rounds measured 30-40 % lower); a backfill of years meets a warm one
            for _ in range(3):
                to_kafka(files * 5, producer)
        for path in [*files, *grown]:
            row: dict[str, object] = {"file": path.name, "MB": path.stat().st_size / 1e6}
            for parser in PARSERS:
                parse = best(partial(measure, path, parser, encode=False))
                row[f"{parser} parse MB/s"] = parse["MB/s"]
                row[f"{parser} +avro MB/s"] = best(partial(measure, path, parser, encode=True))["MB/s"]
            row["native values/s"] = parse["values/s"]
            if args.kafka:
                kafka = best(partial(to_kafka, [path], producer))
                row["native kafka MB/s"] = kafka["MB/s"]
                row["kafka values/s"] = kafka["values/s"]
            rows.append(row)
        if args.kafka:
            # the corpus is 2.6 MB: ten rounds, so that the figure is not a few milliseconds
            kafka = best(partial(to_kafka, files * 10, producer))
            corpus_line = (
                f"corpus ×10 ({len(files)} files) in one ingest -> Kafka: {kafka['MB']:.1f} MB, "
                f"{kafka['MB/s']:.1f} MB/s per core, {kafka['values/s']:,.0f} values/s"
            )
        rss = [
            (p.name, p.stat().st_size / 1e6, peak_rss_of_parse(p, "python"), peak_rss_of_parse(p, "native"))
            for p in grown
        ]
        ingest_rss = [(p.name, p.stat().st_size / 1e6, peak_rss_of_ingest(p)) for p in grown] if args.kafka else []
    cols = list(rows[0])
    if args.kafka:
        print(corpus_line + "\n")
    print("per core (CPU time of one process), best of 3 runs")
    print("  ".join(f"{c:>18}" for c in cols))
    for r in rows:
        print("  ".join(f"{r[c]:>18,.1f}" if isinstance(r[c], float) else f"{r[c]:>18}" for c in cols))
    print("\npeak RSS while parsing (fresh process each): python, native")
    for name, mb, peak, native_peak in rss:
        print(f"{name:>18} {mb:8.1f} MB file  -> {peak:7.1f} MB, {native_peak:7.1f} MB peak RSS")
    if ingest_rss:
        print("\npeak RSS of ingest to Kafka (native, fresh process each)")
        for name, mb, peak in ingest_rss:
            print(f"{name:>18} {mb:8.1f} MB file  -> {peak:7.1f} MB peak RSS")
    print(f"\nself RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
