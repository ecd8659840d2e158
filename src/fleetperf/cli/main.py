"""fleetperf: fleet-wide performance history for AIX LPARs, z/VM Linux guests and Linux hosts."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from fleetperf import config
from fleetperf.config import REPO_ROOT

# authlib (pulled in by the registry client) warns about its own httpx shim on every import
warnings.filterwarnings("ignore", message="The httpx module is deprecated")

EPILOG = "Settings: config/fleetperf.toml; override any key with FLEETPERF__SECTION__KEY=value."


def _tz(name: str):  # noqa: ANN202
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


def cmd_install(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack import install

    install.install_all(s)
    print("runtimes cached under", s.cache_dir)
    return 0


def cmd_up(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack.local import ORDER, LocalStack

    only = tuple(args.only.split(",")) if args.only else ORDER
    print(f"starting local stack (state in {s.state_dir})")
    LocalStack(s).start(only)
    return 0


def cmd_down(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack.local import LocalStack

    LocalStack(s).stop()
    print("stack stopped")
    return 0


def cmd_status(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack.local import LocalStack

    for name, pid, where, log in LocalStack(s).status():
        state = f"running (pid {pid})" if pid else "stopped"
        print(f"{name:<10} {state:<20} {where}\n{'':<10} log: {log}")
    return 0


def cmd_warehouse(args: argparse.Namespace, s: config.Settings) -> int:
    import os

    from fleetperf.stack.local import LocalStack
    from fleetperf.warehouse import superset_setup

    stack = LocalStack(s)
    superset_setup.prepare(s, stack.superset_env())
    proc = stack.warehouse()
    os.environ.update(proc.env)
    os.execv(proc.argv[0], proc.argv)  # gunicorn in the foreground (containers, systemd)


def cmd_sink(args: argparse.Namespace, s: config.Settings) -> int:
    import logging

    from fleetperf.warehouse.clickhouse import migrate
    from fleetperf.warehouse.sink import Sink

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ch, ran = migrate(s)
    print(f"migrations applied: {ran or 'none needed'}; consuming {', '.join(t.name for t in s.topics.values())}")
    sink = Sink(s, ch)
    try:
        sink.run()
    except KeyboardInterrupt:
        sink.stop()
    return 0


def cmd_ingest(args: argparse.Namespace, s: config.Settings) -> int:
    if args.follow:
        from fleetperf.ingest.follow import Follower

        follower = Follower(s, args.paths, _tz(args.tz), poll_seconds=args.poll, finish_idle=args.finish_idle)
        print(f"following {', '.join(args.paths)} (Ctrl-C to stop; progress is kept in the ledger)")
        try:
            summary = follower.run()
        except KeyboardInterrupt:
            follower.stop()
            summary = follower.run(max_seconds=0)
        print(summary.line())
        return 0
    from fleetperf.ingest.publish import ingest

    summary = ingest(
        s,
        args.paths,
        _tz(args.tz),
        force=args.force,
        progress=not args.no_progress,
        perfkit_options=_perfkit_options(args),
        sadc_options=_sadc_options(args),
    )
    print(summary.line())
    return 0


def cmd_simulate(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.sources.nmon.simulate import Fault, simulate

    start = datetime.fromisoformat(args.start) if args.start else _default_start(args.hours)
    faults = tuple(Fault.parse(text, start) for text in args.fault)
    files = simulate(Path(args.out), args.hosts, start, timedelta(hours=args.hours), args.interval, args.seed, faults)
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} nmon files ({size / 1e6:.1f} MB) for {args.hosts} hosts to {args.out}")
    return 0


def _default_start(hours: float) -> datetime:
    now = datetime.now().replace(second=0, microsecond=0)
    return now - timedelta(hours=hours)


def _identity(args: argparse.Namespace):  # noqa: ANN202
    from fleetperf.ingest.identity import HostIdentity, local_identity

    if args.host_id or args.hostname:
        return HostIdentity(args.host_id or args.hostname, args.hostname or args.host_id)
    return local_identity()


def _perfkit_options(args: argparse.Namespace):  # noqa: ANN202
    from datetime import date, time

    from fleetperf.sources.perfkit.records import Options

    return Options(
        system=args.zvm_system,
        cpc=args.cpc,
        day=date.fromisoformat(args.date) if args.date else None,
        at=time.fromisoformat(args.at) if args.at else None,
        interval_s=args.interval_seconds,
        tz=_tz(args.tz),
    )


def _perfkit_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Performance Toolkit reports (what a report may not print itself)")
    g.add_argument("--zvm-system", help="z/VM system name (default: the '(NAME)' of the report title)")
    g.add_argument("--cpc", help="FCX126: CPC identity (default: the processor type and model printed)")
    g.add_argument("--date", help="date of the report, YYYY-MM-DD (default: the 'on yyyy/mm/dd' it prints)")
    g.add_argument("--at", help="end of the interval, HH:MM:SS, for reports that print no interval")
    g.add_argument("--interval-seconds", type=float, help="interval length of a one-row log report")


def _print_messages(args: argparse.Namespace, s: config.Settings, desc: str, records_of) -> int:  # noqa: ANN001
    """Kafka messages of every file as JSON lines on stdout; progress, bad input and a summary on stderr."""
    from tqdm import tqdm

    from fleetperf.ingest.publish import expand

    files = list(expand(args.files))
    counts: dict[str, int] = {}
    problems: list[str] = []
    for path in tqdm(files, unit="file", desc=desc, disable=args.no_progress or len(files) < 2, file=sys.stderr):
        for emitted in records_of(path):
            if emitted.topic_key == "dead_letters":
                r = emitted.record
                where = f"line {r['line']}, " if r["line"] else ""
                problems.append(f"{r['origin_file']} ({where}byte {r['byte_offset']}): {r['error']}")
            counts[emitted.topic_key] = counts.get(emitted.topic_key, 0) + 1
            message = {"topic": s.topic(emitted.topic_key).name, "key": emitted.key, "value": emitted.record}
            sys.stdout.write(json.dumps(message) + "\n")
    for message in problems:
        print(f"bad input: {message}", file=sys.stderr)
    made = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no records"
    print(f"{len(files)} files: {made}; {len(problems)} errors", file=sys.stderr)
    return 0


def cmd_parse_perfkit(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.sources.perfkit.parser import scan_file
    from fleetperf.sources.perfkit.records import records_of_scan

    options = _perfkit_options(args)
    unknown: dict[str, list[str]] = {}

    def records_of(path: Path):  # noqa: ANN202
        scan = scan_file(path)
        for fcx, line in scan.unknown_reports.items():
            unknown.setdefault(fcx, []).append(f"{path}:{line}")
        return records_of_scan(scan, options)

    code = _print_messages(args, s, "perfkit", records_of)
    for fcx, where in sorted(unknown.items()):
        print(f"unknown report {fcx} skipped ({len(where)}x, first at {where[0]})", file=sys.stderr)
    return code


def _sadc_options(args: argparse.Namespace):  # noqa: ANN202
    from fleetperf.sources.sysstat.records import Options

    sar = tuple(int(x) for x in args.sar_version.split(".")[:2]) if args.sar_version else None
    return Options(host_id=args.sadc_host_id, hz=args.hz, **({"sar": sar} if sar else {}))


def _sadc_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sysstat (sadc) files")
    g.add_argument("--hz", type=int, help="jiffies per second of the host of a pre-11.7 file (default 100)")
    g.add_argument(
        "--sar-version", help="reproduce this sar's definitions, e.g. 12.6 (memused); default: sar 12.7 and later"
    )
    g.add_argument("--sadc-host-id", help="host_id for the file's records (default: the nodename it records)")


def cmd_parse_zvm(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.sources.zvm.monitor_records import Options, records_of_bytes

    options = Options(system=args.zvm_system)
    counts: dict[str, int] = {}

    def records_of(path: Path):  # noqa: ANN202
        emitted, seen = records_of_bytes(path.read_bytes(), str(path), options)
        yield from emitted
        for key, n in seen.items():
            counts[key] = counts.get(key, 0) + n

    code = _print_messages(args, s, "zvm", records_of)
    print("monitor records: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())), file=sys.stderr)
    return code


def cmd_parse_sadc(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.sources.sysstat.records import records_of_file

    options = _sadc_options(args)
    return _print_messages(args, s, "sadc", lambda path: records_of_file(path, options))


def _records_of(args: argparse.Namespace, path: Path):  # noqa: ANN202
    if args.source == "nmon":
        from fleetperf.sources.nmon.parser import parse_file

        return parse_file(path, _tz(args.tz))
    from fleetperf.sources.aix.collect import from_file

    ts = int(datetime.fromisoformat(args.ts).timestamp() * 1000) if args.ts else None
    return from_file(args.source, path, _identity(args), ts)


def cmd_parse(args: argparse.Namespace, s: config.Settings) -> int:
    if args.source == "perfkit":
        return cmd_parse_perfkit(args, s)
    if args.source == "sadc":
        return cmd_parse_sadc(args, s)
    if args.source == "zvm":
        return cmd_parse_zvm(args, s)
    out = sys.stdout
    for name in args.files:
        try:
            for emitted in _records_of(args, Path(name)):
                message = {"topic": s.topic(emitted.topic_key).name, "key": emitted.key, "value": emitted.record}
                out.write(json.dumps(message) + "\n")
        except ValueError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            return 1
    return 0


def _collect_zvm_monitor(args: argparse.Namespace, producer) -> int:  # noqa: ANN001
    from fleetperf.sources.zvm.monitor_live import follow
    from fleetperf.sources.zvm.monitor_records import Collector, Options

    source = args.file[0] if args.file else args.device
    collector = Collector(source, Options(system=args.zvm_system))
    published = 0
    print(f"reading CP monitor data from {source} (Ctrl-C to stop)")
    try:
        with open(source, "rb", buffering=0) as handle:
            for emitted in follow(handle, collector, stop_at_end=bool(args.file) and args.once):
                producer.send(emitted.topic_key, emitted.record, key=emitted.key)
                published += 1
                if emitted.topic_key == "zvm_system_samples":  # one per interval: a good moment to flush
                    producer.flush()
    except KeyboardInterrupt:
        pass
    producer.flush()
    print(f"published {published} records")
    return 0


def cmd_collect(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.kafka_avro import AvroProducer
    from fleetperf.sources.aix import collect

    producer = AvroProducer(s)
    if args.kind == "zvm-monitor":
        return _collect_zvm_monitor(args, producer)
    who = _identity(args)

    def publish(records: list) -> None:  # noqa: ANN001
        for emitted in records:
            producer.send(emitted.topic_key, emitted.record, key=emitted.key)
        producer.flush()
        print(f"published {len(records)} {args.kind} records for {who.host_id}")

    if args.kind == "bonding":
        from fleetperf.ingest.aggregations import bonding_records

        publish(list(bonding_records(Path(args.proc_dir), who)))
        return 0
    if args.file:
        for name in args.file:
            try:
                publish(list(collect.from_file(args.kind, Path(name), who)))
            except ValueError as exc:
                print(f"{name}: {exc}", file=sys.stderr)
                return 1
        return 0
    argv = collect.command(args.kind, args.adapter, args.group, args.seconds)
    try:
        for records in collect.run(args.kind, argv, who, args.interval, args.once):
            publish(records)
    except KeyboardInterrupt:
        pass
    return 0


def cmd_inventory(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.ingest.aggregations import inventory_records
    from fleetperf.kafka_avro import AvroProducer

    producer = AvroProducer(s)
    records = list(inventory_records(Path(args.file)))
    for emitted in records:
        producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    producer.flush()
    print(f"published inventory of {len(records)} hosts")
    return 0


def cmd_sql(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import QueryError, query

    try:
        columns, rows = query(s, args.statement)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.format == "json":
        for row in rows:
            print(json.dumps(dict(zip(columns, row, strict=True)), default=str))
    else:
        print("\t".join(columns))
        for row in rows:
            print("\t".join("" if v is None else str(v) for v in row))
    return 0


def cmd_rollups(args: argparse.Namespace, s: config.Settings) -> int:
    from datetime import date

    from fleetperf.cli.sql_client import QueryError, warehouse_call

    first, last = date.fromisoformat(args.first), date.fromisoformat(args.last)
    try:
        if s.embedded_clickhouse:
            written = warehouse_call(s, f"/rollups/rebuild?from={first}&to={last}", method="POST")
        else:
            from fleetperf.warehouse.clickhouse import client
            from fleetperf.warehouse.rollups import rebuild

            db = s["clickhouse"]["database"]
            written = rebuild(client(s, db), db, first, last)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"rebuilt {first}..{last}: " + ", ".join(f"{t} {n} rows" for t, n in written.items()))
    return 0


def cmd_stats(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import QueryError, warehouse_call

    try:
        print(json.dumps(warehouse_call(s, "/stats"), indent=2))
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_demo(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import query, wait_stable
    from fleetperf.ingest.publish import ingest
    from fleetperf.sources.nmon.simulate import Fault, simulate
    from fleetperf.stack import install
    from fleetperf.stack.local import LocalStack

    t0 = time.monotonic()
    print("1/5 installing runtimes (cached after the first run)")
    install.install_all(s)
    print("2/5 starting the local stack")
    LocalStack(s).start()
    out = s.state_dir / "demo" / "nmon"
    start = _default_start(args.hours)
    # one injected anomaly, so the Anomalies dashboard has an incident to show
    fault = Fault("linux000", start + timedelta(hours=args.hours * 0.4), 20, steal=30.0)
    files = simulate(out, args.hosts, start, timedelta(hours=args.hours), args.interval, args.seed, (fault,))
    print(
        f"3/5 simulated {len(files)} nmon files for {args.hosts} hosts, {args.hours} h at {args.interval} s"
        f" (steal 30 % injected on linux000 at {fault.start:%H:%M} for 20 min)"
    )
    summary = ingest(s, [str(out)], UTC, progress=not args.no_progress)
    print(f"4/5 ingested: {summary.line()}")
    print("5/5 waiting for Flink's windows to land in ClickHouse")
    wait_stable(s, "SELECT count() FROM derived_metrics_v", timeout=180)
    print("\nrows per table:")
    for table in ("cpu_samples_v", "derived_metrics_v", "dead_letters", "host_cpu_minute", "incidents"):
        print(f"  {table:<20} {query(s, f'SELECT count() FROM {table}')[1][0][0]:>10}")
    print(f"\nready in {time.monotonic() - t0:.0f}s")
    print(
        f"Superset: {s.superset_url}/superset/dashboard/fleet-overview/  (user {s['superset']['admin_user']}, "
        f"password {s['superset']['admin_password']})"
    )
    print('SQL:      ./fleetperf sql "SELECT * FROM host_cpu_minute ORDER BY minute DESC LIMIT 10"')
    print("stop:     ./fleetperf down")
    return 0


def cmd_test(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack import install

    install.install_all(s)
    install.browser()
    install.sysstat()
    # pytest runs last so that its summary is the closing line of the run
    steps = [
        ("ruff", [sys.executable, "-m", "ruff", "check", "."], REPO_ROOT),
        ("ruff format", [sys.executable, "-m", "ruff", "format", "--check", "."], REPO_ROOT),
        ("dashboards bundle = spec", [sys.executable, "-m", "fleetperf.dashboards.build", "--check"], REPO_ROOT),
        ("JUnit (stream-jobs)", ["mvn", "-B", "-ntp", "test"], REPO_ROOT / "stream-jobs"),
        ("pytest (unit + end-to-end)", [sys.executable, "-m", "pytest", *args.pytest_args], REPO_ROOT),
    ]
    failed = []
    for name, cmd, cwd in steps:
        print(f"== {name}", flush=True)
        if subprocess.run(cmd, cwd=cwd).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _identity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host-id", help="host identity (default on AIX: <serial>-<lpar id> as nmon gives it)")
    p.add_argument("--hostname", help="host name (default: this host's)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fleetperf", description=__doc__, epilog=EPILOG)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func, help_: str) -> argparse.ArgumentParser:  # noqa: ANN001
        sp = sub.add_parser(name, help=help_, description=help_, epilog=EPILOG)
        sp.set_defaults(func=func)
        return sp

    add("install", cmd_install, "fetch Kafka, Apicurio Registry and build the Flink job (cached)")
    up = add("up", cmd_up, "start the local stack: Kafka, registry, Flink job, warehouse (sink + Superset)")
    up.add_argument("--only", help="comma-separated subset of kafka,registry,flink,warehouse")
    add("down", cmd_down, "stop the local stack (no process is left behind)")
    add("status", cmd_status, "what runs, where, and its log file")
    add(
        "warehouse",
        cmd_warehouse,
        "run the warehouse process (sink + SQL endpoint + Superset) in the foreground, e.g. in a container",
    )
    add("sink", cmd_sink, "run only the Kafka->ClickHouse sink in the foreground (for a real ClickHouse server)")

    ing = add(
        "ingest",
        cmd_ingest,
        "publish nmon files, sysstat (sadc) files and z/VM Performance Toolkit reports (files, directories"
        " or globs) to Kafka; skips what was published",
    )
    ing.add_argument(
        "paths", nargs="+", help="files (.nmon, .nmon.gz, saDD, Toolkit report text), directories or quoted globs"
    )
    ing.add_argument("--tz", default="UTC", help="time zone of the timestamps (default UTC), e.g. Europe/Berlin")
    ing.add_argument("--force", action="store_true", help="publish again even if already published")
    ing.add_argument("--no-progress", action="store_true", help="no progress bar")
    ing.add_argument(
        "--follow",
        action="store_true",
        help="keep publishing new snapshots as nmon or sadc write them (and new files of a directory)",
    )
    ing.add_argument("--poll", type=float, default=1.0, help="--follow: seconds between checks (default 1)")
    ing.add_argument(
        "--finish-idle",
        type=float,
        default=120.0,
        help="--follow: finish a file idle this long once a newer file of its host exists (default 120)",
    )
    _perfkit_args(ing)
    _sadc_args(ing)

    sim = add("simulate", cmd_simulate, "write a synthetic fleet of nmon files")
    sim.add_argument("--out", required=True, help="output directory")
    sim.add_argument("--hosts", type=int, default=6)
    sim.add_argument("--hours", type=float, default=2.0)
    sim.add_argument("--interval", type=int, default=10, help="seconds between snapshots")
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--start", help="ISO start time (default: now minus --hours)")
    sim.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="HOST@MINUTE+MINUTES:steal=N|busy=N",
        help="inject an anomaly, e.g. linux000@180+40:steal=30 (repeatable; for testing flags)",
    )

    parse = add(
        "parse", cmd_parse, "print the Kafka messages files make, as JSON lines: topic, key, value (no Kafka needed)"
    )
    parse.add_argument("source", choices=["nmon", "hpmstat", "entstat", "perfkit", "sadc", "zvm"])
    parse.add_argument(
        "files", nargs="+", help="files; perfkit, sadc, zvm (MONWRITE files, monreader captures): also directories"
    )
    parse.add_argument("--tz", default="UTC", help="nmon, perfkit: time zone of the timestamps")
    parse.add_argument("--no-progress", action="store_true", help="perfkit, sadc, zvm: no progress bar")
    _perfkit_args(parse)
    _sadc_args(parse)
    _identity_args(parse)
    parse.add_argument("--ts", help="hpmstat/entstat: ISO time of the capture (default: file modification time)")

    col = add(
        "collect",
        cmd_collect,
        "run hpmstat / entstat on this AIX host (or read captured output) and publish; read Linux bonding;"
        " stream the z/VM CP monitor from /dev/monreader",
    )
    col.add_argument("kind", choices=["hpmstat", "entstat", "bonding", "zvm-monitor"])
    col.add_argument("--device", default="/dev/monreader", help="zvm-monitor: the monitor reader device")
    col.add_argument("--zvm-system", help="zvm-monitor: z/VM system name (default: from the monitor's MRMTRSYS)")
    col.add_argument("--file", nargs="+", help="captured command output instead of running the command")
    col.add_argument("--adapter", default="ent0", help="entstat: adapter, e.g. the EtherChannel ent2")
    col.add_argument("--group", type=int, default=10, help="hpmstat: counter group (10 = SLB misses)")
    col.add_argument("--seconds", type=int, default=60, help="hpmstat: counting time per report")
    col.add_argument("--interval", type=float, default=300, help="seconds between runs")
    col.add_argument("--once", action="store_true", help="run once and exit (for cron)")
    col.add_argument("--proc-dir", default="/proc/net/bonding", help="bonding: where the bond files are")
    _identity_args(col)

    inv = add(
        "inventory",
        cmd_inventory,
        "publish a TOML inventory (link aggregation members, attributes) that overrides what hosts report",
    )
    inv.add_argument("file")

    sql = add("sql", cmd_sql, "run one SQL statement against the warehouse")
    sql.add_argument("statement")
    sql.add_argument("--format", choices=["tsv", "json"], default="tsv")

    roll = add("rollups", cmd_rollups, "recompute the hourly and daily rollups of a date range from the base table")
    roll.add_argument("action", choices=["rebuild"])
    roll.add_argument("--from", dest="first", required=True, help="first day, YYYY-MM-DD")
    roll.add_argument("--to", dest="last", required=True, help="last day, YYYY-MM-DD (inclusive)")
    add("stats", cmd_stats, "the sink's counters: rows written per table, batches, errors, consumer lag")

    demo = add("demo", cmd_demo, "install, start the stack, simulate a fleet, ingest it and serve the dashboard")
    demo.add_argument("--hosts", type=int, default=6)
    demo.add_argument("--hours", type=float, default=2.0)
    demo.add_argument("--interval", type=int, default=10)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--no-progress", action="store_true")

    test = add("test", cmd_test, "run the whole test suite (JUnit, pytest incl. integration, ruff)")
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, config.load())
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"fleetperf {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
