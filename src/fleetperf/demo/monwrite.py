"""CP monitor records written per the reader's own table (`monitor_layouts`), packed into 4K frames,
as a MONWRITE file or as the /dev/monreader byte stream: the demo's z/VM monitor data
(`demo/fleet.py`) and the integration tests' (`tests/zvm_writer.py` re-exports this module).

Not an oracle for layouts: a wrong offset round-trips through it. The unit tests
(tests/unit/test_zvm_monitor.py) build records from IBM's offsets held there as literals instead."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from fleetperf.sources.zvm import monitor_layouts as lay


def encode_fields(fields: tuple[lay.Field, ...], values: dict[str, Any], buf: bytearray, base: int) -> None:
    for f in fields:
        if f.name not in values:
            continue
        v = values[f.name]
        at = base + f.offset
        if f.type.startswith("ebcdic"):
            buf[at : at + f.size] = str(v).ljust(f.size).encode(lay.EBCDIC)[: f.size]
        elif f.type.startswith("raw"):
            buf[at : at + f.size] = bytes(v).ljust(f.size, b"\0")[: f.size]
        else:
            buf[at : at + f.size] = int(v).to_bytes(f.size, "big", signed=f.type[0] == "s")


def record(domain: int, number: int, tod: int, values: dict[str, Any] | None = None, payload: bytes = b"") -> bytes:
    """One record: header + fields of its layout (+ payload after the fixed part)."""
    layout = lay.LAYOUTS.get((domain, number))
    fixed = lay.HEADER_SIZE
    if layout:
        fixed = max(min(layout.lengths.values(), default=lay.HEADER_SIZE), layout.need(layout.fields))
    buf = bytearray(fixed + len(payload))
    struct.pack_into(">HHBBHQ", buf, 0, len(buf), 0, domain, 0, number, tod)
    if layout and values:
        encode_fields(layout.fields, values, buf, 0)
    buf[fixed:] = payload
    return bytes(buf)


def appldata_os(userid: str, tod: int, cpus: list[dict[str, int]], *, torn: bool = False, mod_lvl: int = 1) -> bytes:
    """An MRAPLSDT carrying Linux's APPLDATA OS record (appldata_os.c, modification level 01)."""
    per_cpu = 36 if mod_lvl >= 1 else 28
    head = bytearray(lay.APPLDATA_OS_HEADER_SIZE + per_cpu * len(cpus))
    values = {
        "timestamp": tod,
        "sync_count_1": 7,
        "sync_count_2": 8 if torn else 7,
        "nr_cpus": len(cpus),
        "per_cpu_size": per_cpu,
        "cpu_offset": lay.APPLDATA_OS_HEADER_SIZE,
        "nr_running": 2,
        "nr_threads": 120,
    }
    encode_fields(lay.APPLDATA_OS, values, head, 0)
    wanted = tuple(c for c in lay.APPLDATA_OS_CPU if c.offset + c.size <= per_cpu)
    for i, cpu in enumerate(cpus):
        encode_fields(wanted, {"cpu_id": i} | cpu, head, lay.APPLDATA_OS_HEADER_SIZE + i * per_cpu)
    product = lay.LINUX_PRODUCT.encode(lay.EBCDIC) + struct.pack(">HBHHH", 0, lay.APPLDATA_OS_RECORD, 0, 0, mod_lvl)
    fixed = 52  # MRAPLSDT's fixed part (IBM: Structure 52)
    fields = {"data_offset": fixed, "data_length": len(head), "userid": userid, "product_id": product, "status": 0}
    return record(10, 2, tod, fields, payload=bytes(head))


def frames(records: Iterable[bytes]) -> list[bytes]:
    """Records packed into 4K frames; a frame that cannot take the next record ends with an
    end-of-frame record and zeros, as CP leaves it."""
    out: list[bytes] = []
    frame = bytearray()
    for rec in records:
        if len(rec) + lay.HEADER_SIZE > lay.FRAME_SIZE:
            raise ValueError(f"record of {len(rec)} bytes does not fit a frame")
        if len(frame) + len(rec) + lay.HEADER_SIZE > lay.FRAME_SIZE:
            tod = struct.unpack_from(">Q", frame, 8)[0] if frame else 0
            frame += record(1, 13, tod)
            out.append(bytes(frame.ljust(lay.FRAME_SIZE, b"\0")))
            frame = bytearray()
        frame += rec
    if frame:
        out.append(bytes(frame.ljust(lay.FRAME_SIZE, b"\0")))
    return out


def monwrite_file(records: Iterable[bytes]) -> bytes:
    """Frames back to back after one MONWRITE control record (HCPMWTBK: data type x'E2' at 40, start
    and end address of the records at 44 and 48)."""
    data = frames(records)
    control = bytearray(lay.FRAME_SIZE)
    control[40] = 0xE2
    struct.pack_into(">ii", control, 44, 0x7F000000, 0x7F000000 + len(data) * lay.FRAME_SIZE - 1)
    return bytes(control) + b"".join(data)


def monreader_stream(records: Iterable[bytes], frames_per_element: int = 2, address: int = 0x7F000000) -> bytes:
    """What /dev/monreader returns: per monitor control element 12 bytes (types, reserved, start,
    end address of its records) and then the records, frame after frame."""
    all_frames = frames(records)
    out = bytearray()
    for i in range(0, len(all_frames), frames_per_element):
        data = b"".join(all_frames[i : i + frames_per_element])
        start = address + i * lay.FRAME_SIZE
        out += struct.pack(">BBHII", 0x02, 0x01, 0, start, start + len(data) - 1) + data
    return bytes(out)
