"""Start, watch and stop one background process: PID file, log file, readiness probe."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return 200 <= response.status < 300
    except OSError:
        return False


@dataclass
class Process:
    name: str
    argv: list[str]
    run_dir: Path
    log_dir: Path
    ready: Callable[[], bool]
    where: str
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    ready_timeout: float = 120.0

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.log_dir / f"{self.name}.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        # an exited child of this process stays a zombie, which signal 0 still finds, until it is
        # reaped: reap it here, so a service that died at start-up (e.g. its port taken) is seen
        # dead at once instead of after the whole ready timeout (docs/faults.md, F7)
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return None
        except ChildProcessError:  # not our child: its parent reaps it; a zombie shows as state Z
            try:
                if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    return None
            except (OSError, IndexError):
                pass
        return pid

    def running(self) -> bool:
        return self.pid() is not None

    def start(self) -> None:
        if self.running():
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_file, "ab")
        proc = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.cwd,
            env={**os.environ, **self.env},
            start_new_session=True,  # its own process group, so stop() reaches its children
        )
        log.close()
        self.pid_file.write_text(str(proc.pid))

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError(f"{self.name} exited during start-up; last log lines:\n{self.tail()}")
            if self.ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} not ready after {self.ready_timeout:.0f}s; last log lines:\n{self.tail()}")

    def stop(self, timeout: float = 30.0) -> None:
        pid = self.pid()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _group_alive(pid):
                time.sleep(0.2)
            if _group_alive(pid):
                os.killpg(pid, signal.SIGKILL)
                while _group_alive(pid):
                    time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def running(pid: int) -> bool:
    """A process that is not our child (nmon forks itself into the background) still runs: one that
    exited and was not reaped yet (a zombie, where init does not reap) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # a zombie leader still counts for killpg; reap it if it is our child
    try:
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
