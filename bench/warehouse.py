"""Warehouse figures: sink rows/s (Kafka -> Avro decode -> chDB) and query latency of the SQL
cookbook and dashboard queries over a simulated fleet (default 1,000 hosts x 30 days at 1-minute
grain, generated inside the engine), plus data size on disk. Needs Kafka and the registry for the
sink part: `./fleetperf up --only kafka,registry` (skip it with --no-sink)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from fleetperf import config  # noqa: E402
from fleetperf.warehouse.clickhouse import migrate  # noqa: E402
from fleetperf.warehouse.cookbook import queries  # noqa: E402

DASHBOARD_QUERIES = {
    "drill-down minute chart, last day, 1-min view": "SELECT hostname, minute, max(steal_pct) FROM host_cpu_minute "
    "WHERE has_steal AND minute >= (SELECT max(window_start) FROM derived_metrics) - INTERVAL 1 DAY "
    "GROUP BY hostname, minute",
    "steal, 30 days, all hosts (hourly rollup)": "SELECT entity_name, hour, max_value FROM metrics_hourly_v "
    "WHERE metric = 'steal_pct'",
    "one host, 30 days, hourly p95 (1-min rows)": "SELECT toStartOfHour(window_start) AS h, quantile(0.95)(value) "
    "FROM derived_metrics_v WHERE entity_id = 'host0042' AND metric = 'steal_pct' GROUP BY h",
    "fleet daily p95 (daily rollup)": "SELECT day, max(p95_value) FROM metrics_daily_v GROUP BY day ORDER BY day",
}


def cookbook() -> dict[str, str]:
    return {f"cookbook {n}. {title}": sql for n, (title, sql) in queries().items()}


def generate(ch, hosts: int, days: int, start: str = "2026-01-01 00:00:00") -> float:  # noqa: ANN001
    """derived_metrics for the fleet: every third host an AIX LPAR (physc, entc_pct), others Linux (steal_pct)."""
    minutes = days * 1440
    t0 = time.monotonic()
    batch = max(1, 2_000_000 // minutes)
    for first in range(0, hosts, batch):
        last = min(hosts, first + batch)
        ch.command(f"""
            INSERT INTO derived_metrics (entity_id, entity_name, metric, window_start, window_end, value, samples,
                                         is_final, emitted_at)
            SELECT concat('host', leftPad(toString(h), 4, '0')) AS id, id,
                   arrayJoin(if(h % 3 = 2, ['physc', 'entc_pct'], ['steal_pct'])) AS metric,
                   toDateTime64('{start}', 3, 'UTC') + toIntervalMinute(m) AS ws,
                   ws + toIntervalMinute(1),
                   multiIf(metric = 'steal_pct',
                           greatest(0, 3 + 4 * sin(m / 240.0 + h) + (cityHash64(h, m) % 100) / 50.0),
                           metric = 'physc', 0.5 + 0.4 * sin(m / 300.0 + h),
                           100 + 40 * sin(m / 300.0 + h)),
                   6, true, now64(3)
            FROM (SELECT number % {last - first} + {first} AS h, intDiv(number, {last - first}) AS m
                  FROM numbers({(last - first) * minutes}))""")
    return time.monotonic() - t0


def timed(ch, sql: str, runs: int = 3) -> float:  # noqa: ANN001
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        ch.query(sql)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sink_rate(records: int) -> tuple[float, int]:
    from fleetperf.kafka_avro import AvroProducer, ensure_topics
    from fleetperf.warehouse.sink import Sink

    settings = config.load()
    ensure_topics(settings)
    producer = AvroProducer(settings)
    base = 1_767_225_600_000
    for i in range(records):
        producer.send(
            "derived_metrics",
            {
                "entity_id": f"bench{i % 1000:04d}",
                "entity_name": f"bench{i % 1000:04d}",
                "metric": "steal_pct",
                "window_start": base + (i // 1000) * 60_000,
                "window_end": base + (i // 1000 + 1) * 60_000,
                "value": (i % 97) / 10.0,
                "samples": 6,
                "is_final": True,
                "emitted_at": base,
            },
            key=None,
        )
    producer.flush()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "FLEETPERF__STATE__DIR": tmp, "FLEETPERF__WAREHOUSE__GROUP_ID": f"bench-{time.time()}"}
        local = config.load(env)
        ch, _ = migrate(local)
        sink = Sink(local, ch)
        thread = threading.Thread(target=sink.run, daemon=True)
        t0 = time.monotonic()
        thread.start()
        while sink.rows_written.get("derived_metrics", 0) < records:
            time.sleep(0.05)
        elapsed = time.monotonic() - t0
        sink.stop()
        thread.join(timeout=30)
    return records / elapsed, records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--sink-records", type=int, default=200_000)
    ap.add_argument("--no-sink", action="store_true")
    args = ap.parse_args()
    if not args.no_sink:
        rate, n = sink_rate(args.sink_records)
        print(f"sink: {n} derived_metrics records Kafka -> ClickHouse at {rate:,.0f} rows/s (one consumer)\n")
    with tempfile.TemporaryDirectory() as tmp:
        settings = config.load({**os.environ, "FLEETPERF__STATE__DIR": tmp})
        ch, _ = migrate(settings)
        seconds = generate(ch, args.hosts, args.days)
        rows = ch.query("SELECT count() FROM derived_metrics").result_rows[0][0]
        print(
            f"fleet: {args.hosts} hosts x {args.days} days at 1 min = {rows:,} derived rows "
            f"(+ hourly/daily rollups via MVs) in {seconds:.0f}s ({rows / seconds:,.0f} rows/s into chDB)"
        )
        for table in ("derived_metrics", "metrics_hourly", "metrics_daily"):
            ch.command(f"OPTIMIZE TABLE {table} FINAL")
        size = ch.query(
            "SELECT table, sum(rows), formatReadableSize(sum(bytes_on_disk)) FROM system.parts "
            "WHERE active AND database = 'fleetperf' GROUP BY table ORDER BY sum(bytes_on_disk) DESC"
        ).result_rows
        for table, n, human in size:
            print(f"  {table:<22} {n:>12,} rows  {human:>10} on disk")
        print("\nquery latency, median of 3 (warm)")
        for name, sql in {**DASHBOARD_QUERIES, **cookbook()}.items():
            print(f"  {timed(ch, sql) * 1000:8.0f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
