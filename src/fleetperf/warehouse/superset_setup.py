"""Superset's one-time set-up (metadata DB, roles, admin) and the import of dashboards/bundle.

Both run as `superset` CLI calls before the warehouse process starts, i.e. while no process
holds the embedded ClickHouse data path.

No default credentials: the admin password is FLEETPERF_SUPERSET_ADMIN_PASSWORD when set, else
generated at the first start and printed once; either way it is kept in
<state>/secrets/superset_admin_password (0600) and handed to Superset on stdin, never on a command
line (`ps` shows those to every local user). The secret key is generated likewise."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from fleetperf.config import PACKAGE_ROOT, Settings
from fleetperf.warehouse import credentials
from fleetperf.warehouse.clickhouse import sqlalchemy_uri

BUNDLE = PACKAGE_ROOT / "dashboards" / "bundle"

# Creates the admin or resets its password inside Superset's app context; the password arrives on stdin.
_SET_ADMIN = """
import json, sys
data = json.load(sys.stdin)
from superset.app import create_app
app = create_app()
with app.app_context():
    from superset import security_manager as sm
    user = sm.find_user(username=data["user"])
    if user is None:
        role = sm.find_role(sm.auth_role_admin)
        if not sm.add_user(data["user"], "fleet", "admin", "admin@localhost", role, password=data["password"]):
            sys.exit("could not create the Superset admin user")
    else:
        sm.reset_password(user.id, data["password"])
print("admin password set")
"""


# Imports the bundle with every asset overwritten. `superset import-dashboards` overwrites the
# dashboards only: it imports their charts and datasets with overwrite=False (Superset's
# ImportDashboardsCommand), so a chart or dataset changed by a new release (sql/034 moved charts to
# entity_daily) kept its old definition in an existing Superset. Datasets, then charts, then
# dashboards, each with its own command (each checks metadata.yaml's type).
_IMPORT = """
import sys
from zipfile import ZipFile
data = {"user": sys.argv[1], "path": sys.argv[2]}
from superset.app import create_app
app = create_app()
with app.app_context():
    from flask import g
    from superset import security_manager as sm
    from superset.commands.chart.importers.dispatcher import ImportChartsCommand
    from superset.commands.dashboard.importers.dispatcher import ImportDashboardsCommand
    from superset.commands.dataset.importers.dispatcher import ImportDatasetsCommand
    from superset.commands.importers.v1.utils import get_contents_from_bundle
    g.user = sm.find_user(username=data["user"])
    with ZipFile(data["path"]) as bundle:
        contents = get_contents_from_bundle(bundle)
    meta = next(k for k in contents if k.endswith("metadata.yaml"))
    for command, kind in ((ImportDatasetsCommand, "SqlaTable"), (ImportChartsCommand, "Slice"),
                          (ImportDashboardsCommand, "Dashboard")):
        typed = dict(contents)
        typed[meta] = contents[meta].replace("type: Dashboard", f"type: {kind}")
        command(typed, overwrite=True).run()
print("imported with overwrite")
"""


def _superset(env: dict[str, str], *args: str) -> str:
    exe = str(Path(sys.executable).parent / "superset")
    result = subprocess.run([exe, *args], env={**os.environ, **env}, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"superset {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout + result.stderr


def _set_admin_password(env: dict[str, str], user: str, password: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SET_ADMIN],
        input=json.dumps({"user": user, "password": password}),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"setting the Superset admin password failed:\n{result.stderr[-3000:]}")


def ensure_admin(settings: Settings, env: dict[str, str], environ: dict[str, str] | None = None) -> str | None:
    """Makes the admin's password the wanted one; returns it when it was generated now (to show once)."""
    environ = os.environ if environ is None else environ
    path = credentials.superset_admin_password_path(settings)
    stored = credentials.superset_admin_password(settings) if path.exists() else None
    generated = None
    wanted = environ.get(credentials.ADMIN_PASSWORD_ENV) or stored
    if not wanted:
        wanted = generated = secrets.token_urlsafe(18)
    if wanted != stored:
        _set_admin_password(env, settings["superset"]["admin_user"], wanted)
        credentials.store(settings, path.name, wanted)
    return generated


def prepare(settings: Settings, env: dict[str, str]) -> None:
    credentials.private_dir(settings.state_dir)
    home = credentials.private_dir(settings.state_dir / "superset")
    old_key = home / "secret_key"
    if old_key.exists():
        # the key of earlier versions was written 0644 (readable by every local user): replace it
        old_key.unlink()
    credentials.superset_secret_key(settings, create=True)
    marker = home / "initialised"
    if not marker.exists():
        _superset(env, "db", "upgrade")
        _superset(env, "init")
        marker.write_text("ok\n")
    generated = ensure_admin(settings, env)
    if generated:
        print(
            f"  Superset admin password (shown once; kept in {credentials.superset_admin_password_path(settings)}): "
            f"{generated}",
            flush=True,
        )
    import_bundle(settings, env)


def bundle_zip(settings: Settings, target: Path) -> Path:
    """Zips dashboards/bundle with the configured (read-only) database URI filled in."""
    with zipfile.ZipFile(target, "w") as zf:
        for path in sorted(BUNDLE.rglob("*.yaml")):
            text = path.read_text().replace("${SQLALCHEMY_URI}", sqlalchemy_uri(settings))
            zf.writestr(f"fleetperf_bundle/{path.relative_to(BUNDLE)}", text)
    return target


def import_bundle(settings: Settings, env: dict[str, str]) -> None:
    # the archive holds the database URI (with the read user's password on a server): private dir
    with tempfile.TemporaryDirectory(dir=credentials.secrets_dir(settings)) as tmp:
        archive = bundle_zip(settings, Path(tmp) / "fleetperf_bundle.zip")
        result = subprocess.run(
            # user name and archive path only on the command line: no secret (the archive is 0600)
            [sys.executable, "-c", _IMPORT, settings["superset"]["admin_user"], str(archive)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
    if result.returncode != 0:
        raise RuntimeError(f"dashboard import reported a problem:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
