"""Dashboard load times on the benchmark fleet (bench/warehouse.py `generate`: every table the
dashboards read, default 1,000 hosts x 365 days at 5-minute grain, ending now), opened in headless
Chromium against the real warehouse process (Superset on embedded chDB): each dashboard cold (first
open after the warehouse started, Superset's result cache empty) and warm (opened again, median of
--opens), and every chart's time: its data request (/api/v1/chart/data, from the browser's
resource timing) and when it was drawn, counted from the navigation. Several --days values are
measured one after the other in the same run and printed side by side.

Uses its own state dirs and ports; nothing of the regular stack is touched. --keep DIR keeps the
generated warehouses (DIR/<hosts>x<days>x<interval>) and reuses them in later runs (the migrations
of the code under test are applied when the warehouse starts).

    ./fleetperf install && .venv/bin/python bench/dashboards.py [--hosts 1000] [--days 30 365]
        [--interval 300] [--opens 3] [--keep /tmp/fleetperf-bench-dash] [--baseline] [--off SETTING ...]
        [--engine-only]

--baseline first measures the same data with the speed settings switched off (BASELINE below:
Superset's SQLite metadata DB in its default rollback journal, its action log committed inside each
request), then with them on, side by side. Every run also sums each request's server time from the
warehouse's gunicorn access log (FLEETPERF_WAREHOUSE_ACCESS_LOG) per kind: chart data, other API,
pages, static files, and prints the CPU seconds the warehouse (gunicorn master and worker) and the
browser (chromedriver, Chromium and its helpers) used while the dashboards opened: the machine's
cores are shared by both, and CPU is less noisy than wall time on a shared machine. --off SETTING
... measures with only those speed settings off, before, side by side (e.g. --off metadata_pool).
Cold = the first open after the start: no warm-up of any cache is done.
After them, Superset's own floor: an empty dashboard (made through the REST API for the measurement,
deleted after it) opened the same way: what Superset's page costs with none of our charts, in this
browser on this machine. It is a reference, not a strict lower bound: a dashboard of two or three
small charts was drawn in about the same time. Each open by URL boots Superset's single-page app
again; script evaluation was the largest part of the main thread's time in a Chrome trace of the
opens (src/fleetperf/dashboards/README.md, "Session 23").
Superset's DASHBOARD_VIRTUALIZATION (on by default) draws only charts in the viewport; the window
(1600x2000) holds every chart of every dashboard and the bench waits for every chart to be drawn.

--engine-only times each chart's SQL (built from dashboards/spec.py as Superset builds it) on the
embedded engine alone: what the data layer costs, apart from Superset's and the browser's work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

# per chart holder, in the dashboard's order: finished (drawn or showing a message)
_DONE = """
return Array.from(document.querySelectorAll('.dashboard-component-chart-holder')).map(h => {
  const busy = h.querySelector('.loading');
  const drawn = h.querySelector('[_echarts_instance_] canvas, table') !== null
    || h.innerText.trim().split('\\n').length > 1;
  return !busy && drawn;
});
"""
# the chart data requests of this page: slice id (from form_data) and duration in ms
_REQUESTS = """
return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/v1/chart/data')).map(e => {
  const m = decodeURIComponent(e.name).match(/"slice_id":\\s*(\\d+)/);
  return [m ? Number(m[1]) : null, e.duration];
});
"""
# Superset's own floor: a dashboard with no charts and no filters, made through the REST API for the
# measurement and deleted after it (CSRF token first: Superset's API refuses a write without one)
_EMPTY_SLUG = "fleetperf-bench-empty"
_EMPTY_CREATE = """
const [slug, done] = [arguments[0], arguments[arguments.length - 1]];
fetch('/api/v1/security/csrf_token/').then(r => r.json()).then(t =>
  fetch('/api/v1/dashboard/', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-CSRFToken': t.result},
    body: JSON.stringify({dashboard_title: 'bench: no charts', slug: slug, published: true})}))
  .then(r => r.json()).then(j => done(j.id || JSON.stringify(j))).catch(e => done(String(e)));
