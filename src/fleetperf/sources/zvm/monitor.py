"""CP monitor data -> decoded records, from MONWRITE files and from the /dev/monreader byte stream.

Both forms carry records in 4K frames: a record never crosses a frame, and an end-of-frame record
(domain 1 record 13) means the rest of its frame is unused. A MONWRITE file is frames back to back,
each run of data frames preceded by MONWRITE's control record (HCPMWTBK: at offset 40 the data type,
x'E2' sample or x'C5' event, at 44/48 the start and end address of the records it describes). A
frame that opens neither with a record header nor with such a control record is damaged: a dead
letter, and the frame is searched for its next plausible record. The monreader stream is monitor
control elements (12 bytes: two non-zero type bytes, two reserved, then the start and end address
of the records, end inclusive) each followed by its records; a 0-byte read ends a data set, which a
byte stream need not keep, because every element says how long its records are. A capture of the
device therefore replays exactly like the device.

Records are decoded per `monitor_layouts`: only fields IBM's text confirms, unless the caller opts
in to the unverified ones. A record of a length no documented z/VM level has is a `Damage` (dead
letter) with its length. Unknown domains/records are skipped by their length, counted and kept as
raw bytes; damage becomes a `Damage` with the byte offset, and reading goes on at the next
plausible record header.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fleetperf.sources.zvm import monitor_layouts as lay

_HDR = struct.Struct(">HHBBHQ")


@dataclass(slots=True)  # slots: one is made per record (78 k for 20 MB), each read a few times
class MonRecord:
    domain: int
    record: int
    tod: int  # raw TOD clock of the header
    offset: int  # byte offset in the file / stream
    length: int
    fields: dict[str, Any] | None  # None: no layout for this domain/record
    raw: bytes = b""  # the record's bytes, for records without a layout
    appldata: dict[str, Any] | None = None
    level: str | None = None  # the z/VM level whose documented length this record has, if any

    @property
    def unix_us(self) -> int:
        return tod_to_unix_us(self.tod)

    @property
    def known(self) -> bool:
        return self.fields is not None


@dataclass(frozen=True)
class Damage:
    offset: int
    message: str
    raw: str = ""


def tod_to_unix_us(tod: int) -> int:
    """TOD clock (bit 51 = 1 microsecond, epoch 1900-01-01) -> microseconds since 1970 (UTC)."""
    return (tod >> 12) - lay.TOD_EPOCH_OFFSET_S * 1_000_000


def unix_us_to_tod(us: int) -> int:
    return (us + lay.TOD_EPOCH_OFFSET_S * 1_000_000) << 12


_CODES = {"u1": "B", "u2": "H", "s2": "h", "u4": "I", "s4": "i", "u8": "Q", "tod": "Q", "cputimer": "Q"}


class Decoder(NamedTuple):
    """A layout's fields compiled once: one struct for all of them, their names, and which values
    are EBCDIC text."""

    unpack_from: Callable[..., tuple[Any, ...]]
    names: tuple[str, ...]
    texts: tuple[int, ...]

    def decode(self, buf: bytes | bytearray | memoryview, base: int) -> dict[str, Any]:
        values = self.unpack_from(buf, base)
        if self.texts:
            values = list(values)
            for i in self.texts:
                values[i] = values[i].decode(lay.EBCDIC).rstrip(" \0")
        return dict(zip(self.names, values, strict=True))


_COMPILED: dict[tuple[lay.Field, ...], Decoder] = {}


def _compile(fields: tuple[lay.Field, ...]) -> Decoder:
    """One struct per layout: fields in offset order with pad bytes between them."""
    fmt, pos, names, texts = [">"], 0, [], []
    for f in sorted(fields, key=lambda f: f.offset):
        if f.offset > pos:
            fmt.append(f"{f.offset - pos}x")
        fmt.append(_CODES.get(f.type, f"{f.size}s"))
        if f.type.startswith("ebcdic"):
            texts.append(len(names))
        names.append(f.name)
        pos = f.offset + f.size
    return Decoder(struct.Struct("".join(fmt)).unpack_from, tuple(names), tuple(texts))


def decoder(fields: tuple[lay.Field, ...]) -> Decoder:
    """The compiled form of `fields`. Looked up once per layout plan, not per record: the key is a
    tuple of Field dataclasses, whose hash walks every attribute of every field (0.54 of 6.6
    profiled s on the 20 MB ZVMA set, 640 k Field hashes, when it was looked up per record)."""
    compiled = _COMPILED.get(fields)
    if compiled is None:
        compiled = _COMPILED[fields] = _compile(fields)
    return compiled


def decode_fields(fields: tuple[lay.Field, ...], buf: bytes | memoryview, base: int) -> dict[str, Any]:
    return decoder(fields).decode(buf, base)


_APPLDATA_HEAD = decoder(lay.APPLDATA_OS)
# cp037 maps each of the 256 byte values to its own character, so comparing the EBCDIC bytes is
# comparing the decoded text, without a decode per record
_LINUX_PRODUCT_EBCDIC = lay.LINUX_PRODUCT.encode(lay.EBCDIC)
# per-CPU entry size -> the CPU fields that fit it, compiled; every size past the last field's end
# reads them all, so sizes are keyed up to that end only (the size is the record's: unbounded)
_APPLDATA_CPU: dict[int, Decoder] = {}
_APPLDATA_CPU_EXTENT = max(c.offset + c.size for c in lay.APPLDATA_OS_CPU)


def _appldata_cpu(size: int) -> Decoder:
    size = min(size, _APPLDATA_CPU_EXTENT)
    compiled = _APPLDATA_CPU.get(size)
    if compiled is None:
        wanted = tuple(c for c in lay.APPLDATA_OS_CPU if c.offset + c.size <= size)
        compiled = _APPLDATA_CPU[size] = decoder(wanted)
    return compiled


def _decode_appldata(rec: MonRecord, buf: bytes | bytearray, start: int) -> dict[str, Any] | None:
    """Linux's APPLDATA OS record inside an MRAPLSDT, or None when the buffer is another product."""
    f = rec.fields or {}
    product = f.get("product_id", b"")
    if product[:7] != _LINUX_PRODUCT_EBCDIC or product[9] != lay.APPLDATA_OS_RECORD:
        return None
    at, n = start + f["data_offset"], f["data_length"]
    if f["data_offset"] < lay.HEADER_SIZE or at + n > start + rec.length or n < lay.APPLDATA_OS_HEADER_SIZE:
        return {"error": f"APPLDATA data at {f['data_offset']}+{n} outside the record"}
    # decoded in place in the buffer (no copy of the data): the checks above and below keep every
    # field read inside buf[at : at + n]
    head = _APPLDATA_HEAD.decode(buf, at)
    size, first = head["per_cpu_size"], head["cpu_offset"]
    if size < 28 or first + head["nr_cpus"] * size > n:
        return head | {"error": f"{head['nr_cpus']} CPUs of {size} bytes at {first} do not fit {n} bytes"}
    cpu = _appldata_cpu(size).decode
    first += at
    head["cpus"] = [cpu(buf, first + i * size) for i in range(head["nr_cpus"])]
    head["mod_lvl"] = int.from_bytes(product[14:16], "big")
    return head


