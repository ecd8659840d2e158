"""Superset settings for fleetperf (loaded through SUPERSET_CONFIG_PATH). Metadata in SQLite under
the state directory; the secret key is generated once per state directory by superset_setup."""

from fleetperf import config as _config

_s = _config.load()
_home = _s.state_dir / "superset"

SECRET_KEY = (_home / "secret_key").read_text().strip() if (_home / "secret_key").exists() else "unset"
SQLALCHEMY_DATABASE_URI = f"sqlite:///{_home / 'superset.db'}"
DATA_DIR = str(_home)
# The embedded engine lives in this process; keep Superset's own caches in memory too.
CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache"}
# Chart results: a dashboard opened again within this time is served from memory (live data lags
# by at most this much).
DATA_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": int(_s["superset"]["data_cache_seconds"])}
RATELIMIT_STORAGE_URI = "memory://"
SUPERSET_WEBSERVER_TIMEOUT = 120
TALISMAN_ENABLED = False
FEATURE_FLAGS = {"DASHBOARD_RBAC": False}
