"""The schema registry calls a producer makes (register a subject's schema, set its compatibility),
on the Confluent REST API through the standard library.

Why not confluent_kafka's SchemaRegistryClient here: importing `confluent_kafka.schema_registry`
(httpx, httpcore with trio, authlib, cryptography, asyncio, attrs classes built at import) and
constructing its client took 0.5-0.7 s of every `fleetperf ingest` process, a third of publishing
40 MB of nmon files (py-spy; `python -X importtime`: 387 ms for the import alone; docs/warehouse.md,
"Session 13"). A producer needs one call per topic for the life of the process. The sink and the
tests, which read records back, keep the library's client and deserializer (kafka_avro).

Requests are those the library sends (its `register_schema` and `set_compatibility`, same paths,
bodies and content type), against the same settings (kafka_avro.registry_config: url, basic auth,
the CA of its certificate)."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"


class RegistryError(Exception):
    """The registry answered with an error: its HTTP status and message (as SchemaRegistryError)."""

    def __init__(self, http_status_code: int, message: str) -> None:
        super().__init__(f"{message} (HTTP status code {http_status_code})")
        self.http_status_code = http_status_code


class RegistryRest:
    """conf: kafka_avro.registry_config's keys (url: one base URL or several, comma-separated, tried
    in turn as the library does; basic.auth.user.info; ssl.ca.location)."""

    def __init__(self, conf: dict[str, Any], timeout: float = 30.0) -> None:
        self.base_urls = [u.strip().rstrip("/") for u in str(conf["url"]).split(",") if u.strip()]
        if not self.base_urls:
            raise ValueError("schema registry: no url")
        self.timeout = timeout
        self.headers = {"Accept": ACCEPT}
        if conf.get("basic.auth.user.info"):
            token = base64.b64encode(str(conf["basic.auth.user.info"]).encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        ca = conf.get("ssl.ca.location")
        self.context = ssl.create_default_context(cafile=ca) if ca else None

    def register_schema(self, subject: str, schema_text: str) -> int:
        """The id of an Avro schema under `subject`, registering it if the subject lacks it. Not
        cached here: AvroProducer keeps one frame per topic, so each subject is asked once."""
        body = {"schema": schema_text, "schemaType": "AVRO", "references": []}
        answer = self._send("POST", f"subjects/{_quote(subject)}/versions?normalize=False", body)
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), int):
            raise RegistryError(-1, f"schema registry: no schema id in the answer {answer!r:.200}")
        return answer["id"]

    def set_compatibility(self, subject: str, level: str) -> None:
        self._send("PUT", f"config/{_quote(subject)}", {"compatibility": level.upper()})

    def _send(self, method: str, path: str, body: dict[str, Any]) -> Any:  # noqa: ANN401 - JSON
        data = json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": CONTENT_TYPE}
        for i, base in enumerate(self.base_urls):
            request = urllib.request.Request(f"{base}/{path}", data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as response:
                    text = response.read()
                    return json.loads(text) if text else None
            except urllib.error.HTTPError as exc:
                # 5xx: the next base URL if there is one (the library's is_retriable); else the error
                if exc.code >= 500 and i < len(self.base_urls) - 1:
                    continue
                raise RegistryError(exc.code, _message(exc)) from None
            except OSError:  # refused, timed out, DNS: the next base URL, or the caller's retry
                if i == len(self.base_urls) - 1:
                    raise
        raise AssertionError("unreachable")


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", "replace")
    except OSError:
        return str(exc.reason)
    try:
        answer = json.loads(text)
    except ValueError:
        return f"Unknown Schema Registry Error: {text[:500]}"
    if isinstance(answer, dict) and answer.get("message"):
        return str(answer["message"])
    return text[:500]
