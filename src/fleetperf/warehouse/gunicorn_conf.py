"""gunicorn settings of the warehouse process: ONE worker (it owns the embedded ClickHouse data
path; a second process could not open it), threads for concurrency, no --preload so the master
never touches chDB. The worker starts the sink and the SQL endpoint beside Superset."""

from fleetperf.config import load as _load_settings

_settings = _load_settings()
bind = f"{_settings['superset']['host']}:{_settings['superset']['port']}"
workers = 1
worker_class = "gthread"
threads = _settings["superset"]["threads"]
timeout = 120
preload_app = False


def post_worker_init(worker):  # noqa: ANN001, ANN201 - gunicorn hook signature
    from fleetperf.warehouse import runtime

    worker.fleetperf_sink = runtime.start()


def worker_exit(server, worker):  # noqa: ANN001, ANN201
    sink = getattr(worker, "fleetperf_sink", None)
    if sink is not None:
        sink.stop()
