"""Secrets of one installation, generated on first use and kept where only their owner reads them.

Everything lives in <state>/secrets, a directory of mode 0700 whose files have mode 0600 (created
so, never written wider and then narrowed): the SQL endpoint's token, its separate admin token,
Superset's SECRET_KEY and Superset's admin password. The state directory itself is made 0700 too:
it holds the embedded ClickHouse data, which a local user could otherwise read from the files.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from fleetperf.config import Settings

ADMIN_PASSWORD_ENV = "FLEETPERF_SUPERSET_ADMIN_PASSWORD"


class CredentialError(RuntimeError):
    pass


def private_dir(path: Path) -> Path:
    """Creates `path` with mode 0700, or narrows it to 0700 when it is ours and wider."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.stat()
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o700)
    return path


def secrets_dir(settings: Settings) -> Path:
    private_dir(settings.state_dir)
    return private_dir(settings.state_dir / "secrets")


def _read(path: Path) -> str:
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077:
        if info.st_uid != os.geteuid():
            raise CredentialError(f"{path} is readable by others and not ours to fix (mode {info.st_mode:o})")
        path.chmod(0o600)
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    """Writes a secret with mode 0600 from the first byte (O_CREAT with the mode, then replace)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    os.replace(tmp, path)


def secret(settings: Settings, name: str, make: Callable[[], str] | None = None) -> str:
    """The secret `name`; generated with `make` when missing (None: missing is an error)."""
    path = secrets_dir(settings) / name
    if path.exists():
        return _read(path)
    if make is None:
        raise CredentialError(f"{path} does not exist yet: start the warehouse once (./fleetperf up)")
    value = make()
    _write(path, value)
    return value


def store(settings: Settings, name: str, value: str) -> None:
    _write(secrets_dir(settings) / name, value)


def _token() -> str:
    return secrets.token_urlsafe(32)


def sql_token(settings: Settings, create: bool = False) -> str:
    """Bearer token of the SQL endpoint's read-only queries (`fleetperf sql`, tests)."""
    return secret(settings, "sql_token", _token if create else None)


def admin_token(settings: Settings, create: bool = False) -> str:
    """Bearer token of the endpoint's admin actions (rollup rebuild); a read token does not do."""
    return secret(settings, "admin_token", _token if create else None)


def superset_secret_key(settings: Settings, create: bool = False) -> str:
    return secret(settings, "superset_secret_key", (lambda: secrets.token_urlsafe(48)) if create else None)


def superset_admin_password_path(settings: Settings) -> Path:
    return secrets_dir(settings) / "superset_admin_password"


def superset_admin_password(settings: Settings) -> str:
    """The Superset admin password as stored at the first start (tests and the demo read it here)."""
    return secret(settings, "superset_admin_password")
