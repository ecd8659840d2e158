"""Writes dashboards/bundle/ (a Superset import bundle) from dashboards/spec.py.

    python dashboards/build.py          # rewrite the bundle
    python dashboards/build.py --check  # exit 1 if the bundle is not what the spec makes

UUIDs are derived from names, so re-imports update the same assets instead of adding new ones.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fleetperf.dashboards.spec import CHARTS, DASHBOARDS, DATASETS, Chart, Dashboard, Dataset  # noqa: E402

BUNDLE = HERE / "bundle"
NAMESPACE = uuid.UUID("6f1c2d4e-8a51-4b7e-9d0f-3c2b1a0f9e8d")
DATABASE_UUID = "d65739c0-c43c-4443-a2be-9a61386a86a4"
SCHEMA = "fleetperf"
_VIZ = {
    "line": "echarts_timeseries_line",
    "area": "echarts_area",
    "bar": "echarts_timeseries_bar",
    "table": "table",
    "big_number": "big_number_total",
    "pie": "pie",
}


def uid(kind: str, name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{kind}/{name}"))


def database() -> dict[str, Any]:
    return {
        "database_name": "fleetperf",
        "sqlalchemy_uri": "${SQLALCHEMY_URI}",
        "cache_timeout": None,
        "expose_in_sqllab": True,
        "allow_run_async": False,
        "allow_ctas": False,
        "allow_cvas": False,
        "allow_dml": False,
        "allow_csv_upload": False,
        "extra": {"allows_virtual_table_explore": True},
        "uuid": DATABASE_UUID,
        "version": "1.0.0",
    }


def view_columns(names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Each view's columns and types as the engine sees them: the migrations applied to a
    throw-away embedded ClickHouse, then DESCRIBE. The datasets take their columns from here, so a
    view that changes changes its dataset (and `--check` says the bundle is stale)."""
    from fleetperf import config
    from fleetperf.warehouse.clickhouse import migrate

    with tempfile.TemporaryDirectory() as tmp:
        settings = config.load({"FLEETPERF__STATE__DIR": tmp, "FLEETPERF__CLICKHOUSE__URL": "chdb"})
        ch, _ = migrate(settings)
        return {name: [(r[0], _plain(r[1])) for r in ch.query(f"DESCRIBE TABLE {name}").result_rows] for name in names}


_WRAPPER = re.compile(r"^(?:LowCardinality|SimpleAggregateFunction)\((?:[A-Za-z0-9_]+, )?(.*)\)$")


def _plain(type_: str) -> str:
    """The value type Superset should see: storage wrappers (LowCardinality, a rollup's
    SimpleAggregateFunction(max, Float64)) say how a column is kept, not what it holds."""
    if type_.startswith("Nullable(") and type_.endswith(")"):
        return f"Nullable({_plain(type_[9:-1])})"
    while m := _WRAPPER.match(type_):
        type_ = m.group(1)
    return type_


@functools.cache
def _columns() -> dict[str, list[tuple[str, str]]]:
    return view_columns(list(DATASETS))


def dataset(d: Dataset, columns: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "table_name": d.name,
        "main_dttm_col": d.time_column,
        "description": d.description,
        "default_endpoint": None,
        "offset": 0,
        "cache_timeout": None,
        "schema": SCHEMA,
        "sql": None,
        "params": None,
        "template_params": None,
        "filter_select_enabled": True,
        "fetch_values_predicate": None,
        "extra": None,
        "uuid": uid("dataset", d.name),
        "metrics": [
            {
                "metric_name": "count",
                "verbose_name": "COUNT(*)",
                "metric_type": "count",
                "expression": "COUNT(*)",
                "description": None,
                "d3format": None,
                "extra": None,
                "warning_text": None,
            }
        ],
        "columns": [
            {
                "column_name": name,
                "verbose_name": None,
                "is_dttm": name == d.time_column or type_.startswith(("Date", "Nullable(Date")),
                "is_active": True,
                "type": type_,
                "groupby": True,
                "filterable": True,
                "expression": None,
                "description": None,
                "extra": None,
            }
            for name, type_ in columns
        ],
        "version": "1.0.0",
        "database_uuid": DATABASE_UUID,
    }