"""
_EMPTY_DELETE = """
const [id, done] = [arguments[0], arguments[arguments.length - 1]];
fetch('/api/v1/security/csrf_token/').then(r => r.json()).then(t =>
  fetch('/api/v1/dashboard/' + id, {method: 'DELETE', headers: {'X-CSRFToken': t.result}}))
  .then(r => done(r.status)).catch(e => done(String(e)));
"""
# drawn: its header and the empty grid's message are on the page, nothing is loading
_EMPTY_DONE = """
return document.querySelector('[data-test="dashboard-header-container"]') !== null
  && document.querySelector('[data-test="grid-container"]') !== null
  && document.querySelector('.loading') === null
  && document.body.innerText.includes('no charts added');
"""
_SLICES = """
const done = arguments[arguments.length - 1];
fetch('/api/v1/chart/?q=(page_size:100,columns:!(id,slice_name))').then(r => r.json())
  .then(j => done(j.result.map(c => [c.id, c.slice_name]))).catch(e => done(String(e)));
"""


def _generate(state: Path, hosts: int, days: int, interval: int) -> None:
    # in a child process: the engine's data path must be free when the warehouse starts
    start = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:00")
    code = f"""
import time
from fleetperf import config
from fleetperf.warehouse.clickhouse import migrate
from bench.warehouse import generate
ch, _ = migrate(config.load())
seconds = generate(ch, {hosts}, {days}, {start!r}, {interval}, progress=lambda m: print(m, flush=True))
print(f"generated in {{seconds:.0f}}s", flush=True)
t0 = time.monotonic()
ch.command("OPTIMIZE TABLE metrics_hourly FINAL")
ch.command("OPTIMIZE TABLE metrics_daily FINAL")
print(f"rollups merged in {{time.monotonic() - t0:.0f}}s", flush=True)
rows = ch.query("SELECT table, sum(rows), formatReadableSize(sum(bytes_on_disk)) FROM system.parts "
                "WHERE active AND database = currentDatabase() GROUP BY table HAVING sum(rows) > 0 "
                "ORDER BY sum(rows) DESC").result_rows
for table, n, size in rows:
    print(f"  {{table:<20}} {{n:>14,}} rows {{size:>10}}", flush=True)
"""
    from tests.providers import _env_overrides

    # the bench's own state dir: without it the engine would open (and fill) the regular stack's state
    env = os.environ | _env_overrides(state) | {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def _open(driver, url: str, charts: int, timeout: float) -> tuple[float, list[float], list[tuple[int, float]]]:  # noqa: ANN001
    """Seconds until every chart was drawn, when each was drawn, and the page's chart data requests."""
    started = time.monotonic()
    driver.get(url)
    drawn: list[float | None] = [None] * charts
    while time.monotonic() - started < timeout:
        state = driver.execute_script(_DONE)
        now = time.monotonic() - started
        if len(state) == charts:
            for i, done in enumerate(state):
                if done and drawn[i] is None:
                    drawn[i] = now
            if all(d is not None for d in drawn):
                return now, [float(d) for d in drawn], [(s, ms / 1000) for s, ms in driver.execute_script(_REQUESTS)]
        time.sleep(0.05)
    raise AssertionError(f"{url}: charts still loading after {timeout}s")


def _floor(driver, base_url: str, opens: int, timeout: float, browser: int) -> dict[str, float]:  # noqa: ANN001
    """Superset's single-page app alone: an empty dashboard opened 1 + `opens` times after the
    others (the browser's caches and the server's code paths warm), seconds until drawn and the
    browser's CPU per open: what Superset's page costs with none of our charts (a reference, not a
    strict lower bound: the empty grid has a drawing path of its own)."""
    made = driver.execute_async_script(_EMPTY_CREATE, _EMPTY_SLUG)
    if not isinstance(made, int):
        raise AssertionError(f"could not create the empty dashboard: {made}")
    walls: list[float] = []
    cpus: list[float] = []
    try:
        for _ in range(1 + opens):
            cpu0, started = _tree_cpu(browser), time.monotonic()
            driver.get(f"{base_url}/superset/dashboard/{_EMPTY_SLUG}/")
            while not driver.execute_script(_EMPTY_DONE):
                if time.monotonic() - started > timeout:
                    raise AssertionError(f"the empty dashboard still loading after {timeout}s")
                time.sleep(0.05)
            walls.append(time.monotonic() - started)
            cpus.append(_tree_cpu(browser) - cpu0)
    finally:
        driver.execute_async_script(_EMPTY_DELETE, made)
    warm, warm_cpu = walls[1:] or walls, cpus[1:] or cpus
    return {"first": walls[0], "warm": statistics.median(warm), "browser_cpu": statistics.median(warm_cpu)}


