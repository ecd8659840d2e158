"""stack/process.py: a service that dies at start-up is seen dead at once (docs/faults.md, F7)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleetperf.stack.process import Process


def test_a_service_that_exits_at_start_up_fails_within_a_second_not_after_its_ready_timeout(tmp_path: Path) -> None:
    proc = Process(
        name="dies",
        argv=["sh", "-c", "sleep 1; echo port already in use; exit 3"],  # alive when start() returns
        run_dir=tmp_path / "run",
        log_dir=tmp_path / "logs",
        ready=lambda: False,
        where="nowhere",
        ready_timeout=60,
    )
    proc.start()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="exited during start-up") as err:
        proc.wait_ready()
    assert time.monotonic() - t0 < 5  # an unreaped child (a zombie) counted as running for 60 s
    assert "port already in use" in str(err.value)
    assert not proc.running()
