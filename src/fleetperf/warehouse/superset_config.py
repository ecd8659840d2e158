"""Superset settings for fleetperf (loaded through SUPERSET_CONFIG_PATH). Metadata in SQLite under
the state directory (0700). The secret key is generated once by superset_setup into
<state>/secrets (0600): without it Superset does not start (no constant fallback: a known key lets
anyone forge an admin session)."""

import os as _os
from typing import Any as _Any

from fleetperf.warehouse import clickhouse as _clickhouse
from fleetperf.warehouse import credentials as _credentials
from fleetperf.warehouse.main import settings as _settings

_s = _settings()
_home = _credentials.private_dir(_s.state_dir / "superset")

SECRET_KEY = _credentials.superset_secret_key(_s)
SQLALCHEMY_DATABASE_URI = f"sqlite:///{_home / 'superset.db'}"
DATA_DIR = str(_home)
# The embedded engine lives in this process; keep Superset's own caches in memory too.
CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache"}
# Chart results: a dashboard opened again within this time is served from memory (live data lags
# by at most this much).
DATA_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": int(_s["superset"]["data_cache_seconds"])}
RATELIMIT_STORAGE_URI = "memory://"
SUPERSET_WEBSERVER_TIMEOUT = 120
# Security headers (CSP, X-Frame-Options, nosniff...) with Superset's own Talisman policy; cookies
# HttpOnly and SameSite=Lax, CSRF on, unsafe connections (SQLite files...) refused.
TALISMAN_ENABLED = True
# Superset's own policy allows images and connections to third parties, and its page embeds a
# tracking pixel (apachesuperset.gateway.scarf.sh, with the version, on every page: seen in the
# browser's resource list, bench/dashboards.py): every user's browser would report to the network.
# Ours allows this server only; the dashboards need nothing else (no maps, no web fonts).
TALISMAN_CONFIG = {
    "content_security_policy": {
        "base-uri": ["'self'"],
        "default-src": ["'self'"],
        "img-src": ["'self'", "blob:", "data:"],
        "worker-src": ["'self'", "blob:"],
        "connect-src": ["'self'"],
        "object-src": "'none'",
        "style-src": ["'self'", "'unsafe-inline'"],
        "font-src": ["'self'"],
        "script-src": ["'self'", "'strict-dynamic'"],
        "frame-ancestors": ["'self'"],
    },
    "content_security_policy_nonce_in": ["script-src"],
    "force_https": False,
    "session_cookie_secure": False,
}
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
WTF_CSRF_ENABLED = True
PREVENT_UNSAFE_DB_CONNECTIONS = True
# Every ClickHouse connection Superset opens on the embedded engine goes through the read-only
# dialect (readonly=1, limits, the statement check), even one an admin adds by hand.
DB_CONNECTION_MUTATOR = _clickhouse.superset_connection_mutator
FEATURE_FLAGS = {"DASHBOARD_RBAC": False}

# --- speed of a dashboard open (bench/dashboards.py; README, Dashboards) ---------------------------
# Measured on the 1,000-host bench fleet with py-spy in the warehouse process: a third of the
# threads' time while serving chart data went to Superset's action log (one INSERT + COMMIT into
# the SQLite metadata DB per request) and to SQLite's locks, since a writer in SQLite's default
# rollback journal blocks every reader (the permission checks of every concurrent API call).
_sup = _s["superset"]


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    # WAL: readers never wait for the writer; synchronous=NORMAL is durable across a crash of the
    # process (may lose the last commits only on a power loss: metadata, logs, filter states).
    # Superset's metadata DB is the only SQLite database here (PREVENT_UNSAFE_DB_CONNECTIONS).
    import sqlite3

    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA busy_timeout=10000")
        if _sup.get("sqlite_wal", True):
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        elif str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            # back to SQLite's default (bench/dashboards.py --baseline): the mode is kept in the
            # file, and only a connection alone on it can leave WAL (the first one of a start)
            try:
                cursor.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.OperationalError as exc:
                import logging

                logging.getLogger("fleetperf.superset").warning("metadata DB stays in WAL: %s", exc)
    finally:
        cursor.close()


def _install_sqlite_pragmas() -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not event.contains(Engine, "connect", _sqlite_pragmas):
        event.listen(Engine, "connect", _sqlite_pragmas)


_install_sqlite_pragmas()

# SQLAlchemy 1.4 (Superset's) opens a SQLite file with NullPool: every request's permission checks
# opened the metadata DB, ran the pragmas above and closed it again, and the close of the last
# connection checkpoints the WAL. py-spy over a bench/dashboards.py run (1,000 hosts x 365 days):
# 11 % of the warehouse process's samples. A pool keeps the connections open (what SQLAlchemy 2
# does for SQLite files); each one is used by one thread at a time, hence check_same_thread off.
if _sup.get("metadata_pool", True):
    from sqlalchemy.pool import QueuePool as _QueuePool

    SQLALCHEMY_ENGINE_OPTIONS = {
        "poolclass": _QueuePool,
        "pool_size": int(_sup["threads"]) + 2,  # the request threads, the action log, one spare
        "max_overflow": int(_sup["threads"]),
        "connect_args": {"check_same_thread": False},
    }


