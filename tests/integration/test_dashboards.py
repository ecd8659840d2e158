"""Every dashboard of dashboards/spec.py opened in headless Chromium on the real stack, loaded with the
demo's fleet (every source, every platform's faults): provisioned by the warehouse start, all charts
render without error and each shows visible marks (coloured pixels of its series, table rows, a
number). Screenshots and load times (cold = first open, warm = second) go to
<state>/test-artifacts/dashboards/; with FLEETPERF_UPDATE_SCREENSHOTS=1 the screenshots also replace
docs/screenshots/ (the README's)."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, wait_stable
from fleetperf.config import REPO_ROOT, Settings
from fleetperf.dashboards.spec import CHARTS, DASHBOARDS
from fleetperf.demo.fleet import ingest_fleet, simulate_fleet
from fleetperf.stack.install import browser
from fleetperf.warehouse.credentials import superset_admin_password

pytestmark = pytest.mark.integration

DAYS = 3  # enough for daily trends and a capacity forecast with its band; the demo itself has 14

_BROKEN = (
    "No results were returned",
    "Unexpected error",
    "DB engine Error",
    "There was an issue",
    "Missing dataset",
    "Error:",
    "is not a valid",
)


# per chart holder: [finished, text]; finished = drawn (canvas/svg/table/numbers) or showing a message
_RENDERED = """
return Array.from(document.querySelectorAll('.dashboard-component-chart-holder')).map(h => {
  const busy = h.querySelector('.loading');
  const drawn = h.querySelector('[_echarts_instance_] canvas, table') !== null
    || h.innerText.trim().split('\\n').length > 1;
  return [!busy && drawn, h.innerText];
});
"""


# per chart holder: [sampled coloured canvas pixels, table body rows, text]. A series is drawn in the
# palette's colours; axes, grid lines and labels are grey: a chart whose only mark is a line through one
# point without a marker, or an empty axis, has no coloured pixel. Every 4th pixel is looked at.
_MARKS = """
return Array.from(document.querySelectorAll('.dashboard-component-chart-holder')).map(h => {
  let coloured = 0;
  for (const c of h.querySelectorAll('canvas')) {
    let data;
    try { data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; } catch (e) { continue; }
    for (let i = 0; i < data.length; i += 16) {
      const r = data[i], g = data[i + 1], b = data[i + 2];
      if (data[i + 3] > 128 && Math.max(r, g, b) - Math.min(r, g, b) > 40) coloured++;
    }
  }
  const rows = Array.from(h.querySelectorAll('tbody tr')).filter(r => r.innerText.trim() !== '').length;
  return [coloured, rows, h.innerText];
});
"""
MIN_COLOURED = 25  # sampled pixels: a 2-pixel line across a third of a chart has hundreds


def _invisible(board_keys: list[str], marks: list) -> list[str]:
    """Charts that show no visible mark: no coloured pixel drawn, an empty table, a big number without one."""
    out = []
    for key, (coloured, rows, text) in zip(board_keys, marks, strict=True):
        viz = CHARTS[key].viz
        if viz == "table":
            ok = rows > 0
        elif viz == "big_number":
            ok = any(ch.isdigit() for ch in text)
        else:
            ok = coloured >= MIN_COLOURED
        if not ok:
            out.append(f"{CHARTS[key].title} ({viz}): coloured pixels {coloured}, rows {rows}, text {text[:120]!r}")
    return out


def _load_fleet(stack: Settings, tmp: Path) -> None:
    """What `./fleetperf demo` loads (fleetperf.demo.fleet: every source, every platform's faults), over
    DAYS days up to now instead of fourteen."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    end = now - timedelta(minutes=now.minute % 5)
    fleet = simulate_fleet(tmp / "fleet", end - timedelta(days=DAYS), DAYS, 300, seed=11)
    summary = ingest_fleet(stack, fleet, progress=False)
    assert (summary.errors, summary.failed) == (0, 0), summary.error_lines[:5]


def _wait_for_data(stack: Settings) -> None:
    # final windows reach the rollups once each stream's clock passes them or the stream ends
    metrics = ("steal_pct", "entc_pct", "physc", "tv_ratio", "busy_pct", "cpu_cores", "slb_miss_rate",
               "lacp_hash_skew_tx", "cp_overhead_pct", "users_in_elist")  # fmt: skip
    for metric in metrics:
        wait_stable(stack, f"SELECT count() FROM entity_hourly WHERE metric = '{metric}'", timeout=600, settle=6)
    wait_stable(stack, "SELECT count() FROM incidents WHERE is_open", timeout=240, settle=4)
    wait_stable(stack, "SELECT count() FROM incidents WHERE NOT is_open", timeout=240, settle=4)
    wait_stable(stack, "SELECT count() FROM lpar_samples", timeout=60, settle=2)
    wait_stable(stack, "SELECT count() FROM capacity_forecast_series WHERE trend IS NOT NULL", timeout=120, settle=2)


# The dashboards' summaries kept by materialized views (sql/030-032) against the tables they
# summarise, computed here as the views computed them before (sql/015 fleet_entities over the daily
# rollup and the z/VM sample tables; sql/008 aggregation_port_share over every entstat sample FINAL;
# the Entity filter's choices from entity_hourly). fleet_entities' entity_name is any() of an
# entity's names, before and now: it is checked to be one of them.
_FLEET_ENTITIES_BEFORE = """
    SELECT d.entity_id AS entity_id, groupUniqArray(toString(d.entity_name)) AS names,
           multiIf(any(f.platform) != '', any(f.platform),
                   hasAny(groupUniqArray(d.metric), ['entc_pct', 'physc', 'slb_miss_rate']), 'aix',
                   d.entity_id IN (SELECT zvm_system FROM zvm_system_samples)
                       OR hasAny(groupUniqArray(d.metric),
                                 ['capture_ratio', 'users_in_elist', 'paging_xstore_rate', 'paging_dasd_rate']),
                   'zvm-system',
                   d.entity_id IN (SELECT guest_id FROM zvm_guest_samples)
                       OR has(groupUniqArray(d.metric), 'tv_ratio'), 'zvm-guest',
                   has(groupUniqArray(d.metric), 'lacp_active_ports'), 'aggregation', 'linux') AS platform,
           if(any(f.site) != '', any(f.site), 'unassigned') AS site,
           multiIf(any(f.frame) != '', any(f.frame), position(d.entity_id, '/') > 0,
                   splitByChar('/', d.entity_id)[1], 'standalone') AS frame,
           toDateTime(min(d.day), 'UTC') AS first_day, toDateTime(max(d.day), 'UTC') AS last_day
    FROM metrics_daily_v AS d LEFT JOIN fleet_hierarchy AS f ON f.host_id = d.entity_id
    GROUP BY d.entity_id ORDER BY entity_id"""
_SUMMARY_ORACLES = {
    "SELECT * FROM aggregation_port_share ORDER BY host_id, adapter": """
        SELECT host_id, hostname, aggregation, adapter, max(tx_packets) - min(tx_packets) AS tx_moved,
               max(rx_packets) - min(rx_packets) AS rx_moved, max(ts) AS last_sample,
               argMax(ifNull(actor_sync, ''), ts) AS actor_sync, argMax(ifNull(partner_sync, ''), ts) AS partner_sync
        FROM net_port_samples FINAL WHERE aggregation IS NOT NULL
        GROUP BY host_id, hostname, aggregation, adapter ORDER BY host_id, adapter""",
    "SELECT DISTINCT entity_name FROM entity_names ORDER BY 1": (
        "SELECT DISTINCT entity_name FROM entity_hourly ORDER BY 1"
    ),
}


def _check_summaries(stack: Settings) -> None:
    for view_sql, oracle_sql in _SUMMARY_ORACLES.items():
        _, got = query(stack, view_sql)
        _, want = query(stack, oracle_sql)
        assert got, view_sql  # the demo fleet has z/VM, AIX, Linux entities and LACP aggregations
        assert got == want, f"{view_sql}: {[(g, w) for g, w in zip(got, want, strict=False) if g != w][:3]}"
    _, got = query(stack, "SELECT * FROM fleet_entities ORDER BY entity_id")
    _, want = query(stack, _FLEET_ENTITIES_BEFORE)
    assert [[g[0], *g[2:]] for g in got] == [[w[0], *w[2:]] for w in want]
    misnamed = [(g[:2], w[:2]) for g, w in zip(got, want, strict=True) if g[1] not in w[1]]
    assert not misnamed, misnamed
    assert any(len(w[1]) > 1 for w in want)  # an entity with two names (nmon and CP monitor) is in the fleet


def _driver(tmp: Path):  # noqa: ANN202
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = browser()
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        "--window-size=1600,2000",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(chromedriver)), options=options)


