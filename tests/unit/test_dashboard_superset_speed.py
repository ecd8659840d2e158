"""The speed settings of warehouse/superset_config.py ([superset] sqlite_wal, event_log_batch_seconds):
Superset's SQLite metadata DB in WAL mode, or in SQLite's default journal when switched off, and
the action log written by a background thread instead of inside the request.

The journal mode is read back from SQLite itself (PRAGMA journal_mode on a fresh connection), not
from our setting; the action log rows are checked against what each request logged, in order.
"""

from __future__ import annotations

import importlib
import importlib.util
import sqlite3
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fleetperf import config
from fleetperf.config import PACKAGE_ROOT
from fleetperf.warehouse import credentials
from fleetperf.warehouse import main as warehouse_main

pytest.importorskip("superset")


def _load_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **superset: str) -> ModuleType:
    env = {"FLEETPERF__STATE__DIR": str(tmp_path / "state")}
    env |= {f"FLEETPERF__SUPERSET__{k.upper()}": v for k, v in superset.items()}
    settings = config.load(env)
    credentials.superset_secret_key(settings, create=True)
    # superset_config reads the settings the warehouse process started with
    monkeypatch.setattr(warehouse_main, "_SETTINGS", settings)
    name = f"_fp_superset_config_{len(superset)}_{id(tmp_path)}"
    spec = importlib.util.spec_from_file_location(name, PACKAGE_ROOT / "warehouse" / "superset_config.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def _journal_mode(module: ModuleType, db: Path) -> str:
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
    finally:
        engine.dispose()
    # a plain sqlite3 connection, not through SQLAlchemy: what the file itself says
    raw = sqlite3.connect(db)
    try:
        return str(raw.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    finally:
        raw.close()


def test_metadata_db_in_wal_and_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    db = tmp_path / "meta.db"
    module = _load_config(tmp_path, monkeypatch)
    try:
        assert _journal_mode(module, db) == "wal"
    finally:
        event.remove(Engine, "connect", module._sqlite_pragmas)  # noqa: SLF001
    off = _load_config(tmp_path, monkeypatch, sqlite_wal="false", event_log_batch_seconds="0")
    try:
        assert _journal_mode(off, db) == "delete"
        # switched off: Superset's own logger stays (no EVENT_LOGGER of ours)
        assert not hasattr(off, "EVENT_LOGGER")
    finally:
        event.remove(Engine, "connect", off._sqlite_pragmas)  # noqa: SLF001


def test_action_log_written_off_the_request_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flask import Flask
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    from superset.utils.log import DBEventLogger

    module = _load_config(tmp_path, monkeypatch, event_log_batch_seconds="3600")
    event.remove(Engine, "connect", module._sqlite_pragmas)  # noqa: SLF001
    logger = module.EVENT_LOGGER
    assert isinstance(logger, DBEventLogger)

    written: list[tuple[Any, ...]] = []
    threads: set[str] = set()

    def fake_log(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401
        from flask import current_app

        assert current_app.name == "probe"  # inside the app's context
        threads.add(threading.current_thread().name)
        written.append((*args, kwargs.get("records")))

    monkeypatch.setattr(DBEventLogger, "log", fake_log)
    app = Flask("probe")
    with app.test_request_context():
        for n in range(3):
            logger.log(1, f"action{n}", 7, 12, None, "ref", records=[{"n": n}])
    # nothing written inside the requests: the thread writes every hour here
    assert written == []
    logger.flush()
    assert written == [(1, f"action{n}", 7, 12, None, "ref", [{"n": n}]) for n in range(3)]
    assert threads == {threading.current_thread().name}
    logger.flush()  # nothing left: nothing written twice
    assert len(written) == 3


def test_pivot_with_compiled_aggregates_equals_superset_s_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[superset] compiled_aggregates: Superset's own pivot (the post-processing of every ECharts
    time series with a group-by) gives the same frame with pandas' compiled aggregation as with
    Superset's numpy callables, on NaNs, an all-NaN group, ints and groups of several rows; an
    operator whose numpy result differs (median skips no NaN) or with options stays Superset's."""
    import numpy as np
    import pandas as pd
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    # the modules (the package exports functions of the same names)
    pp_utils, aggregate, pivot = (
        importlib.import_module(f"superset.utils.pandas_postprocessing.{m}") for m in ("utils", "aggregate", "pivot")
    )

    for m in (pp_utils, aggregate, pivot):  # Superset's own back after the test
        monkeypatch.setattr(m, "_get_aggregate_funcs", m._get_aggregate_funcs)  # noqa: SLF001
    module = _load_config(tmp_path, monkeypatch)
    event.remove(Engine, "connect", module._sqlite_pragmas)  # noqa: SLF001
    rng = np.random.default_rng(24)
    n = 3000
    df = pd.DataFrame(
        {
            "__timestamp": pd.to_datetime(rng.integers(0, 40, n), unit="D"),
            "frame": rng.choice(["A", "B", "C", None], n),
            "x": np.where(rng.random(n) < 0.2, np.nan, rng.normal(10, 5, n)),
            "i": rng.integers(-5, 50, n),
        }
    )
    df.loc[df["frame"] == "C", "x"] = np.nan  # a group with nothing but NaN
    ops = ["mean", "sum", "min", "max", "median", "std"]
    aggregates = {f"{c}_{op}": {"column": c, "operator": op} for c in ("x", "i") for op in ops}
    aggregates["x_p90"] = {"column": "x", "operator": "percentile", "options": {"q": 90}}
    kwargs = {"index": ["__timestamp"], "columns": ["frame"], "aggregates": aggregates, "drop_missing_columns": False}
    expected = pivot.pivot(df.copy(), **kwargs)
    original = pivot._get_aggregate_funcs  # noqa: SLF001

    assert module._compiled_aggregates()  # noqa: SLF001
    assert pivot._get_aggregate_funcs is not original  # noqa: SLF001
    funcs = pivot._get_aggregate_funcs(df, aggregates)  # noqa: SLF001
    assert {k for k, f in funcs.items() if isinstance(f.aggfunc, str)} == {
        f"{c}_{op}" for c in ("x", "i") for op in ("mean", "sum", "min", "max")
    }
    got = pivot.pivot(df.copy(), **kwargs)
    pd.testing.assert_frame_equal(got, expected)
    assert got.isna().any().any() and expected.shape[0] == 40  # the NaN cases were there
    # installed once, not wrapped again
    installed = pivot._get_aggregate_funcs  # noqa: SLF001
    assert module._compiled_aggregates()  # noqa: SLF001
    assert pivot._get_aggregate_funcs is installed  # noqa: SLF001


def test_metadata_db_connections_are_pooled_unless_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import create_engine, event, text
    from sqlalchemy.engine import Engine

    module = _load_config(tmp_path, monkeypatch)
    event.remove(Engine, "connect", module._sqlite_pragmas)  # noqa: SLF001
    opened: list[object] = []
    engine = create_engine(f"sqlite:///{tmp_path / 'meta.db'}", **module.SQLALCHEMY_ENGINE_OPTIONS)
    event.listen(engine, "connect", lambda conn, _record: opened.append(conn))
    try:
        for _ in range(3):  # one request after the other: one connection, kept open
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        # requests in threads at once get connections of their own (each used by one thread)
        results: list[int] = []

        def request() -> None:
            with engine.connect() as conn:
                results.append(conn.execute(text("SELECT 2")).scalar())

        workers = [threading.Thread(target=request) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert results == [2, 2, 2, 2] and 1 <= len(opened) <= 4
    finally:
        engine.dispose()
    assert len(opened) >= 1 and opened.count(opened[0]) == 1
    off = _load_config(tmp_path, monkeypatch, metadata_pool="false")
    event.remove(Engine, "connect", off._sqlite_pragmas)  # noqa: SLF001
    assert not hasattr(off, "SQLALCHEMY_ENGINE_OPTIONS")  # Superset's default (NullPool for SQLite files)


def test_permission_answers_are_kept_and_forgotten_when_security_tables_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from sqlalchemy import Column, Integer, String, create_engine, event
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session, declarative_base

    module = _load_config(tmp_path, monkeypatch)
    event.remove(Engine, "connect", module._sqlite_pragmas)  # noqa: SLF001
    asked: list[tuple[Any, ...]] = []

    class SecurityManager:  # the two Flask-AppBuilder checks, counting the questions
        during_ask: Any = None  # what happens elsewhere while the metadata DB is asked

        def exist_permission_on_roles(self, view: str, permission: str, role_ids: list[int]) -> bool:
            asked.append(("roles", view, permission, tuple(role_ids)))
            return view == "Dashboard" and 1 in role_ids

        def is_item_public(self, permission: str, view: str) -> bool:
            asked.append(("public", permission, view))
            if self.during_ask:
                self.during_ask()
            return False

    sm = SecurityManager()
    undo = module._cached_permission_checks(sm, 0.5)  # noqa: SLF001
    base = declarative_base()

    class Role(base):  # type: ignore[misc, valid-type]
        __tablename__ = "ab_role"
        id = Column(Integer, primary_key=True)
        name = Column(String)

    class Log(base):  # type: ignore[misc, valid-type]
        __tablename__ = "logs"
        id = Column(Integer, primary_key=True)

    engine = create_engine("sqlite://")
    base.metadata.create_all(engine)
    try:
        for _ in range(2):
            assert sm.exist_permission_on_roles("Dashboard", "can_read", [2, 1]) is True
            assert sm.exist_permission_on_roles("Dashboard", "can_read", [1, 2]) is True  # same roles
            assert sm.exist_permission_on_roles("Chart", "can_read", [1]) is False
            assert sm.exist_permission_on_roles("Dashboard", "can_read", [3]) is False
            assert sm.is_item_public("can_read", "Dashboard") is False
        assert len(asked) == 4
        with Session(engine) as session:  # another table: the answers stay
            session.add(Log())
            session.commit()
        sm.exist_permission_on_roles("Dashboard", "can_read", [1, 2])
        assert len(asked) == 4
        with Session(engine) as session:  # a role changes: every answer is asked again
            session.add(Role(name="Gamma"))
            session.commit()
        assert sm.exist_permission_on_roles("Dashboard", "can_read", [1, 2]) is True
        assert sm.is_item_public("can_read", "Dashboard") is False
        assert len(asked) == 6
        time.sleep(0.6)  # and when they are older than the configured time
        sm.is_item_public("can_read", "Dashboard")
        assert len(asked) == 7

        def role_changes() -> None:
            with Session(engine) as session:
                session.add(Role(name="Alpha"))
                session.commit()

        time.sleep(0.6)  # an answer asked while a change lands is not kept: it may predate the change
        sm.during_ask = role_changes
        sm.is_item_public("can_read", "Dashboard")
        sm.during_ask = None
        sm.is_item_public("can_read", "Dashboard")
        assert len(asked) == 9
    finally:
        undo()
        engine.dispose()
    sm.is_item_public("can_read", "Dashboard")  # undone: the manager's own check, every time
    sm.is_item_public("can_read", "Dashboard")
    assert len(asked) == 11


def test_chart_animation_off_through_the_themes_unless_switched_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[superset] chart_animation = false: both of Superset's config themes carry
    echartsOptionsOverrides.animation = false (what Superset >= 6.0 merges into every ECharts
    chart's options), their tokens and other overrides kept; true leaves the themes as they are;
    a theme turned off (None) stays off."""
    from superset import config as superset_defaults
    from superset.themes.utils import is_valid_theme

    def app_config() -> dict[str, Any]:
        dark = {**superset_defaults.THEME_DARK, "echartsOptionsOverrides": {"textStyle": {"fontSize": 11}}}
        return {"THEME_DEFAULT": dict(superset_defaults.THEME_DEFAULT), "THEME_DARK": dark}

    class App:
        def __init__(self) -> None:
            self.config = app_config()

    # the mutator's other speed settings need a running Superset: off here
    others = {"compiled_aggregates": "false", "permission_cache_seconds": "0"}
    for setting, animated in (("false", False), ("true", True)):
        module = _load_config(tmp_path, monkeypatch, chart_animation=setting, **others)
        app = App()
        module.FLASK_APP_MUTATOR(app)
        if animated:
            assert app.config == app_config()
            continue
        default, dark = app.config["THEME_DEFAULT"], app.config["THEME_DARK"]
        assert default["echartsOptionsOverrides"] == {"animation": False}
        assert dark["echartsOptionsOverrides"] == {"textStyle": {"fontSize": 11}, "animation": False}
        assert default["token"] == superset_defaults.THEME_DEFAULT["token"]
        assert dark["token"] == superset_defaults.THEME_DARK["token"]
        assert dark["algorithm"] == "dark"
        # Superset's own check of a theme, which clears one it finds invalid before a page gets it
        assert is_valid_theme(default) and is_valid_theme(dark)
        # Superset's own defaults are not changed in place
        assert "echartsOptionsOverrides" not in superset_defaults.THEME_DEFAULT
    module = _load_config(tmp_path, monkeypatch, **others)
    app = App()
    app.config["THEME_DARK"] = None  # Superset's way to turn dark mode off
    module.FLASK_APP_MUTATOR(app)
    assert app.config["THEME_DARK"] is None
    assert app.config["THEME_DEFAULT"]["echartsOptionsOverrides"] == {"animation": False}  # off by default