def _batched_event_logger(seconds: float):  # noqa: ANN202 - a superset.utils.log.AbstractEventLogger
    """Superset's action log (the `logs` table: who opened which dashboard and chart, the welcome
    page's recent activity) written by a background thread every `seconds`, in one app context
    for all that waited (Superset's DBEventLogger.log, which commits each entry: cheap in WAL
    mode, on a pooled connection), instead of a commit inside every request. Bounded: at most
    10,000 entries wait; more are dropped with a warning (an action log entry, never data)."""
    import atexit
    import logging
    import queue
    import threading
    import time

    from superset.utils.log import DBEventLogger

    log = logging.getLogger("fleetperf.superset.events")

    class BatchedDBEventLogger(DBEventLogger):
        def __init__(self) -> None:
            super().__init__()
            self._queue: queue.Queue = queue.Queue(maxsize=10_000)
            self._started = False
            self._start_lock = threading.Lock()
            self._app = None

        def log(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - DBEventLogger.log's signature
            try:
                self._queue.put_nowait((args, kwargs))
            except queue.Full:
                log.warning("action log: 10,000 entries waiting, entry dropped")
                return
            if not self._started:
                self._start()

        def _start(self) -> None:
            from flask import current_app

            with self._start_lock:
                if self._started:
                    return
                self._app = current_app._get_current_object()  # noqa: SLF001 - the app for the thread
                threading.Thread(target=self._run, name="fleetperf-action-log", daemon=True).start()
                atexit.register(self.flush)
                self._started = True

        def _run(self) -> None:
            while True:
                time.sleep(seconds)
                try:
                    self.flush()
                except Exception:  # noqa: BLE001 - the thread must outlive one failed write
                    log.exception("action log: entries not written")

        def flush(self) -> None:
            entries = []
            while True:
                try:
                    entries.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if not entries or self._app is None:
                return
            with self._app.app_context():
                for args, kwargs in entries:
                    # DBEventLogger.log commits each entry; inside one app context they share the
                    # session and the SQLite writer lock briefly, off the request threads
                    DBEventLogger.log(self, *args, **kwargs)

    return BatchedDBEventLogger()


if float(_sup.get("event_log_batch_seconds", 1.0)) > 0:
    EVENT_LOGGER = _batched_event_logger(float(_sup.get("event_log_batch_seconds", 1.0)))


def _sql_log(path: str):  # noqa: ANN202 - Superset's QUERY_LOGGER callable
    """Opt-in (env FLEETPERF_SUPERSET_SQL_LOG=<file>): every statement Superset sends to the
    warehouse, one JSON line each, to time them on the engine alone (bench/dashboards.py findings)."""
    import json
    import threading

    lock = threading.Lock()

    def log(_url: object, sql: str, *_args: object, **_kwargs: object) -> None:
        with lock, open(path, "a") as f:
            f.write(json.dumps({"sql": sql}) + "\n")

    return log


if _os.environ.get("FLEETPERF_SUPERSET_SQL_LOG"):
    QUERY_LOGGER = _sql_log(_os.environ["FLEETPERF_SUPERSET_SQL_LOG"])


# pandas' own (compiled) aggregation for the operators whose result is the same as numpy's on a
# pandas Series: np.mean(series) is series.mean() (NaN skipped), likewise sum, min and max; not
# median (np.median of a Series with a NaN is NaN, pandas skips it).
_PANDAS_AGGREGATES = frozenset({"mean", "sum", "min", "max"})


def _compiled_aggregates() -> bool:
    """Superset's pivot (every ECharts time-series chart with a group-by sends one, operator
    "mean") hands pandas `partial(np.mean)`, which pandas cannot map to its compiled groupby, so
    it calls it once per group in Python: 77 % of the capacity forecast's chart-data request
    (py-spy, 11,375 rows x 4 metrics: 1.8 s of 2.1 s). With the operator's name pandas runs its
    compiled mean; the result is the same (tests/unit/test_dashboard_superset_speed.py compares
    both on NaNs, ints and repeated groups). Other operators, options and callables stay Superset's.
    Returns False, changing nothing, when this Superset has no such function."""
    import importlib
    import logging

    from pandas import NamedAgg

    try:  # the modules: the package exports functions of the same names
        package = "superset.utils.pandas_postprocessing"
        pp_utils, aggregate, pivot = (
            importlib.import_module(f"{package}.{m}") for m in ("utils", "aggregate", "pivot")
        )
    except ImportError:  # pragma: no cover - another Superset layout
        return False
    original = getattr(pp_utils, "_get_aggregate_funcs", None)
    if original is None or getattr(original, "_fleetperf", False):
        return original is not None
    if not all(getattr(m, "_get_aggregate_funcs", None) is original for m in (aggregate, pivot)):
        logging.getLogger(__name__).warning("Superset's post-processing changed: pivot aggregates left as they are")
        return False

    def get_aggregate_funcs(df: _Any, aggregates: dict[str, dict[str, _Any]]) -> dict[str, _Any]:
        funcs = original(df, aggregates)  # Superset's checks and errors, unchanged
        for name, agg in aggregates.items():
            operator = agg.get("operator")
            if isinstance(operator, str) and operator in _PANDAS_AGGREGATES and not agg.get("options"):
                funcs[name] = NamedAgg(column=funcs[name].column, aggfunc=operator)
        return funcs

    get_aggregate_funcs._fleetperf = True  # type: ignore[attr-defined]
    for module in (pp_utils, aggregate, pivot):
        module._get_aggregate_funcs = get_aggregate_funcs  # type: ignore[attr-defined]
    return True


_SECURITY_TABLES = "ab_"  # Flask-AppBuilder's users, roles, permissions and their links


def _cached_permission_checks(sm: _Any, seconds: float) -> _Any:  # noqa: ANN401 - Superset's security manager
    """Every API call asks the metadata DB whether the user's roles, and the Public role, hold
    the permission it needs (Flask-AppBuilder's exist_permission_on_roles and is_item_public: a
    query each, several per dashboard open): 11 % of the warehouse process's py-spy samples over
    bench/dashboards.py. Their answers are kept for `seconds`. A change of users, roles or
    permissions made through this Superset (its UI, API, `superset` commands in this process)
    empties the cache when it is flushed and again when it commits; one made elsewhere (another
    process, SQL on the metadata DB) applies after at most `seconds`. Returns what undoes this."""
    import threading
    import time
    from itertools import chain

    from sqlalchemy import event
    from sqlalchemy.orm import Session

    answers: dict[tuple[_Any, ...], tuple[float, bool]] = {}
    lock = threading.Lock()
    # bumped by every forgetting: an answer asked before a change and stored after it is dropped
    generation = [0]
    exist_permission_on_roles, is_item_public = sm.exist_permission_on_roles, sm.is_item_public

    def remembered(key: tuple[_Any, ...], ask: _Any) -> bool:  # noqa: ANN401
        now = time.monotonic()
        with lock:
            kept, asked_in = answers.get(key), generation[0]
        if kept is not None and now - kept[0] < seconds:
            return kept[1]
        answer = bool(ask())
        with lock:
            if generation[0] == asked_in:
                if len(answers) >= 10_000:  # bounded whatever the callers ask
                    answers.clear()
                answers[key] = (now, answer)
        return answer

    def forget() -> None:
        with lock:
            answers.clear()
            generation[0] += 1

    def exist_on_roles(view_name: str, permission_name: str, role_ids: list[int]) -> bool:
        key = ("roles", view_name, permission_name, tuple(sorted(role_ids)))
        return remembered(key, lambda: exist_permission_on_roles(view_name, permission_name, role_ids))

    def item_public(permission_name: str, view_name: str) -> bool:
        return remembered(("public", permission_name, view_name), lambda: is_item_public(permission_name, view_name))

    def forget_on_security_change(session: _Any, *_: _Any) -> None:  # noqa: ANN401
        changed = chain(session.new, session.dirty, session.deleted)
        if any(str(getattr(obj, "__tablename__", "")).startswith(_SECURITY_TABLES) for obj in changed):
            session.info["fleetperf_security_changed"] = True
            forget()

    def forget_on_commit(session: _Any) -> None:  # noqa: ANN401 - answers cached between flush and commit
        if session.info.pop("fleetperf_security_changed", False):
            forget()

    listeners = [
        ("after_flush", forget_on_security_change),
        ("after_commit", forget_on_commit),
        ("after_rollback", forget_on_commit),
    ]
    for name, listener in listeners:
        event.listen(Session, name, listener)
    sm.exist_permission_on_roles = exist_on_roles
    sm.is_item_public = item_public

    def undo() -> None:
        """The security manager's own checks again (tests)."""
        for name, listener in listeners:
            event.remove(Session, name, listener)
        sm.exist_permission_on_roles, sm.is_item_public = exist_permission_on_roles, is_item_public

    return undo


def _without_chart_animation(app_config: dict[str, _Any]) -> None:
    """Every ECharts chart drawn once when its data arrives, without its entry animation: the
    themes' `echartsOptionsOverrides` (Superset >= 6.0 merges them into every ECharts chart's
    options) get animation off. A theme an admin makes the system default in Superset's UI
    replaces these."""
    for key in ("THEME_DEFAULT", "THEME_DARK"):
        theme = app_config.get(key)
        if theme:
            overrides = {**theme.get("echartsOptionsOverrides", {}), "animation": False}
            app_config[key] = {**theme, "echartsOptionsOverrides": overrides}


def FLASK_APP_MUTATOR(_app: object) -> None:  # noqa: N802 - Superset's config name
    if not _sup.get("chart_animation", False):
        _without_chart_animation(_app.config)  # type: ignore[attr-defined]
    # after Superset's modules are loaded (importing them while this file is read would be circular)
    if _sup.get("compiled_aggregates", True):
        _compiled_aggregates()
    permission_seconds = float(_sup.get("permission_cache_seconds", 10))
    if permission_seconds > 0:
        _cached_permission_checks(_app.appbuilder.sm, permission_seconds)  # type: ignore[attr-defined]