# what --baseline switches off (Superset's defaults): README, Dashboards, "Speed"
BASELINE = {
    "FLEETPERF__SUPERSET__SQLITE_WAL": "false",
    "FLEETPERF__SUPERSET__METADATA_POOL": "false",
    "FLEETPERF__SUPERSET__PERMISSION_CACHE_SECONDS": "0",
    "FLEETPERF__SUPERSET__EVENT_LOG_BATCH_SECONDS": "0",
    "FLEETPERF__SUPERSET__COMPILED_AGGREGATES": "false",
    "FLEETPERF__SUPERSET__CHART_ANIMATION": "true",
}
# --off names them as the [superset] keys: metadata_pool -> FLEETPERF__SUPERSET__METADATA_POOL
SPEED_SETTINGS = {key.split("__")[-1].lower(): key for key in BASELINE}


def measure(
    state: Path, opens: int, timeout: float, cache_seconds: int | None = None, overrides: dict[str, str] | None = None
) -> dict[str, Any]:
    """Opens every dashboard cold then `opens` times warm on the warehouse of `state` (started with
    the settings `overrides`, removed again afterwards)."""
    from tests.providers import _env_overrides

    os.environ.update(_env_overrides(state))
    for key in BASELINE:
        os.environ.pop(key, None)
    os.environ.update(overrides or {})
    # each request's server time (gunicorn's access log), summed per kind in the report
    access_log = state / "access.log"
    access_log.unlink(missing_ok=True)
    os.environ["FLEETPERF_WAREHOUSE_ACCESS_LOG"] = str(access_log)
    if cache_seconds is not None:
        # Superset's result cache ([superset] data_cache_seconds, 60 by default): a warm open later
        # than this after the cold one computes its charts again
        os.environ["FLEETPERF__SUPERSET__DATA_CACHE_SECONDS"] = str(cache_seconds)
    from fleetperf import config
    from fleetperf.dashboards.spec import CHARTS, DASHBOARDS
    from fleetperf.stack.local import LocalStack
    from tests.integration.test_dashboards import _driver, _login

    settings = config.load()
    stack = LocalStack(settings)
    out: dict[str, Any] = {}
    try:
        stack.start(only=("warehouse",), echo=lambda line: print(line, flush=True))
        driver = _driver(state)
        driver.set_script_timeout(60)
        # the warehouse's CPU while the dashboards open (its gunicorn master and worker): less
        # noisy than the wall times on a shared machine, and what a second user would compete for
        warehouse = next(pid for name, pid, _where, _log in stack.status() if name == "warehouse")
        try:
            _login(driver, settings)
            browser = driver.service.process.pid  # chromedriver and the browser it started
            cpu_before, browser_before = _tree_cpu(warehouse), _tree_cpu(browser)
            slices = {sid: name for sid, name in driver.execute_async_script(_SLICES)}
            key_of = {c.title: c.key for c in CHARTS.values()}
            for board in DASHBOARDS:
                keys = [k for row in board.rows for k in row]
                url = f"{settings.superset_url}/superset/dashboard/{board.slug}/"
                runs = [_open(driver, url, len(keys), timeout) for _ in range(1 + opens)]
                result: dict[str, Any] = {"cold": runs[0][0], "warm": statistics.median(r[0] for r in runs[1:])}
                for n, key in enumerate(keys):
                    # a chart may send more than one data request (a series limit's pre-query): their sum
                    def request(run: tuple, key: str = key) -> float:
                        return sum(s for sid, s in run[2] if key_of.get(slices.get(sid, "")) == key)

                    result[key] = {
                        "cold_request": request(runs[0]),
                        "cold_drawn": runs[0][1][n],
                        "warm_request": statistics.median(request(r) for r in runs[1:]),
                        "warm_drawn": statistics.median(r[1][n] for r in runs[1:]),
                    }
                out[board.slug] = result
                print(f"{board.title:<18} {len(keys):>2} charts  cold {result['cold']:6.2f}s  "
                      f"warm {result['warm']:6.2f}s", flush=True)  # fmt: skip
            out["_cpu"] = _tree_cpu(warehouse) - cpu_before
            out["_browser_cpu"] = _tree_cpu(browser) - browser_before
            out["_opens_cpu"] = out["_browser_cpu"] / (len(DASHBOARDS) * (1 + opens))
            # after the CPU totals, so that they stay comparable with earlier runs
            try:
                out["_floor"] = _floor(driver, settings.superset_url, opens, timeout, browser)
            except Exception as exc:  # noqa: BLE001 - the dashboards' figures are kept all the same
                out["_floor"] = {"error": str(exc)[:300]}
        finally:
            driver.quit()
    finally:
        stack.stop(echo=lambda line: None)
    out["_server"] = _server_times(access_log)
    return out


