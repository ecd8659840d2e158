"""SQL over HTTP for the embedded engine: only the warehouse process may open the chDB data path,
so the CLI (`fleetperf sql`) and the tests query through this endpoint. Bound to 127.0.0.1.

POST /query  body: one SQL statement, Content-Type: application/sql,
             Authorization: Bearer <sql token>       ->  {"columns": [...], "rows": [[...], ...]}
POST /rollups/rebuild?from=YYYY-MM-DD&to=YYYY-MM-DD, Authorization: Bearer <admin token>
             -> rows per rollup table
GET  /ping   -> ok (no token: the readiness probe);   GET /stats (sql token) -> sink counters and lag

What keeps it a read-only door (SECURITY.md):
- statements run on `clickhouse.read_client`: readonly=1 at the engine, limits on time, result and
  memory, the parser check that refuses INTO OUTFILE, file()/url()/remote()... and anything but
  SELECT/SHOW/EXPLAIN/DESCRIBE;
- a bearer token generated at the first start (<state>/secrets/sql_token, mode 0600 in a 0700
  directory); the rollup rebuild, which writes, takes a separate admin token;
- the Host header must name a loopback address or a configured name ([warehouse] allowed_hosts,
  comma-separated): a DNS-rebinding page's host name is refused;
- a POST must say Content-Type: application/sql and carry the Authorization header, which a web
  page can only send after a CORS preflight this server never grants; a request with an Origin
  header is refused outright (browsers set it on cross-site requests; the CLI never does).
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Callable
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from clickhouse_connect.driver.client import Client

from fleetperf import config
from fleetperf.warehouse import clickhouse, credentials, rollups

SQL_CONTENT_TYPE = "application/sql"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "localhost.localdomain", "ip6-localhost"})


def allowed_hosts(settings: config.Settings) -> frozenset[str]:
    """Host header names the endpoint answers: loopback, its bind address, [warehouse] allowed_hosts."""
    extra = str(settings["warehouse"].get("allowed_hosts", "") or "")
    bind = str(settings["warehouse"]["host"])
    names = {n.strip().lower() for n in extra.split(",") if n.strip()}
    # the bind address is what the CLI puts in its Host header (settings.query_url); for a wildcard
    # bind that is 0.0.0.0, which no DNS name can make a browser send (and Origin is refused anyway)
    names.add(bind.strip("[]").lower())
    return LOOPBACK_NAMES | names


def _host_name(header: str | None) -> str | None:
    if not header:
        return None
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:port
        return header[1 : header.find("]")] if "]" in header else None
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def serve(
    host: str,
    port: int,
    ch: Client,
    database: str,
    stats: Callable[[], dict[str, Any]],
    settings: config.Settings | None = None,
) -> ThreadingHTTPServer:
    """`ch` (full rights) is used only by the admin rebuild; queries run on a read-only client."""
    s = settings if settings is not None else config.load()
    read_token = credentials.sql_token(s, create=True)
    admin_token = credentials.admin_token(s, create=True)
    hosts = allowed_hosts(s)
    reader = clickhouse.read_client(s)
    read_lock = threading.Lock()  # one read handle; statements run one at a time
    admin_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        timeout = 60  # a client that stops sending mid-request does not hold a thread forever

        def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:  # noqa: ANN401
            data = json.dumps(body, default=str).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _refuse_foreign(self) -> bool:
            """Host and Origin checks, for every request (before any token is looked at)."""
            if _host_name(self.headers.get("Host")) not in hosts:
                self._send(403, {"error": "Host header not allowed (loopback names and [warehouse] allowed_hosts)"})
                return True
            if self.headers.get("Origin") is not None:
                self._send(403, {"error": "cross-origin requests are refused"})
                return True
            return False

        def _token_ok(self, *accepted: str) -> bool:
            auth = self.headers.get("Authorization", "")
            given = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
            if given and any(hmac.compare_digest(given.encode(), t.encode()) for t in accepted):
                return True
            self._send(401, {"error": "missing or wrong token"}, {"WWW-Authenticate": "Bearer"})
            return False

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self._refuse_foreign():
                return
            if self.path == "/ping":
                self._send(200, "ok")
            elif self.path == "/stats":
                if self._token_ok(read_token, admin_token):
                    self._send(200, stats())
            else:
                self._send(404, {"error": "unknown path"})

        def do_POST(self) -> None:  # noqa: N802
            if self._refuse_foreign():
                return
            path = urlparse(self.path).path
            if path == "/rollups/rebuild":
                if self._token_ok(admin_token):
                    self._rebuild()
                return
            if path != "/query":
                self._send(404, {"error": "unknown path"})
                return
            if not self._token_ok(read_token, admin_token):
                return
            ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype != SQL_CONTENT_TYPE:
                self._send(415, {"error": f"Content-Type must be {SQL_CONTENT_TYPE}"})
                return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._send(411, {"error": "Content-Length required"})
                return
            if not 0 < length <= clickhouse.MAX_STATEMENT_BYTES:
                self._send(413, {"error": f"a statement is 1..{clickhouse.MAX_STATEMENT_BYTES} bytes"})
                return
            try:
                sql = self.rfile.read(length).decode()
                with read_lock:
                    result = reader.query(sql)
                self._send(200, {"columns": list(result.column_names), "rows": result.result_rows})
            except clickhouse.ReadOnlyError as exc:
                self._send(403, {"error": str(exc)})
            except Exception as exc:  # noqa: BLE001 - report any engine error to the caller
                self._send(400, {"error": str(exc)})

        def do_PUT(self) -> None:  # noqa: N802 - anything but GET/POST: refused the same way
            self._send(405, {"error": "method not allowed"})

        do_DELETE = do_PATCH = do_OPTIONS = do_PUT  # noqa: N815 - no CORS preflight is ever granted

        def _rebuild(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            try:
                first, last = date.fromisoformat(query["from"][0]), date.fromisoformat(query["to"][0])
                with admin_lock:
                    self._send(200, rollups.rebuild(ch, database, first, last))
            except (KeyError, ValueError) as exc:
                self._send(400, {"error": f"need from=YYYY-MM-DD&to=YYYY-MM-DD: {exc}"})
            except Exception as exc:  # noqa: BLE001
                self._send(400, {"error": str(exc)})

        def log_message(self, *args: Any) -> None:  # noqa: ANN401
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="fleetperf-sql", daemon=True).start()
    return server
