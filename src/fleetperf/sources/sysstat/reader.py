"""sysstat binary data files (saDD) -> file header and records of raw counters.

Driven by the tables in `layouts.py`. Reads every supported format in either byte order and with
4- or 8-byte longs. Damage never raises past `read`: it becomes a `Problem` naming the byte offset,
every record before it is kept, and the reader looks for the next plausible record header after it.
"""

from __future__ import annotations

import copy
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from fleetperf.sources.sysstat import layouts as lay

try:  # the native hot path (sources/sysstat/native, built by ./fleetperf); absent without a Rust toolchain
    import fleetperf_sadc_native as _native
except ImportError:
    _native = None

Counters = dict[str, Any]


def native_available() -> bool:
    """The native module is built and not turned off (FLEETPERF_SADC_PARSER=python, to compare or rule it out)."""
    return _native is not None and os.environ.get("FLEETPERF_SADC_PARSER") != "python"


class FormatError(ValueError):
    """The file cannot be read at all (not a sysstat file, refused format, corrupt header)."""

    def __init__(self, offset: int, message: str, truncated: bool = False) -> None:
        super().__init__(f"offset {offset}: {message}")
        self.offset = offset
        self.message = message
        self.truncated = truncated  # the bytes end too early (a file still being written, or cut)


@dataclass(frozen=True)
class Activity:
    id: int
    magic: int
    nr: int
    nr2: int
    has_nr: bool
    size: int
    types: tuple[int, int, int] | None  # 0x2175 only
    decoder: _Decoder | None  # None: unknown activity or format, skipped by its size

    @property
    def name(self) -> str:
        return lay.ACTIVITY_NAMES.get(self.id, f"activity_{self.id}")


@dataclass
class FileHeader:
    format_magic: int
    version: str
    byte_order: str  # "little" | "big"
    sizeof_long: int
    hz: int | None  # jiffies per second; not recorded before 0x2175
    ust_time: int
    cpu_nr: int  # "all" + CPUs
    sysname: str
    nodename: str
    release: str
    machine: str
    upgraded: int
    activities: list[Activity]
    data_offset: int  # first record header
    # activities whose description we cannot use (damaged, or changed): skipped by size, one dead letter each
    problems: list[Problem] = field(default_factory=list)

    @property
    def cpu_count(self) -> int:
        return max(self.cpu_nr - 1, 1)


@dataclass
class Record:
    kind: str  # "stats" | "restart" | "comment" | "extra"
    offset: int
    end: int
    uptime_cs: int  # machine uptime in 1/100 s (0x2175) or derived from jiffies (old formats)
    ust_time: int  # seconds since the epoch, UTC
    cpu_nr: int | None = None  # restart: new "all" + CPUs
    comment: str | None = None
    stats: dict[int, list[Counters]] = field(default_factory=dict)  # activity id -> items
    real_clock: bool = False  # the file's times come from a real clock (hh:mm:ss agree with them)
    # the native path's counters (then `stats` is filled only on demand, by `decoded`)
    native: Any = None


def decoded(rec: Record, header: FileHeader) -> dict[int, list[Counters]]:
    """A record's counters as dicts, made by the Python decoders from the bytes the native path read."""
    if rec.native is not None and not rec.stats:
        data, spans = rec.native.raw()
        acts = header.activities
        rec.stats = {acts[i].id: acts[i].decoder.decode_many(data, off, n) for i, off, n in spans}  # type: ignore[union-attr]
    return rec.stats


@dataclass(frozen=True)
class Problem:
    offset: int
    message: str
    resumed_at: int | None = None  # where reading went on, None if it could not
    raw: str = ""  # hex of the bytes at the offset, for the dead letter


class _Texts(dict):
    """A char array's text (NUL-terminated, ASCII) or, for a one-byte array, its number; the texts of the
    arrays met are kept (at most 4096), since names repeat in every record."""

    def __missing__(self, raw: bytes) -> str | int:
        text = raw.split(b"\0", 1)[0].decode("ascii", "replace") if len(raw) > 1 else raw[0]
        if len(self) < 4096:
            self[raw] = text
        return text


