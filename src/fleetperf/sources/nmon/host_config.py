"""Host identity and attributes from nmon's AAA lines and BBB* configuration text."""

from __future__ import annotations

import re
from collections import defaultdict

from fleetperf.ingest import validate

_KEY_VALUE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")
_ADAPTER_NAMES = re.compile(r"^\s*adapter_names\s+(\S+)")
# lparstat -i key -> curated attribute
_LPARSTAT = {
    "Entitled Capacity": "entitled_capacity",
    "Mode": "partition_mode",
    "Type": "partition_type",
    "Shared Pool ID": "shared_pool_id",
    "Online Virtual CPUs": "online_virtual_cpus",
    "Partition Number": "lpar_id",
    "Partition Name": "lpar_name",
    "Online Memory": "online_memory",
    "Active CPUs in Pool": "pool_cpus",
}
_LSCONF = {"Machine Serial Number": "serial", "System Model": "machine_type", "Processor Type": "processor_type"}


class HostConfigBuilder:
    def __init__(self) -> None:
        self.meta: dict[str, str] = {}
        self.lpar_number: str | None = None
        self.text: dict[str, list[str]] = defaultdict(list)

    def add(self, tag: str, rest: str) -> None:
        if tag == "AAA":
            key, _, value = rest.partition(",")
            if key == "LPARNumberName":
                self.lpar_number = value.split(",")[0].strip()
            self.meta[key.strip()] = value.strip()
            return
        # BBBP,<seq>,<command>[,"<line>"]; other BBB sections: BBBx,<seq>,<line>
        parts = rest.split(",", 2)
        if tag == "BBBP" and len(parts) >= 2:
            self._command_output(parts)
        else:
            self.text[tag].append(",".join(parts[1:]) if len(parts) > 1 else rest)

    def _command_output(self, parts: list[str]) -> None:
        lines = self.text[parts[1].strip()]  # a command line without output still shows up, empty
        if len(parts) > 2:
            lines.append(parts[2].strip().strip('"'))

    def add_lines(self, lines: list[tuple[bytes, bytes]]) -> bool:
        """`add` for raw (tag, rest) lines, as the native scanner collects them; True if an AAA line
        was among them. BBBP lines (most of an AIX file's configuration) take a shorter way."""
        aaa = False
        for tag, rest in lines:
            if tag == b"BBBP":
                parts = rest.decode("utf-8", "replace").split(",", 2)
                if len(parts) >= 2:
                    self._command_output(parts)
                    continue
            aaa = aaa or tag == b"AAA"
            self.add(tag.decode(), rest.decode("utf-8", "replace"))
        return aaa

    @property
    def hostname(self) -> str:
        return self.meta.get("host") or self.meta.get("runname") or ""

    @property
    def host_id(self) -> str:
        serial = self.meta.get("SerialNumber")
        if serial and self.lpar_number:
            return f"{serial}-{self.lpar_number}"
        return self.hostname

    @property
    def interval_s(self) -> float:
        """AAA,interval in seconds; 0 when absent or not a plausible interval (ingest/validate.py)."""
        text = self.meta.get("interval", "0").strip().encode("utf-8", "replace")
        value = validate.parse_number(text) if text else 0.0
        if isinstance(value, str) or validate.out_of_range(value, validate.Kind.NON_NEGATIVE):
            return 0.0
        return value

    def texts(self) -> dict[str, str]:
        return {key: "\n".join(lines) for key, lines in self.text.items()}

    def attributes(self) -> dict[str, str]:
        attrs: dict[str, str] = {f"AAA/{k}": v for k, v in self.meta.items()}
        for command, curated in (("lparstat -i", _LPARSTAT), ("lsconf", _LSCONF)):
            for line in self.text.get(command, []):
                m = _KEY_VALUE.match(line)
                if not m:
                    continue
                attrs[f"{command}/{m.group(1)}"] = m.group(2)
                if m.group(1) in curated:
                    attrs[curated[m.group(1)]] = m.group(2)
        if "partition_type" in attrs:
            smt = re.search(r"SMT-?(\d+)", attrs["partition_type"])
            attrs["smt_mode"] = smt.group(1) if smt else "1"
        # EtherChannel / 802.3ad membership: "lsattr -El entN" text lists adapter_names
        for command, lines in self.text.items():
            ent = re.match(r"lsattr -El (ent\d+)", command)
            if ent:
                for line in lines:
                    m = _ADAPTER_NAMES.match(line)
                    if m:
                        attrs[f"aggregation.{ent.group(1)}.members"] = m.group(1)
        for key, name in (
            ("SerialNumber", "serial"),
            ("host", "hostname"),
            ("version", "nmon_version"),
            ("AIX", "os_version"),
            ("OS", "os_version"),
            ("interval", "interval_s"),
            ("MachineType", "machine_type"),
        ):
            if key in self.meta:
                attrs.setdefault(name, self.meta[key])
        if self.lpar_number:
            attrs.setdefault("lpar_id", self.lpar_number)
        if "serial" in attrs and "machine_type" in attrs:
            attrs["frame_id"] = f"{attrs['machine_type'].replace('IBM,', '')}*{attrs['serial']}"
        return attrs