class _Plan(NamedTuple):
    """One layout as the reader applies it, worked out once per reader instead of per record: the
    per-record calls of `check_length`, `decoded` and `need` (a generator over the fields, each
    `Field.size` parsing its type) were 0.94 of 6.6 profiled s on the 20 MB ZVMA set."""

    layout: lay.RecordLayout
    level_of: dict[int, str]  # documented length -> its level, the first in the table as check_length
    min_ok: int  # a length not documented passes the length rule from here (later levels, variable)
    need: int  # the fields read end here
    decode: Callable[[bytes | bytearray | memoryview, int], dict[str, Any]]
    appldata: bool  # MRAPLSDT with the opt-in: Linux's APPLDATA OS is decoded too
    eof: bool  # MRMTREOF: the rest of its frame is unused


def _plan(layout: lay.RecordLayout, unverified: bool) -> _Plan:
    level_of: dict[int, str] = {}
    for level, documented in layout.lengths.items():
        level_of.setdefault(documented, level)
    lengths = layout.lengths.values()
    min_ok = (min(lengths) if layout.variable else max(lengths) + 1) if lengths else 0
    fields = layout.decoded(unverified)
    key = (layout.domain, layout.record)
    return _Plan(
        layout, level_of, min_ok, layout.need(fields), decoder(fields).decode, key == (10, 2) and unverified,
        key == (1, 13),
    )  # fmt: skip