class _Decoder:
    """Unpacks the items of an activity with a single precompiled struct, and makes each a dict with a
    function compiled once from the layout's field names."""

    def __init__(self, fmt: str, names: list[str], chars: list[str], size: int) -> None:
        self.struct = struct.Struct(fmt)
        self.names = names  # one per numeric value, in unpack order
        self.chars = chars  # names of the trailing char arrays, in unpack order
        # the same, padded to the item's size: a whole block of items unpacks in one call
        pad = size - self.struct.size  # >= 0: the decoders never take more than the item holds
        self.items = struct.Struct(fmt + (f"{pad}x" if pad > 0 else ""))
        self._texts = _Texts()  # interface, interrupt and file system names repeat in every record
        self._build = _dict_builder(names, chars)

    def decode_many(self, buf: bytes, offset: int, n: int) -> list[Counters]:
        """n consecutive items from offset (the bytes are there)."""
        if not n:
            return []
        return self._build(self.items.iter_unpack(memoryview(buf)[offset : offset + n * self.items.size]), self._texts)


def _dict_builder(names: list[str], chars: list[str]) -> Callable[[Iterable[tuple], _Texts], list[Counters]]:
    """`[{name0: v0, name1: v1, ..., char0: texts[c0]} for v0, v1, ..., c0 in rows]` for these fields, compiled:
    a dict display is 3.5 times as fast as dict(zip(names, row)) (timeit, 117 two-field items: 8.3 vs 29.7 us),
    and the char arrays become their text in the same pass. The names are those of layouts.py's tables (never
    a file's bytes), quoted with repr."""
    values = [f"v{i}" for i in range(len(names) + len(chars))]
    entries = [f"{name!r}: {v}" for name, v in zip(names, values, strict=False)]
    entries += [f"{name!r}: texts[{v}]" for name, v in zip(chars, values[len(names) :], strict=True)]
    target = f"{', '.join(values)}," if values else "_"  # a description damaged into no field: empty items
    source = f"def build(rows, texts):\n    return [{{{', '.join(entries)}}} for {target} in rows]\n"
    scope: dict[str, Any] = {}
    exec(compile(source, "<sysstat layout>", "exec"), scope)  # noqa: S102 - code made from our own tables
    return scope["build"]


def _grouped_decoder(layout: lay.Grouped, types: tuple[int, int, int], size: int, e: str, sl: int) -> _Decoder | None:
    ull, ul, u = types
    lf = "Q" if sl == 8 else "I"
    fmt, names = [e], []
    for count, known, code, width in ((ull, layout.ull, "Q", 8), (ul, layout.ul, lf, sl), (u, layout.u, "I", 4)):
        take = min(count, len(known))
        fmt.append(code * take)
        names.extend(known[:take])
        if count > take:
            fmt.append(f"{(count - take) * width}x")
    used = ull * 8 + ul * sl + u * 4
    chars = []
    for name, length in layout.chars:
        if used + length <= size:
            fmt.append(f"{length}s")
            chars.append(name)
            used += length
    if used > size:
        return None
    return _Decoder("".join(fmt), names, chars, size)


def _aligned_decoder(fields: tuple[lay.Field, ...], size: int, e: str, sl: int) -> _Decoder | None:
    fmt, names, chars, pos = [e], [], [], 0
    for f, offset, width in lay.aligned_offsets(fields, sl):
        if offset + width > size:
            break
        if offset > pos:
            fmt.append(f"{offset - pos}x")
        if f.ctype == lay.CHAR:
            fmt.append(f"{f.length}s")
            chars.append(f.name)
        else:
            fmt.append({lay.ULL: "Q", lay.U: "I", lay.UL: "Q" if sl == 8 else "I"}[f.ctype])
            names.append(f.name)
        pos = offset + width
    if not names:
        return None
    return _Decoder("".join(fmt), names, chars, size)


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


CHUNK = 1 << 20  # bytes read from a file at a time
KEEP = 1 << 20  # bytes before the current record dropped from the window once this many are behind