def _login(driver, stack: Settings) -> None:  # noqa: ANN001
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    sup = stack["superset"]
    # a loaded machine (CI shares its two cores with the whole stack) can lose the first form
    # submit while the page is still starting its scripts: try the login page afresh, three times
    for attempt in range(3):
        driver.get(f"{stack.superset_url}/login/")
        WebDriverWait(driver, 60).until(ec.presence_of_element_located((By.ID, "username")))
        driver.find_element(By.ID, "username").send_keys(sup["admin_user"])
        driver.find_element(By.ID, "password").send_keys(superset_admin_password(stack))
        driver.find_element(By.ID, "password").submit()
        try:
            WebDriverWait(driver, 40).until(lambda d: "/login" not in d.current_url)
            return
        except TimeoutException:
            if attempt == 2:
                raise


def _open(  # noqa: ANN202
    driver,  # noqa: ANN001
    stack: Settings,
    slug: str,
    charts: int,
    timeout: float = 180,
):
    """Seconds until every chart finished loading, and the texts of the chart holders."""

    started = time.monotonic()
    driver.get(f"{stack.superset_url}/superset/dashboard/{slug}/")
    texts: list[str] = []
    while time.monotonic() - started < timeout:
        state = driver.execute_script(_RENDERED)
        texts = [text for _, text in state]
        if len(state) == charts and all(done for done, _ in state):
            return time.monotonic() - started, texts
        time.sleep(0.2)
    raise AssertionError(f"{slug}: charts still loading after {timeout}s: {texts}")


