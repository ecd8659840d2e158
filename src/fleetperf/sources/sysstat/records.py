"""sysstat file records -> Avro records: `sysstat_samples` (everything sar shows), `cpu_samples`
(the host's CPU line, which the Flink job turns into steal_pct like nmon's CPU_ALL), `host_configs`
(the file header) and dead letters for damage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

from fleetperf import config
from fleetperf.avro_plan import encode_double, encode_long, encode_string
from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.sysstat import layouts as lay
from fleetperf.sources.sysstat.rates import (
    COMPUTE,
    MEMUSED_AVAIL,
    MEMUSED_FREE,
    MEMUSED_UNUSED,
    cpu_line,
    memused_rule,
    parse_version,
    sections,
)
from fleetperf.sources.sysstat.rates import RATE_SECTIONS as _RATE_SECTIONS
from fleetperf.sources.sysstat.reader import (
    FileHeader,
    FormatError,
    Problem,
    Record,
    SaFile,
    _native,
    decoded,
    native_available,
    open_bytes,
    open_stream,
)

SOURCE = "sadc"
MAX_INTERVAL_CS = 31 * 86400 * 100  # a longer gap between two records is damage, not an interval
MAX_RATE = 1e13  # per second: no counter sar shows grows faster (a wrapped or damaged one does)
MAX_LEVEL = float(1 << 53)  # kB, counts: beyond a double's integers is damage
PERCENT_SECTIONS = {"cpu-load-all"}
_RULES = {MEMUSED_FREE: 0, MEMUSED_UNUSED: 1, MEMUSED_AVAIL: 2}  # the native path's memused rule numbers
# `parse`'s JSON encoder (cli/commands/parse.py's): the native path writes the same text
_to_json = json.JSONEncoder(allow_nan=False).encode
# The sysstat_samples fields as the native path writes their Avro bodies (`encoded`): the head (up to
# `source`) and the tail (from `sysstat_version`) here, section, item and metrics in native code. Any
# other order or type in schemas/sysstat_sample.avsc and the native path hands dicts over instead.
_AVRO_FIELDS = (
    ("host_id", "string"),
    ("hostname", "string"),
    ("ts", ("long", "timestamp-millis")),
    ("interval_s", ("null", "double")),
    ("source", "string"),
    ("section", "string"),
    ("item", "string"),
    ("metrics", ("map", "double")),
    ("sysstat_version", "string"),
    ("steal_trusted", "boolean"),
    ("origin_file", "string"),
    ("origin_offset", "long"),
)


def _native_ctx(rule: int, nr2: dict[int, int]) -> object | None:
    """The native path's settings for a collector; None (the Python path) if its sar sections are not
    exactly rates.COMPUTE's (an activity added on one side only)."""
    try:
        return _native.Ctx(rule, nr2, [(aid, section) for aid, (section, _fn, _kind) in COMPUTE.items()])
    except (ValueError, TypeError):  # TypeError: a build older than these sources
        return None


class Lines(NamedTuple):
    """`count` messages already written as `parse`'s JSON lines (the native path), ASCII bytes: written to
    stdout's binary layer, they skip a decode and an encode of every line."""

    text: bytes
    count: int
    topic_key: str = "sysstat_samples"


@dataclass(frozen=True)
class Options:
    host_id: str | None = None  # default: the file's nodename
    hz: int | None = None  # jiffies/s of the host of an old (pre-0x2175) file; default 100
    # take record times as they are, as sar does, for a file known to have mangled times (upstream's ppc
    # file: records 1 s apart stored 2**24 s apart); by default such records are dead letters
    trust_times: bool = False
    # whose definitions the figures follow; None: those of the sysstat that wrote the file
    sar: tuple[int, ...] | None = None


def steal_trusted(version: str) -> bool:
    """sar shows steal from sysstat 7.0.0 on; earlier values are not to be trusted (seed 004 L4855)."""
    try:
        major = int(version.split(".")[0])
    except ValueError:
        return False
    return major >= 7


def is_sadc_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(2)
    except OSError:
        return False
    return head in (b"\x96\xd5", b"\xd5\x96")


