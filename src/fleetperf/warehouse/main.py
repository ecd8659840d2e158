"""The warehouse process: `python -m fleetperf.warehouse.main` (what `./fleetperf up` and the
container start). It loads the settings once, owns the embedded ClickHouse (chDB allows one process
per data path), starts the Kafka->ClickHouse sink and the SQL endpoint beside Superset, and serves
Superset's WSGI app through gunicorn embedded as a library.

One gunicorn worker, threads for concurrency: a second worker process could not open the data
path. The master never touches chDB (the app is loaded in the worker, after the fork), so the
worker is the only process that opens it; the settings the master loaded reach the worker by the
fork, not through the environment.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from fleetperf import config
from fleetperf.config import PACKAGE_ROOT

log = logging.getLogger("fleetperf.warehouse")
_SETTINGS: config.Settings | None = None
# how long a stopping worker waits for the sink to commit and leave its consumer group (it takes
# well under a second: one consume() timeout, the batch in flight, the LeaveGroup). The worker gets
# here after its HTTP requests in flight are done; gunicorn kills it GRACEFUL_SECONDS after the
# SIGTERM, as `./fleetperf down` does (stack/process.py) and compose (stop_grace_period)
SINK_STOP_SECONDS = 15.0
GRACEFUL_SECONDS = 30


def settings() -> config.Settings:
    """The settings this process was started with (superset_config.py reads them from here)."""
    global _SETTINGS
    if _SETTINGS is None:  # imported outside main(): a `superset` CLI call of the one-time set-up
        _SETTINGS = config.load()
    return _SETTINGS


def start_services(s: config.Settings) -> Any:  # noqa: ANN401 - the Sink, imported late
    """The sink (a thread) and the SQL endpoint (threads) inside the process that owns the data path."""
    from fleetperf.warehouse import clickhouse, query_server
    from fleetperf.warehouse.sink import Sink

    ch, ran = clickhouse.migrate(s)
    if ran:
        log.info("applied migrations: %s", ", ".join(ran))
    sink = Sink(s, ch)
    sink.start()
    w = s["warehouse"]
    try:
        query_ch = clickhouse.client(s, s["clickhouse"]["database"])
        query_server.serve(w["host"], w["query_port"], query_ch, s["clickhouse"]["database"], sink.stats, settings=s)
    except BaseException:  # e.g. the port taken: the worker fails; its sink leaves the group first
        sink.stop(wait=SINK_STOP_SECONDS)
        raise
    log.info("sink and SQL endpoint started (SQL on %s)", s.query_url)
    return sink


class WarehouseApp(BaseApplication):
    def __init__(self, s: config.Settings) -> None:
        self.s = s
        self.sink: Any = None
        super().__init__()

    def load_config(self) -> None:
        sup = self.s["superset"]
        for key, value in {
            "bind": f"{sup['host']}:{sup['port']}",
            "workers": 1,
            "worker_class": "gthread",
            "threads": sup["threads"],
            "timeout": 120,
            "graceful_timeout": GRACEFUL_SECONDS,
            "preload_app": False,
            "worker_exit": self._worker_exit,
        }.items():
            self.cfg.set(key, value)
        # opt-in access log with each request's duration (bench/dashboards.py --server-log): where a
        # dashboard open spends its time on the server side
        access_log = os.environ.get("FLEETPERF_WAREHOUSE_ACCESS_LOG")
        if access_log:
            self.cfg.set("accesslog", access_log)
            self.cfg.set("access_log_format", '%(t)s "%(r)s" %(s)s %(B)s %(M)sms')

    def load(self) -> Any:  # noqa: ANN401 - a WSGI app
        os.environ.setdefault("SUPERSET_CONFIG_PATH", str(PACKAGE_ROOT / "warehouse" / "superset_config.py"))
        self.sink = start_services(self.s)
        from superset.app import create_app

        from fleetperf.warehouse.sink import quiet_gc

        app = create_app()
        quiet_gc()  # Superset's app is loaded for the life of the worker
        return app

    def _worker_exit(self, server: Any, worker: Any) -> None:  # noqa: ANN401 - gunicorn hook
        if self.sink is not None:
            self.sink.stop(wait=SINK_STOP_SECONDS)


def main() -> int:
    global _SETTINGS
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _SETTINGS = config.load()
    WarehouseApp(_SETTINGS).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
