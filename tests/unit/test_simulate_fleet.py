"""The demo fleet (`fleetperf.demo.fleet`): every source the pipeline reads, read back by the project's own
sources (registry.detect + Source.read) without a dead letter, and every injected fault crossing its
rule of config/flag-rules.properties for the rule's minimum windows, and nowhere else.

The windows and rules here are computed from the records with the formulas of the domain reference
(../shared/DOMAIN.md "Derived metrics", "Anomaly flags"; docs/flags.md for streaks and gaps), not with
the Flink job's code: 1-minute windows by record time, ratios of sums, port shares from counter deltas,
a streak of consecutive breaking windows that a gap of more than [flink] flag_max_gap_windows ends."""

from __future__ import annotations

import functools
import hashlib
import io
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import fastavro
import pytest

from fleetperf import config
from fleetperf.demo.fleet import Fleet, simulate_fleet
from fleetperf.ingest.publish import source_options
from fleetperf.ingest.records import Emitted
from fleetperf.sources import registry

START = datetime(2026, 11, 9, 0, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
SCHEMAS = {key: topic["schema"] for key, topic in config.load()["topics"].items()}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return simulate_fleet(tmp_path_factory.mktemp("fleet"), START, days=2, interval=300, seed=7, entstat_days=2)


@pytest.fixture(scope="module")
def emitted(fleet: Fleet) -> list[tuple[str, Path, Emitted]]:
    out = []
    for batch in fleet.batches:
        opts = source_options(**batch.kwargs())
        for path in batch.paths:
            source = registry.detect(path)
            assert source is not None, f"{path}: no source recognises it"
            out.extend((source.name, path, _decoded(e)) for e in source.read(path, opts))
    return out


def _decoded(e: Emitted) -> Emitted:
    """The native nmon scanner hands its records Avro-encoded: decode them with the topic's schema."""
    if e.encoded is None:
        return e
    record = fastavro.schemaless_reader(io.BytesIO(e.encoded), _schema(e.topic_key), None)
    assert isinstance(record, dict)
    # timestamp-millis comes back as a datetime: epoch ms as the other sources give it
    record = {k: int(v.timestamp() * 1000) if isinstance(v, datetime) else v for k, v in record.items()}
    return Emitted(e.topic_key, record, e.key, e.snapshot)


@functools.cache
def _schema(topic_key: str) -> object:
    return fastavro.parse_schema(json.loads((config.SCHEMA_DIR / SCHEMAS[topic_key]).read_text()))


def test_every_source_is_simulated_and_read_back_without_dead_letters(emitted: list) -> None:
    letters = [(path.name, e.record["reason"] if "reason" in e.record else e.record) for _, path, e in emitted
               if e.topic_key == "dead_letters"]  # fmt: skip
    assert not letters, letters[:5]
    by_source: dict[str, set[str]] = defaultdict(set)
    for name, _, e in emitted:
        by_source[name].add(e.topic_key)
    assert set(by_source) == set(registry.SOURCES), "a source the pipeline reads is not simulated"
    assert {"cpu_samples", "zvm_guest_samples", "zvm_system_samples", "sysstat_samples"} <= by_source["zvm"]
    assert {"zvm_guest_samples", "zvm_system_samples", "lpar_samples"} <= by_source["perfkit"]
    assert {"cpu_samples", "sysstat_samples"} <= by_source["sadc"]
    assert by_source["hpmstat"] == {"hpm_samples"} and by_source["entstat"] == {"net_port_samples"}
    # two days at 5 minutes: every host's history is whole (one sample per interval, none doubled)
    per_host: dict[str, set[int]] = defaultdict(set)
    for _, _, e in emitted:
        if e.topic_key == "cpu_samples":
            per_host[e.record["host_id"]].add(e.record["ts"])
    assert len(per_host) == 6 + 2 + 3  # nmon LPARs and guests, sadc hosts, APPLDATA guests
    for host, stamps in per_host.items():
        assert len(stamps) >= 2 * 288 - 4, (host, len(stamps))  # a daily file's first record is its base


def test_same_seed_same_bytes(fleet: Fleet, tmp_path: Path) -> None:
    again = simulate_fleet(tmp_path, START, days=2, interval=300, seed=7, entstat_days=2)

    def digest(f: Fleet) -> dict[str, str]:
        return {str(p.relative_to(f.out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in f.files}

    assert digest(again) == digest(fleet)
    assert {f.rule for f in fleet.faults} >= {"steal_high", "tv_ratio_high", "slb_miss_high", "lacp_skew_tx",
                                              "lacp_not_in_sync", "entc_high"}  # fmt: skip
    assert {f.platform for f in fleet.faults} == {"aix", "zvm-guest", "linux", "aggregation"}


def _rules() -> dict[str, dict[str, str]]:
    rules: dict[str, dict[str, str]] = defaultdict(dict)
    for line in (REPO / "config" / "flag-rules.properties").read_text().splitlines():
        if line.startswith("rule.") and "=" in line:
            key, value = line.split("=", 1)
            _, name, attr = key.split(".", 2)
            rules[name][attr] = value
    return rules


def _windows(emitted: list, window_ms: int) -> dict[tuple[str, str], dict[int, float]]:
    """(entity, metric) -> window start -> value, per the domain reference's formulas."""
    sums: dict[tuple[str, str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    ports: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for _, _, e in emitted:
        r = e.record
        if e.topic_key in ("cpu_samples", "zvm_guest_samples", "hpm_samples"):
            w = r["ts"] // window_ms * window_ms
        if e.topic_key == "cpu_samples":
            if r["steal_pct"] is not None:  # time-weighted steal
                acc = sums[(r["host_id"], "steal_pct", w)]
                acc[0] += r["steal_pct"] * r["interval_s"]
                acc[1] += r["interval_s"]
            if r["physc"] is not None and r["entitled"]:  # entc = 100 x sum(physc dt) / sum(entitled dt)
                acc = sums[(r["host_id"], "entc_pct", w)]
                acc[0] += 100 * r["physc"] * r["interval_s"]
                acc[1] += r["entitled"] * r["interval_s"]
        elif e.topic_key == "zvm_guest_samples":  # T/V = sum(TCPU) / sum(VCPU)
            acc = sums[(r["guest_id"], "tv_ratio", w)]
            acc[0] += r["tcpu_s"]
            acc[1] += r["vcpu_s"]
        elif e.topic_key == "hpm_samples":  # SLB misses per instruction, % (seed 000 L8254-8332)
            c = r["counters"]
            acc = sums[(r["host_id"], "slb_miss_rate", w)]
            acc[0] += 100 * (c["PM_DSLB_MISS"] + c["PM_ISLB_MISS"])
            acc[1] += c["PM_RUN_INST_CMPL"]
        elif e.topic_key == "net_port_samples" and r["aggregation"]:
            ports[(f"{r['host_id']}|{r['aggregation']}", r["adapter"])].append(r)
    floor = float(config.load()["flink"]["tv_min_virtual_seconds"])
    out: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for (entity, metric, w), (num, den) in sums.items():
        if den > (floor if metric == "tv_ratio" else 0):
            out[(entity, metric)][w] = num / den
    moved: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    unsync: dict[tuple[str, int], int] = defaultdict(int)
    for (entity, adapter), samples in ports.items():
        samples.sort(key=lambda r: r["ts"])
        for before, now in zip(samples, samples[1:], strict=False):
            w = now["ts"] // window_ms * window_ms
            moved[(entity, w)][adapter] = now["tx_packets"] - before["tx_packets"]
            unsync[(entity, w)] += now["actor_sync"] != "IN_SYNC" or now["partner_sync"] != "IN_SYNC"
    for (entity, w), tx in moved.items():
        total = sum(tx.values())
        if total:  # skew: max share x ports (1.0 = even)
            out[(entity, "lacp_hash_skew_tx")][w] = max(tx.values()) / total * len(tx)
        out[(entity, "lacp_ports_out_of_sync")][w] = unsync[(entity, w)]
    return out


def _incidents(values: dict[int, float], rule: dict[str, str], window_ms: int, max_gap: int) -> list[tuple[int, int]]:
    """(first, last) window of each streak of breaking windows at least min_windows long."""
    threshold, above = float(rule["threshold"]), rule["op"] == ">"
    found, streak, last = [], [], None
    for w in sorted(values):
        if last is not None and w - (last + window_ms) > max_gap * window_ms:
            streak = []
        last = w
        if (values[w] > threshold) if above else (values[w] < threshold):
            streak.append(w)
            if len(streak) == int(rule["min_windows"]):
                found.append((streak[0], streak[-1]))
            elif len(streak) > int(rule["min_windows"]):
                found[-1] = (streak[0], w)
        else:
            streak = []
    return found


def test_each_injected_fault_breaks_its_rule_for_its_duration_and_nothing_else_does(
    fleet: Fleet, emitted: list
) -> None:
    flink = config.load()["flink"]
    window_ms, max_gap = int(flink["window_seconds"]) * 1000, int(flink["flag_max_gap_windows"])
    rules, windows = _rules(), _windows(emitted, window_ms)
    for fault in fleet.faults:
        rule = rules[fault.rule]
        assert rule["metric"] == fault.metric, fault
        values = windows[(fault.entity_id, fault.metric)]
        assert values, f"{fault.entity_id} has no {fault.metric} windows"
        found = _incidents(values, rule, window_ms, max_gap)
        start, end = fault.start.timestamp() * 1000, fault.end.timestamp() * 1000
        assert len(found) == 1, (fault, found)
        first, last = found[0]
        assert start <= first and last < end + window_ms, (fault, found)
        inside = [v for w, v in values.items() if start <= w < end]
        outside = [v for w, v in values.items() if not start <= w < end + window_ms]
        print(
            f"{fault.rule:<18} {fault.entity_id:<16} in fault {min(inside):.3f}..{max(inside):.3f}"
            f"  elsewhere {min(outside):.3f}..{max(outside):.3f}  threshold {rule['op']} {rule['threshold']}"
        )


def test_the_fleets_inventory_places_hosts_without_hiding_what_they_report(
    fleet: Fleet, emitted: list, embedded_path: Path
) -> None:
    """Sites and CPCs from the demo's inventory, frames and platforms from what the hosts report (sql 020:
    the inventory overrides keys, it does not replace an LPAR's nmon configuration)."""
    from fleetperf.ingest.aggregations import inventory_records
    from fleetperf.warehouse.clickhouse import migrate
    from tests.conftest import embedded_settings

    assert fleet.inventory is not None
    ch, _ = migrate(embedded_settings(embedded_path, "demo_fleet_inventory"))
    configs = [e.record for _, _, e in emitted if e.topic_key == "host_configs"]
    configs += [e.record for e in inventory_records(fleet.inventory)]
    columns = ["host_id", "hostname", "ts", "source", "origin_file", "attributes"]
    rows = [[r["host_id"], r["hostname"], datetime.fromtimestamp(r["ts"] / 1000, UTC), r["source"],
             r["origin_file"], r["attributes"]] for r in configs]  # fmt: skip
    ch.insert("host_configs", rows, column_names=columns)
    got = {r[0]: r[1:] for r in ch.query("SELECT host_id, site, frame, platform FROM fleet_hierarchy").result_rows}
    assert got["02A1B3C-3"] == ("north", "9009-42A*02A1B3C", "aix")  # nmon: frame and AIX; inventory: site
    assert got["02D4E5F-6"] == ("south", "9080-M9S*02D4E5F", "aix")
    assert got["ZVMA/LNXA02"] == ("north", "2964-0A1B2C", "zvm-guest")
    assert got["lnxs01"] == ("south", "3906-0D4E5F", "zvm-guest")
    assert got["webs01"] == ("south", "standalone", "linux")
    assert got["ZVMB"] == ("south", "3906-0D4E5F", "zvm-system")  # sql 021: the inventory names it
    assert got["02D4E5F-5|ent8"] == ("south", "9080-M9S*02D4E5F", "aggregation")
    assert got["ZVMA/TCPIP"] == ("north", "2964-0A1B2C", "zvm-guest")
