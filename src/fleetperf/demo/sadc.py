"""A sysstat data file (format_magic 0x2175, as sysstat 11.7.1 onward writes it) for the demo's Linux
hosts: CPU (steal included), memory, swapping, paging, run queue and network interfaces.

The activity layouts are the reader's tables (`sources/sysstat/layouts.py`, `GROUPED`): one copy of
each struct, so this writer is NOT an oracle for them (a wrong field order round-trips). The reader is
checked against files sysstat itself wrote (`tests/unit/test_sysstat_own.py`, the corpus tests). The
headers around the activities follow sysstat's sa.h of 12.x (struct file_magic, file_header,
file_activity, record_header), which the reader's checks (`reader._header_2175`) also describe:

- file_magic, 76 bytes: magic u16, format_magic u16, version 4 x u8, header_size u32, upgraded u32,
  hdr_types_nr[3] u32 (1 ULL, 1 UL, 12 ints for the file header), padding;
- file_header: ust_time ULL, hz UL, then 12 ints (cpu_nr, act_nr, year - 1900, act_types_nr[3],
  rec_types_nr[3], act_size, rec_size, extra_next), day, month, sizeof_long, four utsname strings of
  65 bytes (sysname, nodename, release, machine), padded to 8 bytes as the compiler lays it out;
- file_activity, 36 bytes: id, magic, nr_ini, nr2, has_nr, size, types_nr[3];
- record_header, 24 bytes: uptime_cs ULL, ust_time ULL, extra_next u32, record_type, hour, minute,
  second; a R_RESTART record carries the CPU count (int), a statistics record per activity its item
  count (int, where has_nr) and the items.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import UTC, datetime

from fleetperf.sources.sysstat import layouts as lay

VERSION = (12, 6, 1, 0)  # what the demo's files claim to be written by (steal trusted from 7.0.0)
HEADER_INTS = 12
FILE_HEADER_SIZE = -(-(16 + 4 * HEADER_INTS + 3 + 4 * lay.UTSNAME_LEN) // 8) * 8
ACTIVITY_SIZE = 36
RECORD_SIZE = 24
HZ = 100  # USER_HZ: /proc/stat counts CPU time in 1/100 s on every Linux architecture

# activities written, in file order, with the magic of the GROUPED layout and whether each record
# carries its item count (CPU: "all" + CPUs; interfaces: how many there are)
ACTIVITIES = (
    (lay.A_CPU, 0x8B, True),
    (lay.A_SWAP, 0x8A, False),
    (lay.A_PAGE, 0x8A, False),
    (lay.A_MEMORY, 0x8B, False),
    (lay.A_QUEUE, 0x8C, False),
    (lay.A_NET_DEV, 0x8D, True),
)


def _item_size(layout: lay.Grouped) -> int:
    raw = 8 * len(layout.ull) + 8 * len(layout.ul) + 4 * len(layout.u) + sum(n for _, n in layout.chars)
    return -(-raw // 8) * 8  # the C struct's size: padded to its 8-byte alignment


def _item(layout: lay.Grouped, values: dict[str, int | str]) -> bytes:
    fmt = "<" + "Q" * len(layout.ull) + "Q" * len(layout.ul) + "I" * len(layout.u)
    numbers = [int(values.get(n, 0)) for n in (*layout.ull, *layout.ul, *layout.u)]
    out = struct.pack(fmt, *numbers)
    for name, length in layout.chars:
        out += str(values.get(name, "")).encode()[:length].ljust(length, b"\0")
    return out.ljust(_item_size(layout), b"\0")


@dataclass
class SadcWriter:
    """One saDD file of one host, little-endian, 64-bit longs. `stats` appends a record."""

    nodename: str
    cpus: int
    interfaces: tuple[str, ...]
    start: datetime
    release: str = "5.14.0-427.el9.x86_64"
    machine: str = "x86_64"

    def __post_init__(self) -> None:
        self.layouts = {aid: lay.GROUPED[(aid, magic)] for aid, magic, _ in ACTIVITIES}
        self.buf = bytearray(self._header())
        self.boot = int(self.start.timestamp()) - 86400 * 3  # up for three days when the file begins

    def _header(self) -> bytes:
        magic = struct.pack("<HH4BII3I", lay.SYSSTAT_MAGIC, lay.FORMAT_2175, *VERSION, FILE_HEADER_SIZE, 0,
                            1, 1, HEADER_INTS).ljust(lay.NEW_FILE_MAGIC_SIZE, b"\0")  # fmt: skip
        t = self.start.astimezone(UTC)
        ints = (self.cpus + 1, len(ACTIVITIES), t.year - 1900, 0, 0, 9, 2, 0, 1, ACTIVITY_SIZE, RECORD_SIZE, 0)
        header = struct.pack(f"<QQ{HEADER_INTS}I3B", int(t.timestamp()), HZ, *ints, t.day, t.month, 8)
        for name in ("Linux", self.nodename, self.release, self.machine):
            header += name.encode()[: lay.UTSNAME_LEN - 1].ljust(lay.UTSNAME_LEN, b"\0")
        header = header.ljust(FILE_HEADER_SIZE, b"\0")
        activities = b""
        for aid, amagic, has_nr in ACTIVITIES:
            layout = self.layouts[aid]
            nr = self.cpus + 1 if aid == lay.A_CPU else len(self.interfaces) if aid == lay.A_NET_DEV else 1
            types = (len(layout.ull), len(layout.ul), len(layout.u))
            activities += struct.pack("<IIiiii3I", aid, amagic, nr, 1, int(has_nr), _item_size(layout), *types)
        return magic + header + activities

    def _record_header(self, ts: int, kind: int) -> bytes:
        t = datetime.fromtimestamp(ts, UTC)
        return struct.pack("<QQI4B", (ts - self.boot) * 100, ts, 0, kind, t.hour, t.minute, t.second)

    def restart(self, ts: int) -> None:
        self.buf += self._record_header(ts, lay.R_RESTART) + struct.pack("<i", self.cpus + 1)

    def stats(self, ts: int, cpu: list[dict[str, int]], counters: dict[int, dict[str, int]],
              net: dict[str, dict[str, int]]) -> None:  # fmt: skip
        """cpu: the per-CPU cumulative jiffies (the "all" item is their sum, as /proc/stat's first line);
        counters: cumulative or level values of swap, page, memory and queue; net: per interface."""
        body = self._record_header(ts, lay.R_STATS)
        for aid, _, has_nr in ACTIVITIES:
            layout = self.layouts[aid]
            if aid == lay.A_CPU:
                total = {k: sum(c.get(k, 0) for c in cpu) for k in lay.CPU_FIELDS}
                items = [_item(layout, total)] + [_item(layout, c) for c in cpu]  # type: ignore[arg-type]
            elif aid == lay.A_NET_DEV:
                items = [_item(layout, {"interface": name, "speed": 10000} | net[name])
                         for name in self.interfaces]  # fmt: skip
            else:
                items = [_item(layout, counters.get(aid, {}))]  # type: ignore[arg-type]
            if has_nr:
                body += struct.pack("<i", len(items))
            body += b"".join(items)
        self.buf += body

    def data(self) -> bytes:
        return bytes(self.buf)