class Collector:
    """One file's records in order -> Emitted. Keeps the previous statistics record between calls,
    so a file read in pieces (live mode) gives the same records as one read at once."""

    def __init__(
        self,
        header: FileHeader,
        path: str,
        options: Options,
        topics: dict[str, str] | None = None,
        encoded: bool = False,
    ) -> None:
        self.header = header
        self.path = path
        self.name = Path(path).name
        self.host_id = options.host_id or header.nodename or "unknown"
        self.trusted = steal_trusted(header.version)
        self.prev: Record | None = None
        self.sar = options.sar or parse_version(header.version)
        self.nr2 = {a.id: a.nr2 for a in header.activities}
        self.sequence = 0  # records seen: the resume position (Emitted.snapshot)
        # the native path: sar's arithmetic and the range checks in native code; with `topics` (topic key ->
        # name, as `parse` prints them) the sysstat_samples come as Lines of JSON text, else as Emitted
        self.ctx = _native_ctx(_RULES[memused_rule(self.sar)], self.nr2) if native_available() else None
        self.lines = self._lines(topics) if topics and self.ctx is not None else None
        # `encoded` (the collector's ingest): the native path's sysstat_samples as Avro bodies, not dicts
        # (a dict per row, then its encoding, were 0.4 of `ingest`'s CPU on a sadc file: py-spy)
        self.avro = encoded and self.ctx is not None and self.lines is None and _avro_layout_ok()
        self._avro_base = encode_string(self.host_id) + encode_string(self.header.nodename) if self.avro else b""
        self._avro_mid = (
            (encode_string(self.header.version) + (b"\x01" if self.trusted else b"\x00") + encode_string(self.name))
            if self.avro
            else b""
        )

    def _lines(self, topics: dict[str, str]) -> object:
        """The text of the JSON lines around the figures, written once (each message as `parse` prints it:
        {"topic", "key", "value"}); the native path writes the rest."""
        j = _to_json

        def head(topic_key: str) -> str:
            return (f'{{"topic": {j(topics[topic_key])}, "key": {j(self.host_id)}, "value": {{"host_id": '
                    f'{j(self.host_id)}, "hostname": {j(self.header.nodename)}, "ts": ')  # fmt: skip

        row_mid = (f', "source": {j(SOURCE)}, "sysstat_version": {j(self.header.version)}, "steal_trusted": '
                   f'{j(self.trusted)}, "origin_file": {j(self.name)}, "origin_offset": ')  # fmt: skip
        cpu_tail = (', "physc": null, "entitled": null, "virtual_cpus": null, "origin_file": '
                    f'{j(self.name)}, "origin_snapshot": "offset ')  # fmt: skip
        return _native.Lines(head("sysstat_samples"), row_mid, head("cpu_samples"), cpu_tail, self.trusted,
                             self.header.cpu_count)  # fmt: skip

    def host_config(self) -> Emitted:
        h = self.header
        attributes = {
            "os": h.sysname,
            "kernel": h.release,
            "machine": h.machine,
            "nodename": h.nodename,
            "cpu_count": str(h.cpu_count),
            "sysstat_version": h.version,
            "sysstat_format": f"0x{h.format_magic:04x}",
            "byte_order": h.byte_order,
            "sizeof_long": str(h.sizeof_long),
            "activities": ",".join(a.name for a in h.activities),
        }
        if h.hz:
            attributes["hz"] = str(h.hz)
        unread = [f"{a.name}@0x{a.magic:02x}" for a in h.activities if a.decoder is None]
        if unread:  # layouts we have no table for: skipped by their declared size
            attributes["unread_activities"] = ",".join(unread)
        record = {
            "host_id": self.host_id,
            "hostname": h.nodename,
            "ts": h.ust_time * 1000,
            "source": SOURCE,
            "origin_file": self.name,
            "attributes": attributes,
            "config_text": {},
        }
        return Emitted("host_configs", record, key=self.host_id)

    def header_problems(self) -> Iterator[Emitted]:
        for p in self.header.problems:
            yield dead_letter(SOURCE, self.path, 0, p.offset, f"{self.name}: {p.message}", p.raw)

    def feed(self, item: Record | Problem) -> Iterator[Emitted]:
        self.sequence += 1
        if isinstance(item, Problem):
            yield dead_letter(SOURCE, self.path, 0, item.offset, _problem_text(item), item.raw)
            return
        if item.kind == "restart":
            self.prev = None  # counters restart with the machine
            return
        if item.kind != "stats":
            return
        prev, self.prev = self.prev, item
        if prev is None:
            return
        yield from self._interval(prev, item)

    def _interval(self, prev: Record, cur: Record) -> Iterator[Emitted]:
        itv = (cur.uptime_cs - prev.uptime_cs) & 0xFFFFFFFFFFFFFFFF  # unsigned, as sar reads it
        plausible = 0 < itv <= MAX_INTERVAL_CS
        clock = cur.ust_time - prev.ust_time
        why = "is no interval"
        if plausible and self.header.format_magic == lay.FORMAT_2175 and cur.real_clock and prev.real_clock:
            # old formats count uptime in jiffies of an HZ the file does not record, files made with a fake
            # clock (upstream's tests) have no time to compare with: no check there
            if abs(itv / 100 - clock) > lay.CLOCK_SLACK_S + lay.CLOCK_SLACK_RATIO * abs(clock):
                plausible = False
                why = f"disagrees with the clock ({clock} s)"
        if not plausible:
            yield dead_letter(
                SOURCE,
                self.path,
                0,
                cur.offset,
                f"record at offset {cur.offset}: uptime {cur.uptime_cs} after {prev.uptime_cs} {why};"
                " CPU and memory are published, rates are not",
                "",
            )
        ts = cur.ust_time * 1000
        base = {
            "host_id": self.host_id,
            "hostname": self.header.nodename,
            "ts": ts,
            "interval_s": itv / 100 if plausible else None,
            "source": SOURCE,
            "sysstat_version": self.header.version,
            "steal_trusted": self.trusted,
            "origin_file": self.name,
            "origin_offset": cur.offset,
        }
        out = None
        if self.ctx is not None and cur.native is not None and prev.native is not None:
            head = tail = None
            if self.avro:
                interval_s = base["interval_s"]
                union = b"\x00" if interval_s is None else b"\x02" + encode_double(interval_s)
                head = self._avro_base + encode_long(ts) + union + _AVRO_SOURCE
                tail = self._avro_mid + encode_long(cur.offset)
            out = _native.interval(self.ctx, prev.native, cur.native, itv or 1, plausible, self.lines, ts,
                                   base["interval_s"], cur.offset, head, tail)  # fmt: skip
        if out is not None:
            segments, cpu_all, online, cpu_done = out
            for seg in segments:
                if len(seg) == 2:  # an Avro body and its figures' count (self.avro)
                    yield Emitted("sysstat_samples", {}, self.host_id, self.sequence, seg[0], seg[1])
                elif type(seg[1]) is int:
                    yield Lines(*seg)
                elif type(seg[2]) is str:
                    section, item, bad = seg
                    text = f"record at offset {cur.offset}: {section} {item or '-'} {bad}; not published"
                    yield dead_letter(SOURCE, self.path, 0, cur.offset, text, "")
                else:
                    section, item, values = seg
                    yield Emitted("sysstat_samples", {**base, "section": section, "item": item, "metrics": values},
                                  self.host_id, self.sequence, None, len(values))  # fmt: skip
            if cpu_done:
                return
            if cpu_all is not None:
                cpu_all = dict(zip(_CPU_OUT, cpu_all, strict=True))
        else:
            box: list = []
            yield from self._rows(prev, cur, itv, plausible, base, box)
            cpu_all, online = box
        if cpu_all is not None and self._interval_s(base, cpu_all, online, prev, cur) is not None:
            line = cpu_line(cpu_all)
            # each figure of sar's is in range, their sums (user incl. guest, system incl. irq/soft) must be too
            bad = [f"{k} = {v!r}" for k, v in line.items() if not 0 <= v <= 100.0001]
            if bad:
                text = f"record at offset {cur.offset}: CPU line {', '.join(bad)} out of range; not published"
                yield dead_letter(SOURCE, self.path, 0, cur.offset, text, "")
            else:
                yield Emitted("cpu_samples", self._cpu_sample(base, cpu_all, online, prev, cur), key=self.host_id,
                              snapshot=self.sequence)  # fmt: skip

    def _rows(self, prev: Record, cur: Record, itv: int, plausible: bool, base: dict, box: list) -> Iterator[Emitted]:
        """The interval's sysstat_samples the Python way; box gets [cpu "all" figures or None, online CPUs]."""
        cpu_all = None
        online = 0
        host_id, sequence = self.host_id, self.sequence
        now, before = decoded(cur, self.header), decoded(prev, self.header)
        for section, items in sections(now, before, itv or 1, self.sar, self.nr2, rates=plausible):
            bound = 100.0001 if section in PERCENT_SECTIONS else MAX_RATE
            for item, values in items:
                # _out_of_range's test for the common case, inline (a call per row was a tenth of the time);
                # the function says what is wrong when it fails
                vals = values.values()
                if not (
                    vals
                    and min(vals) >= 0
                    and max(vals) <= bound
                    and (total := sum(vals)) == total
                    and total <= MAX_LEVEL * len(vals)
                ):
                    bad = _out_of_range(section, values)
                    if bad:
                        text = f"record at offset {cur.offset}: {section} {item or '-'} {bad}; not published"
                        yield dead_letter(SOURCE, self.path, 0, cur.offset, text, "")
                        continue
                if section == "cpu-load-all":
                    if item == "all":
                        cpu_all = values
                    else:
                        online += 1
                # positional (topic, record, key, snapshot, encoded, values): values, the figures carried, is what
                # the pipeline's summary counts; set here, not by dataclasses.replace afterwards (3 us a row, 20 %
                # of `parse sadc` on a large file)
                yield Emitted(
                    "sysstat_samples",
                    {**base, "section": section, "item": item, "metrics": values},
                    host_id,
                    sequence,
                    None,
                    len(values),
                )
        box[:] = [cpu_all, online]

    def _interval_s(self, base: dict, v: dict[str, float], online: int, prev: Record, cur: Record) -> float | None:
        interval = base["interval_s"]
        if interval is None:  # fall back on the CPUs' own clock: jiffies of "all" / CPUs / HZ
            now, before = decoded(cur, self.header)[lay.A_CPU][0], decoded(prev, self.header)[lay.A_CPU][0]
            jiffies = sum(now.get(f, 0) - before.get(f, 0) for f in _JIFFY_FIELDS)
            interval = jiffies / max(online, 1) / (self.header.hz or 100)
            if not 0 < interval <= MAX_INTERVAL_CS / 100:
                return None  # the counters are damaged too: nothing to publish
        return float(interval)

    def _cpu_sample(self, base: dict, v: dict[str, float], online: int, prev: Record, cur: Record) -> dict:
        interval = self._interval_s(base, v, online, prev, cur)
        return {
            "host_id": self.host_id,
            "hostname": self.header.nodename,
            "ts": base["ts"],
            "interval_s": float(interval),
            "source": SOURCE,
            **cpu_line(v),
            "steal_pct": v["steal"] if self.trusted else None,
            "cpus": online or self.header.cpu_count,
            "physc": None,
            "entitled": None,
            "virtual_cpus": None,
            "origin_file": self.name,
            "origin_snapshot": f"offset {cur.offset}",
        }


