"""Is it an nmon file? Decided from the content, not the name.

Every nmon writer (AIX topas_nmon, classic nmon v8-v12, Linux nmon 13-16) starts its file with
the `AAA,` lines (`AAA,progname,...` or, in classic files, `AAA,version,...`). The parsers apply
the same rule to the first line that is not blank, so a file named .nmon that is something else
gives one error instead of a dead letter per line.
"""

from __future__ import annotations

import zlib

NOT_NMON = "not an nmon file (its first line does not start with AAA,)"
EMPTY = "empty file"
# enough to see the first line of any nmon file
HEAD_BYTES = 4096


BOM = b"\xef\xbb\xbf"  # some writers (and editors) put a UTF-8 byte order mark first


def first_line_ok(line: bytes) -> bool:
    """The first non-blank line of a file (without its end of line and its BOM)."""
    return line.startswith(b"AAA,")


def problem(head: bytes) -> str | None:
    """`head`: the first bytes of a file (plain or gzip, HEAD_BYTES are enough). None if it is
    nmon content, else the one message to show: EMPTY or NOT_NMON."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_BYTES)
        except zlib.error:
            return NOT_NMON
    for line in head.split(b"\n"):
        if line.strip():  # blank as the parsers see it (bytes.strip)
            return None if first_line_ok(line.removeprefix(BOM)) else NOT_NMON
    return EMPTY


def sniff(head: bytes) -> bool:
    """True if `head` (the first bytes of a file, plain or gzip) starts nmon content."""
    return problem(head) is None
