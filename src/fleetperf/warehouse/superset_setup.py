"""Superset's one-time set-up (metadata DB, admin, roles) and the import of dashboards/bundle.

Both run as `superset` CLI calls before the warehouse process starts, i.e. while no process
holds the embedded ClickHouse data path."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from fleetperf.config import PACKAGE_ROOT, Settings
from fleetperf.warehouse.clickhouse import sqlalchemy_uri

BUNDLE = PACKAGE_ROOT / "dashboards" / "bundle"


def _superset(env: dict[str, str], *args: str) -> str:
    exe = str(Path(sys.executable).parent / "superset")
    result = subprocess.run([exe, *args], env={**os.environ, **env}, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"superset {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout + result.stderr


def prepare(settings: Settings, env: dict[str, str]) -> None:
    home = settings.state_dir / "superset"
    home.mkdir(parents=True, exist_ok=True)
    key = home / "secret_key"
    if not key.exists():
        key.write_text(secrets.token_urlsafe(42))
    marker = home / "initialised"
    if not marker.exists():
        sup = settings["superset"]
        _superset(env, "db", "upgrade")
        _superset(
            env,
            "fab",
            "create-admin",
            "--username",
            sup["admin_user"],
            "--firstname",
            "fleet",
            "--lastname",
            "admin",
            "--email",
            "admin@localhost",
            "--password",
            sup["admin_password"],
        )
        _superset(env, "init")
        marker.write_text("ok\n")
    import_bundle(settings, env)


def bundle_zip(settings: Settings, target: Path) -> Path:
    """Zips dashboards/bundle with the configured database URI filled in."""
    with zipfile.ZipFile(target, "w") as zf:
        for path in sorted(BUNDLE.rglob("*.yaml")):
            text = path.read_text().replace("${SQLALCHEMY_URI}", sqlalchemy_uri(settings))
            zf.writestr(f"fleetperf_bundle/{path.relative_to(BUNDLE)}", text)
    return target


def import_bundle(settings: Settings, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = bundle_zip(settings, Path(tmp) / "fleetperf_bundle.zip")
        out = _superset(env, "import-dashboards", "-p", str(archive), "-u", settings["superset"]["admin_user"])
    if "error" in out.lower() and "success" not in out.lower():
        raise RuntimeError(f"dashboard import reported a problem:\n{out[-3000:]}")
