"""`test`: the whole suite (ruff, rustfmt, bundle check, Java format, JUnit, pytest); what CI runs."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from fleetperf import config
from fleetperf.cli.common import EPILOG
from fleetperf.config import REPO_ROOT

# the Rust crates (max_width in each rustfmt.toml; generated layouts are marked #[rustfmt::skip])
NATIVE_CRATES = (
    REPO_ROOT / "src/fleetperf/sources/nmon/native",
    REPO_ROOT / "src/fleetperf/sources/sysstat/native",
)


def cmd_test(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack import install

    install.install_all(s)
    install.browser()
    install.sysstat()
    # pytest runs last so that its summary is the closing line of the run
    steps = [
        ("ruff", [sys.executable, "-m", "ruff", "check", "."], REPO_ROOT),
        ("ruff format", [sys.executable, "-m", "ruff", "format", "--check", "."], REPO_ROOT),
        ("dashboards bundle = spec", [sys.executable, "-m", "fleetperf.dashboards.build", "--check"], REPO_ROOT),
        *(
            (f"rustfmt ({crate.parent.name})", ["cargo", "fmt", "--check"], crate)
            for crate in NATIVE_CRATES
            if shutil.which("cargo")  # without cargo nothing native is built: the Python paths run
        ),
        # spotless: the Java is google-java-format's (pom.xml)
        (
            "Java format + JUnit (stream-jobs)",
            ["mvn", "-B", "-ntp", "spotless:check", "test"],
            REPO_ROOT / "stream-jobs",
        ),
        ("pytest (unit + end-to-end)", [sys.executable, "-m", "pytest", *args.pytest_args], REPO_ROOT),
    ]
    failed = []
    for name, cmd, cwd in steps:
        print(f"== {name}", flush=True)
        if subprocess.run(cmd, cwd=cwd).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "run the whole test suite (JUnit, pytest incl. integration, ruff)"
    test = sub.add_parser("test", help=help_, description=help_, epilog=EPILOG)
    test.set_defaults(func=cmd_test)
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments")
