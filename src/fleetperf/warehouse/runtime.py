"""Starts the sink and the SQL endpoint inside the process that owns the ClickHouse data path."""

from __future__ import annotations

import logging
import threading

from fleetperf import config
from fleetperf.warehouse import clickhouse, query_server
from fleetperf.warehouse.sink import Sink

log = logging.getLogger("fleetperf.warehouse")


def start() -> Sink:
    settings = config.load()
    ch, ran = clickhouse.migrate(settings)
    if ran:
        log.info("applied migrations: %s", ", ".join(ran))
    sink = Sink(settings, ch)
    threading.Thread(target=sink.run, name="fleetperf-sink", daemon=True).start()
    w = settings["warehouse"]
    query_ch = clickhouse.client(settings, settings["clickhouse"]["database"])
    query_server.serve(w["host"], w["query_port"], query_ch, settings["clickhouse"]["database"], sink.stats)
    log.info("sink and SQL endpoint started (SQL on %s)", settings.query_url)
    return sink
