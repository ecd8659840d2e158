"""Host identity shared by all collectors: '<serial>-<lpar id>' where the platform gives them (AIX,
as the nmon collector derives it from AAA,SerialNumber and AAA,LPARNumberName), else the host name."""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class HostIdentity:
    host_id: str
    hostname: str


def local_identity() -> HostIdentity:
    """On AIX: `uname -u` (IBM,<serial>) and `uname -L` ('<lpar id> <lpar name>'); elsewhere the host name."""
    hostname = socket.gethostname().split(".")[0]
    if shutil.which("uname"):
        serial = _run(["uname", "-u"]).split(",")[-1].strip()
        lpar = _run(["uname", "-L"]).split()
        if serial and lpar and lpar[0].isdigit() and int(lpar[0]) > 0:
            return HostIdentity(f"{serial}-{lpar[0]}", hostname)
    return HostIdentity(hostname, hostname)


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
