"""Flink job figures on this machine: sustained records/s through the job (a backlog of cpu
samples already in Kafka, read from the start) and end-to-end latency in live mode (record time ->
derived record committed in Kafka), for exactly-once and at-least-once delivery side by side.
Starts its own Kafka, registry and job (own state dir and ports).

    ./fleetperf install && .venv/bin/python bench/flink_throughput.py [--hosts 500] [--samples 400]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]


def _sample(host: int, ts_ms: int) -> dict:
    name = f"bench{host:05d}"
    return {
        "host_id": name,
        "hostname": name,
        "ts": ts_ms,
        "interval_s": 10.0,
        "source": "bench",
        "user_pct": 30.0,
        "sys_pct": 10.0,
        "wait_pct": 1.0,
        "idle_pct": 55.0 - host % 5,
        "steal_pct": 4.0 + host % 5,
        "cpus": 4,
        "physc": None,
        "entitled": None,
        "virtual_cpus": None,
        "pool_cpus": None,
        "pool_idle": None,
        "origin_file": f"{name}.nmon",
        "origin_snapshot": f"T{ts_ms // 10_000}",
    }


def _record_template(settings) -> dict:  # noqa: ANN001
    import json

    fields = [f["name"] for f in json.loads(settings.topic("cpu_samples").schema_text())["fields"]]
    base = _sample(0, 0)
    if set(fields) != set(base):
        raise SystemExit(f"bench record differs from schemas/cpu_sample.avsc: {set(fields) ^ set(base)}")
    return base


def _consume_counts(  # noqa: ANN202
    settings,  # noqa: ANN001
    started: float,
    expected: int,
    timeout: float,
    prefix: str,
    progress: list | None = None,
    job_cpu=None,  # noqa: ANN001
):
    """Seconds until `expected` final derived records of entities named `prefix`* were committed,
    their count, and their latencies (commit time in Kafka - window end, s). With `progress`,
    (finals, job CPU seconds) is appended every 1000 finals."""
    from confluent_kafka import Consumer
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from fleetperf.kafka_avro import registry_client

    topic = settings.topic("derived_windows").name  # one record per window (sql/039)
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap,
            "group.id": f"bench-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    decode = AvroDeserializer(registry_client(settings))
    finals, latencies, last = 0, [], time.monotonic()
    deadline = time.monotonic() + timeout
    try:
        while finals < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            r = decode(msg.value(), SerializationContext(topic, MessageField.VALUE))
            if r["is_final"] and r["entity_id"].startswith(prefix):
                finals += 1
                if progress is not None and finals % 1000 == 0:
                    progress.append((finals, job_cpu()))
                last = time.monotonic()
                end = r["window_end"].timestamp() if hasattr(r["window_end"], "timestamp") else r["window_end"] / 1000
                latencies.append(msg.timestamp()[1] / 1000 - end)
    finally:
        consumer.close()
    return last - started, finals, latencies


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(delivery: str, hosts: int, samples: int, live_seconds: int, parallelism: int | None) -> dict[str, float]:
    from tests.providers import _env_overrides

    state = Path(tempfile.mkdtemp(prefix=f"fleetperf-bench-flink-{delivery}-"))
    os.environ.update(_env_overrides(state))
    os.environ["FLEETPERF__FLINK__DELIVERY"] = delivery
    os.environ["FLEETPERF__FLINK__STREAM_RETAIN_SECONDS"] = "30"
    if parallelism is not None:
        os.environ["FLEETPERF__FLINK__PARALLELISM"] = str(parallelism)
    from fleetperf import config
    from fleetperf.kafka_avro import AvroProducer
    from fleetperf.stack.local import LocalStack

    settings = config.load()
    stack = LocalStack(settings)
    out: dict[str, float] = {}
    producer = None
    try:
        stack.start(only=("kafka", "registry"), echo=lambda line: None)
        producer = AvroProducer(settings)
        template = _record_template(settings)
        t0 = 1_700_000_000_000
        for n in range(samples):
            for h in range(hosts):
                producer.send("cpu_samples", {**template, **_sample(h, t0 + n * 10_000)}, key=f"bench{h:05d}")
        producer.flush()
        records = hosts * samples
        windows = hosts * (samples * 10 // 60)  # every minute of every host, the last one once the stream ends
        # from the job running (JVM start and job submission excluded) to the last window committed
        stack.start(only=("flink",), echo=lambda line: None)
        started = time.monotonic()
        pid = stack.processes()["flink"].pid()
        assert pid is not None
        cpu0 = _cpu_seconds(pid)
        progress: list[tuple[int, float]] = []
        seconds, finals, _ = _consume_counts(
            settings,
            started,
            windows,
            timeout=900,
            prefix="bench",
            progress=progress,
            job_cpu=lambda: _cpu_seconds(pid),
        )
        job_cpu = _cpu_seconds(pid) - cpu0
        # steady state: windows close in step with the input (samples are produced time-ordered
        # across hosts), so the job CPU between 20 % and 80 % of the final windows is the CPU of
        # 60 % of the records, without JIT warm-up and the tail. Not for exactly-once: its windows
        # become visible in bursts, one per checkpoint commit
        inside = [p for p in progress if 0.2 * windows <= p[0] <= 0.8 * windows]
        if delivery == "at-least-once" and len(inside) >= 2:
            (f0, c0), (f1, c1) = inside[0], inside[-1]
            out["steady records per job CPU-second (20-80 % of windows)"] = records * (f1 - f0) / windows / (c1 - c0)
        out["backlog records"] = records
        out["backlog windows"] = finals
        out["backlog seconds"] = seconds
        out["records/s (until the last window is committed)"] = records / seconds
        out["job CPU seconds (whole backlog)"] = job_cpu
        out["records per job CPU-second (whole backlog)"] = records / job_cpu

        # live: every host sends one sample per second stamped now; latency = commit time - window end
        first_live = time.time()
        live_hosts = min(hosts, 200)
        while time.time() - first_live < live_seconds:
            now_ms = int(time.time() * 1000)
            for h in range(live_hosts):
                rec = {**template, **_sample(100_000 + h, now_ms), "interval_s": 1.0}
                rec["host_id"] = rec["hostname"] = f"live{h:05d}"
                producer.send("cpu_samples", rec, key=rec["host_id"])
            producer.flush()
            time.sleep(max(0.0, 1.0 - (time.time() * 1000 - now_ms) / 1000))
        expect = live_hosts * (live_seconds // 60 - 1)
        _, _, live = _consume_counts(settings, time.monotonic(), expect, timeout=120, prefix="live")
        if live:
            out["live latency median s"] = statistics.median(live)
            out["live latency p95 s"] = sorted(live)[int(len(live) * 0.95) - 1]
    finally:
        del producer  # before its broker goes: an idle producer would keep reconnecting and logging
        stack.stop(echo=lambda line: None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--samples", type=int, default=400, help="per host, 10 s apart")
    parser.add_argument("--live-seconds", type=int, default=150)
    parser.add_argument(
        "--parallelism",
        type=int,
        nargs="+",
        default=[None],
        help="0 = Flink's default (all cores); default: as configured",
    )
    parser.add_argument("--delivery", nargs="+", default=["exactly-once", "at-least-once"])
    args = parser.parse_args()
    results = {
        f"{d}, p={'configured' if p is None else p or 'all cores'}": run(
            d, args.hosts, args.samples, args.live_seconds, p
        )
        for p in args.parallelism
        for d in args.delivery
    }
    print(f"\n{args.hosts} hosts x {args.samples} samples, {os.cpu_count()} cores")
    keys = list(dict.fromkeys(k for r in results.values() for k in r))
    print("| figure | " + " | ".join(results) + " |\n|---|" + "---|" * len(results))
    for k in keys:
        print(f"| {k} | " + " | ".join(f"{r.get(k, float('nan')):,.2f}" for r in results.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
