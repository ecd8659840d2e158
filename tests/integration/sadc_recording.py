"""Record a sysstat file here and now with Debian's sadc, under CPU and loopback network load."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from fleetperf.stack import install


def _loopback_traffic(stop: threading.Event) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    chunk = b"x" * 65536

    def drain() -> None:
        while peer.recv(1 << 20):
            pass

    threading.Thread(target=drain, daemon=True).start()
    while not stop.is_set():
        client.sendall(chunk)
        time.sleep(0.001)
    client.close()
    peer.close()
    server.close()


def record(path: Path, samples: int, interval_s: int = 1, sadc: Path | None = None) -> Path:
    """`sadc -S XALL interval samples path` while one CPU spins and loopback carries traffic
    (sadc: that binary; default Debian's, installed when missing)."""
    if sadc is None:
        sadc, _ = install.sysstat()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    stop = threading.Event()
    traffic = threading.Thread(target=_loopback_traffic, args=(stop,), daemon=True)
    traffic.start()
    try:
        cmd = [str(sadc), "-S", "XALL", str(interval_s), str(samples), str(path)]
        subprocess.run(cmd, check=True, timeout=samples * interval_s + 60)
    finally:
        stop.set()
        busy.kill()
        busy.wait()
        traffic.join(timeout=5)
    return path