def _time_filter(d: Dataset) -> list[dict[str, Any]]:
    if d.time_column is None:
        return []
    return [
        {
            "clause": "WHERE",
            "expressionType": "SIMPLE",
            "subject": d.time_column,
            "operator": "TEMPORAL_RANGE",
            "comparator": "No filter",
        }
    ]


def chart_params(c: Chart) -> dict[str, Any]:
    d = DATASETS[c.dataset]
    viz = _VIZ[c.viz]
    filters = [{"clause": "WHERE", "expressionType": "SQL", "sqlExpression": f} for f in c.filters]
    p: dict[str, Any] = {
        "datasource": f"{uid('dataset', c.dataset)}__table",
        "viz_type": viz,
        "adhoc_filters": filters + (_time_filter(d) if c.time_filtered else []),
        "row_limit": c.row_limit,
        "extra_form_data": {},
    }
    if c.viz in ("line", "area", "bar"):
        p |= {
            "x_axis": d.time_column,
            "time_grain_sqla": "P1D" if d.time_column == "day" else "PT1H",
            "x_axis_sort_asc": True,
            "metrics": [dict(m) for m in c.metrics],
            "groupby": list(c.groupby),
            "truncate_metric": True,
            "show_legend": True,
            "legendType": "scroll",
            "rich_tooltip": True,
            "y_axis_format": c.y_format,
            # a fleet has hundreds of entities: draw the 25 with the highest values (the filters
            # pick others); also keeps the payload and the browser's work small
            "series_limit": 25 if c.groupby else 0,
            "series_limit_metric": dict(c.metrics[0]),
            "order_desc": True,
            # no point markers: a year of days, hours or minutes per series is dense, and thousands
            # of markers cost the browser seconds
            "markerEnabled": False,
            "markerSize": 4,
        }
    if c.viz == "table":
        floats = [n for n, t in _columns()[d.name] if "Float" in t and (n in c.columns or n in c.groupby)]
        floats += [m["label"] for m in c.metrics]
        p["column_config"] = {name: {"d3NumberFormat": c.y_format} for name in floats}
    if c.viz == "table":
        # 50 rows a page: the browser builds the DOM of one page, not of every row (a sizing table
        # of every LPAR is 1,000 rows at the bench fleet); all rows are fetched and searched
        p["page_length"] = 50
    if c.viz == "table" and c.columns:
        p |= {
            "query_mode": "raw",
            "all_columns": list(c.columns),
            "order_by_cols": [f'["{c.order_by}", false]'] if c.order_by else [],
            "server_pagination": False,
            "include_search": True,
            "table_timestamp_format": "%Y-%m-%d %H:%M",
        }
    elif c.viz == "table":
        p |= {
            "query_mode": "aggregate",
            "groupby": list(c.groupby),
            "metrics": [dict(m) for m in c.metrics],
            "all_columns": [],
            "percent_metrics": [],
            "order_desc": True,
            "timeseries_limit_metric": dict(c.metrics[0]),
            "server_pagination": False,
            "include_search": True,
            "table_timestamp_format": "%Y-%m-%d %H:%M",
        }
    elif c.viz == "big_number":
        p |= {
            "metric": dict(c.metrics[0]),
            "header_font_size": 0.4,
            "subheader_font_size": 0.15,
            "y_axis_format": "SMART_NUMBER",
        }
    elif c.viz == "pie":
        p |= {
            "groupby": list(c.groupby),
            "metric": dict(c.metrics[0]),
            "show_legend": True,
            "show_labels": True,
            "label_type": "key_value",
            "number_format": "SMART_NUMBER",
        }
    p |= c.extra
    return p


def chart(c: Chart) -> dict[str, Any]:
    return {
        "slice_name": c.title,
        "description": c.description or None,
        "certified_by": None,
        "certification_details": None,
        "viz_type": _VIZ[c.viz],
        "params": chart_params(c),
        "query_context": None,
        "cache_timeout": None,
        "uuid": uid("chart", c.key),
        "version": "1.0.0",
        "dataset_uuid": uid("dataset", c.dataset),
    }


