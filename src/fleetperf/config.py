"""Settings: config/fleetperf.toml, overridden by FLEETPERF__SECTION__KEY environment variables."""

from __future__ import annotations

import copy
import json
import os
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_ROOT.parent.parent
DEFAULTS_FILE = REPO_ROOT / "config" / "fleetperf.toml"
SCHEMA_DIR = REPO_ROOT / "schemas"
SQL_DIR = REPO_ROOT / "sql"
ENV_PREFIX = "FLEETPERF__"
# [kafka] keys of how every producer batches, each with the Kafka client property it sets (the same name
# in librdkafka and the Java client): the collectors' producers (kafka_avro) and the Flink job's sinks
# (job_settings hands it the properties, not the keys) read them through producer_properties only
PRODUCER_KEYS = {
    "producer_compression": "compression.type",
    "producer_linger_ms": "linger.ms",
    "producer_batch_bytes": "batch.size",
}


def _coerce(old: Any, text: str) -> Any:
    if isinstance(old, bool):
        return text.lower() in ("1", "true", "yes", "on")
    if isinstance(old, int):
        return int(text)
    if isinstance(old, float):
        return float(text)
    return text


def _apply_env(data: dict[str, Any], environ: dict[str, str]) -> None:
    for key, text in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        path = key[len(ENV_PREFIX) :].lower().split("__")
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = _coerce(node.get(path[-1], ""), text)


@dataclass(frozen=True)
class Topic:
    key: str
    name: str
    schema_file: str
    table: str

    @property
    def subject(self) -> str:
        return f"{self.name}-value"

    @property
    def schema_path(self) -> Path:
        return SCHEMA_DIR / self.schema_file

    def schema_text(self) -> str:
        return self.schema_path.read_text()

    @cached_property
    def field_names(self) -> tuple[str, ...]:
        """The record's top-level field names in the schema's order (the sink's columns, the order
        `parse` prints a record's fields in)."""
        return tuple(f["name"] for f in json.loads(self.schema_text())["fields"])


class Settings:
    def __init__(self, data: dict[str, Any]) -> None:
        self.raw = data

    def __getitem__(self, section: str) -> dict[str, Any]:
        return self.raw[section]

    @cached_property
    def state_dir(self) -> Path:
        return _resolve(self.raw["state"]["dir"])

    @cached_property
    def cache_dir(self) -> Path:
        return _resolve(self.raw["cache"]["dir"])

    @property
    def flag_rules(self) -> Path:
        return _resolve(self.raw["flink"]["flag_rules"])

    @property
    def bootstrap(self) -> str:
        """Every broker of the stack: [kafka] bootstrap when set (brokers that are not the local
        stack's, e.g. compose's cluster profile); else one locally, and in cluster mode broker i on
        port + 2i (so a client started while the first broker is down still finds the cluster)."""
        k = self["kafka"]
        explicit = str(k.get("bootstrap", "")).strip()
        if explicit:
            return explicit
        return ",".join(f"{k['host']}:{int(k['port']) + 2 * i}" for i in range(self.kafka_brokers))

    @property
    def kafka_brokers(self) -> int:
        stack = self.raw.get("stack", {})
        return int(stack.get("kafka_brokers", 3)) if stack.get("mode") == "cluster" else 1

    @property
    def registry_url(self) -> str:
        return f"http://{self['registry']['host']}:{self['registry']['port']}/apis/ccompat/v7"

    @property
    def superset_url(self) -> str:
        return f"http://{self['superset']['host']}:{self['superset']['port']}"

    @property
    def query_url(self) -> str:
        return f"http://{self['warehouse']['host']}:{self['warehouse']['query_port']}"

    @property
    def embedded_clickhouse(self) -> bool:
        return self["clickhouse"]["url"] == "chdb"

    @property
    def chdb_path(self) -> Path:
        return self.state_dir / "chdb"

    @cached_property
    def topics(self) -> dict[str, Topic]:
        return {
            key: Topic(key, spec["name"], spec["schema"], spec["table"]) for key, spec in self.raw["topics"].items()
        }

    def topic(self, key: str) -> Topic:
        return self.topics[key]


def _resolve(text: str) -> Path:
    path = Path(os.path.expanduser(text))
    return path if path.is_absolute() else REPO_ROOT / path


def load(environ: dict[str, str] | None = None) -> Settings:
    data = copy.deepcopy(_defaults(DEFAULTS_FILE))
    _apply_env(data, dict(os.environ if environ is None else environ))
    return Settings(data)


_PARSED: dict[str, dict[str, Any]] = {}  # the file's text -> what it parses to (the last one only)


def _defaults(path: Path) -> dict[str, Any]:
    """The TOML file parsed once per content (a command loads its settings several times: three
    parses were ~2 % of `parse nmon`'s start-up); callers get a copy to change."""
    text = path.read_text()
    parsed = _PARSED.get(text)
    if parsed is None:
        _PARSED.clear()
        parsed = _PARSED[text] = tomllib.loads(text)
    return parsed


def producer_properties(settings: Settings) -> dict[str, Any]:
    """The Kafka client properties of [kafka]'s producer batching (PRODUCER_KEYS)."""
    return {prop: settings["kafka"][key] for key, prop in PRODUCER_KEYS.items()}


def job_settings(settings: Settings) -> dict[str, Any]:
    """The Flink job's only settings input (stream-jobs JobSettings reads it as JSON): the resolved
    values, env overrides included, so the job keeps no defaults of its own. Each topic carries its
    schema file and registry subject, the mapping the Python producers use too; kafka.producer the
    Kafka client properties of its sinks (producer_properties), which the collectors set too."""
    return {
        "kafka": {"bootstrap": settings.bootstrap, "producer": producer_properties(settings)},
        "registry": {"url": settings.registry_url},
        "topics": {
            key: {"name": t.name, "schema": t.schema_file, "subject": t.subject} for key, t in settings.topics.items()
        },
        "flink": {**settings["flink"], "flag_rules": str(settings.flag_rules)},
    }
