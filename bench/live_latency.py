"""Live nmon latency on the local stack (issue 24 item 3): an nmon file written at a fixed interval
into a followed directory, as nmon writes it (each snapshot in one burst, ZZZZ line first, at the
wall-clock time of the snapshot), followed by `ingest --follow`'s Follower in this process; prints
p50/p95 of

  write -> raw row queryable:      the snapshot's burst written -> its cpu_samples row inserted
                                   (the row's ingested_at, set by ClickHouse on insert)
  window end -> final window:      a 1-minute window's end (event time = wall time here) -> its
                                   is_final derived_metrics row first seen by a query (polled
                                   every --poll-sql seconds, so up to that much late)

for each mode side by side: `quiet` (what `ingest --follow` does: NmonTail publishes a snapshot
after --quiet seconds without growth, each sample with its stream's watermark promise, so the Flink
job closes a window as soon as the promise reaches its end; ingest/watermark.py), `nopromise` (the
same without promises: a window closes when a sample `out_of_orderness_seconds` past its end comes)
and `zzzz` (the oldest behaviour: a snapshot is published when the next ZZZZ line appears, no
promises). Needs the local stack: ./fleetperf up (and ./fleetperf down after).

--nmon runs the nmon binary itself (Linux nmon; Debian's package `nmon`) in the followed directory:
`nmon -F FILE -s INTERVAL -c COUNT -T -p`, this machine's own data at nmon's own pace (its own
header, its own bursts, processes with their arguments). The write time of a snapshot is when a
20 ms poll of the file first sees its ZZZZ line (nmon writes the whole snapshot at once: seen here
as one size change per interval), so the figures are, if anything, too large by the poll.

--file FILE replays a real nmon file instead of the generated one (a few lines of CPU_ALL, MEM and
NET per snapshot): its header as a host no run has seen (AAA,SerialNumber and AAA,host changed, as
bench/backfill.py does) with AAA,interval set to --interval, then its snapshots in turn (from the
first again when the run is longer), each with every line it had, its tag renumbered and its ZZZZ
line at the wall-clock time of its burst: the latency of a user's own snapshots (an AIX file's
130 lines of 40 sections, a Linux file's disks and processes) rather than of our small one.

    .venv/bin/python bench/live_latency.py --live [--minutes 4] [--interval 10] [--modes quiet nopromise zzzz]
    .venv/bin/python bench/live_latency.py --live --modes quiet --file ../shared/corpus/nmon/FILE.nmon
    .venv/bin/python bench/live_latency.py --live --modes quiet nopromise --nmon   # apt-get install nmon
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "bench")]

from backfill import as_host  # noqa: E402

from fleetperf import config  # noqa: E402
from fleetperf.cli.sql_client import query  # noqa: E402
from fleetperf.ingest.follow import Follower  # noqa: E402
from fleetperf.ingest.publish import source_options  # noqa: E402
from fleetperf.ingest.watermark import SLACK_MS  # noqa: E402
from fleetperf.sources.nmon.host_config import HostConfigBuilder  # noqa: E402
from fleetperf.stack.process import running  # noqa: E402

PROMISING = {"quiet"}  # the modes whose samples carry watermark promises


def header(host: str, interval: int, start: datetime) -> bytes:
    return (
        "AAA,progname,nmon\n"
        f"AAA,host,{host}\n"
        f"AAA,interval,{interval}\n"
        f"AAA,date,{start:%d-%b-%Y}\n"
        f"CPU_ALL,CPU Total {host},User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs\n"
        f"MEM,Memory MB {host},memtotal,memfree,cached\n"
        f"NET,Network I/O {host},eth0-read-KB/s,eth0-write-KB/s,\n"
    ).encode()


def snapshot(n: int, at: datetime) -> bytes:
    steal = 2.0 + n % 5
    return (
        f"ZZZZ,T{n:04d},{at:%H:%M:%S},{at:%d-%b-%Y}\n"
        f"CPU_ALL,T{n:04d},20.0,5.0,1.0,{72.0 - steal:.1f},{steal:.1f},,4\n"
        f"MEM,T{n:04d},8192.0,{4000 + n}.0,1500.0\n"
        f"NET,T{n:04d},{10 + n % 7}.0,{20 + n % 3}.0,\n"
    ).encode()


class Replay:
    """A real nmon file, written again live as another host (--file)."""

    def __init__(self, path: Path, interval: int, serial: str, hostname: str) -> None:
        # latin-1 gives every byte back as it was (nmon writes command names and labels as found)
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        lines = raw.decode("latin-1").splitlines(keepends=True)
        first = next((i for i, line in enumerate(lines) if line.startswith("ZZZZ,")), None)
        if first is None:
            raise SystemExit(f"{path}: no ZZZZ line, nothing to replay")
        self.header = lines[:first]
        self.host = as_host(self.header, serial, hostname, path)
        # the promise a followed sample carries is its time + AAA,interval (ingest/watermark.py)
        self.header = [line for line in self.header if not line.startswith("AAA,interval,")]
        self.header.insert(1, f"AAA,interval,{interval}\n")
        # (tag, lines after the ZZZZ line): a snapshot's data lines name its tag in their second
        # field (CPU_ALL,T0002,...), TOP lines in their third (TOP,pid,T0002,...), UARG as +T0002
        self.snapshots: list[tuple[str, list[list[str]]]] = []
        for line in lines[first:]:
            if line.startswith("ZZZZ,"):
                self.snapshots.append((line.split(",", 2)[1], []))
            else:
                self.snapshots[-1][1].append(line.rstrip("\r\n").split(",", 3))
        # a ZZZZ line with no data after it (nmon stopped while writing it: the Linux corpus file
        # linux_fc21's last) makes no record; written live it would count as a snapshot never seen
        self.snapshots = [s for s in self.snapshots if s[1]]

    def header_bytes(self, start: datetime) -> bytes:
        date = f"{start:%d-%b-%Y}".upper()  # nmon's form: 30-NOV-2026
        return "".join(f"AAA,date,{date}\n" if line.startswith("AAA,date,") else line for line in self.header).encode(
            "latin-1"
        )

    def snapshot(self, n: int, at: datetime) -> bytes:
        old, rows = self.snapshots[(n - 1) % len(self.snapshots)]
        tag = f"T{n:04d}"
        renamed = {old: tag, "+" + old: "+" + tag}
        out = [f"ZZZZ,{tag},{at:%H:%M:%S},{at:%d-%b-%Y}\n".upper()]
        for fields in rows:
            out.append(",".join(renamed.get(f, f) if i in (1, 2) else f for i, f in enumerate(fields)) + "\n")
        return "".join(out).encode("latin-1")


@dataclass
class Run:
    mode: str
    host: str
    written: dict[int, float] = field(default_factory=dict)  # snapshot time (ms) -> burst written (epoch s)
    raw: dict[int, float] = field(default_factory=dict)  # snapshot time (ms) -> row inserted (epoch s)
    final: dict[int, float] = field(default_factory=dict)  # window end (ms) -> final row first seen (epoch s)
    emitted: dict[int, float] = field(default_factory=dict)  # window end (ms) -> Flink emitted it final (epoch s)
    kafka: dict[int, float] = field(default_factory=dict)  # snapshot time (ms) -> produced to Kafka (epoch s)
    started: float = field(default_factory=time.time)


def write_file(
    path: Path, run: Run, interval: int, minutes: float, stop: threading.Event, replay: Replay | None = None
) -> None:
    """nmon: a header, then one burst per interval at wall-clock multiples of the interval."""
    now = time.time()
    first = math.ceil(now / interval) * interval
    start = datetime.fromtimestamp(now, UTC)
    path.write_bytes(replay.header_bytes(start) if replay else header(run.host, interval, start))
    count = int(minutes * 60 // interval)
    for n in range(1, count + 1):
        due = first + (n - 1) * interval
        if stop.wait(max(0.0, due - time.time())):
            return
        at = datetime.fromtimestamp(due, UTC)
        with open(path, "ab") as handle:
            handle.write(replay.snapshot(n, at) if replay else snapshot(n, at))
        run.written[int(due * 1000)] = time.time()


def run_nmon(
    binary: str, path: Path, run: Run, interval: int, minutes: float, stop: threading.Event, every: float = 0.02
) -> None:
    """The nmon binary writes `path` (--nmon); a poll every `every` s notes when each ZZZZ line
    first appears (run.written, keyed by the snapshot's time as the collector reads it) and takes
    the host id from the AAA lines by the collector's own rule."""
    count = max(1, int(minutes * 60 // interval))
    argv = [binary, "-F", str(path), "-s", str(interval), "-c", str(count), "-T", "-p"]
    started = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if started.returncode != 0 or not started.stdout.strip().isdigit():
        raise SystemExit(f"{' '.join(argv)}: exit {started.returncode}: {started.stdout}{started.stderr}")
    pid = int(started.stdout.strip())  # -p: nmon forks itself into the background and prints its pid
    identity, pending, offset = HostConfigBuilder(), b"", 0
    try:
        while True:
            alive = running(pid)
            if path.exists():
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
                seen = time.time()
                offset += len(chunk)
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    tag, _, rest = line.decode("latin-1").rstrip("\r").partition(",")
                    if tag == "AAA":
                        identity.add("AAA", rest)
                    elif tag == "ZZZZ":
                        run.host = run.host or identity.host_id
                        _, clock, day = rest.split(",")[:3]
                        at = datetime.strptime(f"{clock} {day.title()}", "%H:%M:%S %d-%b-%Y").replace(tzinfo=UTC)
                        run.written.setdefault(int(at.timestamp() * 1000), seen)
            if not alive or stop.wait(every):
                return
    finally:
        if running(pid):
            os.kill(pid, signal.SIGTERM)


def watch(settings: config.Settings, run: Run, every: float, stop: threading.Event) -> None:
    """Polls the warehouse: insert times of the raw rows, first sight of each final window."""
    while not stop.is_set():
        host = run.host  # --nmon: known once nmon wrote its header
        if not host:
            stop.wait(every)
            continue
        try:
            _, rows = query(
                settings,
                "SELECT toUnixTimestamp64Milli(ts), toUnixTimestamp64Milli(min(ingested_at)) FROM cpu_samples"
                f" WHERE host_id = '{host}' GROUP BY ts",
            )
            for ts, inserted in rows:
                run.raw.setdefault(int(ts), int(inserted) / 1000)
            _, rows = query(
                settings,
                "SELECT toUnixTimestamp64Milli(window_end), toUnixTimestamp64Milli(min(emitted_at))"
                f" FROM derived_metrics WHERE entity_id = '{host}' AND is_final GROUP BY window_end",
            )
            seen = time.time()
            for end, emitted in rows:
                run.emitted.setdefault(int(end), int(emitted) / 1000)
                run.final.setdefault(int(end), seen)
        except Exception as exc:  # noqa: BLE001 - a slow or restarting warehouse: try again
            print(f"  query failed ({exc}); retrying", file=sys.stderr)
        stop.wait(every)


def kafka_times(settings: config.Settings, run: Run) -> None:
    """CreateTime of the run's cpu_samples records (set by the producer when the follower sent
    them): splits write -> row into collector and Kafka + sink."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.serialization import MessageField, SerializationContext

    from fleetperf.kafka_avro import deserializers, kafka_client_config

    topic = settings.topic("cpu_samples").name
    decode = deserializers(settings)[topic]
    consumer = Consumer(
        {**kafka_client_config(settings), "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False}
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        since = int(run.started * 1000) - 60_000
        wanted = consumer.offsets_for_times([TopicPartition(topic, p, since) for p in partitions], timeout=10)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        todo = {tp.partition for tp in wanted if 0 <= tp.offset < ends[tp.partition]}
        consumer.assign([tp for tp in wanted if tp.partition in todo])
        deadline = time.time() + 30
        while todo and time.time() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            if msg.offset() >= ends[msg.partition()] - 1:
                todo.discard(msg.partition())
            if msg.key() != run.host.encode():
                continue
            record = decode(msg.value(), SerializationContext(topic, MessageField.VALUE))
            ts = record["ts"]
            ms = int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else int(ts)
            run.kafka.setdefault(ms, msg.timestamp()[1] / 1000)
    finally:
        consumer.close()


def measure(settings: config.Settings, mode: str, args: argparse.Namespace) -> Run:
    name = f"livebench-{mode}-{uuid.uuid4().hex[:6]}"
    replay = Replay(args.file, args.interval, serial=name.upper(), hostname=name) if args.file else None
    run = Run(mode, replay.host if replay else "" if args.nmon else name)
    quiet = args.quiet if mode in ("quiet", "nopromise") else -1.0
    with tempfile.TemporaryDirectory(prefix="fleetperf-live-") as tmp:
        folder = Path(tmp)
        path = folder / f"{run.host or 'nmon'}_{datetime.now(UTC):%y%m%d_%H%M}.nmon"
        follower = Follower(
            settings,
            [str(folder)],
            UTC,
            poll_seconds=args.poll,
            options=source_options(tz="UTC", nmon_quiet=quiet),
            status_every=0,
            promises=mode in PROMISING,
        )
        stop = threading.Event()
        threads = [
            threading.Thread(target=follower.run, daemon=True),
            threading.Thread(target=watch, args=(settings, run, args.poll_sql, stop), daemon=True),
        ]
        for t in threads:
            t.start()
        try:
            if args.nmon:
                run_nmon(args.nmon, path, run, args.interval, args.minutes, stop)
            else:
                write_file(path, run, args.interval, args.minutes, stop, replay)
            # then until every snapshot's row and every closable window's final row was seen
            deadline = time.time() + args.drain
            wanted = closable_windows(run, args.interval, settings["flink"]["out_of_orderness_seconds"])
            while time.time() < deadline and (len(run.raw) < len(run.written) or not wanted <= run.final.keys()):
                time.sleep(0.5)
        finally:
            stop.set()
            follower.stop()
            for t in threads:
                t.join(timeout=30)
    kafka_times(settings, run)
    return run


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


WINDOW_MS = 60_000


def closable_windows(run: Run, interval: int, out_of_orderness: int) -> set[int]:
    """Ends of the windows the run covers from their start (its first snapshot at or before the
    window's start) and that a snapshot of the run closes: its time >= end + the out-of-orderness
    allowance, or, in a mode with promises, its promise (time + interval - SLACK_MS) >= end; the
    others are closed only by the stream's idle/retain rules (a live file has no end-of-stream
    marker). Snapshots need not fall on multiples of the interval (real nmon starts when started)."""
    if not run.written:
        return set()
    first, last = min(run.written), max(run.written)
    reach = max(last - out_of_orderness * 1000, last + interval * 1000 - SLACK_MS if run.mode in PROMISING else 0)
    ends = {(ts // WINDOW_MS + 1) * WINDOW_MS for ts in run.written}
    return {e for e in ends if first <= e - WINDOW_MS and reach >= e}


def gaps(run: Run) -> str:
    """The snapshots' ZZZZ gaps (s) as counts: what the promise (ts + interval - 1 s) rests on."""
    times = sorted(run.written)
    counts: dict[float, int] = {}
    for a, b in zip(times, times[1:], strict=False):
        counts[(b - a) / 1000] = counts.get((b - a) / 1000, 0) + 1
    return ", ".join(f"{gap:g} s x{n}" for gap, n in sorted(counts.items()))


def report(run: Run, interval: int, out_of_orderness: int) -> None:
    raw = [run.raw[ts] - w for ts, w in run.written.items() if ts in run.raw]
    missing = len(run.written) - len(raw)
    produced = [run.kafka[ts] - w for ts, w in run.written.items() if ts in run.kafka]
    sunk = [run.raw[ts] - run.kafka[ts] for ts in run.written if ts in run.raw and ts in run.kafka]
    wanted = sorted(closable_windows(run, interval, out_of_orderness))
    final = [run.final[e] - e / 1000 for e in wanted if e in run.final]
    emitted = [run.emitted[e] - e / 1000 for e in wanted if e in run.emitted]
    nan = float("nan")
    print(
        f"{run.mode:>9}: write -> raw row queryable   p50 {statistics.median(raw) if raw else nan:5.2f} s"
        f"  p95 {pct(raw, 0.95):5.2f} s  max {max(raw, default=nan):5.2f} s"
        f"  ({len(raw)} snapshots{f', {missing} never seen' if missing else ''})"
    )
    print(
        f"{'':>9}    of which write -> Kafka  p50 {statistics.median(produced) if produced else nan:5.2f} s"
        f"  p95 {pct(produced, 0.95):5.2f} s;  Kafka -> row  p50 {statistics.median(sunk) if sunk else nan:5.2f} s"
        f"  p95 {pct(sunk, 0.95):5.2f} s"
    )
    print(
        f"{'':>9}  window end -> final window  p50 {statistics.median(final) if final else nan:5.2f} s"
        f"  p95 {pct(final, 0.95):5.2f} s  max {max(final, default=nan):5.2f} s"
        f"  ({len(final)} of {len(wanted)} closable windows seen final)"
    )
    print(
        f"{'':>9}    of which end -> Flink emits it  p50 {statistics.median(emitted) if emitted else nan:5.2f} s"
        f"  p95 {pct(emitted, 0.95):5.2f} s (then the checkpoint's commit and the sink)"
    )
    print(f"{'':>9}  snapshot gaps: {gaps(run)}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--live", action="store_true", help="measure live latency on the running local stack")
    p.add_argument("--modes", nargs="+", default=["quiet", "nopromise", "zzzz"], choices=["quiet", "nopromise", "zzzz"])
    p.add_argument("--minutes", type=float, default=4.0, help="length of each mode's nmon file")
    p.add_argument("--interval", type=int, default=10, help="nmon interval in seconds")
    p.add_argument("--quiet", type=float, default=2.0, help="quiet period of the quiet mode (s)")
    p.add_argument("--poll", type=float, default=1.0, help="the follower's poll interval (ingest --follow default)")
    p.add_argument("--poll-sql", type=float, default=0.5, help="seconds between warehouse queries")
    p.add_argument("--file", type=Path, help="a real nmon file (plain or .gz) to replay live instead of ours")
    p.add_argument(
        "--nmon",
        nargs="?",
        const="nmon",
        help="run the nmon binary (default: nmon on PATH) instead of writing a file ourselves",
    )
    p.add_argument("--drain", type=float, default=60.0, help="at most this long after the last write (s)")
    args = p.parse_args()
    if not args.live:
        p.error("only --live is implemented: pass --live with the local stack up (./fleetperf up)")
    settings = config.load()
    from fleetperf.cli.common import check_stack

    check_stack(settings)
    flink = settings["flink"]
    if args.nmon and args.file:
        p.error("--nmon and --file exclude each other")
    if args.nmon and shutil.which(args.nmon) is None:
        p.error(f"--nmon: {args.nmon} not found (Debian: apt-get install nmon)")
    what = f"{args.file.name} replayed" if args.file else f"{args.nmon} itself" if args.nmon else "nmon"
    print(
        f"{what} every {args.interval} s for {args.minutes:g} min per mode; follower poll {args.poll:g} s;"
        f" Flink: window {flink['window_seconds']} s, out-of-orderness {flink['out_of_orderness_seconds']} s,"
        f" {flink['delivery']} (checkpoints every {flink['checkpoint_interval_seconds']} s);"
        f" sink batches up to {settings['warehouse']['batch_seconds']} s"
    )
    runs = []
    for mode in args.modes:
        print(f"{mode}: writing {mode} ...", file=sys.stderr, flush=True)
        runs.append(measure(settings, mode, args))
    for run in runs:
        report(run, args.interval, flink["out_of_orderness_seconds"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
