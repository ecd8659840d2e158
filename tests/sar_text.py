"""sar's text report (`sar -A -f FILE`, LC_ALL=C, TZ=GMT) -> {(section, "HH:MM:SS", item): {name: text}}.

Only what the tests compare against our figures: column headers are mapped to `sadf -j` names
(the names `ingest.sysstat.rates` uses). Sections are recognised by their header line.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from fleetperf.ingest.records import Emitted

_TIME = re.compile(r"^(\d\d:\d\d:\d\d)\s+(.*)$")

# first header word -> (section, whether the first column is an item name, column map)
_SECTIONS: dict[str, tuple[str, dict[str, str]]] = {
    "CPU": ("cpu-load-all", {"%usr": "usr", "%nice": "nice", "%sys": "sys", "%iowait": "iowait",
                             "%steal": "steal", "%irq": "irq", "%soft": "soft", "%guest": "guest",
                             "%gnice": "gnice", "%idle": "idle"}),
    "kbmemfree": ("memory", {"kbmemfree": "memfree", "kbavail": "avail", "kbmemused": "memused",
                             "%memused": "memused-percent", "kbbuffers": "buffers", "kbcached": "cached",
                             "kbcommit": "commit", "%commit": "commit-percent", "kbactive": "active",
                             "kbinact": "inactive", "kbdirty": "dirty", "kbanonpg": "anonpg", "kbslab": "slab",
                             "kbkstack": "kstack", "kbpgtbl": "pgtbl", "kbvmused": "vmused", "kbshmem": "shmem"}),
    "kbswpfree": ("memory", {"kbswpfree": "swpfree", "kbswpused": "swpused", "%swpused": "swpused-percent",
                             "kbswpcad": "swpcad", "%swpcad": "swpcad-percent"}),
    "IFACE": ("net-dev", {"rxpck/s": "rxpck", "txpck/s": "txpck", "rxkB/s": "rxkB", "txkB/s": "txkB",
                          "rxcmp/s": "rxcmp", "txcmp/s": "txcmp", "rxmcst/s": "rxmcst", "%ifutil": "ifutil-percent",
                          "rxerr/s": "rxerr", "txerr/s": "txerr", "coll/s": "coll", "rxdrop/s": "rxdrop",
                          "txdrop/s": "txdrop", "txcarr/s": "txcarr", "rxfram/s": "rxfram", "rxfifo/s": "rxfifo",
                          "txfifo/s": "txfifo"}),
    "runq-sz": ("queue", {"runq-sz": "runq-sz", "plist-sz": "plist-sz", "ldavg-1": "ldavg-1",
                          "ldavg-5": "ldavg-5", "ldavg-15": "ldavg-15", "blocked": "blocked"}),
    "pgpgin/s": ("paging", {"pgpgin/s": "pgpgin", "pgpgout/s": "pgpgout", "fault/s": "fault", "majflt/s": "majflt",
                            "pgfree/s": "pgfree", "pgscank/s": "pgscank", "pgscand/s": "pgscand",
                            "pgsteal/s": "pgsteal", "%vmeff": "vmeff-percent"}),
    "DEV": ("disk", {"tps": "tps", "rkB/s": "rkB", "wkB/s": "wkB", "dkB/s": "dkB", "areq-sz": "areq-sz",
                     "aqu-sz": "aqu-sz", "await": "await", "%util": "util-percent"}),
    "pswpin/s": ("swap-pages", {"pswpin/s": "pswpin", "pswpout/s": "pswpout"}),
    "proc/s": ("process-and-context-switch", {"proc/s": "proc", "cswch/s": "cswch"}),
}  # fmt: skip
_ITEM_FIRST = {"CPU", "IFACE", "DEV"}


def _same(*words: str) -> dict[str, str]:
    """Columns whose sadf -j name is sar's without "/s"."""
    return {w: w.removesuffix("/s") for w in words}


