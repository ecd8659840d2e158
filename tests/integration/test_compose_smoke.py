"""docker-compose.yml for real: the whole stack up with `docker compose` (through docker/compose.sh and
the image set of config/images.toml), one nmon file ingested inside the warehouse container, the rows and
every 1-minute window metric read back from ClickHouse equal to the independent computation of
tests/integration/expected.py, Superset serving its dashboards on the published loopback port, and
`down -v` leaving no container, volume or network of the project.

Twice, each on a stack of its own, one after the other: the default profile (one broker, the job on a
MiniCluster) and the cluster profile (docker/compose.cluster.yml: 3 KRaft brokers, topics with
replication factor 3 and min.insync.replicas 2, a Flink session cluster of the Flink image, JobManager +
TaskManagers, the job submitted by `flink run` at the cluster parallelism).

Opt-in, like the container provider: FLEETPERF_SERVICES=containers (the default test command stays
Docker-free); skips with the reason where no engine answers, Compose v2 is missing or an image of the
chosen set (FLEETPERF_IMAGES, default official) is neither present nor pullable."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from fleetperf import config
from fleetperf.config import REPO_ROOT
from fleetperf.dashboards.spec import DASHBOARDS
from fleetperf.demo.simulate import simulate
from fleetperf.stack import install
from fleetperf.stack.cluster import JOB_NAME, cluster_parallelism
from tests.integration.expected import snapshots, window_metrics
from tests.providers import docker_available, free_port, services_kind
from tests.providers.containers import image_names

pytestmark = pytest.mark.integration
COMPOSE_SH = REPO_ROOT / "docker" / "compose.sh"
LABEL = "com.docker.compose.project"
CLUSTER = ("--profile", "cluster")


def _skip_reason(images_needed: tuple[str, ...]) -> str | None:
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
            for key in images_needed
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
    profile: tuple[str, ...] = ()

    def run(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(COMPOSE_SH), self.set_name, *self.profile, "-p", self.project, *args]
        result = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def sql(self, statement: str) -> list[dict[str, object]]:
        out = self.run("exec", "-T", "warehouse", "./fleetperf", "sql", "--format", "json", statement, timeout=120)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def python(self, code: str) -> Any:
        """`code` run by the warehouse container's Python (on the compose network, with the services'
        own settings); its last line of output is one JSON document."""
        out = self.run("exec", "-T", "warehouse", ".venv/bin/python", "-c", code, timeout=120)
        return json.loads(out.stdout.strip().splitlines()[-1])

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


def _compose_up(tmp_path_factory: pytest.TempPathFactory, name: str, profile: tuple[str, ...]) -> Iterator[Compose]:
    needed = ("kafka", "registry", "fleetperf", *(("flink",) if profile else ("jre",)))
    reason = _skip_reason(needed)
    if reason:
        pytest.skip(reason)
    install.job_jar()  # compose mounts stream-jobs/target into the job's (or the submitter's) container
    secrets_file = tmp_path_factory.mktemp("compose") / ".env"
    secrets_file.touch(mode=0o600)
    # throw-away passwords (docker-compose.yml reads them from an env file, never from itself)
    secrets_file.write_text(
        "".join(
            f"{key}={secrets.token_urlsafe(18)}\n"
            for key in ("CLICKHOUSE_ADMIN_PASSWORD", "CLICKHOUSE_WRITER_PASSWORD", "CLICKHOUSE_READ_PASSWORD")
        )
    )
    env = {
        **os.environ,
        "FLEETPERF_COMPOSE_ENV": str(secrets_file),
        "FLEETPERF_SUPERSET_HOST_PORT": str(free_port()),
        "FLEETPERF_SUPERSET_ADMIN_PASSWORD": secrets.token_urlsafe(18),
    }
    c = Compose(os.environ.get("FLEETPERF_IMAGES", "official"), f"fleetperf-{name}-{os.getpid()}", env, profile)
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
        print(f"compose stack ({name}) up in {time.monotonic() - t0:.0f}s")
        yield c
    finally:
        t0 = time.monotonic()
        c.run("down", "-v", "--remove-orphans", timeout=300, check=False)
        print(f"compose stack ({name}) down in {time.monotonic() - t0:.0f}s")
    assert c.leftovers() == {"containers": [], "volumes": [], "networks": []}


@pytest.fixture(scope="class")
def compose(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    """A stack of the test class's own (its NAME and PROFILE), up for the class, down -v after it."""
    yield from _compose_up(tmp_path_factory, request.cls.NAME, request.cls.PROFILE)