def _header_problem(length: int, zeros: int, domain: int, at: int, limit: int) -> str | None:
    """What is wrong with a record header at `at` (its fields unpacked) whose record must end by
    `limit` (its frame's end or the data's), or None when it is plausible."""
    if zeros != 0:
        return "MRHDRZER is not zero"
    if domain > lay.MAX_DOMAIN:
        return f"domain {domain} does not exist"
    if length < lay.HEADER_SIZE:
        return f"record length {length} shorter than its header"
    if at + length > limit:
        return f"record length {length} runs past its frame or the data"
    return None


@dataclass
class Reader:
    """Decodes runs of records; keeps counts of what it met. `unverified`: also decode the fields
    IBM's text did not confirm (see monitor_layouts)."""

    unverified: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    last_tod: int = 0
    # (domain, record) -> plan, for the layouts met; a record without a layout is not kept here (the
    # header's two bytes of record number would let damaged data grow it without bound)
    _plans: dict[tuple[int, int], _Plan] = field(default_factory=dict, repr=False)

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def _header_ok(self, buf: bytes | bytearray, pos: int, end: int, frame_end: int) -> tuple[bool, str]:
        length, zeros, domain, _, _, _ = _HDR.unpack_from(buf, pos)
        why = _header_problem(length, zeros, domain, pos, min(end, frame_end))
        return why is None, why or ""

    def _plan_of(self, domain: int, number: int) -> _Plan | None:
        plan = self._plans.get((domain, number))
        if plan is None:
            layout = lay.LAYOUTS.get((domain, number))
            if layout is None:
                return None
            plan = self._plans[(domain, number)] = _plan(layout, self.unverified)
        return plan

    def run(
        self, buf: bytes | bytearray, start: int, end: int, frame_origin: int, base: int
    ) -> Iterator[MonRecord | Damage]:
        """Records in buf[start:end]; frames begin at frame_origin + k * 4096; `base` maps buffer
        positions to file/stream offsets.

        The header is unpacked once per record (`_header_ok` unpacked it again; its call per record
        was 0.22 of 6.6 profiled s on the 20 MB ZVMA set) and judged by `_header_problem`, and the
        frame's end is worked out when `pos` leaves the frame."""
        header = _HDR.unpack_from
        plans, counts = self._plans, self.counts
        header_size, frame_size = lay.HEADER_SIZE, lay.FRAME_SIZE
        pos = start
        frame_end = limit = -1
        while pos < end:
            if pos >= frame_end:  # pos only grows: it is in the frame found last until it passes its end
                frame_end = frame_origin + ((pos - frame_origin) // frame_size + 1) * frame_size
                limit = min(end, frame_end)
            if pos + header_size > limit:
                if any(buf[pos:limit]):
                    self._count("damaged")
                    yield Damage(base + pos, f"bytes after the last record of a frame at offset {base + pos}",
                                 bytes(buf[pos : pos + 32]).hex())  # fmt: skip
                pos = frame_end
                continue
            length, zeros, domain, _, number, tod = header(buf, pos)
            why = _header_problem(length, zeros, domain, pos, limit)
            if why is not None:
                if not any(buf[pos:frame_end]):  # unused rest of a frame
                    pos = frame_end
                    continue
                self._count("damaged")
                resume = self._resync(buf, pos + 1, end, frame_origin)
                where = f"; reading went on at offset {base + resume}" if resume < end else ""
                yield Damage(base + pos, f"no valid record header at offset {base + pos}: {why}{where}",
                             bytes(buf[pos : pos + 32]).hex())  # fmt: skip
                pos = resume
                continue
            plan = plans.get((domain, number)) or self._plan_of(domain, number)
            if plan is None:
                rec = MonRecord(domain, number, tod, base + pos, length, None, bytes(buf[pos : pos + length]))
                self._count(f"unknown {domain}.{number}")
                eof = False
            else:
                level = plan.level_of.get(length)
                if length < plan.need or (level is None and length < plan.min_ok):
                    layout = plan.layout
                    why = layout.check_length(length)[1] or (
                        f"{layout.name} of {length} bytes, the fields read need {plan.need}"
                    )
                    self._count("damaged")
                    yield Damage(base + pos, f"at offset {base + pos}: {why}", bytes(buf[pos : pos + 32]).hex())
                    pos += length
                    continue
                rec = MonRecord(domain, number, tod, base + pos, length, plan.decode(buf, pos), b"", None, level)
                name = plan.layout.name
                counts[name] = counts.get(name, 0) + 1
                if plan.appldata:
                    rec.appldata = _decode_appldata(rec, buf, pos)
                eof = plan.eof
            if tod > self.last_tod:
                self.last_tod = tod
            yield rec
            pos = frame_end if eof else pos + length

    def _resync(self, buf: bytes | bytearray, pos: int, end: int, frame_origin: int) -> int:
        """Next position holding a plausible header: valid fields, a known layout and a length one
        of its levels has, and a TOD within a day of the last good record."""
        day = 86400 * 1_000_000 << 12
        header = _HDR.unpack_from
        header_size, frame_size = lay.HEADER_SIZE, lay.FRAME_SIZE
        # every byte of a frame is a candidate (a MONWRITE control frame is searched whole, once per
        # file): the header unpacked once, judged by `_header_problem`
        for cand in range(pos, end - header_size + 1):
            frame_end = frame_origin + ((cand - frame_origin) // frame_size + 1) * frame_size
            if cand + header_size > frame_end:
                continue
            length, zeros, domain, _, number, tod = header(buf, cand)
            if _header_problem(length, zeros, domain, cand, min(end, frame_end)) is not None:
                continue
            layout = lay.LAYOUTS.get((domain, number))
            if layout is None or layout.check_length(length)[1]:
                continue
            if not self.last_tod or abs(tod - self.last_tod) <= day:
                return cand
        return end


def is_monwrite_control(frame: bytes | bytearray) -> bool:
    """MONWRITE's control record (HCPMWTBK, cp640 MWTBK page): data type x'E2'/x'C5' at 40, then the
    start and end address of the records it describes."""
    if len(frame) < lay.MWTBK_END_OFFSET + 4 or frame[lay.MWTBK_FLAG_OFFSET] not in lay.MWTBK_FLAGS:
        return False
    start, end = struct.unpack_from(">ii", frame, lay.MWTBK_START_OFFSET)
    return 0 <= start < end


def read_monwrite(data: bytes, unverified: bool = False) -> tuple[Reader, Iterator[MonRecord | Damage]]:
    """A MONWRITE file: 4K frames, MONWRITE's control records before runs of data frames."""
    reader = Reader(unverified)

    def records() -> Iterator[MonRecord | Damage]:
        for start in range(0, len(data), lay.FRAME_SIZE):
            end = min(start + lay.FRAME_SIZE, len(data))
            short = end - start < lay.FRAME_SIZE
            if end - start < lay.HEADER_SIZE:
                reader._count("damaged")
                yield Damage(start, f"file ends inside the frame at offset {start} ({end - start} of 4096 bytes)")
                continue
            ok, why = reader._header_ok(data, start, end, end)
            if not ok:
                if not any(data[start:end]):
                    reader._count("empty frames")
                    continue
                # A damaged first header (one flipped bit is enough) must not pass for a control
                # record and lose the frame silently: a control record holds no plausible record.
                resume = reader._resync(data, start + 1, end, start)
                if resume >= end and is_monwrite_control(data[start:end]):
                    reader._count("MONWRITE control records")
                    continue
                reader._count("damaged")
                where = f"; reading went on at offset {resume}" if resume < end else "; no record found in it"
                yield Damage(start, f"frame at offset {start} opens with neither a record header ({why}) nor a"
                             f" MONWRITE control record{where}", data[start : start + 32].hex())  # fmt: skip
                if resume >= end:
                    continue
                yield from reader.run(data, resume, end, start, 0)
            else:
                yield from reader.run(data, start, end, start, 0)
            if short:
                yield Damage(start, f"file ends inside the frame at offset {start} ({end - start} of 4096 bytes);"
                             " its whole records are kept")  # fmt: skip

    return reader, records()


class MonreaderStream:
    """The /dev/monreader byte stream, fed in chunks of any size (the device's reads, or a capture
    read piecewise); yields each record once, as soon as its control element's records are whole.

    Linear in the stream's length: the buffer is read at an offset and compacted only once the
    consumed part is both large and more than half of it (slicing per element was quadratic)."""

    MAX_RUN = 64 << 20
    COMPACT_AT = 1 << 20

    def __init__(self, unverified: bool = False) -> None:
        self.reader = Reader(unverified)
        self.buf = bytearray()
        self.pos = 0  # first unconsumed byte of buf
        self.offset = 0  # stream offset of buf[pos]

    def feed(self, chunk: bytes) -> Iterator[MonRecord | Damage]:
        self.buf += chunk
        while len(self.buf) - self.pos >= lay.MCE_SIZE:
            plausible = self._mce(self.pos)
            if plausible is None:
                break  # the first record header after the element is still to come
            if not plausible:
                skip = self._next_mce(self.pos + 1) - self.pos
                self.reader._count("damaged")
                yield Damage(self.offset, f"no valid monitor control element at offset {self.offset}; {skip} bytes"
                             " skipped", bytes(self.buf[self.pos : self.pos + 32]).hex())  # fmt: skip
                self._consume(skip)
                continue
            _, _, start, end = struct.unpack_from(">BB2xII", self.buf, self.pos)
            size = end - start + 1
            if len(self.buf) - self.pos < lay.MCE_SIZE + size:
                break  # the rest of this element's records is still to come
            run = self.pos + lay.MCE_SIZE
            origin = run - (start % lay.FRAME_SIZE)
            yield from self.reader.run(self.buf, run, run + size, origin, self.offset - self.pos)
            self._consume(lay.MCE_SIZE + size)
        self._compact()

    def _mce(self, i: int) -> bool | None:
        """A plausible control element at buf[i]: non-zero types, start < end, a run of at most
        MAX_RUN bytes, and a valid record header right after it (None: not enough bytes yet)."""
        t0, t1, start, end = struct.unpack_from(">BB2xII", self.buf, i)
        if not (t0 and t1 and start < end and end - start < self.MAX_RUN):
            return False
        first = i + lay.MCE_SIZE
        if len(self.buf) < first + lay.HEADER_SIZE:
            return None
        frame_end = first - start % lay.FRAME_SIZE + lay.FRAME_SIZE
        return self.reader._header_ok(self.buf, first, first + end - start + 1, frame_end)[0]

    def finish(self) -> Iterator[MonRecord | Damage]:
        left = len(self.buf) - self.pos
        if left:
            self.reader._count("damaged")
            yield Damage(self.offset, f"stream ends inside a monitor control element's data ({left} bytes)")
            self._consume(left)
        self._compact()

    def _consume(self, n: int) -> None:
        self.pos += n
        self.offset += n

    def _compact(self) -> None:
        if self.pos >= len(self.buf):
            self.buf.clear()
            self.pos = 0
        elif self.pos >= self.COMPACT_AT and self.pos * 2 >= len(self.buf):
            del self.buf[: self.pos]
            self.pos = 0

    def _next_mce(self, start: int) -> int:
        for i in range(start, len(self.buf) - lay.MCE_SIZE + 1):
            if self._mce(i) is not False:  # plausible, or to be judged when more bytes came
                return i
        return max(len(self.buf) - lay.MCE_SIZE + 1, start)


def looks_like_monreader(data: bytes) -> bool:
    """A capture of /dev/monreader starts with a control element whose records follow it."""
    if len(data) < lay.MCE_SIZE + lay.HEADER_SIZE:
        return False
    t0, t1, start, end = struct.unpack_from(">BB2xII", data, 0)
    if not (t0 and t1 and start < end):
        return False
    length, zeros, domain = struct.unpack_from(">HHB", data, lay.MCE_SIZE)
    return zeros == 0 and domain <= lay.MAX_DOMAIN and length >= lay.HEADER_SIZE


def read_stream(data: bytes, unverified: bool = False) -> tuple[Reader, Iterator[MonRecord | Damage]]:
    stream = MonreaderStream(unverified)

    def records() -> Iterator[MonRecord | Damage]:
        yield from stream.feed(data)
        yield from stream.finish()

    return stream.reader, records()


def read_any(data: bytes, unverified: bool = False) -> tuple[Reader, Iterator[MonRecord | Damage]]:
    return read_stream(data, unverified) if looks_like_monreader(data) else read_monwrite(data, unverified)