def _tree_cpu(pid: int | None) -> float:
    """utime + stime (/proc/PID/stat fields 14 and 15) of a process and all its descendants, in seconds."""
    if pid is None:
        return 0.0
    procs: dict[int, tuple[int, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    tree = {pid}
    for _ in range(8):  # a few generations: the browser's are chromedriver, chrome, its helpers
        tree |= {p for p, (parent, _cpu) in procs.items() if parent in tree}
    return sum(procs[p][1] for p in tree if p in procs)


def _server_times(access_log: Path) -> dict[str, list[float]]:
    """Server seconds of every request in gunicorn's access log, by kind."""
    kinds: dict[str, list[float]] = {}
    if not access_log.exists():
        return kinds
    for line in access_log.read_text().splitlines():
        try:
            request, ms = line.split('"')[1], float(line.rsplit(" ", 1)[1].removesuffix("ms"))
        except (IndexError, ValueError):
            continue
        path = request.split(" ")[1] if " " in request else request
        kind = (
            "chart data" if path.startswith("/api/v1/chart/data")
            else "static" if path.startswith("/static/")
            else "dashboard page" if path.startswith("/superset/dashboard/")
            else "other API" if path.startswith("/api/")
            else "other"
        )  # fmt: skip
        kinds.setdefault(kind, []).append(ms / 1000)
    return kinds


def chart_sql(key: str) -> str:
    """A chart's query as Superset builds it from dashboards/spec.py, without the series-limit
    pre-query and the time range ("No filter" on every dashboard but the drill-down, whose range is
    applied here as yesterday to tomorrow)."""
    from fleetperf.dashboards.spec import CHARTS, DASHBOARDS, DATASETS

    c = CHARTS[key]
    d = DATASETS[c.dataset]
    where = [f"({f})" for f in c.filters]
    board = next(b for b in DASHBOARDS if any(key in row for row in b.rows))
    if board.time_range != "No filter" and c.time_filtered and d.time_column:
        where.append(f"{d.time_column} >= today() - 1 AND {d.time_column} < today() + 1")
    cond = f" WHERE {' AND '.join(where)}" if where else ""
    if c.columns:
        order = f" ORDER BY {c.order_by} DESC" if c.order_by else ""
        return f"SELECT {', '.join(c.columns)} FROM {c.dataset}{cond}{order} LIMIT {c.row_limit}"
    metrics = ", ".join(m["sqlExpression"] for m in c.metrics)
    keys = list(c.groupby)
    if c.viz in ("line", "area", "bar"):
        grain = c.extra.get("time_grain_sqla") or ("P1D" if d.time_column == "day" else "PT1H")
        trunc = {"P1D": "toStartOfDay", "PT1H": "toStartOfHour", "PT1M": "toStartOfMinute"}[grain]
        keys.insert(0, f"{trunc}({d.time_column})")
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    cols = ", ".join([*keys, metrics])
    return f"SELECT {cols} FROM {c.dataset}{cond}{group} LIMIT {c.row_limit}"


def measure_engine(state: Path, runs: int) -> dict[str, Any]:
    """Each chart's query on the embedded engine alone (no Superset, no browser): the first run
    after opening the data path, then the median of `runs` more. Seconds and rows."""
    from tests.providers import _env_overrides

    os.environ.update(_env_overrides(state))
    code = f"""
import json, statistics, time
from fleetperf import config
from fleetperf.warehouse.clickhouse import migrate
from fleetperf.dashboards.spec import DASHBOARDS
from bench.dashboards import chart_sql
t0 = time.monotonic()
ch, ran = migrate(config.load())
out = {{"_migrations": {{"ran": ran, "seconds": time.monotonic() - t0}}}}
for b in DASHBOARDS:
    for key in (k for row in b.rows for k in row):
        times, rows = [], 0
        for _ in range(1 + {runs}):
            t0 = time.monotonic()
            rows = len(ch.query(chart_sql(key)).result_rows)
            times.append(time.monotonic() - t0)
        out[key] = {{"first": times[0], "median": statistics.median(times[1:]), "rows": rows}}
print("ENGINE " + json.dumps(out), flush=True)
"""
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    done = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("ENGINE "))
    return json.loads(line[len("ENGINE ") :])


def _report_engine(results: dict[int, dict[str, Any]]) -> None:
    from fleetperf.dashboards.spec import CHARTS, DASHBOARDS

    days = list(results)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nengine only (each chart's SQL on the embedded engine, no Superset), load average {load}")
    head = " | ".join(f"{d} d first s | {d} d median s | {d} d rows" for d in days)
    print(f"\n| dashboard | chart | {head} |\n|---|---|" + "---|---|---|" * len(days))
    for b in DASHBOARDS:
        for key in (k for row in b.rows for k in row):
            cells = " | ".join(
                f"{r['first']:.3f} | {r['median']:.3f} | {r['rows']}" for r in (results[d][key] for d in days)
            )
            print(f"| {b.title} | {CHARTS[key].title} | {cells} |")
    for d in days:
        total = sum(r["first"] for k, r in results[d].items() if k in CHARTS)
        m = results[d]["_migrations"]
        print(f"{d} d: every chart's first run summed {total:.2f}s; migrations applied at the start "
              f"{m['ran'] or 'none'} in {m['seconds']:.0f}s")  # fmt: skip


def _report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    from fleetperf.dashboards.spec import CHARTS, DASHBOARDS

    runs = list(results)
    # the machine is shared: its load says how far these figures are from an idle one
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{args.hosts} hosts x {' / '.join(map(str, args.days))} days at {args.interval} s, "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, warm = median of {args.opens} opens, "
          f"load average {load} on {os.cpu_count()} CPUs; 'base' = --baseline (speed settings off)")  # fmt: skip
    head = " | ".join(f"{d} cold s | {d} warm s" for d in runs)
    print(f"\n| dashboard | charts | {head} |\n|---|---|" + "---|---|" * len(runs))
    for b in DASHBOARDS:
        n = sum(len(r) for r in b.rows)
        cells = " | ".join(f"{results[d][b.slug]['cold']:.2f} | {results[d][b.slug]['warm']:.2f}" for d in runs)
        print(f"| {b.title} | {n} | {cells} |")
    head = " | ".join(f"{d} cold req | {d} warm req | {d} warm drawn" for d in runs)
    print("\nper chart: data request seconds (browser resource timing), drawn = seconds from navigation")
    print(f"\n| dashboard | chart | {head} |\n|---|---|" + "---|---|---|" * len(runs))
    for b in DASHBOARDS:
        for key in (k for row in b.rows for k in row):
            cells = " | ".join(
                f"{r['cold_request']:.2f} | {r['warm_request']:.2f} | {r['warm_drawn']:.2f}"
                for r in (results[d][b.slug][key] for d in runs)
            )
            print(f"| {b.title} | {CHARTS[key].title} | {cells} |")
    print("\nserver time per request (gunicorn access log, every open of the run): count / median s / sum s")
    kinds = sorted({k for d in runs for k in results[d].get("_server", {})})
    print(f"\n| request | {' | '.join(runs)} |\n|---|" + "---|" * len(runs))
    for kind in kinds:
        cells = []
        for d in runs:
            xs = results[d].get("_server", {}).get(kind, [])
            cells.append(f"{len(xs)} / {statistics.median(xs):.3f} / {sum(xs):.1f}" if xs else "-")
        print(f"| {kind} | {' | '.join(cells)} |")
    cpu = " | ".join(f"{results[d]['_cpu']:.1f}" if "_cpu" in results[d] else "-" for d in runs)
    print(f"| warehouse CPU s (every open) | {cpu} |")
    cpu = " | ".join(f"{results[d]['_browser_cpu']:.1f}" if "_browser_cpu" in results[d] else "-" for d in runs)
    print(f"| browser CPU s (every open) | {cpu} |")
    per_open = " | ".join(f"{results[d]['_opens_cpu']:.2f}" if "_opens_cpu" in results[d] else "-" for d in runs)
    print(f"| browser CPU s per open (mean) | {per_open} |")
    print("\nSuperset's own floor: an empty dashboard (no charts, no filters) opened after the others, "
          "seconds until drawn (first / median of the next) and the browser's CPU per open")  # fmt: skip
    for d in runs:
        f = results[d].get("_floor")
        if f and "error" in f:
            print(f"  {d}: not measured: {f['error']}")
        elif f:
            print(f"  {d}: {f['first']:.2f} / {f['warm']:.2f} s, browser {f['browser_cpu']:.2f} CPU-s per open")
    for d in runs:
        worst = max(
            ((b.title, k, results[d][b.slug][k]) for b in DASHBOARDS for row in b.rows for k in row),
            key=lambda t: t[2]["cold_request"],
        )
        print(f"\n{d}: slowest chart (cold request): {worst[0]} / {CHARTS[worst[1]].title} "
              f"{worst[2]['cold_request']:.2f}s")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--days", type=int, nargs="+", default=[365], help="one or more history lengths")
    parser.add_argument("--interval", type=int, default=300, help="seconds between samples")
    parser.add_argument("--opens", type=int, default=3, help="warm opens per dashboard (median)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a dashboard may take to load")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the generated warehouses under this directory")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--cache-seconds", type=int, help="Superset's result cache time (default: the configured)")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also measure with the speed settings switched off (Superset's defaults), before, on the same data",
    )
    parser.add_argument(
        "--off",
        nargs="+",
        default=[],
        metavar="SETTING",
        help="also measure with only these speed settings switched off (of: "
        + ", ".join(SPEED_SETTINGS)
        + "), before, on the same data",
    )
    parser.add_argument(
        "--engine-only",
        action="store_true",
        help="time each chart's SQL on the embedded engine instead of opening the dashboards (no Superset)",
    )
    args = parser.parse_args()
    unknown = set(args.off) - set(SPEED_SETTINGS)
    if unknown:
        parser.error(f"--off: no speed setting {', '.join(sorted(unknown))}")

    results: dict[str, dict[str, Any]] = {}
    engine: dict[int, dict[str, Any]] = {}
    for days in args.days:
        if args.keep:
            state = args.keep / f"{args.hosts}x{days}x{args.interval}"
            state.mkdir(parents=True, exist_ok=True)
        else:
            state = Path(tempfile.mkdtemp(prefix="fleetperf-bench-dash-"))
        marker = state / "bench-generated"
        if not marker.exists():
            print(f"generating {args.hosts} hosts x {days} days at {args.interval} s into {state}", flush=True)
            _generate(state, args.hosts, days, args.interval)
            marker.write_text(datetime.now(UTC).isoformat())
        else:
            print(f"reusing {state} (generated {marker.read_text()})", flush=True)
        if args.engine_only:
            engine[days] = measure_engine(state, args.opens)
        else:
            if args.baseline:
                results[f"{days} d base"] = measure(state, args.opens, args.timeout, args.cache_seconds, BASELINE)
            if args.off:
                off = {SPEED_SETTINGS[name]: BASELINE[SPEED_SETTINGS[name]] for name in args.off}
                label = f"{days} d -" + ",".join(args.off)
                results[label] = measure(state, args.opens, args.timeout, args.cache_seconds, off)
            results[f"{days} d"] = measure(state, args.opens, args.timeout, args.cache_seconds)
    if engine:
        _report_engine(engine)
        if args.json:
            args.json.write_text(json.dumps({str(d): r for d, r in engine.items()}, indent=1))
        return 0
    _report(args, results)
    if args.json:
        args.json.write_text(json.dumps({str(d): r for d, r in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
