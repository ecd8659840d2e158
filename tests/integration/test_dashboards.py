"""Every dashboard of dashboards/spec.py opened in headless Chromium on the real stack: provisioned
by the warehouse start, all charts render without error and with data. Screenshots and load
times (cold = first open, warm = second) go to <state>/test-artifacts/dashboards/; with
FLEETPERF_UPDATE_SCREENSHOTS=1 the screenshots also replace docs/screenshots/ (the README's)."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import wait_stable
from fleetperf.config import REPO_ROOT, Settings
from fleetperf.dashboards.spec import CHARTS, DASHBOARDS
from fleetperf.demo.simulate import Fault, simulate
from fleetperf.ingest.identity import HostIdentity
from fleetperf.ingest.publish import ingest
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.aix.collect import from_file
from fleetperf.sources.perfkit.records import Options, records_of_file
from fleetperf.stack.install import browser
from fleetperf.warehouse.credentials import superset_admin_password
from tests.golden import HPMSTAT_BEFORE_LSA
from tests.integration.test_aix_ingest import _etherchannel_capture
from tests.unit.test_perfkit import DATA

pytestmark = pytest.mark.integration

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


def _load_fleet(stack: Settings, tmp: Path) -> None:
    now = datetime.now(UTC).replace(tzinfo=None, second=0, microsecond=0)
    start = now - timedelta(hours=2)
    faults = (
        Fault("linux000", start + timedelta(minutes=30), 30, steal=30.0),  # closes
        Fault("linux001", start + timedelta(minutes=90), 60, steal=25.0),  # still open at the end
    )
    files = simulate(tmp / "fleet", 6, start, timedelta(hours=2), 60, 11, faults)
    assert ingest(stack, [str(f) for f in files], UTC, progress=False).errors == 0

    producer = AvroProducer(stack)
    hpm = tmp / "hpmstat.txt"
    hpm.write_text(HPMSTAT_BEFORE_LSA)
    aix = HostIdentity("02DASH1-3", "aixdash")
    ts = int((now - timedelta(minutes=20)).replace(tzinfo=UTC).timestamp() * 1000)
    records = list(from_file("hpmstat", hpm, aix, ts))
    vios = HostIdentity("VIOSDASH-1", "viosdash")
    ports = {"ent0": (1000, 2000), "ent1": (5000, 9000), "ent4": (7000, 1000)}
    for n, factor in enumerate((1, 40)):
        capture = tmp / f"entstat_{n}.txt"
        capture.write_text(_etherchannel_capture({p: (tx * factor, rx * factor) for p, (tx, rx) in ports.items()}))
        records += from_file("entstat", capture, vios, ts + n * 60_000)
    yesterday = date.today() - timedelta(days=1)
    for name, system in (
        ("fcx112_user.txt", "VMLINUX7"),
        ("fcx162_userlog.txt", "VMLINUX7"),
        ("fcx225_syssumlog.txt", "VMLINUX7"),
        ("fcx126_lpar.txt", None),
    ):
        options = Options(system=system, day=yesterday, at=datetime.strptime("11:40:01", "%H:%M:%S").time())
        records += [e for e in records_of_file(DATA / name, options) if e.topic_key != "dead_letters"]
    for e in records:
        producer.send(e.topic_key, e.record, key=e.key)
    for record in _capacity_history(now):
        producer.send("derived_metrics", record, key=record["entity_id"])
    producer.flush()


def _capacity_history(now: datetime) -> list[dict]:
    """Seven months of hourly physc windows of three LPARs with growing load, as a Flink job on an
    earlier system would have written them: the capacity charts need months, a test has minutes."""
    import math
    import random

    noise = random.Random(5)
    records = []
    first = now.replace(minute=0) - timedelta(days=210)
    emitted = int(now.replace(tzinfo=UTC).timestamp() * 1000)
    for lpar, base in ((1, 2.0), (2, 3.0), (3, 1.2)):
        for hour in range(0, 210 * 24, 3):
            start = first + timedelta(hours=hour)
            grow = 1 + hour / (210 * 24) * 0.6
            daily = 0.8 + 0.4 * math.sin((start.hour - 8) / 24 * 2 * math.pi)
            value = base * grow * daily * noise.uniform(0.85, 1.15)
            ms = int(start.replace(tzinfo=UTC).timestamp() * 1000)
            records.append(
                {
                    "entity_id": f"HIST-LPAR-{lpar}",
                    "entity_name": f"histlpar{lpar}",
                    "metric": "physc",
                    "window_start": ms,
                    "window_end": ms + 3_600_000,
                    "value": value,
                    "samples": 60,
                    "is_final": True,
                    "emitted_at": emitted,
                }
            )
    return records


def _wait_for_data(stack: Settings) -> None:
    # final windows reach the rollups once each stream's clock passes them or the stream ends
    for metric in ("steal_pct", "entc_pct", "physc", "tv_ratio", "busy_pct", "slb_miss_rate", "lacp_hash_skew_tx"):
        wait_stable(stack, f"SELECT count() FROM entity_hourly WHERE metric = '{metric}'", timeout=240, settle=4)
    wait_stable(stack, "SELECT count() FROM incidents WHERE is_open", timeout=240, settle=4)
    wait_stable(stack, "SELECT count() FROM incidents WHERE NOT is_open", timeout=240, settle=4)
    wait_stable(stack, "SELECT count() FROM lpar_samples", timeout=60, settle=2)
    wait_stable(stack, "SELECT count() FROM capacity_forecast_series WHERE trend IS NOT NULL", timeout=120, settle=2)


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
            warm, _ = _open(driver, stack, board.slug, charts)
            time.sleep(1.0)  # let the last animation settle before the screenshot
            driver.save_screenshot(str(artifacts / f"{board.slug}.png"))
            timings.append(f"{board.title}: {charts} charts, cold {cold:.1f}s, warm {warm:.1f}s")
    finally:
        driver.quit()
    (artifacts / "load-times.txt").write_text("\n".join(timings) + "\n")
    print("\n".join(timings))
    if os.environ.get("FLEETPERF_UPDATE_SCREENSHOTS") == "1":
        shots = REPO_ROOT / "docs" / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        for png in artifacts.glob("*.png"):
            shutil.copy(png, shots / png.name)