def test_every_dashboard_renders_every_chart_with_data(stack: Settings, tmp_path: Path) -> None:
    _load_fleet(stack, tmp_path)
    _wait_for_data(stack)
    _check_summaries(stack)
    artifacts = stack.state_dir / "test-artifacts" / "dashboards"
    artifacts.mkdir(parents=True, exist_ok=True)
    driver = _driver(tmp_path)
    timings = []
    try:
        _login(driver, stack)
        for board in DASHBOARDS:
            charts = sum(len(row) for row in board.rows)
            cold, texts = _open(driver, stack, board.slug, charts)
            broken = [
                f"{CHARTS[key].title}: {text[:300]!r}"
                for key, text in zip([k for row in board.rows for k in row], texts, strict=False)
                if any(marker in text for marker in _BROKEN)
            ]
            assert not broken, f"{board.title}: {broken}"
            time.sleep(1.0)  # echarts animates its series in: look once they are drawn
            keys = [k for row in board.rows for k in row]
            invisible = _invisible(keys, driver.execute_script(_MARKS))
            assert not invisible, f"{board.title}: charts without visible marks: {invisible}"
            warm, _ = _open(driver, stack, board.slug, charts)
            time.sleep(1.0)  # let the last animation settle before the screenshot
            driver.save_screenshot(str(artifacts / f"{board.slug}.png"))
            timings.append(f"{board.title}: {charts} charts, cold {cold:.1f}s, warm {warm:.1f}s")
        # [superset] chart_animation = false reaches the page: the theme whose
        # echartsOptionsOverrides Superset's ECharts charts merge into their options
        theme = driver.execute_script(
            "return JSON.parse(document.getElementById('app').dataset.bootstrap).common.theme.default"
        )
        assert theme["echartsOptionsOverrides"]["animation"] is False, theme.get("echartsOptionsOverrides")
        assert theme["token"]["colorPrimary"], theme["token"]  # Superset's own tokens kept
    finally:
        driver.quit()
    (artifacts / "load-times.txt").write_text("\n".join(timings) + "\n")
    print("\n".join(timings))
    if os.environ.get("FLEETPERF_UPDATE_SCREENSHOTS") == "1":
        shots = REPO_ROOT / "docs" / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        for png in artifacts.glob("*.png"):
            shutil.copy(png, shots / png.name)
