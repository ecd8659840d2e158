"""The runtime fetches of stack/install.py when two commands start on a fresh machine at once.

On 2026-12-01 two clean clones ran `.ci/run` side by side with an empty cache: both fetched
Apicurio into the same directory, and one failed with "No such file or directory" for the archive
the other had unpacked and removed. Maven is replaced here by a function that writes what
`dependency:copy` would (the archive, slowly, so the two fetches overlap); the lock and the
staging directory are what is under test, not Maven.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
from pathlib import Path

import pytest

from fleetperf import config
from fleetperf.stack import install

VERSION = "3.0.9"


def _archive_bytes() -> bytes:
    """An archive shaped as Apicurio's: the app one folder down, its lib/ beside the runner jar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in (
            (f"apicurio-registry-app-{VERSION}/apicurio-registry-app-{VERSION}-runner.jar", b"runner"),
            (f"apicurio-registry-app-{VERSION}/lib/dep.jar", b"dep"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def _settings(cache: Path) -> config.Settings:
    settings = config.load({})
    settings.raw["cache"]["dir"] = str(cache)
    settings.raw["registry"]["version"] = VERSION
    return settings


def test_two_registry_fetches_at_once_both_get_the_whole_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = _archive_bytes()
    calls: list[str] = []

    def fake_mvn(*args: str, cwd: Path | None = None) -> None:
        out = Path(next(a for a in args if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        calls.append(str(out))
        target = out / f"apicurio-registry-app-{VERSION}-all.tar.gz"
        with open(target, "wb") as f:  # written in two halves, as a download is
            f.write(body[: len(body) // 2])
            time.sleep(0.3)
            f.write(body[len(body) // 2 :])

    monkeypatch.setattr(install, "_mvn", fake_mvn)
    settings = _settings(tmp_path / "cache")
    results: list[Path] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            results.append(install.registry_jar(settings))
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever a fetch raised
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    jar = install.registry_jar_path(settings)
    assert results == [jar, jar]
    assert jar.read_bytes() == b"runner"
    assert (jar.parent / "lib" / "dep.jar").read_bytes() == b"dep"
    assert len(calls) == 1, "the second command waits for the first fetch instead of fetching again"
    assert not any(p.name.endswith(".partial") for p in jar.parent.parent.iterdir())


# both Maven dependency fetches (Kafka's jars, the Flink cluster's jars) go through one helper
MAVEN_LIBS = {
    "kafka": (install.kafka_libs, install.kafka_libs_dir, lambda s: f"kafka_2.13-{s['kafka']['version']}.jar"),
    "flink-cluster": (
        install.flink_cluster_lib,
        install.flink_cluster_lib_dir,
        lambda s: f"flink-runtime-{install.FLINK_CLUSTER_VERSION}.jar",
    ),
}


@pytest.mark.parametrize("runtime", sorted(MAVEN_LIBS))
def test_an_interrupted_fetch_leaves_nothing_that_looks_complete(
    runtime: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetch, lib_dir, marker_name = MAVEN_LIBS[runtime]
    settings = _settings(tmp_path / "cache")
    marker = marker_name(settings)

    def broken_mvn(*args: str, cwd: Path | None = None) -> None:
        out = Path(next(a for a in args if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        (out / marker).write_bytes(b"half")
        raise RuntimeError("mvn failed: connection reset")

    monkeypatch.setattr(install, "_mvn", broken_mvn)
    with pytest.raises(RuntimeError, match="connection reset"):
        fetch(settings)
    # the marker jar was written into the staging directory only: the next command fetches again
    assert not (lib_dir(settings) / marker).exists()

    def good_mvn(*args: str, cwd: Path | None = None) -> None:
        out = Path(next(a for a in args if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        (out / marker).write_bytes(b"whole")

    monkeypatch.setattr(install, "_mvn", good_mvn)
    libs = fetch(settings)
    assert libs == lib_dir(settings)
    assert (libs / marker).read_bytes() == b"whole"
    assert not any(p.name.endswith(".partial") for p in libs.parent.iterdir())
