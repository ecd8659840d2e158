"""SQL over HTTP for the embedded engine: only the warehouse process may open the chDB data path,
so the CLI (`fleetperf sql`) and the tests query through this endpoint. Bound to 127.0.0.1.

POST /query  body: one SQL statement  ->  {"columns": [...], "rows": [[...], ...]}
POST /rollups/rebuild?from=YYYY-MM-DD&to=YYYY-MM-DD  -> rows per rollup table
GET  /ping   -> ok;   GET /stats -> sink counters and consumer lag
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from clickhouse_connect.driver.client import Client

from fleetperf.warehouse import rollups


def serve(host: str, port: int, ch: Client, database: str, stats: Callable[[], dict[str, Any]]) -> ThreadingHTTPServer:
    lock = threading.Lock()  # one chDB client; statements run one at a time

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: Any) -> None:
            data = json.dumps(body, default=str).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/ping":
                self._send(200, "ok")
            elif self.path == "/stats":
                self._send(200, stats())
            else:
                self._send(404, {"error": "unknown path"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.startswith("/rollups/rebuild"):
                self._rebuild()
                return
            if self.path != "/query":
                self._send(404, {"error": "unknown path"})
                return
            sql = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            try:
                with lock:
                    result = ch.query(sql)
                self._send(200, {"columns": list(result.column_names), "rows": result.result_rows})
            except Exception as exc:  # noqa: BLE001 - report any engine error to the caller
                self._send(400, {"error": str(exc)})

        def _rebuild(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            try:
                first, last = date.fromisoformat(query["from"][0]), date.fromisoformat(query["to"][0])
                with lock:
                    self._send(200, rollups.rebuild(ch, database, first, last))
            except (KeyError, ValueError) as exc:
                self._send(400, {"error": f"need from=YYYY-MM-DD&to=YYYY-MM-DD: {exc}"})
            except Exception as exc:  # noqa: BLE001
                self._send(400, {"error": str(exc)})

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="fleetperf-sql", daemon=True).start()
    return server
