"""The AIX parsers' fast paths (plain string tests before patterns, offsets without encoding each
line) read what the slower code they replace read."""

from __future__ import annotations

import random
import re
from pathlib import Path

from fleetperf.sources.aix import entstat
from fleetperf.sources.aix.errors import numbered

DATA = Path(__file__).resolve().parents[2] / "src" / "fleetperf" / "sources" / "aix" / "testdata"
_BLOCK_OLD = re.compile(r"^\s*ETHERNET STATISTICS \(([A-Za-z0-9_]{1,32})\)\s*:")
_STATE_OLD = re.compile(r"^\s*(Actor|Partner) State:\s*$")


def _numbered_by_encoding(text: str) -> list[tuple[int, int, str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out, offset = [], 0
    for line_no, raw in enumerate(lines, start=1):
        out.append((line_no, offset, raw.rstrip("\r")))
        offset += len(raw.encode("utf-8", "surrogateescape")) + 1
    return out


def _texts() -> list[str]:
    rng = random.Random(19)
    base = [p.read_text() for p in sorted(DATA.glob("*.txt"))]
    out = [*base, "", "\n", "\r", "a\r\nb\r\n", base[0].replace("\n", "\r\n"), base[0].rstrip("\n")]
    for text in base:
        for extra in ("\r", "é", "\udcff", "\t", "\x85"):
            k = rng.randrange(len(text))
            out.append(text[:k] + extra + text[k:])
    return out


def test_numbered_offsets_are_the_encoded_byte_offsets() -> None:
    for text in _texts():
        assert numbered(text) == _numbered_by_encoding(text)


def test_line_tests_agree_with_the_patterns_they_guard_or_replace() -> None:
    spaces = ["", " ", "\t", "  \t", "\x0c", "\x1c", "\x85", "\u2028", "\u3000"]
    heads = [
        "ETHERNET STATISTICS (ent8) :",
        "ETHERNET STATISTICS (ent8)",
        "Actor State:",
        "Partner State:",
        "Actor State: x",
        "Actor  State:",
        "actor State:",
        "-----",
        "=-.",
        "- x",
        "",
    ]
    for lead in spaces:
        for tail in spaces:
            for head in heads:
                line = (lead + head + tail).rstrip()
                stripped = line.lstrip()
                assert stripped == line.strip()
                guarded = _BLOCK_OLD.match(line) if stripped.startswith("ETHERNET STATISTICS (") else None
                assert bool(guarded) == bool(_BLOCK_OLD.match(line)), repr(line)
                old = _STATE_OLD.match(line)
                assert entstat._STATE_HEADERS.get(stripped) == (old.group(1) if old else None), repr(line)
                assert (not stripped.strip("-=.")) == (not stripped or set(stripped) <= {"-", "=", "."})