class SaFile:
    """One sysstat data file, read through a window: `data` holds the bytes from file offset `_base`
    on; parsing works with offsets relative to it and `records()` reports file offsets. Given bytes, the
    window is the whole file; given an open file, it slides: memory stays at about the largest record
    plus 2 MB whatever the file's size."""

    def __init__(self, data: bytes | BinaryIO, path: str = "", hz: int | None = None, check_times: bool = True) -> None:
        # False: record times are taken as they are, as sar does (a file known to have mangled times)
        self._check_times = check_times
        self._handle: BinaryIO | None = None
        self._base = 0
        if isinstance(data, bytes | bytearray | memoryview):
            self.data = bytes(data)
            self._size = len(self.data)
        else:
            self._handle = data
            self._size = os.fstat(data.fileno()).st_size
            self.data = data.read(min(self._size, CHUNK))
        self.path = path
        # jiffies per second of the host of an old file (not recorded before 0x2175); sadf -c assumes 100
        self.hz_for_old = hz or 100
        little = len(self.data) >= 2 and struct.unpack_from("<H", self.data, 0)[0] == lay.SYSSTAT_MAGIC
        e = "<" if little else ">"
        self._e = e
        self._problems: list[Problem] = []
        self._last_time: int | None = None  # time of the last good record
        self._seconds_agree = False  # whether this file's hh:mm:ss repeat its epoch times' seconds
        self._ss_last = False  # whether they did in the record parsed last
        self._last_stats: Record | None = None  # the last good statistics record since the last restart
        self.header = self._read_header()
        self._nspec = self._native_spec()
        self._u32 = struct.Struct(e + "I")
        self._i32 = struct.Struct(e + "i")
        self._u64 = struct.Struct(e + "Q")

    def _native_spec(self) -> Any:
        """The activities as the native path reads them: each decoder's struct format and field names (the
        layouts of layouts.py, compiled here), None when it is off or cannot take them."""
        if not native_available():
            return None
        acts = []
        for a in self.header.activities:
            d = a.decoder
            spec = (d.items.format, d.names, d.chars) if d is not None else (None, None, None)
            acts.append((a.id, a.name, a.nr, a.nr2, a.size, a.has_nr, lay.ITEM_MAX.get(a.id, lay.NR_MAX), *spec))
        try:
            return _native.Spec(self._e == ">", acts)
        except (ValueError, OverflowError, TypeError):
            return None

    # --- header --------------------------------------------------------------------------------

    def _read_header(self) -> FileHeader:
        d = self.data
        if len(d) < 8:
            raise FormatError(0, f"file too short for a sysstat header ({len(d)} bytes)", truncated=True)
        if struct.unpack_from("<H", d, 0)[0] == lay.SYSSTAT_MAGIC:
            order, e = "little", "<"
        elif struct.unpack_from(">H", d, 0)[0] == lay.SYSSTAT_MAGIC:
            order, e = "big", ">"
        else:
            raise FormatError(0, "not a sysstat data file (no magic 0xd596)")
        fmt_magic = struct.unpack_from(e + "H", d, 2)[0]
        version = ".".join(str(b) for b in d[4:7])
        if fmt_magic == lay.FORMAT_2170 or fmt_magic < lay.FORMAT_2170:
            raise FormatError(2, f"format 0x{fmt_magic:04x} (sysstat {version}) cannot be read, as by sar")
        if fmt_magic not in lay.SUPPORTED_FORMATS:
            raise FormatError(2, f"unknown format 0x{fmt_magic:04x} (sysstat {version})")
        if fmt_magic == lay.FORMAT_2175:
            return self._header_2175(e, order, version)
        return self._header_old(fmt_magic, e, order, version)

    def _need(self, offset: int, size: int, what: str) -> bytes:
        """The window, holding `size` bytes at `offset` (relative), read from the file if need be."""
        if offset + size > len(self.data):
            if self._base + offset + size > self._size or self._handle is None:
                # checked against the file's size first: a damaged count never makes us read gigabytes
                raise FormatError(offset, f"end of file inside the {what} (needs {size} bytes)", truncated=True)
            self._handle.seek(self._base + len(self.data))
            more = self._handle.read(max(offset + size - len(self.data), CHUNK))
            self.data += more
            if offset + size > len(self.data):  # the file shrank under us
                raise FormatError(offset, f"end of file inside the {what} (needs {size} bytes)", truncated=True)
        return self.data

    def _header_2175(self, e: str, order: str, version: str) -> FileHeader:
        d = self._need(0, lay.NEW_FILE_MAGIC_SIZE, "file magic")
        header_size, upgraded, hull, hul, hu = struct.unpack_from(e + "5I", d, 8)
        if not 0 < header_size <= lay.MAX_FILE_HEADER_SIZE:
            raise FormatError(8, f"file header size {header_size} out of range")
        # every sysstat writing 0x2175 describes its header as 1 ULL, 1 UL and 11 or 12 ints; the ints,
        # the four utsname strings and three chars must fit the declared size
        if (hull, hul) != (1, 1) or not 11 <= hu <= 64 or 16 + 4 * hu + 3 + 4 * lay.UTSNAME_LEN > header_size:
            raise FormatError(16, f"file header of {header_size} bytes described as {hull}/{hul}/{hu} fields")
        h = lay.NEW_FILE_MAGIC_SIZE
        d = self._need(h, header_size, "file header")
        ust_time = struct.unpack_from(e + "Q", d, h)[0]
        ints = struct.unpack_from(e + f"{hu}I", d, h + 16)
        cpu_nr, act_nr = ints[0], ints[1]
        act_types, rec_types = ints[3:6], ints[6:9]
        act_size, rec_size = ints[9], ints[10]
        extra_next = ints[11] if hu >= 12 else 0
        c = h + 16 + 4 * hu
        sizeof_long = d[c + 2]
        if sizeof_long not in (4, 8):
            raise FormatError(c + 2, f"sizeof(long) {sizeof_long} is neither 4 nor 8")
        hz = struct.unpack_from(e + ("Q" if sizeof_long == 8 else "I"), d, h + 8)[0]
        names = [_cstr(d[c + 3 + i * lay.UTSNAME_LEN : c + 3 + (i + 1) * lay.UTSNAME_LEN]) for i in range(4)]
        if not 0 < act_nr <= lay.MAX_NR_ACT:
            raise FormatError(h + 20, f"number of activities {act_nr} out of range")
        if not 0 < cpu_nr <= lay.MAX_CPU_NR:
            raise FormatError(h + 16, f"number of CPUs {cpu_nr} out of range")
        if not 0 < act_size <= lay.MAX_FILE_ACTIVITY_SIZE or not 0 < rec_size <= lay.MAX_RECORD_HEADER_SIZE:
            raise FormatError(h + 52, f"activity/record header size {act_size}/{rec_size} out of range")
        # file_activity: 9 ints (id, magic, nr, nr2, has_nr, size, types_nr[3]) in every 0x2175 sysstat
        if tuple(act_types[:2]) != (0, 0) or not 9 <= act_types[2] <= act_size // 4:
            raise FormatError(h + 28, f"activity description of {act_size} bytes described as {act_types}")
        # record_header: uptime and time (2 ULL), [extra_next], then type, hour, minute, second
        if tuple(rec_types[:2]) != (2, 0) or 16 + 4 * rec_types[2] + 4 > rec_size:
            raise FormatError(h + 40, f"record header of {rec_size} bytes described as {rec_types}")
        self._check_header_time(h, ust_time)
        self._rec_size, self._rec_types = rec_size, rec_types
        off = h + header_size
        activities = []
        for i in range(act_nr):
            d = self._need(off, act_size, f"description of activity {i + 1}")
            aid, magic, nr, nr2, has_nr, size = struct.unpack_from(e + "IIiiii", d, off)
            types = struct.unpack_from(e + "3I", d, off + 24)
            self._check_activity(off, aid, nr, nr2, size)
            layout = lay.GROUPED.get((aid, magic))
            dec = _grouped_decoder(layout, types, size, e, sizeof_long) if layout else None
            what = f"{size}-byte items of {types[0]}/{types[1]}/{types[2]} fields"
            dec = self._usable(off, aid, magic, dec, what, layout is not None)
            activities.append(Activity(aid, magic, nr, nr2, bool(has_nr), size, types, dec))
            off += act_size
        if extra_next:
            off = self._skip_extra(off)
        header = FileHeader(
            lay.FORMAT_2175, version, order, sizeof_long, hz, ust_time, cpu_nr, *names, upgraded, activities, off
        )
        header.problems = self._problems
        return header

    def _usable(self, off: int, aid: int, magic: int, dec: _Decoder | None, what: str, known: bool) -> _Decoder | None:
        """The decoder, unless the description leaves out a field the activity cannot do without."""
        if dec is None:
            if known:  # a layout we know, described with a size its fields do not fit
                self._problems.append(
                    Problem(
                        off,
                        f"activity {lay.ACTIVITY_NAMES.get(aid, aid)} (magic 0x{magic:x}): {what} do not"
                        " hold its fields; the activity is skipped in every record",
                        off,
                    )  # fmt: skip
                )
            return None
        missing = [n for n in lay.REQUIRED.get(aid, ()) if n not in dec.names and n not in dec.chars]
        if missing:
            self._problems.append(
                Problem(
                    off,
                    f"activity {lay.ACTIVITY_NAMES.get(aid, aid)} (magic 0x{magic:x}): {what} lack"
                    f" {', '.join(missing)}; the activity is skipped in every record",
                    off,
                )  # fmt: skip
            )
            return None
        return dec

    @staticmethod
    def _check_header_time(off: int, ust_time: int) -> None:
        if not lay.MIN_EPOCH <= ust_time < lay.MAX_EPOCH:
            raise FormatError(off, f"file header time {ust_time} is not a date between 1980 and 2100")

    def _header_old(self, fmt_magic: int, e: str, order: str, version: str) -> FileHeader:
        d = self.data
        h = lay.OLD_FILE_MAGIC_SIZE[fmt_magic]
        pos = lay.OLD_HEADER[fmt_magic]
        c = h + pos["day"]
        d = self._need(h, pos["day"] + 4 + 4 * lay.UTSNAME_LEN, "file header")
        sizeof_long = d[c + 3]
        if sizeof_long not in (4, 8):
            raise FormatError(c + 3, f"sizeof(long) {sizeof_long} is neither 4 nor 8")
        ust_time = struct.unpack_from(e + ("Q" if sizeof_long == 8 else "I"), d, h)[0]
        act_nr = struct.unpack_from(e + "I", d, h + pos["act_nr"])[0]
        cpu_nr = struct.unpack_from(e + "I", d, h + pos["last_cpu_nr"])[0] if pos["last_cpu_nr"] else 0
        self._vol_act_nr = struct.unpack_from(e + "I", d, h + pos["vol_act_nr"])[0] if pos["vol_act_nr"] else 0
        names = [_cstr(d[c + 4 + i * lay.UTSNAME_LEN : c + 4 + (i + 1) * lay.UTSNAME_LEN]) for i in range(4)]
        if fmt_magic == lay.FORMAT_2173:
            header_size = struct.unpack_from(e + "I", d, 8)[0]
        else:  # sizeof(struct file_header_2171), 8-aligned
            header_size = (pos["day"] + 4 + 4 * lay.UTSNAME_LEN + 7) // 8 * 8
        if not 0 < act_nr <= lay.MAX_NR_ACT:
            raise FormatError(h + pos["act_nr"], f"number of activities {act_nr} out of range")
        off = h + header_size
        activities = []
        for i in range(act_nr):
            d = self._need(off, lay.OLD_FILE_ACTIVITY_SIZE, f"description of activity {i + 1}")
            aid, magic, nr, nr2, size = struct.unpack_from(e + "IIiii", d, off)
            self._check_activity(off, aid, nr, nr2, size)
            fields = lay.ALIGNED.get((aid, magic))
            dec = _aligned_decoder(fields, size, e, sizeof_long) if fields else None
            dec = self._usable(off, aid, magic, dec, f"{size}-byte items", fields is not None)
            activities.append(Activity(aid, magic, nr, nr2, False, size, None, dec))
            off += lay.OLD_FILE_ACTIVITY_SIZE
        if not cpu_nr:
            cpu_nr = next((a.nr for a in activities if a.id == lay.A_CPU), 1)
        if not 0 < cpu_nr <= lay.MAX_CPU_NR:
            raise FormatError(h + (pos["last_cpu_nr"] or 0), f"number of CPUs {cpu_nr} out of range")
        if self._vol_act_nr > act_nr:
            raise FormatError(h + (pos["vol_act_nr"] or 0), f"{self._vol_act_nr} volatile activities of {act_nr}")
        self._check_header_time(h, ust_time)
        header = FileHeader(fmt_magic, version, order, sizeof_long, None, ust_time, cpu_nr, *names, 0, activities, off)
        header.problems = self._problems
        return header

    @staticmethod
    def _check_activity(off: int, aid: int, nr: int, nr2: int, size: int) -> None:
        if not (0 <= nr <= lay.NR_MAX and 0 < nr2 <= lay.NR2_MAX and 0 < size <= lay.MAX_ITEM_SIZE):
            raise FormatError(off, f"activity {aid}: items {nr}x{nr2} of {size} bytes out of range")
        if nr * nr2 > lay.NR_MAX:
            raise FormatError(off, f"activity {aid}: {nr}x{nr2} items overflow")

    def _skip_extra(self, off: int) -> int:
        """Skip an extra_desc chain (structures later sysstat versions may add)."""
        while True:
            d = self._need(off, 24, "extra structure description")
            extra_nr, extra_size, extra_next = struct.unpack_from(self._e + "3I", d, off)
            if extra_nr > lay.MAX_EXTRA_NR or extra_size > lay.MAX_EXTRA_SIZE:
                raise FormatError(off, f"extra structures {extra_nr}x{extra_size} out of range")
            off += 24 + extra_nr * extra_size
            self._need(off, 0, "extra structures")
            if not extra_next:
                return off

    # --- records -------------------------------------------------------------------------------

    def records(self, start: int | None = None, *, complete: bool = True) -> Iterator[Record | Problem]:
        """Records from file offset `start` (default: the first). With complete=False (a file still
        being written) a partial record at the end is left for the next call instead of reported."""
        pos = self.header.data_offset if start is None else start  # file offset
        while True:
            self._slide(pos)
            base = self._base  # fixed while one record is parsed: offsets below are relative to it
            off = pos - base
            if pos >= self._size:
                return
            try:
                rec = self._record(off)
            except FormatError as exc:
                if exc.truncated:
                    if not complete:
                        return  # the rest is still being written
                    # a count or size damaged into pointing past the end, or a file cut short
                    resume = self._resync(off + 1)
                    if resume is None:
                        yield Problem(
                            base + exc.offset, f"truncated record at offset {pos}: {exc.message}", None, self._hex(off)
                        )
                        return
                    yield Problem(base + exc.offset, f"corrupt record at offset {pos}: {exc.message}", base + resume,
                                  self._hex(off))  # fmt: skip
                    pos = base + resume
                    continue
                resume = self._resync(off + 1)
                if resume is None and not complete:
                    return  # nothing whole after it yet: judged when more is written (or at finish)
                yield Problem(base + exc.offset, f"corrupt record at offset {pos}: {exc.message}",
                              None if resume is None else base + resume, self._hex(off))  # fmt: skip
                if resume is None:
                    return
                pos = base + resume
                continue
            if self._check_times and self._last_time is None and not self._near_header(rec.ust_time):
                # a first record far from the file's own time (upstream's ppc file: 23 years) is believed
                # only when the record after it follows within a day; garbage read as a record is not
                nxt, partial = self._peek(rec.end)
                if nxt is None and partial and not complete:
                    return  # wait for the next record
                if nxt is None or not 0 <= nxt.ust_time - rec.ust_time <= 86400:
                    resume = self._resync(off + 1)
                    if resume is None and not complete:
                        return
                    yield Problem(pos, f"corrupt record at offset {pos}: its time {rec.ust_time} is far from the"
                                  f" file's ({self.header.ust_time}) and the next record does not follow it",
                                  None if resume is None else base + resume, self._hex(off))  # fmt: skip
                    if resume is None:
                        return
                    pos = base + resume
                    continue
            if self._clock_disagrees(self._last_stats, rec):
                # a damaged time or uptime, or the clock stepped: the next record tells which
                nxt, partial = self._peek(rec.end)
                if nxt is None and partial and not complete:
                    return  # wait for the next record
                if nxt is None or self._clock_disagrees(rec, nxt):
                    yield Problem(
                        pos,
                        f"corrupt record at offset {pos}: its time {rec.ust_time} and uptime {rec.uptime_cs} disagree"
                        f" with those of the records around it; record skipped",
                        base + rec.end,
                        self._hex(off),
                    )
                    pos = base + rec.end
                    continue
            rec.offset, rec.end = pos, base + rec.end
            self._accept(rec)
            rec.real_clock = self._seconds_agree
            yield rec
            pos = rec.end

    def _slide(self, pos: int) -> None:
        """Drop the window's bytes well before file offset `pos` (a file source only)."""
        if self._handle is None:
            return
        if not self._base <= pos <= self._base + len(self.data):
            self.data, self._base = b"", pos  # somewhere else: start afresh there
        elif pos - self._base > KEEP:
            self.data = self.data[pos - self._base :]
            self._base = pos

    def _hex(self, off: int) -> str:
        return self.data[off : off + 64].hex()

    def reopened(self, handle: BinaryIO) -> SaFile:
        """The same file after sadc appended to it (live mode): header, item counts and the last good
        record as read so far; the window starts empty at the end of what was read."""
        clone = copy.copy(self)
        clone._handle = handle
        clone._size = os.fstat(handle.fileno()).st_size
        clone._base, clone.data = 0, b""  # nothing held: the first record read moves the window there
        return clone

    def _resync(self, off: int) -> int | None:
        """Next offset (within RESYNC_WINDOW bytes) where a whole record parses and its time follows the
        last good one by at most a week."""
        last_time = self._last_time
        for cand in range(off, min(self._size - self._base - 8, off + lay.RESYNC_WINDOW)):
            try:
                rec = self._record(cand)
            except (FormatError, struct.error, ValueError):
                continue
            if rec.kind not in ("stats", "restart", "comment"):
                continue
            if last_time is None or last_time <= rec.ust_time <= last_time + 7 * 86400:
                return cand
        return None

    def _record(self, off: int) -> Record:
        if self.header.format_magic == lay.FORMAT_2175:
            return self._record_2175(off)
        return self._record_old(off)

    def _record_2175(self, off: int) -> Record:
        e = self._e
        d = self._need(off, self._rec_size, "record header")
        uptime_cs, ust_time = struct.unpack_from(e + "QQ", d, off)
        n_int = self._rec_types[2]
        extra_next = self._u32.unpack_from(d, off + 16)[0] if n_int >= 1 else 0
        rtype, hh, mm, ss = d[off + 16 + 4 * n_int : off + 20 + 4 * n_int]
        self._check_time(off, ust_time, hh, mm, ss)
        body = off + self._rec_size
        if rtype in (lay.R_STATS, lay.R_LAST_STATS):
            if extra_next:
                body = self._skip_extra(body)
            stats, body, nat = self._stats(body, counted=True)
            return Record("stats", off, body, uptime_cs, ust_time, stats=stats, native=nat)
        if rtype == lay.R_RESTART:
            d = self._need(body, 4, "restart record")
            cpu_nr = self._i32.unpack_from(d, body)[0]
            if not 0 < cpu_nr <= 16384:
                raise FormatError(body, f"restart record with {cpu_nr} CPUs")
            body += 4
            if extra_next:
                body = self._skip_extra(body)
            return Record("restart", off, body, uptime_cs, ust_time, cpu_nr=cpu_nr)
        if rtype == lay.R_COMMENT:
            d = self._need(body, lay.MAX_COMMENT_LEN, "comment record")
            text = _cstr(d[body : body + lay.MAX_COMMENT_LEN])
            body += lay.MAX_COMMENT_LEN
            if extra_next:
                body = self._skip_extra(body)
            return Record("comment", off, body, uptime_cs, ust_time, comment=text)
        if lay.R_EXTRA_MIN <= rtype <= lay.R_EXTRA_MAX:
            if extra_next:
                body = self._skip_extra(body)
            return Record("extra", off, body, uptime_cs, ust_time)
        raise FormatError(off + 16 + 4 * n_int, f"unknown record type {rtype}")

    def _record_old(self, off: int) -> Record:
        e, hdr = self._e, self.header
        d = self._need(off, lay.OLD_RECORD_HEADER_SIZE, "record header")
        uptime, uptime0 = struct.unpack_from(e + "Q8xQ", d, off)
        ust_time = struct.unpack_from(e + ("Q" if hdr.sizeof_long == 8 else "I"), d, off + 32)[0]
        rtype, hh, mm, ss = d[off + 40 : off + 44]
        self._check_time(off + 32, ust_time, hh, mm, ss)
        # jiffies -> 1/100 s as "sadf -c" converts, with the reader's HZ (old files do not record it)
        uptime_cs = (uptime0 or uptime) * 100 // self.hz_for_old
        body = off + lay.OLD_RECORD_HEADER_SIZE
        if rtype in (lay.R_STATS, lay.R_LAST_STATS):
            stats, body, nat = self._stats(body, counted=False)
            return Record("stats", off, body, uptime_cs, ust_time, stats=stats, native=nat)
        if rtype == lay.R_RESTART:
            cpu_nr = None
            if hdr.format_magic == lay.FORMAT_2173:
                # the volatile activities follow, with their new item counts
                for _ in range(self._vol_act_nr):
                    d = self._need(body, lay.OLD_FILE_ACTIVITY_SIZE, "restart record")
                    aid, _magic, nr, _nr2, _size = struct.unpack_from(e + "IIiii", d, body)
                    body += lay.OLD_FILE_ACTIVITY_SIZE
                    if aid == lay.A_CPU and 0 < nr <= 16384:
                        cpu_nr = nr
                        self._set_nr(aid, nr)
            return Record("restart", off, body, uptime_cs, ust_time, cpu_nr=cpu_nr)
        if rtype == lay.R_COMMENT:
            d = self._need(body, lay.MAX_COMMENT_LEN, "comment record")
            text = _cstr(d[body : body + lay.MAX_COMMENT_LEN])
            return Record("comment", off, body + lay.MAX_COMMENT_LEN, uptime_cs, ust_time, comment=text)
        raise FormatError(off + 40, f"unknown record type {rtype}")

    def _check_time(self, off: int, ust_time: int, hh: int, mm: int, ss: int) -> None:
        """A record's time: hh:mm:ss in range, a date sysstat can have written, and near the file's start
        or the last good record (a flipped high byte moves it by 194 days or more). sadc writes the epoch
        time and hh:mm:ss from one clock reading, so where the file's first record agrees on the seconds
        every record must (files made with a fake clock, like upstream's test files, do not)."""
        if hh > 23 or mm > 59 or ss > 59:
            raise FormatError(off, f"record header with time {hh}:{mm}:{ss}")
        if not self._check_times:
            self._ss_last = False
            return
        if not lay.MIN_EPOCH <= ust_time < lay.MAX_EPOCH:
            raise FormatError(off, f"record time {ust_time} is not a date between 1980 and 2100")
        self._ss_last = ust_time % 60 == ss
        if self._seconds_agree and not self._ss_last:
            raise FormatError(off, f"record time {ust_time} disagrees with its {hh:02d}:{mm:02d}:{ss:02d}")
        last = self._last_time
        if last is None:
            return  # the first record: judged in records() with the one after it
        for base in (last, self.header.ust_time):
            if base - lay.RECORD_TIME_BEFORE <= ust_time <= base + lay.RECORD_TIME_AFTER:
                return
        raise FormatError(off, f"record time {ust_time} is implausible after {last}")

    def _near_header(self, ust_time: int) -> bool:
        start = self.header.ust_time
        return start - lay.RECORD_TIME_BEFORE <= ust_time <= start + lay.RECORD_TIME_AFTER

    def _accept(self, rec: Record) -> None:
        if self._last_time is None:
            self._seconds_agree = self._ss_last
        self._last_time = rec.ust_time
        if rec.kind == "stats":
            self._last_stats = rec
        elif rec.kind == "restart":
            self._last_stats = None  # uptime starts again

    def _clock_disagrees(self, before: Record | None, rec: Record) -> bool:
        """Two statistics records of one boot whose uptimes (1/100 s) and clock times (s) do not tell the
        same interval, in a 0x2175 file with a real clock (old formats count uptime in jiffies of an HZ
        they do not record)."""
        if before is None or rec.kind != "stats" or not self._seconds_agree:
            return False
        if self.header.format_magic != lay.FORMAT_2175:
            return False
        itv = rec.uptime_cs - before.uptime_cs
        clock = rec.ust_time - before.ust_time
        return itv <= 0 or abs(itv / 100 - clock) > lay.CLOCK_SLACK_S + lay.CLOCK_SLACK_RATIO * abs(clock)

    def _peek(self, off: int) -> tuple[Record | None, bool]:
        """The record at off, or None and whether that is because the file ends first."""
        try:
            return self._record(off), False
        except FormatError as exc:
            return None, exc.truncated
        except (struct.error, ValueError):
            return None, False

    def _set_nr(self, aid: int, nr: int) -> None:
        acts = self.header.activities
        for i, a in enumerate(acts):
            if a.id == aid:
                acts[i] = Activity(a.id, a.magic, nr, a.nr2, a.has_nr, a.size, a.types, a.decoder)
        self._nspec = self._native_spec()

    def _stats(self, off: int, counted: bool) -> tuple[dict[int, list[Counters]], int, Any]:
        """(counters by activity id, end, None), or ({}, end, native counters) on the native path."""
        spec = self._nspec
        while spec is not None:
            r = _native.stats(spec, self.data, off, counted)
            if r[0] == 2:
                return {}, r[1], r[2]
            if r[0] == 0:  # the window must hold more first: read, or the file ends (the same error as below)
                self._need(r[1], r[2], r[3])
            elif r[0] == 1:
                raise FormatError(r[1], r[2])
            else:  # anything unexpected: this record the Python way
                break
        d = self.data
        size = len(d)
        out: dict[int, list[Counters]] = {}
        for a in self.header.activities:
            nr = a.nr
            if counted and a.has_nr:
                if off + 4 > size:
                    d = self._need(off, 4, f"item count of activity {a.name}")
                    size = len(d)
                nr = self._i32.unpack_from(d, off)[0]
                if not 0 <= nr <= lay.ITEM_MAX.get(a.id, lay.NR_MAX):
                    raise FormatError(off, f"activity {a.name}: item count {nr} out of range")
                off += 4
            total = nr * a.nr2 * a.size
            if off + total > size:
                d = self._need(off, total, f"statistics of activity {a.name}")
                size = len(d)
            if a.decoder is not None:
                out[a.id] = a.decoder.decode_many(d, off, nr * a.nr2)
            off += total
        return out, off, None


def open_bytes(data: bytes, path: str = "", hz: int | None = None, check_times: bool = True) -> SaFile:
    return SaFile(data, path, hz, check_times)


def open_stream(handle: BinaryIO, path: str = "", hz: int | None = None, check_times: bool = True) -> SaFile:
    """A file read through a sliding window (bounded memory); `handle` must stay open while reading."""
    return SaFile(handle, path, hz, check_times)