_CPU_OUT = ("usr", "nice", "sys", "iowait", "steal", "irq", "soft", "guest", "gnice", "idle")
_JIFFY_FIELDS = ("user", "nice", "sys", "iowait", "idle", "steal", "hardirq", "softirq")


def _out_of_range(section: str, values: dict[str, float]) -> str:
    """Why these figures cannot be right, or '' (each is >= 0, finite, percentages of CPU time <= 100)."""
    if values:  # the common case in C builtins: a NaN or inf makes the sum NaN or inf
        vals = values.values()
        total, hi = sum(vals), max(vals)
        bound = 100.0001 if section in PERCENT_SECTIONS else MAX_RATE
        if min(vals) >= 0 and hi <= bound and total == total and total <= MAX_LEVEL * len(values):
            return ""
    for name, v in values.items():
        if not 0 <= v <= MAX_LEVEL:  # also NaN
            return f"{name} = {v!r} out of range"
        if section in _RATE_SECTIONS and v > MAX_RATE and name not in ("rx_bytes", "tx_bytes", "rx_packets",
                                                                         "tx_packets", "speed"):  # fmt: skip
            return f"{name} = {v!r} per second out of range"
        if section in PERCENT_SECTIONS and v > 100.0001:
            return f"{name} = {v!r} % out of range"
    return ""


