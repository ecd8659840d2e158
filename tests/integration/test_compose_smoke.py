"""docker-compose.yml for real: the whole stack up with `docker compose` (through docker/compose.sh and
the image set of config/images.toml), one nmon file ingested inside the warehouse container, the rows and
every 1-minute window metric read back from ClickHouse equal to the independent computation of
tests/integration/expected.py, Superset serving its dashboards on the published loopback port, and
`down -v` leaving no container, volume or network of the project.

Opt-in, like the container provider: FLEETPERF_SERVICES=containers (the default test command stays
Docker-free); skips with the reason where no engine answers, Compose v2 is missing or an image of the
chosen set (FLEETPERF_IMAGES, default official) is neither present nor pullable."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import requests

from fleetperf.config import REPO_ROOT
from fleetperf.dashboards.spec import DASHBOARDS
from fleetperf.demo.simulate import simulate
from fleetperf.stack import install
from tests.integration.expected import snapshots, window_metrics
from tests.providers import docker_available, free_port, services_kind
from tests.providers.containers import image_names

pytestmark = pytest.mark.integration
COMPOSE_SH = REPO_ROOT / "docker" / "compose.sh"
LABEL = "com.docker.compose.project"


def _skip_reason() -> str | None:
    if services_kind() != "containers":
        return "containers are opt-in: FLEETPERF_SERVICES=containers (docs/docker.md)"
    if not docker_available():
        return "no Docker engine answers `docker info` (docker/dockerd.sh start)"
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode != 0:
        return "Docker Compose v2 is not installed (docker/install-compose.sh)"
    set_name = os.environ.get("FLEETPERF_IMAGES", "official")
    if set_name == "local":
        images = image_names("local")
        missing = [
            images[key]
            for key in ("kafka", "registry", "jre", "fleetperf")
            if subprocess.run(["docker", "image", "inspect", images[key]], capture_output=True).returncode != 0
        ]
        if missing:
            return f"local images missing: {', '.join(missing)} (docker/build-images.sh)"
    return None


@dataclass
class Compose:
    set_name: str
    project: str
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(COMPOSE_SH), self.set_name, "-p", self.project, *args]
        result = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def sql(self, statement: str) -> list[dict[str, object]]:
        out = self.run("exec", "-T", "warehouse", "./fleetperf", "sql", "--format", "json", statement, timeout=120)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def leftovers(self) -> dict[str, list[str]]:
        found = {}
        for kind, cmd in {
            "containers": ["docker", "ps", "-aq"],
            "volumes": ["docker", "volume", "ls", "-q"],
            "networks": ["docker", "network", "ls", "-q"],
        }.items():
            out = subprocess.run([*cmd, "--filter", f"label={LABEL}={self.project}"], capture_output=True, text=True)
            found[kind] = out.stdout.split()
        return found


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    install.job_jar()  # docker-compose.yml mounts stream-jobs/target into the job's container
    secrets_file = tmp_path_factory.mktemp("compose") / ".env"
    secrets_file.touch(mode=0o600)
    # throw-away passwords (docker-compose.yml reads them from an env file, never from itself)
    secrets_file.write_text(
        "".join(
            f"{name}={secrets.token_urlsafe(18)}\n"
            for name in ("CLICKHOUSE_ADMIN_PASSWORD", "CLICKHOUSE_WRITER_PASSWORD", "CLICKHOUSE_READ_PASSWORD")
        )
    )
    env = {
        **os.environ,
        "FLEETPERF_COMPOSE_ENV": str(secrets_file),
        "FLEETPERF_SUPERSET_HOST_PORT": str(free_port()),
        "FLEETPERF_SUPERSET_ADMIN_PASSWORD": secrets.token_urlsafe(18),
    }
    c = Compose(os.environ.get("FLEETPERF_IMAGES", "official"), f"fleetperf-smoke-{os.getpid()}", env)
    try:
        t0 = time.monotonic()
        c.run("up", "-d", timeout=900)
        base = f"http://127.0.0.1:{env['FLEETPERF_SUPERSET_HOST_PORT']}"
        deadline = time.monotonic() + 420
        while True:
            try:
                if requests.get(f"{base}/health", timeout=5).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                logs = c.run("logs", "--tail", "60", check=False)
                raise AssertionError(f"Superset not up after 420 s:\n{logs.stdout[-6000:]}")
            time.sleep(3)
        print(f"compose stack up in {time.monotonic() - t0:.0f}s")
        yield c
    finally:
        c.run("down", "-v", "--remove-orphans", timeout=300, check=False)
    assert c.leftovers() == {"containers": [], "volumes": [], "networks": []}


@pytest.fixture(scope="module")
def ingested(compose: Compose, tmp_path_factory: pytest.TempPathFactory) -> Path:
    [path] = simulate(
        tmp_path_factory.mktemp("nmon"),
        hosts=1,
        start=datetime(2026, 4, 7, 8, 0),
        duration=timedelta(minutes=6),
        interval=10,
        seed=26,
    )
    inside = f"/tmp/{path.name}"
    compose.run("cp", str(path), f"warehouse:{inside}")
    out = compose.run("exec", "-T", "warehouse", "./fleetperf", "ingest", "--no-progress", "--tz", "UTC", inside)
    print(out.stdout[-2000:])
    return path


def _wait_count(compose: Compose, sql: str, want: int, timeout: float = 180) -> int:
    deadline = time.monotonic() + timeout
    got = -1
    while time.monotonic() < deadline:
        try:
            got = int(compose.sql(sql)[0]["n"])
        except AssertionError:
            got = -1  # the warehouse may still be applying migrations
        if got >= want:
            return got
        time.sleep(2)
    return got


def test_compose_stack_gives_exact_values_back(compose: Compose, ingested: Path) -> None:
    inside = f"/tmp/{ingested.name}"
    host, _, snaps = snapshots(ingested)
    assert _wait_count(
        compose, f"SELECT count() AS n FROM cpu_samples_v WHERE origin_file = '{inside}'", len(snaps)
    ) == len(snaps)
    expected = window_metrics(ingested)
    assert _wait_count(
        compose, f"SELECT count() AS n FROM derived_metrics_v WHERE entity_id = '{host}'", len(expected)
    ) == len(expected)
    rows = compose.sql(
        "SELECT entity_id, metric, toUnixTimestamp(window_start) AS start, value, samples "
        f"FROM derived_metrics_v WHERE entity_id = '{host}'"
    )
    actual = {(r["entity_id"], r["metric"], int(r["start"])): (float(r["value"]), int(r["samples"])) for r in rows}
    assert set(actual) == set(expected)
    for key, (value, samples) in expected.items():
        assert actual[key][0] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        assert actual[key][1] == samples, key


def test_compose_superset_serves_the_dashboards_and_reads_the_warehouse(compose: Compose, ingested: Path) -> None:
    base = f"http://127.0.0.1:{compose.env['FLEETPERF_SUPERSET_HOST_PORT']}"
    session = requests.Session()
    login = session.post(
        f"{base}/api/v1/security/login",
        json={"username": "admin", "password": compose.env["FLEETPERF_SUPERSET_ADMIN_PASSWORD"], "provider": "db"},
        timeout=30,
    )
    assert login.ok, login.text
    session.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
    csrf = session.get(f"{base}/api/v1/security/csrf_token/", timeout=30).json()["result"]
    session.headers.update({"X-CSRFToken": csrf, "Referer": base})
    dashboards = session.get(f"{base}/api/v1/dashboard/", timeout=30).json()["result"]
    assert {d["dashboard_title"] for d in dashboards} == {b.title for b in DASHBOARDS}
    page = session.get(f"{base}/superset/dashboard/{dashboards[0]['id']}/", timeout=60)
    assert page.status_code == 200 and "<html" in page.text.lower()
    # the file's rows through Superset's own connection to the warehouse (the one its charts use)
    database = next(
        d["id"]
        for d in session.get(f"{base}/api/v1/database/", timeout=30).json()["result"]
        if d["database_name"] == "fleetperf"
    )
    _, _, snaps = snapshots(ingested)
    result = session.post(
        f"{base}/api/v1/sqllab/execute/",
        json={
            "database_id": database,
            "sql": f"SELECT count() AS n FROM cpu_samples_v WHERE origin_file = '/tmp/{ingested.name}'",
            "runAsync": False,
            "schema": "fleetperf",
            "tab": "compose smoke",
            "client_id": secrets.token_hex(5),
        },
        timeout=120,
    )
    assert result.ok, result.text[:2000]
    assert int(result.json()["data"][0]["n"]) == len(snaps)