def dashboard(b: Dashboard) -> dict[str, Any]:
    position: dict[str, Any] = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
        "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": [], "parents": ["ROOT_ID"]},
        "HEADER_ID": {"id": "HEADER_ID", "type": "HEADER", "meta": {"text": b.title}},
    }
    chart_ids = 0
    untimed: list[int] = []
    for r, keys in enumerate(b.rows):
        row_id = f"ROW-{r}"
        position["GRID_ID"]["children"].append(row_id)
        position[row_id] = {
            "type": "ROW",
            "id": row_id,
            "children": [],
            "parents": ["ROOT_ID", "GRID_ID"],
            "meta": {"background": "BACKGROUND_TRANSPARENT"},
        }
        width = 12 // len(keys)
        for key in keys:
            chart_ids += 1
            cid = f"CHART-{key}"
            position[row_id]["children"].append(cid)
            c = CHARTS[key]
            if not c.time_filtered:
                untimed.append(chart_ids)
            position[cid] = {
                "type": "CHART",
                "id": cid,
                "children": [],
                "parents": ["ROOT_ID", "GRID_ID", row_id],
                "meta": {
                    "width": width,
                    "height": 30 if c.viz == "big_number" else 60,
                    "chartId": chart_ids,
                    "sliceName": c.title,
                    "uuid": uid("chart", key),
                },
            }
    filters = [
        {
            "id": f"NATIVE_FILTER-{b.slug}-time",
            "name": "Time range",
            "filterType": "filter_time",
            "targets": [{}],
            "controlValues": {"enableEmptyFilter": False},
            "defaultDataMask": {
                "extraFormData": {"time_range": b.time_range},
                "filterState": {"value": b.time_range},
                "ownState": {},
            },
            "cascadeParentIds": [],
            "scope": {"rootPath": ["ROOT_ID"], "excluded": untimed},
            "type": "NATIVE_FILTER",
            "description": 'No filter (all history), or DATEADD(DATETIME("today"), -N, day) : tomorrow',
        }
    ]
    for label, ds, column in b.select_filters:
        filters.append(
            {
                "id": f"NATIVE_FILTER-{b.slug}-{column}",
                "name": label,
                "filterType": "filter_select",
                "targets": [{"column": {"name": column}, "datasetUuid": uid("dataset", ds)}],
                "controlValues": {
                    "enableEmptyFilter": False,
                    "defaultToFirstItem": False,
                    "multiSelect": True,
                    "searchAllOptions": True,
                    "inverseSelection": False,
                },
                "defaultDataMask": {"extraFormData": {}, "filterState": {}, "ownState": {}},
                "cascadeParentIds": [],
                "scope": {"rootPath": ["ROOT_ID"], "excluded": []},
                "type": "NATIVE_FILTER",
                "description": "",
            }
        )
    return {
        "dashboard_title": b.title,
        "description": b.description or None,
        "css": "",
        "slug": b.slug,
        "certified_by": None,
        "certification_details": None,
        "published": True,
        "uuid": uid("dashboard", b.slug),
        "position": position,
        "metadata": {
            "color_scheme": "",
            "refresh_frequency": 0,
            "expanded_slices": {},
            "label_colors": {},
            "timed_refresh_immune_slices": [],
            "cross_filters_enabled": True,
            "default_filters": "{}",
            "chart_configuration": {},
            "native_filter_configuration": filters,
        },
        "version": "1.0.0",
    }


def files() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {
        "metadata.yaml": {"version": "1.0.0", "type": "Dashboard", "timestamp": "2026-11-22T00:00:00+00:00"},
        "databases/fleetperf.yaml": database(),
    }
    for d in DATASETS.values():
        out[f"datasets/fleetperf/{d.name}.yaml"] = dataset(d, _columns()[d.name])
    for c in CHARTS.values():
        out[f"charts/{c.key}.yaml"] = chart(c)
    for b in DASHBOARDS:
        out[f"dashboards/{b.slug}.yaml"] = dashboard(b)
    return out


def write(target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    for name, content in files().items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True, width=120))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    if not args.check:
        write(BUNDLE)
        print(f"wrote {BUNDLE}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "bundle"
        write(fresh)
        want = {p.relative_to(fresh): p.read_text() for p in fresh.rglob("*.yaml")}
        have = {p.relative_to(BUNDLE): p.read_text() for p in BUNDLE.rglob("*.yaml")}
    stale = sorted(str(p) for p in set(want) | set(have) if want.get(p) != have.get(p))
    if stale:
        print("dashboards/bundle is stale, run python dashboards/build.py:\n  " + "\n  ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