def _problem_text(p: Problem) -> str:
    where = f"; reading went on at offset {p.resumed_at}" if p.resumed_at is not None else ""
    return f"{p.message}{where}"


def records_of_bytes(
    data: bytes, path: str, options: Options, topics: dict[str, str] | None = None, encoded: bool = False
) -> Iterator[Emitted | Lines]:
    """Every record of a complete file; a file that cannot be read at all gives one dead letter. With `topics`
    (topic key -> name) the native path gives the sysstat_samples as Lines of `parse`'s JSON; with
    `encoded`, as Avro bodies (records_of_file)."""
    try:
        sa = open_bytes(data, path, options.hz, not options.trust_times)
    except FormatError as exc:
        yield dead_letter(SOURCE, path, 0, exc.offset, f"{Path(path).name}: {exc}", data[:64].hex())
        return
    yield from _emitted(sa, path, options, topics, encoded)


def _emitted(
    sa: SaFile, path: str, options: Options, topics: dict[str, str] | None, encoded: bool = False
) -> Iterator[Emitted | Lines]:
    collector = Collector(sa.header, path, options, topics, encoded)
    yield collector.host_config()
    yield from collector.header_problems()
    for item in sa.records():
        yield from collector.feed(item)


def records_of_file(
    path: Path, options: Options, topics: dict[str, str] | None = None, encoded: bool = False
) -> Iterator[Emitted | Lines]:
    """As records_of_bytes, reading the file through a window: memory does not grow with its size.
    `encoded`: sysstat_samples the native path computes come Avro-encoded (Emitted.encoded, `record`
    empty), the bytes the topic's compiled encoder gives for the same record (the collector's path)."""
    with open(path, "rb") as handle:
        try:
            sa = open_stream(handle, str(path), options.hz, not options.trust_times)
        except FormatError as exc:
            handle.seek(0)
            yield dead_letter(SOURCE, str(path), 0, exc.offset, f"{path.name}: {exc}", handle.read(64).hex())
            return
        yield from _emitted(sa, str(path), options, topics, encoded)