# sections whose header line starts with these words (after the time); sadf -j names without "/s"
# unless mapped. Their first word is unique to each section.
_MORE = {
    "tps": ("io", _same("tps", "rtps", "wtps", "dtps", "bread/s", "bwrtn/s", "bdscd/s")),
    "kbhugfree": ("hugepages", {"kbhugfree": "hugfree", "kbhugused": "hugused", "%hugused": "hugused-percent",
                                "kbhugrsvd": "hugrsvd", "kbhugsurp": "hugsurp"}),
    "dentunusd": ("kernel", _same("dentunusd", "file-nr", "inode-nr", "pty-nr")),
    "totsck": ("net-sock", _same("totsck", "tcpsck", "udpsck", "rawsck", "ip-frag", "tcp-tw")),
    "tcp6sck": ("net-sock6", _same("tcp6sck", "udp6sck", "raw6sck", "ip6-frag")),
    "call/s": ("net-nfs", _same("call/s", "retrans/s", "read/s", "write/s", "access/s", "getatt/s")),
    "scall/s": ("net-nfsd", _same("scall/s", "badcall/s", "packet/s", "udp/s", "tcp/s", "hit/s", "miss/s",
                                  "sread/s", "swrite/s", "saccess/s", "sgetatt/s")),
    "irec/s": ("net-ip", None),
    "ihdrerr/s": ("net-eip", None),
    "imsg/s": ("net-icmp", None),
    "ierr/s": ("net-eicmp", None),
    "active/s": ("net-tcp", None),
    "atmptf/s": ("net-etcp", {"atmptf/s": "atmptf", "estres/s": "estres", "retrseg/s": "retrans",
                              "isegerr/s": "isegerr", "orsts/s": "orsts"}),
    "idgm/s": ("net-udp", None),
    "irec6/s": ("net-ip6", None),
    "ihdrer6/s": ("net-eip6", None),
    "imsg6/s": ("net-icmp6", None),
    "ierr6/s": ("net-eicmp6", None),
    "idgm6/s": ("net-udp6", None),
}  # fmt: skip
# item-first sections told apart by their second header word
_SOFTNET = _same("total/s", "dropd/s", "squeezd/s", "rx_rps/s", "flw_lim/s", "blg_len")
_CPU_SECOND = {"MHz": ("cpu-frequency", {"MHz": "frequency"}), "total/s": ("softnet", _SOFTNET)}
_FS = ("filesystems", _same("MBfsfree", "MBfsused", "%fsused", "%ufsused", "Ifree", "Iused", "%Iused"))


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def parse(text: str) -> dict[tuple[str, str, str], dict[str, str]]:
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    columns: list[str] | None = None
    section = ""
    item_first = False
    item_last = False
    for line in text.splitlines():
        m = _TIME.match(line)
        if not m:
            continue
        words = m.group(2).split()
        if not words or words[0] in ("LINUX", "COM"):
            continue
        header = not _number(words[-1]) and not (item_last and len(words) == len(columns or ()) + 1
                                                 and _number(words[0]))  # fmt: skip
        if header:  # a header line: starts a section, ours or one we do not compare
            columns = None
            item_last = False
            spec = None
            if words[0] == "CPU" and len(words) > 1 and words[1] in _CPU_SECOND:
                spec, item_first = _CPU_SECOND[words[1]], True
            elif words[0] in _SECTIONS:
                spec, item_first = _SECTIONS[words[0]], words[0] in _ITEM_FIRST
            elif words[0] in _MORE:
                spec, item_first = _MORE[words[0]], False
            elif words[0] == "MBfsfree" and words[-1] in ("FILESYSTEM", "MOUNTPOINT"):
                spec, item_first, item_last = _FS, False, True
            if spec is not None:
                section, mapping = spec
                if words[0] == "IFACE" and words[1] == "rxerr/s":
                    section = "net-edev"
                names = words[1:] if item_first else words[:-1] if item_last else words
                columns = [(mapping or _same(*names)).get(w, "") for w in names]
            continue
        if columns is None or len(words) != len(columns) + (item_first or item_last):
            continue
        item = words[0] if item_first else words[-1] if item_last else ""
        values = words[1:] if item_first else words[:-1] if item_last else words
        row = out.setdefault((section, m.group(1), item), {})
        row.update({c: v for c, v in zip(columns, values, strict=True) if c})
    return out


# sadf -j section names that differ from ours
_SADF_SECTION = {"cpu-load": "cpu-load-all"}
# the fields that name a list entry in sadf -j (cpu number, interface, device ...)
_ITEM_KEYS = ("cpu", "iface", "disk-device", "line", "intr", "number", "filesystem", "fchost", "device", "name")
# containers whose members are sections of their own
_CONTAINERS = {"network", "power-management", "psi"}


def _flat(values: dict) -> dict[str, int | float]:
    out: dict[str, int | float] = {}
    for key, value in values.items():
        if isinstance(value, dict):  # io: {"io-reads": {"rtps": ...}} -> rtps
            out |= _flat(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value
    return out


def sadf_json_rows(text: str) -> dict[tuple[str, str, str], dict[str, int | float]]:
    """`sadf -j FILE -- ...` (TZ=UTC) -> {(section, "HH:MM:SS", item): {metric: value}}, items as ours:
    the CPU number or "all", the interface, the device; "" for single-item sections."""
    import json

    rows: dict[tuple[str, str, str], dict[str, int | float]] = {}
    for host in json.loads(text)["sysstat"]["hosts"]:
        for stats in host["statistics"]:
            t = stats.get("timestamp", {}).get("time")
            if t is None:
                continue
            sections: list[tuple[str, object]] = []
            for name, body in stats.items():
                if name == "timestamp":
                    continue
                if name in _CONTAINERS and isinstance(body, dict):
                    sections.extend(body.items())
                else:
                    sections.append((name, body))
            for name, body in sections:
                section = _SADF_SECTION.get(name, name)
                if isinstance(body, dict):
                    rows[(section, t, "")] = _flat(body)
                elif isinstance(body, list):
                    for entry in body:
                        key = next((k for k in _ITEM_KEYS if k in entry), None)
                        item = str(entry[key]) if key else ""
                        rows[(section, t, item)] = _flat({k: v for k, v in entry.items() if k != key})
    return rows


def local_disk_names() -> dict[str, str]:
    """sadf names this machine's disks from /sys (vda); a file read elsewhere cannot: ours are
    sysstat.ioconf's names for SCSI disks and devM-N otherwise. Map sadf's name to ours."""
    from pathlib import Path

    from fleetperf.sources.sysstat.rates import disk_name

    names = {}
    root = Path("/sys/dev/block")
    for dev in root.iterdir() if root.is_dir() else ():
        major, minor = (int(x) for x in dev.name.split(":"))
        uevent = dict(line.split("=", 1) for line in (dev / "uevent").read_text().split() if "=" in line)
        if "DEVNAME" in uevent:
            names[uevent["DEVNAME"]] = disk_name(major, minor)
    return names


def our_rows(emitted: list[Emitted]) -> dict[tuple[str, str, str], dict[str, float]]:
    """Our sysstat samples keyed as `parse` and `sadf_json_rows` key sar's and sadf's figures."""
    out = {}
    for e in emitted:
        if e.topic_key == "sysstat_samples":
            r = e.record
            t = datetime.fromtimestamp(r["ts"] / 1000, UTC).strftime("%H:%M:%S")
            out[(r["section"], t, r["item"])] = r["metrics"]
    return out
