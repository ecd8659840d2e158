"""Fetches the runtimes the local stack needs into the cache (Maven Central only) and builds the job jar."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

from fleetperf.config import PACKAGE_ROOT, REPO_ROOT, Settings

KAFKA_POM = PACKAGE_ROOT / "stack" / "downloads" / "kafka-broker.pom.xml"
FLINK_CLUSTER_POM = PACKAGE_ROOT / "stack" / "downloads" / "flink-cluster.pom.xml"
FLINK_CLUSTER_VERSION = "2.3.0"
JOBS_DIR = REPO_ROOT / "stream-jobs"
JOB_JAR = JOBS_DIR / "target" / "fleetperf-stream-jobs.jar"


def _mvn(*args: str, cwd: Path | None = None) -> None:
    cmd = ["mvn", "-q", "-B", *args]
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")


@contextlib.contextmanager
def _fetch_lock(target: Path) -> Iterator[None]:
    """One fetch of `target` at a time across processes: `./fleetperf demo` and `./fleetperf test`
    (or two clones' CI runs) on a fresh machine share the cache, and two Apicurio fetches at once
    failed (2026-12-01: the second found the archive the first had just unpacked and removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _staged(final: Path) -> Path:
    """An empty directory beside `final` to fetch into; renamed into place when complete, so a
    reader never sees half a fetch (an interrupted one leaves only this directory, cleared next time)."""
    staging = final.parent / f".{final.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _publish(staging: Path, final: Path) -> None:
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)


def kafka_libs_dir(settings: Settings) -> Path:
    """Where the Kafka jars are (or will be); fetches nothing."""
    return settings.cache_dir / f"kafka-{settings['kafka']['version']}" / "libs"


def registry_jar_path(settings: Settings) -> Path:
    """Where the Apicurio runner jar is (or will be); fetches nothing."""
    version = settings["registry"]["version"]
    return settings.cache_dir / f"apicurio-{version}" / f"apicurio-registry-app-{version}-runner.jar"


def _maven_libs(pom: Path, lib: Path, marker: str, label: str) -> Path:
    """The dependencies of `pom` copied into `lib` once (`marker`, one of its jars, says they are
    there): fetched under the lock into a staging directory renamed into place."""
    if (lib / marker).exists():
        return lib
    with _fetch_lock(lib):
        if not (lib / marker).exists():
            print(f"fetching {label} into {lib}")
            staging = _staged(lib)
            _mvn("-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={staging}")
            _publish(staging, lib)
    return lib


def kafka_libs(settings: Settings) -> Path:
    version = settings["kafka"]["version"]
    return _maven_libs(KAFKA_POM, kafka_libs_dir(settings), f"kafka_2.13-{version}.jar", f"Kafka {version} jars")


def registry_jar(settings: Settings) -> Path:
    version = settings["registry"]["version"]
    jar = registry_jar_path(settings)
    home = jar.parent
    if jar.exists():
        return jar
    with _fetch_lock(home):
        if not jar.exists():
            print(f"fetching Apicurio Registry {version} into {home}")
            staging = _staged(home)
            _mvn(
                "dependency:copy",
                f"-Dartifact=io.apicurio:apicurio-registry-app:{version}:tar.gz:all",
                f"-DoutputDirectory={staging}",
            )
            archive = staging / f"apicurio-registry-app-{version}-all.tar.gz"
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
            archive.unlink()
            found = list(staging.rglob(jar.name))
            if not found:
                raise RuntimeError(f"{jar.name} not found in the Apicurio archive {archive.name}")
            if found[0].parent != staging:
                # the archive nests the app one folder down; keep its lib/ beside the runner jar
                for item in found[0].parent.iterdir():
                    item.rename(staging / item.name)
            _publish(staging, home)
    return jar


def flink_cluster_lib_dir(settings: Settings) -> Path:
    """Where the standalone Flink cluster's jars are (or will be); fetches nothing."""
    return settings.cache_dir / f"flink-cluster-{FLINK_CLUSTER_VERSION}" / "lib"


def flink_cluster_lib(settings: Settings) -> Path:
    """Flink's own runtime artifacts from Maven Central (cluster mode only): flink-dist's tarball is
    not on Central, but its entry points live in flink-runtime and the REST jar handlers in
    flink-runtime-web, so these jars on one classpath are a session cluster."""
    return _maven_libs(
        FLINK_CLUSTER_POM,
        flink_cluster_lib_dir(settings),
        f"flink-runtime-{FLINK_CLUSTER_VERSION}.jar",
        f"Flink {FLINK_CLUSTER_VERSION} cluster jars",
    )


def job_jar(force: bool = False) -> Path:
    sources = [p for p in (JOBS_DIR / "src" / "main").rglob("*") if p.is_file()]
    sources += [JOBS_DIR / "pom.xml", *(REPO_ROOT / "schemas").glob("*.avsc")]
    newest = max(p.stat().st_mtime for p in sources)

    def stale() -> bool:
        return force or not JOB_JAR.exists() or JOB_JAR.stat().st_mtime < newest

    if stale():
        with _fetch_lock(JOB_JAR):
            if stale():
                print("building the Flink job jar (mvn package)")
                _mvn("package", "-DskipTests", cwd=JOBS_DIR)
    return JOB_JAR


def install_all(settings: Settings) -> None:
    kafka_libs(settings)
    registry_jar(settings)
    job_jar()


# how long an install waits for another apt to release dpkg's lock
APT_LOCK_WAIT_S = 600
# fleetperf's own installs take turns on this (root-only directory, present wherever apt-get is)
APT_LOCK_FILE = "/var/cache/apt/fleetperf-install.lock"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def browser() -> tuple[Path, Path]:
    """Debian's Chromium and ChromeDriver for the dashboard tests."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        _apt("the dashboard tests need Chromium", "chromium", "chromium-driver")
    return CHROMIUM, CHROMEDRIVER


SADC = Path("/usr/lib/sysstat/sadc")
SADF = Path("/usr/bin/sadf")


def sysstat() -> tuple[Path, Path]:
    """Debian's sysstat (sadc, sadf): the sadc collector's tests record a fresh file with it and
    compare our figures with sadf's."""
    if not (SADC.exists() and SADF.exists()):
        _apt("the sadc tests need sysstat", "sysstat")
    return SADC, SADF


NMON = Path("/usr/bin/nmon")


def nmon() -> Path:
    """Debian's nmon (Linux nmon 16n): the nmon tests record a file with it, live, and read it as
    nmon wrote it."""
    if not NMON.exists():
        _apt("the nmon recording tests need nmon", "nmon")
    return NMON


def _apt(why: str, *packages: str) -> None:
    """Installed with apt when missing (as root, the machines this project targets); elsewhere a
    clear message."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise RuntimeError(f"{why}: apt-get install {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Two installs at once (two test runs on a fresh machine) failed on dpkg's lock ("Could not get
    # lock /var/lib/dpkg/lock-frontend"): ours wait for each other on a lock file, and apt waits
    # for any other apt (unattended upgrades) up to APT_LOCK_WAIT_S instead of failing at once.
    wait = ["-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}"]
    # the lock file in apt's own root-only directory: one in /tmp could be held (or pointed
    # elsewhere) by any local user
    fd = os.open(APT_LOCK_FILE, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [p for p in packages if not _deb_installed(p)]
        if not missing:
            return  # another install put them there while this one waited
        for cmd in (
            ["apt-get", *wait, "update", "-qq"],
            ["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", *missing],
        ):
            result = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if result.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")


def _deb_installed(package: str) -> bool:
    """Installed according to dpkg (not only unpacked or half-configured)."""
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return result.returncode == 0 and result.stdout.strip() == "install ok installed"
