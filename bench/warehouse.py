"""Warehouse figures: sink rows/s (Kafka -> Avro decode -> chDB) and query latency of the SQL
cookbook and dashboard queries over a simulated fleet (default 1,000 hosts x 30 days at 5-minute
grain, every table the dashboards read, generated inside the engine: `generate`), plus data size on
disk. Needs Kafka and the registry for the
sink part: `./fleetperf up --only kafka,registry` (skip it with --no-sink)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
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


# The benchmark fleet, in blocks of 20 hosts: 8 AIX LPARs on one POWER frame (2 of them with
# hpmstat and an 802.3ad aggregation), 6 Linux hosts (3 nmon, 3 sadc), a z/VM system with 5 Linux
# guests; every 5 blocks share an IBM Z CPC whose partitions are the blocks' z/VM systems (FCX126).
# The derived metrics of each kind are the ones the Flink job emits for it (the demo fleet's
# warehouse: AIX 7 + 6 hpm, Linux 3, guest 5, z/VM system 8, aggregation 6).
_AIX = ("busy_pct", "cpu_cores", "pool_used", "pool_used_pct", "vps_needed", "physc", "entc_pct")
_HPM = ("cpi", "slb_miss_rate", "ierat_miss_rate", "islb_miss_rate", "dslb_miss_rate", "mips")
_LINUX = ("busy_pct", "cpu_cores", "steal_pct")
_GUEST = ("busy_pct", "steal_pct", "cpu_cores", "tv_ratio", "cp_overhead_pct")
_ZVM = ("busy_pct", "users_in_elist", "capture_ratio", "cpu_cores", "paging_dasd_rate", "tv_ratio",
        "cp_overhead_pct", "paging_xstore_rate")  # fmt: skip
_LACP = ("lacp_cv_rx", "lacp_hash_skew_rx", "lacp_hash_skew_tx", "lacp_ports_out_of_sync", "lacp_active_ports",
         "lacp_cv_tx")  # fmt: skip
# typical level and daily swing of each metric (the value is level x (1 + swing x diurnal) + noise)
_LEVEL = {"busy_pct": (35, 0.5), "cpu_cores": (2.0, 0.5), "pool_used": (12, 0.4), "pool_used_pct": (60, 0.4),
          "vps_needed": (3, 0.3), "physc": (1.2, 0.5), "entc_pct": (80, 0.5), "cpi": (1.8, 0.1),
          "slb_miss_rate": (0.02, 0.3), "ierat_miss_rate": (0.01, 0.3), "islb_miss_rate": (0.005, 0.3),
          "dslb_miss_rate": (0.015, 0.3), "mips": (4000, 0.5), "steal_pct": (2.5, 0.8), "tv_ratio": (1.15, 0.05),
          "cp_overhead_pct": (8, 0.3), "users_in_elist": (1, 0.8), "capture_ratio": (0.95, 0.02),
          "paging_dasd_rate": (40, 0.6), "paging_xstore_rate": (10, 0.6), "lacp_cv_rx": (0.1, 0.3),
          "lacp_hash_skew_rx": (1.1, 0.1), "lacp_hash_skew_tx": (1.1, 0.1), "lacp_ports_out_of_sync": (0, 0),
          "lacp_active_ports": (2, 0), "lacp_cv_tx": (0.1, 0.3)}  # fmt: skip
BLOCK = 20


@dataclass(frozen=True)
class Entity:
    entity_id: str
    name: str
    kind: str  # aix, linux, sadc, guest, zvm, aggregation
    block: int
    metrics: tuple[str, ...]


def fleet(hosts: int) -> list[Entity]:
    """The entities of a fleet of `hosts` hosts (z/VM systems count as hosts; aggregations are extra)."""
    out = []
    for h in range(hosts):
        b, i = divmod(h, BLOCK)
        if i < 8:
            lpar = f"P{b:04d}-{i + 1}"
            out.append(Entity(lpar, f"aix{h:04d}", "aix", b, _AIX + (_HPM if i < 2 else ())))
            if i < 2:
                out.append(Entity(f"{lpar}|ent8", f"aix{h:04d}/ent8", "aggregation", b, _LACP))
        elif i < 14:
            out.append(Entity(f"lnx{h:04d}", f"lnx{h:04d}", "linux" if i < 11 else "sadc", b, _LINUX))
        elif i < 19:
            out.append(Entity(f"ZVM{b:03d}/LNX{h:04d}", f"lnx{h:04d}", "guest", b, _GUEST))
        else:
            out.append(Entity(f"ZVM{b:03d}", f"ZVM{b:03d}", "zvm", b, _ZVM))
    return out


def _series_rows(entities: list[Entity]) -> list[tuple]:
    rows = []
    for e in entities:
        for m in e.metrics:
            level, swing = _LEVEL[m]
            sid = len(rows)
            # a spread of levels across the fleet, and a slow growth for the capacity forecast
            scale = 0.5 + (sid * 7919 % 1000) / 1000
            rows.append((sid, e.entity_id, e.name, m, level * scale, swing, (sid % 24) / 24.0))
    return rows


def generate(  # noqa: PLR0913
    ch,  # noqa: ANN001
    hosts: int,
    days: int,
    start: str = "2026-01-01 00:00:00",
    interval: int = 300,
    progress=print,  # noqa: ANN001
) -> float:
    """Every table the dashboards read, for `hosts` hosts over `days` days at `interval` seconds from
    `start`, generated inside the engine (INSERT ... SELECT FROM numbers, a few days per statement so
    memory stays bounded) and written through the same tables and materialized views the sink
    fills: derived_metrics (-> metrics_hourly, metrics_daily), cpu_samples (nmon/sadc CPU: physc,
    entitlement, pool), zvm_guest_samples, zvm_system_samples, lpar_samples (FCX126),
    net_port_samples (entstat/LACP), anomaly_flags, host_configs (inventory). Returns seconds."""
    t0 = time.monotonic()
    entities = fleet(hosts)
    per_day = 86400 // interval
    series = _series_rows(entities)
    ch.command("DROP TABLE IF EXISTS bench_series")
    ch.command(
        "CREATE TABLE bench_series (sid UInt32, entity_id String, entity_name String, metric String, "
        "level Float64, swing Float64, phase Float64) ENGINE = Memory"
    )
    ch.insert("bench_series", series, column_names=["sid", "entity_id", "entity_name", "metric", "level", "swing",
                                                    "phase"])  # fmt: skip
    ch.command("DROP TABLE IF EXISTS bench_entities")
    ch.command(
        "CREATE TABLE bench_entities (entity_id String, name String, kind String, block UInt32, n UInt32) "
        "ENGINE = Memory"
    )
    ch.insert("bench_entities", [(e.entity_id, e.name, e.kind, e.block, n) for n, e in enumerate(entities)],
              column_names=["entity_id", "name", "kind", "block", "n"])  # fmt: skip
    _inventory(ch, start)
    t = f"toDateTime64('{start}', 3, 'UTC') + toIntervalSecond(k * {interval})"
    # diurnal: 0 at night, 1 at the afternoon peak; growth: +30 % over a year
    diurnal = f"(0.5 + 0.5 * sin(2 * pi() * ((k * {interval}) % 86400) / 86400 - pi() / 2 + phase))"
    growth = f"(1 + 0.3 * k / {365 * per_day})"
    chunk = max(1, 8_000_000 // max(1, len(series) * per_day))  # days per statement: ~8 M derived rows
    for first in range(0, days, chunk):
        k0, k1 = first * per_day, min(days, first + chunk) * per_day
        ks = f"(SELECT number AS k FROM numbers({k0}, {k1 - k0}))"
        ch.command(f"""
            INSERT INTO derived_metrics (entity_id, entity_name, metric, window_start, window_end, value, samples,
                                         is_final, emitted_at)
            SELECT entity_id, entity_name, metric, {t} AS ws, ws + toIntervalMinute(1),
                   greatest(0, level * {growth} * (1 + swing * ({diurnal} - 0.5))
                               + level * 0.1 * ((cityHash64(sid, k) % 1000) / 1000.0 - 0.5)),
                   1, true, ws + toIntervalMinute(2)
            FROM bench_series CROSS JOIN {ks} AS ks""")
        _raw(ch, t, ks, interval, diurnal)
        if progress:
            progress(f"  days {first}-{min(days, first + chunk)} of {days}: {time.monotonic() - t0:.0f}s")
    _incidents(ch, start, days)
    ch.command("DROP TABLE bench_series")
    ch.command("DROP TABLE bench_entities")
    return time.monotonic() - t0


def _inventory(ch, start: str) -> None:  # noqa: ANN001
    """host_configs as the inventory file gives them: site, frame, platform, entitlement, z/VM system."""
    ch.command(f"""
        INSERT INTO host_configs (host_id, hostname, ts, source, origin_file, attributes, config_text)
        SELECT entity_id, name, toDateTime64('{start}', 3, 'UTC'), 'inventory', 'bench-inventory.csv',
               mapFilter((k, v) -> v != '', map(
                   'site', concat('site', toString(block % 4)),
                   'platform', multiIf(kind = 'aix', 'aix', kind = 'guest', 'zvm-guest', kind = 'zvm', 'zvm-system',
                                       'linux'),
                   'frame_id', if(kind = 'aix', concat('9080-M9S*P', leftPad(toString(block), 4, '0')), ''),
                   'cpc', if(kind IN ('guest', 'zvm'), concat('3906-C', leftPad(toString(intDiv(block, 5)), 3, '0')),
                             ''),
                   'entitled_capacity', if(kind = 'aix', toString(1.0 + n % 3), ''),
                   'zvm_system', if(kind = 'guest', splitByChar('/', entity_id)[1], ''))), map()
        FROM bench_entities WHERE kind != 'aggregation'""")


def _raw(ch, t: str, ks: str, interval: int, diurnal: str) -> None:  # noqa: ANN001
    """The raw samples the dashboards read beside the rollups, one per host and interval."""
    phase = "((cityHash64(entity_id) % 24) / 24.0)"
    d = diurnal.replace("phase", phase)
    noise = "((cityHash64(entity_id, k) % 1000) / 1000.0)"
    ch.command(f"""
        INSERT INTO cpu_samples (host_id, hostname, ts, interval_s, source, user_pct, sys_pct, wait_pct, idle_pct,
                                 steal_pct, cpus, physc, entitled, virtual_cpus, pool_cpus, pool_idle, origin_file,
                                 origin_snapshot)
        SELECT entity_id, name, {t}, {interval}, if(kind = 'sadc', 'sadc', 'nmon'),
               10 + 40 * {d} * {noise} AS u, 5 + 5 * {noise}, 1, 100 - u - 5 - 5 * {noise} - 1,
               if(kind = 'aix', NULL, 1 + 4 * {noise}), 16, if(kind = 'aix', 0.4 + 1.6 * {d} * {noise}, NULL),
               if(kind = 'aix', 1.0 + n % 3, NULL), if(kind = 'aix', 4, NULL), if(kind = 'aix', 64, NULL),
               if(kind = 'aix', 30 + 20 * {noise}, NULL), concat(name, '.nmon'), toString(k)
        FROM bench_entities CROSS JOIN {ks} AS ks WHERE kind IN ('aix', 'linux', 'sadc')""")
    ch.command(f"""
        INSERT INTO zvm_guest_samples (guest_id, zvm_system, userid, ts, interval_s, source, tcpu_s, vcpu_s, cpu_pct,
                                       origin)
        SELECT entity_id, splitByChar('/', entity_id)[1], upper(name), {t}, {interval}, 'monitor',
               {interval} * (0.2 + {d}) * 1.15 AS tc, tc / 1.15, 100 * tc / {interval}, 'bench.monwrite'
        FROM bench_entities CROSS JOIN {ks} AS ks WHERE kind = 'guest'""")
    ch.command(f"""
        INSERT INTO zvm_system_samples (zvm_system, ts, interval_s, source, busy_pct, online_cpus, capture_ratio,
                                        users_logged, users_in_elist, paging_xstore_rate, paging_dasd_rate, origin)
        SELECT entity_id, {t}, {interval}, 'monitor', 20 + 60 * {d}, 8, 0.95, 12, 1 + 3 * {noise}, 10 * {noise},
               40 * {noise}, 'bench.monwrite'
        FROM bench_entities CROSS JOIN {ks} AS ks WHERE kind = 'zvm'""")
    # FCX126: one CPC per 5 blocks, its partitions the blocks' z/VM systems, 6 logical CPUs each
    ch.command(f"""
        INSERT INTO lpar_samples (lpar_id, cpc, partition, lpar_number, proc_count, weight, dedicated, ts,
                                  interval_s, source, cpus, origin)
        SELECT concat(cpc, '/', entity_id), cpc, entity_id, block % 5 + 1, 6, 100, false, {t}, {interval}, 'perfkit',
               arrayMap(c -> (c, 'IFL', 10 + 70 * {d} * ((cityHash64(entity_id, k, c) % 100) / 100.0), 1.0, 0.5,
                              NULL, NULL), range(6)), 'bench.fcx126'
        FROM (SELECT *, concat('3906-C', leftPad(toString(intDiv(block, 5)), 3, '0')) AS cpc FROM bench_entities
              WHERE kind = 'zvm') AS z CROSS JOIN {ks} AS ks""")
    # entstat: two member ports per aggregation, cumulative packet counters, LACP in sync
    ch.command(f"""
        INSERT INTO net_port_samples (host_id, hostname, ts, source, adapter, aggregation, device_type, tx_packets,
                                      rx_packets, actor_sync, partner_sync, origin)
        SELECT splitByChar('|', entity_id)[1], splitByChar('/', name)[1], {t}, 'entstat', port, 'ent8', 'ethernet',
               toInt64(k * {interval} * if(port = 'ent0', 900, 700)), toInt64(k * {interval} * 800),
               'IN_SYNC', 'IN_SYNC', 'bench.entstat'
        FROM bench_entities CROSS JOIN {ks} AS ks ARRAY JOIN ['ent0', 'ent1'] AS port WHERE kind = 'aggregation'""")


def _incidents(ch, start: str, days: int) -> None:  # noqa: ANN001
    """anomaly_flags: every tenth host has an incident of 6 windows every 10 days; the last is open."""
    ch.command(f"""
        INSERT INTO anomaly_flags (entity_id, entity_name, metric, rule, kind, window_start, window_end, observed,
                                   threshold, severity, explanation, incident_id, incident_start, incident_end,
                                   incident_peak, incident_windows, emitted_at)
        SELECT entity_id, name, metric, rule, 'rule', st + toIntervalMinute(5 * w) AS ws, ws + toIntervalMinute(1),
               30 + w, 20, 'warning', concat(metric, ' above 20 for 6 windows'), concat(entity_id, '/', toString(i)),
               st, if(i = {max(0, days // 10 - 1)}, NULL, st + toIntervalMinute(30)), 35, 6, ws
        FROM (SELECT entity_id, name,
                     multiIf(kind = 'aix', 'entc_pct', kind = 'zvm', 'tv_ratio', 'steal_pct') AS metric,
                     multiIf(kind = 'aix', 'entc_high', kind = 'zvm', 'tv_ratio_high', 'steal_high') AS rule,
                     arrayJoin(range({max(1, days // 10)})) AS i,
                     toDateTime64('{start}', 3, 'UTC') + toIntervalDay(10 * i + 5) + toIntervalMinute(n % 600) AS st
              FROM bench_entities WHERE n % 10 = 0 AND kind != 'aggregation')
        ARRAY JOIN range(6) AS w""")


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
    ap.add_argument("--interval", type=int, default=300, help="seconds between samples")
    ap.add_argument("--sink-records", type=int, default=200_000)
    ap.add_argument("--no-sink", action="store_true")
    args = ap.parse_args()
    if not args.no_sink:
        rate, n = sink_rate(args.sink_records)
        print(f"sink: {n} derived_metrics records Kafka -> ClickHouse at {rate:,.0f} rows/s (one consumer)\n")
    with tempfile.TemporaryDirectory() as tmp:
        settings = config.load({**os.environ, "FLEETPERF__STATE__DIR": tmp})
        ch, _ = migrate(settings)
        seconds = generate(ch, args.hosts, args.days, interval=args.interval)
        rows = ch.query("SELECT count() FROM derived_metrics").result_rows[0][0]
        print(
            f"fleet: {args.hosts} hosts x {args.days} days at {args.interval} s = {rows:,} derived rows "
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
