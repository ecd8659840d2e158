"""Superset settings for fleetperf (loaded through SUPERSET_CONFIG_PATH). Metadata in SQLite under
the state directory (0700). The secret key is generated once by superset_setup into
<state>/secrets (0600): without it Superset does not start (no constant fallback: a known key lets
anyone forge an admin session)."""

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
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
WTF_CSRF_ENABLED = True
PREVENT_UNSAFE_DB_CONNECTIONS = True
# Every ClickHouse connection Superset opens on the embedded engine goes through the read-only
# dialect (readonly=1, limits, the statement check), even one an admin adds by hand.
DB_CONNECTION_MUTATOR = _clickhouse.superset_connection_mutator
FEATURE_FLAGS = {"DASHBOARD_RBAC": False}