_AVRO_SOURCE = encode_string(SOURCE)


@cache
def _avro_layout_ok() -> bool:
    """schemas/sysstat_sample.avsc has the fields _AVRO_FIELDS names, in that order, of those types."""
    schema = json.loads(config.load().topic("sysstat_samples").schema_text())

    def kind(t: object) -> object:
        if isinstance(t, list):
            return tuple(kind(x) for x in t)
        if isinstance(t, dict):
            if t.get("type") == "map":
                return ("map", kind(t["values"]))
            return (t["type"], t["logicalType"]) if "logicalType" in t else kind(t["type"])
        return t

    return tuple((f["name"], kind(f["type"])) for f in schema["fields"]) == _AVRO_FIELDS


class Tail:
    """A file sadc is still appending to: each `poll` publishes the records completed since the last."""

    def __init__(self, path: Path, options: Options) -> None:
        self.path = path
        self.options = options
        self.collector: Collector | None = None
        self.offset: int | None = None  # end of the last whole record read
        self.file: SaFile | None = None
        self.failed = False  # the file cannot be read, or is finished: nothing more is published from it

    def finish(self) -> Iterator[Emitted]:
        """sadc has moved on to another file: what is left is complete (a torn or damaged end is reported)."""
        yield from self.poll(complete=True)
        self.failed = True  # done: nothing is read from it again

    def poll(self, complete: bool = False) -> Iterator[Emitted]:
        if self.failed:
            return
        with open(self.path, "rb") as handle:  # read from where the last poll stopped, not from the start
            if self.collector is None:
                try:
                    sa = open_stream(handle, str(self.path), self.options.hz, not self.options.trust_times)
                except FormatError as exc:
                    if exc.truncated:
                        return  # the header is still being written
                    # a file we cannot read (old format, damaged header): reported once, then left alone,
                    # so following goes on with the other files
                    self.failed = True
                    handle.seek(0)
                    head = handle.read(64).hex()
                    yield dead_letter(SOURCE, str(self.path), 0, exc.offset, f"{self.path.name}: {exc}", head)
                    return
                self.collector = Collector(sa.header, str(self.path), self.options)
                yield self.collector.host_config()
                yield from self.collector.header_problems()
            else:
                assert self.file is not None
                sa = self.file.reopened(handle)
            self.file = sa
            for item in sa.records(self.offset, complete=complete):
                if isinstance(item, Record):
                    self.offset = item.end
                yield from self.collector.feed(item)
