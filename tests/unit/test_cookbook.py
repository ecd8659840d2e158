"""Every query of docs/sql-cookbook.md runs on the embedded engine against seeded data, and the
rollups agree with the same aggregation over the 1-minute rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.warehouse.clickhouse import migrate
from fleetperf.warehouse.cookbook import queries
from fleetperf.warehouse.rollups import rebuild
from tests.conftest import embedded_settings, table_columns
from tests.golden import SLB_AFTER_LSA, SLB_BEFORE_LSA

DM_COLUMNS = table_columns("derived_metrics")


def minutes(entity: str, name: str, metric: str, start: datetime, values: list[float]) -> list[list]:
    now = datetime.now(UTC)
    return [
        [entity, name, metric, start + timedelta(minutes=i), start + timedelta(minutes=i + 1), v, 6, True, now]
        for i, v in enumerate(values)
    ]


@pytest.fixture(scope="module")
def ch(embedded_path: Path):
    client, _ = migrate(embedded_settings(embedded_path, "cookbook"))
    base = (datetime.now(UTC) - timedelta(days=2)).replace(hour=10, minute=0, second=0, microsecond=0)
    rows = [
        *minutes("linux001", "linux001", "steal_pct", base, [15.0] * 30 + [1.0] * 30),
        *minutes("linux002", "linux002", "steal_pct", base, [2.0] * 60),
        *minutes("F1S-1", "aix01", "entc_pct", base, [150.0] * 10 + [80.0] * 50),
        *minutes("F1S-1", "aix01", "physc", base, [1.5] * 10 + [0.8] * 50),
        *minutes("F1S-2", "aix02", "entc_pct", base, [50.0] * 60),
        *minutes("F1S-2", "aix02", "physc", base, [0.5] * 60),
        # the job's vps_needed (ceil of the peak physc, no vpm_xvcpus allowance here)
        *minutes("F1S-1", "aix01", "vps_needed", base, [2.0] * 10 + [1.0] * 50),
        *minutes("F1S-2", "aix02", "vps_needed", base, [1.0] * 60),
        *minutes("LNXA", "LNXA", "tv_ratio", base, [1.5] * 60),
        *minutes("LNXB", "LNXB", "tv_ratio", base, [1.05] * 60),
        *minutes("F1S-1|ent8", "aix01/ent8", "lacp_hash_skew_tx", base, [2.62] * 5),
        *minutes("h2|bond0", "h2/bond0", "lacp_hash_skew_tx", base, [1.1] * 5),
    ]
    for day, peak in zip(range(7, 2, -1), [1.0, 1.2, 1.4, 1.6, 1.8], strict=True):
        rows += minutes("F1S-1", "aix01", "physc", base - timedelta(days=day), [peak])
    # an early result that its final one replaced: must not reach the rollups
    rows.append(
        [
            "linux002",
            "linux002",
            "steal_pct",
            base,
            base + timedelta(minutes=1),
            99.0,
            1,
            False,
            datetime.now(UTC) - timedelta(hours=1),
        ]
    )
    client.insert("derived_metrics", rows, column_names=DM_COLUMNS)
    cfg = ["host_id", "hostname", "ts", "source", "origin_file", "attributes", "config_text"]
    client.insert(
        "host_configs",
        [
            [
                "F1S-1",
                "aix01",
                base,
                "nmon",
                "a.nmon",
                {"frame_id": "8205-E6C*F1S", "AAA/AIX": "7.1.3.30", "entitled_capacity": "1.00"},
                {},
            ],
            ["F1S-2", "aix02", base, "nmon", "b.nmon", {"frame_id": "8205-E6C*F1S", "AAA/AIX": "7.1.3.30"}, {}],
            ["linux001", "linux001", base, "nmon", "c.nmon", {"OS": "Linux"}, {}],
        ],
        column_names=cfg,
    )
    hpm = [
        "host_id",
        "hostname",
        "ts",
        "source",
        "pmu_group",
        "counting_mode",
        "duration_s",
        "wall_s",
        "counters",
        "derived",
        "origin",
    ]
    before, after = SLB_BEFORE_LSA, SLB_AFTER_LSA
    client.insert(
        "hpm_samples",
        [
            ["F1S-1", "aix01", base, "hpmstat", 10, "user+kernel", 160.115119955, 20.0, before, {}, "x"],
            [
                "F1S-1",
                "aix01",
                base + timedelta(hours=1),
                "hpmstat",
                10,
                "user+kernel",
                160.005281724,
                20.0,
                after,
                {},
                "y",
            ],
        ],
        column_names=hpm,
    )
    nv = ["host_id", "ts", "section", "entity", "metric", "value"]
    client.insert(
        "nmon_values",
        [
            *[["F1S-1", base + timedelta(minutes=i), "DISKBUSY", "hdisk0", "DISKBUSY", float(i)] for i in range(100)],
            *[["F1S-1", base + timedelta(minutes=i), "DISKBUSY", "hdisk1", "DISKBUSY", 1.0] for i in range(100)],
            *[["F1S-1", base + timedelta(minutes=i), "TOP", "4242 db2sysc", "%CPU", 40.0] for i in range(5)],
        ],
        column_names=nv,
    )
    dl = ["source", "origin_file", "line", "byte_offset", "error", "raw", "detected_at"]
    client.insert(
        "dead_letters",
        [
            ["nmon", "a.nmon", 7, 300, "not an nmon line", "x", base],
            ["nmon", "a.nmon", 9, 400, "not an nmon line", "y", base],
        ],
        column_names=dl,
    )
    return client


def run(ch, number: int) -> list[list]:
    return [list(r) for r in ch.query(queries()[number][1]).result_rows]


def test_every_cookbook_query_runs(ch) -> None:
    cookbook = queries()
    assert len(cookbook) >= 10 and sorted(cookbook) == list(range(1, len(cookbook) + 1))
    for number, (title, sql) in cookbook.items():
        result = ch.query(sql)  # raises on any error
        assert result.column_names, f"{number}. {title}"
        assert result.result_rows, f"{number}. {title} found nothing in the seeded data"


def test_cookbook_answers(ch) -> None:
    top = run(ch, 1)
    assert top[0][:2] == ["linux001", 8.0] and top[1][:2] == ["linux002", 2.0]  # the early 99.0 is not counted
    assert [(r[0], r[3], r[4]) for r in run(ch, 2)] == [("linux001", 30, 15.0)]
    assert [(r[1], r[2]) for r in run(ch, 3)] == [("LNXA", 1.5)]
    assert [r[0] for r in run(ch, 4)] == ["aix01"]
    assert run(ch, 5)[0][:3] == ["aix01/ent8", "lacp_hash_skew_tx", 2.62]
    frames = run(ch, 6)
    assert frames[0][0] == "8205-E6C*F1S" and frames[0][2] > 0
    assert [(r[0], r[2]) for r in run(ch, 7)] == [("aix01", 1.295)]
    sizing = {r[0]: r[1:] for r in run(ch, 8)}
    assert sizing["aix01"][1] == 2 and sizing["aix02"] == [0.5, 1]
    assert {r[0] for r in run(ch, 9)} == {"linux001", "linux002"}
    assert run(ch, 10)[0][1] == "hdisk0"
    assert run(ch, 11)[0][1:3] == ["4242 db2sysc", 40.0]
    assert ["unassigned", "8205-E6C*F1S", "aix", 2] in [r[:4] for r in run(ch, 12)]
    assert run(ch, 13)[0][:3] == ["a.nmon", 2, 7]


def test_rollups_equal_aggregation_of_the_minutes(ch) -> None:
    raw = ch.query(
        "SELECT entity_id, metric, toStartOfHour(window_start) AS hour, count(), round(avg(value), 9), min(value), "
        "max(value) FROM derived_metrics FINAL WHERE is_final GROUP BY entity_id, metric, hour "
        "ORDER BY entity_id, metric, hour"
    ).result_rows
    hourly = ch.query(
        "SELECT entity_id, metric, hour, windows, round(avg_value, 9), min_value, max_value FROM metrics_hourly_v "
        "ORDER BY entity_id, metric, hour"
    ).result_rows
    assert hourly == raw
    daily_raw = ch.query(
        "SELECT entity_id, metric, toDate(window_start) AS day, count(), quantileTDigest(0.95)(value) "
        "FROM derived_metrics FINAL WHERE is_final GROUP BY entity_id, metric, day ORDER BY entity_id, metric, day"
    ).result_rows
    daily = ch.query(
        "SELECT entity_id, metric, day, windows, p95_value FROM metrics_daily_v ORDER BY entity_id, metric, day"
    ).result_rows
    assert [r[:4] for r in daily] == [r[:4] for r in daily_raw]
    # p95 of merged t-digest states vs one t-digest over the rows: the same sketch, merge order aside
    assert [r[4] for r in daily] == pytest.approx([r[4] for r in daily_raw], rel=0.02)


def test_rebuild_repairs_rollups_after_a_redelivery(ch) -> None:
    before = ch.query("SELECT sum(windows), round(sum(avg_value * windows), 6) FROM metrics_hourly_v").result_rows
    replay = ch.query("SELECT * FROM derived_metrics FINAL WHERE entity_id = 'linux001'").result_rows
    ch.insert("derived_metrics", [list(r) for r in replay], column_names=DM_COLUMNS)  # a sink replay
    doubled = ch.query("SELECT sum(windows) FROM metrics_hourly_v").result_rows[0][0]
    assert doubled == before[0][0] + len(replay)
    days = ch.query("SELECT min(toDate(window_start)), max(toDate(window_start)) FROM derived_metrics").result_rows[0]
    written = rebuild(ch, "cookbook", days[0], days[1])
    assert written["metrics_hourly"] > 0
    assert (
        ch.query("SELECT sum(windows), round(sum(avg_value * windows), 6) FROM metrics_hourly_v").result_rows == before
    )