@pytest.fixture(scope="class")
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


class _EveryProfile:
    """What the stack does whichever profile runs it."""

    def test_compose_stack_gives_exact_values_back(self, compose: Compose, ingested: Path) -> None:
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

    def test_compose_superset_serves_the_dashboards_and_reads_the_warehouse(
        self, compose: Compose, ingested: Path
    ) -> None:
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


class TestDefaultProfile(_EveryProfile):
    NAME = "smoke"
    PROFILE: tuple[str, ...] = ()


# what the warehouse container sees of the Flink session cluster (its REST API on the compose network)
FLINK_FACTS = """
import json, urllib.request
get = lambda path: json.load(urllib.request.urlopen("http://jobmanager:8081" + path, timeout=30))
jobs = get("/jobs/overview")["jobs"]
details = [get("/jobs/" + j["jid"]) for j in jobs]
print(json.dumps({
    "taskmanagers": get("/overview")["taskmanagers"],
    "jobs": [
        {"jid": d["jid"], "name": d["name"], "state": d["state"],
         "vertices": [[v["name"], v["parallelism"], v["status"]] for v in d["vertices"]]}
        for d in details
    ],
}))
"""

# the Kafka cluster as a client of the stack sees it, with the warehouse's own settings ([kafka] bootstrap)
KAFKA_FACTS = """
import json
from confluent_kafka.admin import AdminClient, ConfigResource
from fleetperf import config
from fleetperf.kafka_avro import kafka_client_config
s = config.load()
admin = AdminClient(kafka_client_config(s))
md = admin.list_topics(timeout=30)
names = [t.name for t in s.topics.values()]
configs = admin.describe_configs([ConfigResource("topic", n) for n in names])
min_isr = {res.name: fut.result()["min.insync.replicas"].value for res, fut in configs.items()}
print(json.dumps({
    "bootstrap": s.bootstrap,
    "brokers": sorted(md.brokers),
    "topics": {n: {"partitions": len(md.topics[n].partitions),
                   "replicas": sorted({len(p.replicas) for p in md.topics[n].partitions.values()}),
                   "isr": sorted({len(p.isrs) for p in md.topics[n].partitions.values()}),
                   "min_isr": min_isr[n]} for n in names},
}))
"""


class TestClusterProfile(_EveryProfile):
    NAME = "cluster"
    PROFILE = CLUSTER

    def test_derived_windows_come_from_the_flink_session_cluster(self, compose: Compose, ingested: Path) -> None:
        s = config.load({})
        facts = compose.python(FLINK_FACTS)
        # [stack] taskmanagers TaskManagers registered with the JobManager, one job: ours, submitted by
        # `flink run` in the flink-job service (no MiniCluster anywhere: that service has exited)
        assert facts["taskmanagers"] == int(s["stack"]["taskmanagers"]) >= 2
        [job] = facts["jobs"]
        assert job["name"] == JOB_NAME and job["state"] == "RUNNING"
        parallelism = cluster_parallelism(s)
        assert parallelism >= 2
        for name, vertex_parallelism, status in job["vertices"]:
            assert vertex_parallelism == parallelism, name
            assert status == "RUNNING", name
        submit_log = compose.run("logs", "--no-log-prefix", "flink-job").stdout
        assert re.search(rf"Job has been submitted with JobID {job['jid']}\b", submit_log), submit_log[-3000:]
        state = compose.run("ps", "-a", "--format", "{{.Service}} {{.State}} {{.ExitCode}}").stdout
        assert "flink-job exited 0" in state, state

    def test_kafka_is_three_brokers_with_replicated_topics(self, compose: Compose, ingested: Path) -> None:
        s = config.load({})
        facts = compose.python(KAFKA_FACTS)
        assert facts["bootstrap"] == "kafka:29092,kafka-2:29092,kafka-3:29092"
        assert facts["brokers"] == [1, 2, 3]
        assert set(facts["topics"]) == {t.name for t in s.topics.values()}
        for name, topic in facts["topics"].items():
            assert topic["partitions"] == int(s["kafka"]["partitions"]), name
            assert topic["replicas"] == [3] and topic["isr"] == [3], (name, topic)
            assert topic["min_isr"] == "2", (name, topic)
