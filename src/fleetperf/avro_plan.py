"""Avro binary encoders compiled from the .avsc files: one Python function per schema whose body is
the schema's fields written out in order (strings as length + UTF-8, doubles as 8 little-endian
bytes, ints and longs as zigzag varints, ["null", T] as branch 0 or branch 1 + T, maps and arrays as
one counted block and a 0), the same bytes fastavro's writer gives.

Why: fastavro's `schemaless_writer` resolves every union and field type on each call; the
collectors encode hundreds of thousands of small records in Python (sadc, z/VM monitor and
Performance Toolkit, hpmstat, entstat). A z/VM guest sample (17 fields, 10 of them nullable) took
74.6 us with fastavro and 21.8 us compiled, in one /tmp run on this machine at load 5.

The compiled function is a fast path, not a second definition of Avro: whatever it does not
encode (a value of an unexpected type, a schema shape it does not compile) goes to fastavro, which
encodes it or raises as before. tests/unit/test_avro_plan.py checks the bytes against fastavro's on
records made from every schema, and fastavro's reader reads them back.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from datetime import datetime
from typing import Any

from fastavro import parse_schema, schemaless_writer
from fastavro.write import LOGICAL_WRITERS

Encoder = Callable[[dict[str, Any]], bytes]

# An Avro double: 8 bytes, little-endian IEEE 754
encode_double = struct.Struct("<d").pack
_LONG_LIMIT = 1 << 63
_TIMESTAMP_TYPES = (int, datetime)  # what fastavro takes for timestamp-millis (ms, or a datetime)
_TIMESTAMP_MILLIS = LOGICAL_WRITERS["long-timestamp-millis"]  # a datetime -> ms, as fastavro does
# zigzag varints of small numbers (map and array counts, short string lengths, small ints)
_SMALL = [
    bytes([(n << 1) & 0x7F | (0x80 if n >= 64 else 0)]) + (bytes([n >> 6]) if n >= 64 else b"") for n in range(128)
]


def encode_long(n: int) -> bytes:
    """An Avro int or long: a zigzag varint."""
    if 0 <= n < 128:
        return _SMALL[n]
    if not -_LONG_LIMIT <= n < _LONG_LIMIT:
        raise OverflowError("not an Avro long")  # fastavro raises too (the fallback's error)
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_string(text: str) -> bytes:
    """An Avro string: its UTF-8 length as a long, then the bytes (a non-str raises)."""
    data = text.encode()
    return encode_long(len(data)) + data


# Strings and timestamps the compiled encoders have written, and their Avro bytes. The collectors'
# records repeat most of their strings (host, section, metric and file names, versions) and
# timestamps (every record of one interval). The records `fleetperf simulate`'s sadc, Performance
# Toolkit and z/VM monitor files make (213 k), encoded in one process (a /tmp script, medians of 5,
# the same bytes): 1.20 -> 0.81 s in all; sysstat samples 0.655 -> 0.385 s, z/VM guest samples
# 0.289 -> 0.244, cpu samples 0.077 -> 0.049. `fleetperf ingest` of those files
# (bench/collectors.py --runs 3 --against f2345d2): sadc CPU 0.85x, hpmstat/entstat 0.92x, z/VM
# monitor 0.93x; Performance Toolkit 1.04-1.10x, within the noise (its time is the parser's).
# Bounded: a cache that reaches CACHE_ENTRIES is emptied and filled again with what comes next,
# and a string longer than CACHE_STRING_CHARS is not kept.
CACHE_ENTRIES = 4096
CACHE_STRING_CHARS = 256
_STRINGS: dict[str, bytes] = {}
_TIMESTAMPS: dict[int, bytes] = {}


def _string(s: str) -> bytes:
    """An Avro string (length, UTF-8), kept in _STRINGS; a value that is not a str raises (its record
    then goes to fastavro, as before the cache)."""
    b = encode_string(s)
    if len(s) <= CACHE_STRING_CHARS and s.__class__ is str:
        if len(_STRINGS) >= CACHE_ENTRIES:
            _STRINGS.clear()
        _STRINGS[s] = b
    return b


def _timestamp(n: int) -> bytes:
    """A timestamp-millis long already in ms, kept in _TIMESTAMPS."""
    b = encode_long(n)
    if len(_TIMESTAMPS) >= CACHE_ENTRIES:
        _TIMESTAMPS.clear()
    _TIMESTAMPS[n] = b
    return b


# ["null", T] unions compiled, by T: when a value surely is a T (checks no looser than fastavro's)
_UNION_GUARDS = {
    "string": "{v}.__class__ is str",
    "double": "{v}.__class__ is float or {v}.__class__ is int",  # fastavro takes an int, not a bool
    "long": "{v}.__class__ is int",
    "int": "{v}.__class__ is int and -2147483648 <= {v} <= 2147483647",
    "boolean": "{v}.__class__ is bool",
    "long/timestamp-millis": "{v}.__class__ in _TIMESTAMP_TYPES",
}


def _logical_name(schema: dict[str, Any]) -> str | None:
    logical = schema.get("logicalType")
    return f"{schema.get('type')}/{logical}" if logical else None


class _Mismatch(Exception):  # noqa: N818 - internal: the value goes to fastavro
    pass


class UnsupportedSchemaError(Exception):
    """A schema shape this module does not compile (the caller keeps fastavro for it)."""


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def var(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def value(self, schema: Any, v: str, indent: int) -> None:  # noqa: ANN401 - an Avro schema
        """Code appending the encoding of the Python value named `v` to `out`."""
        if isinstance(schema, list):
            if len(schema) != 2 or schema[0] != "null":
                raise UnsupportedSchemaError(f"union {schema}")
            # the branch is fastavro's choice only for a value that surely is of the branch's type
            # (a range too for int: fastavro refuses 2**31 for ["null", "int"]); anything else
            # raises here and goes to fastavro, which picks a branch or refuses as it always did
            inner = schema[1]
            guard = _UNION_GUARDS.get(inner if isinstance(inner, str) else _logical_name(inner))
            if guard is None:
                raise UnsupportedSchemaError(f"union {schema}")
            self.emit(indent, f"if {v} is None:")
            self.emit(indent + 1, "a(b'\\x00')")
            self.emit(indent, f"elif {guard.format(v=v)}:")
            self.emit(indent + 1, "a(b'\\x02')")
            self.value(inner, v, indent + 1)
            self.emit(indent, "else:")
            self.emit(indent + 1, f"raise _Mismatch({v!r})")
            return
        if isinstance(schema, dict):
            kind = schema["type"]
            logical = schema.get("logicalType")
            if logical == "timestamp-millis" and kind == "long":
                # a cache hit needs an int: True == 1 and 1.0 == 1 hash alike, and fastavro takes neither
                self.emit(indent, f"if {v}.__class__ is int:")
                self.emit(indent + 1, f"a(_tc.get({v}) or _timestamp({v}))")
                self.emit(indent, "else:")
                self.emit(indent + 1, f"a(_long(_ts({v}, None)))")
                return
            if logical is not None:
                raise UnsupportedSchemaError(f"logical type {logical}")
            if kind == "record":
                for field in schema["fields"]:
                    if "default" in field:
                        # fastavro writes a missing field's default; a null default is the common case
                        fv = self.var("f")
                        self.emit(indent, f"{fv} = {v}.get({field['name']!r}, {field['default']!r})")
                    else:
                        fv = self.var("f")
                        self.emit(indent, f"{fv} = {v}[{field['name']!r}]")
                    self.value(field["type"], fv, indent)
                return
            if kind in ("map", "array"):
                items = schema["values" if kind == "map" else "items"]
                self.emit(indent, f"if {v}:")
                self.emit(indent + 1, f"a(_long(len({v})))")
                k, x = self.var("k"), self.var("x")
                if kind == "map":
                    self.emit(indent + 1, f"for {k}, {x} in {v}.items():")
                    self.value("string", k, indent + 2)
                else:
                    self.emit(indent + 1, f"for {x} in {v}:")
                self.value(items, x, indent + 2)
                self.emit(indent, "a(b'\\x00')")
                return
            return self.value(kind, v, indent)
        if schema == "string":
            # a hit needs a str: only a str equals a str key (a str subclass's value is its text)
            self.emit(indent, f"a(_sc.get({v}) or _string({v}))")
        elif schema == "double":
            self.emit(indent, f"a(_double({v}))")
        elif schema in ("long", "int"):
            self.emit(indent, f"a(_long({v}.__index__()))")  # an int (a bool is one), not a float
        elif schema == "boolean":
            self.emit(indent, f"a(b'\\x01' if {v} else b'\\x00')")
        else:
            raise UnsupportedSchemaError(f"type {schema}")


def writer(schema: dict[str, Any]) -> Encoder:
    """The record's Avro body: the compiled encoder, or fastavro's writer for a record the compiled
    one does not take (it then encodes it the way it always did, or raises its own error: a
    source's ValueError still fails the file as before) and for a schema it does not compile."""
    parsed = parse_schema(schema)

    def with_fastavro(record: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        schemaless_writer(buf, parsed, record)
        return buf.getvalue()

    try:
        fast = compile_encoder(schema)
    except UnsupportedSchemaError:
        return with_fastavro

    def encode(record: dict[str, Any]) -> bytes:
        try:
            return fast(record)
        except Exception:  # noqa: BLE001 - whatever it is, fastavro decides
            return with_fastavro(record)

    return encode


def compile_encoder(schema: dict[str, Any]) -> Encoder:
    """The encoder of a record schema (raises UnsupportedSchemaError for shapes it does not compile)."""
    if schema.get("type") != "record":
        raise UnsupportedSchemaError("not a record")
    gen = _Gen()
    gen.emit(0, "def encode(r):")
    gen.emit(1, "out = []")
    gen.emit(1, "a = out.append")
    gen.value(schema, "r", 1)
    gen.emit(1, "return b''.join(out)")
    namespace: dict[str, Any] = {
        "_long": encode_long,
        "_sc": _STRINGS,
        "_string": _string,
        "_tc": _TIMESTAMPS,
        "_timestamp": _timestamp,
        "_double": encode_double,
        "_ts": _TIMESTAMP_MILLIS,
        "_Mismatch": _Mismatch,
        "_TIMESTAMP_TYPES": _TIMESTAMP_TYPES,
    }
    exec(compile("\n".join(gen.lines), f"<avro encoder {schema.get('name')}>", "exec"), namespace)  # noqa: S102
    return namespace["encode"]
