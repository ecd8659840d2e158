"""Link aggregation membership from the sources that know it, as host_configs records with
attributes 'aggregation.<name>.members' = 'port1,port2' (the key the nmon collector uses for
AIX EtherChannels found in lsattr text):
- Linux bonding: /proc/net/bonding/<bond> text;
- a user inventory file (TOML), which overrides every other source in the warehouse:

    [hosts."0123456A-6".aggregations]
    ent8 = ["ent0", "ent2", "ent4", "ent6"]
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

from fleetperf.ingest.identity import HostIdentity
from fleetperf.ingest.records import Emitted


def parse_proc_bonding(text: str) -> dict[str, str]:
    """Attributes of one bond: mode, hash policy, members, and per member its MII status."""
    attrs: dict[str, str] = {}
    members: list[str] = []
    current: str | None = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "Slave Interface":
            current = value
            members.append(value)
        elif key == "Bonding Mode" and current is None:
            attrs["mode"] = value
        elif key == "Transmit Hash Policy" and current is None:
            attrs["hash_policy"] = value
        elif key == "MII Status" and current is not None:
            attrs[f"{current}.mii_status"] = value
        elif key == "Aggregator ID" and current is not None:
            attrs[f"{current}.aggregator_id"] = value
    attrs["members"] = ",".join(members)
    return attrs


def bonding_records(proc_dir: Path, who: HostIdentity) -> Iterator[Emitted]:
    attributes: dict[str, str] = {}
    texts: dict[str, str] = {}
    for bond in sorted(proc_dir.glob("*")):
        text = bond.read_text()
        texts[f"/proc/net/bonding/{bond.name}"] = text
        for key, value in parse_proc_bonding(text).items():
            attributes[f"aggregation.{bond.name}.{key}"] = value
    if attributes:
        yield _config(who, "linux-bonding", str(proc_dir), attributes, texts)


def bonding_records_of_file(path: Path, who: HostIdentity) -> Iterator[Emitted]:
    """A saved copy of one /proc/net/bonding/<bond> file; the bond is named after the file."""
    text = path.read_text(errors="replace")
    attributes = {f"aggregation.{path.name}.{k}": v for k, v in parse_proc_bonding(text).items()}
    yield _config(who, "linux-bonding", str(path), attributes, {f"/proc/net/bonding/{path.name}": text})


def inventory_records(path: Path) -> Iterator[Emitted]:
    data = tomllib.loads(path.read_text())
    for host_id, spec in data.get("hosts", {}).items():
        attributes = {
            f"aggregation.{name}.members": ",".join(ports) for name, ports in spec.get("aggregations", {}).items()
        }
        for key, value in spec.get("attributes", {}).items():
            attributes[key] = str(value)
        yield _config(HostIdentity(host_id, spec.get("hostname", host_id)), "inventory", str(path), attributes, {})


def _config(who: HostIdentity, source: str, origin: str, attributes: dict[str, str], texts: dict[str, str]) -> Emitted:
    return Emitted(
        "host_configs",
        {
            "host_id": who.host_id,
            "hostname": who.hostname,
            "ts": int(time.time() * 1000),
            "source": source,
            "origin_file": origin,
            "attributes": attributes,
            "config_text": texts,
        },
        key=who.host_id,
    )
