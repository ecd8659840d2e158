# ruff: noqa: E501  (IBM's rows are quoted verbatim, one per line, as the page shows them)
"""IBM's own monitor-record rows, quoted verbatim, against the reader's layout table.

Every line in QUOTES is a row of IBM's "Control Block Contents" table as the stored copy of the page
at the URL beside it shows it (read 2026-11-25 through the docs/pages search corpora; some copies
keep IBM's column padding, others collapse whitespace, which is why the spacing differs; a copy that
puts the whole table on one line is quoted row by row). Nothing here is derived from the reader's
table: the table must agree with these lines, not the other way round.

What these tests hold the table to:
- a field the table calls `verified` has IBM's row quoted here (offset, length, type, name agree);
- every "Structure" length quoted here is a length the table documents for that z/VM level, and a
  length the table documents without a quote here is named in EARLIER_LENGTHS (read by the session
  that wrote the table, not re-read now);
- no field of the table, verified or not, overlaps an IBM row of another field: this is the check
  that refuses MRUSEACT VMDTTIME/VMDVTIME at 32/40 (IBM's 6.2 row at 32 is the 1-byte VMDSLIST);
- an unverified field whose IBM row is quoted here must be flipped to verified (nothing stays
  "unconfirmed" once its row is in hand).

Not confirmed (no stored copy of IBM's page reaches the row; see /work/notes/zvm_layouts.md section 9):
MRUSEACT VMDTTIME/VMDVTIME (after offset 32), MRSYTPRP PFXTMSYS/PFXTOTWT (after 32), MRSYTASG used
page slots and spool slots (after 28/32), eligible-list counts (MRSYTSCG after 24), per-guest paging
and I/O counts (MRUSEACT, deep in the record).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from fleetperf.sources.zvm import monitor_layouts as lay
from fleetperf.sources.zvm.monitor import Damage, MonRecord, read_any
from fleetperf.sources.zvm.monitor_records import SLOTS_TOO_LARGE, Options, records_of_bytes
from tests.conftest import embedded_settings
from tests.unit.test_zvm_monitor import _tod, monwrite, mrmtrend, record

VM = "https://www.vm.ibm.com/pubs"
VM_HTTP = "http://www.vm.ibm.com/pubs"
SUPPORT = "https://www.ibm.com/support/pages/zvm/pubs"

# (IBM record name, page as the corpus stores it, the row exactly as it reads there)
QUOTES: tuple[tuple[str, str, str], ...] = (
    # Domain 4 record 3, user activity
    ("MRUSEACT", f"{VM_HTTP}/mon610/MRUSEACT.HTML", "  0   0  Structure  440  USEACT                 Start of monitor record"),
    ("MRUSEACT", f"{VM_HTTP}/mon610/MRUSEACT.HTML", " 20  14  Character    8  USEACT_VMDUSER         Userid"),
    ("MRUSEACT", f"{VM_HTTP}/mon610/MRUSEACT.HTML", " 28  1C  Unsigned     2  USEACT_VMDCPUAD        Processor ID/CPU address of"),
    ("MRUSEACT", f"{VM}/mon620/MRUSEACT.HTML", "0 0 Structure 508 USEACT Start of monitor record"),
    ("MRUSEACT", f"{VM}/mon620/MRUSEACT.HTML", "20 14 Character 8 USEACT_VMDUSER Userid"),
    ("MRUSEACT", f"{VM}/mon620/MRUSEACT.HTML", "28 1C Unsigned 2 USEACT_VMDCPUAD Processor ID/CPU address of"),
    ("MRUSEACT", f"{VM}/mon620/MRUSEACT.HTML", "30 1E Bitstring 1 USEACT_VMDMODE Guest machine mode. This is"),
    ("MRUSEACT", f"{VM}/mon620/MRUSEACT.HTML", "31 1F Bitstring 1 USEACT_CALMODE Architectural mode of the"),
    ("MRUSEACT", f"{VM}/mon620/MRUSEACT.HTML", "32 20 Bitstring 1 USEACT_VMDSLIST Scheduling list that the"),
    # Domain 4 record 1, logon
    ("MRUSELON", f"{VM_HTTP}/mon540/MRUSELON.HTML", "  0   0  Structure  176  USELON                 Start of monitor record"),
    ("MRUSELON", f"{VM_HTTP}/mon540/MRUSELON.HTML", " 20  14  Character    8  USELON_VMDUSER         User logon identification"),
    ("MRUSELON", f"{VM_HTTP}/mon540/MRUSELON.HTML", " 28  1C  Unsigned     2  USELON_VMDCPUAD        Processor address"),
    ("MRUSELON", f"{VM_HTTP}/mon540/MRUSELON.HTML", " 30  1E  Bitstring    1  USELON_VMDMODE         Guest machine mode. This is"),
    ("MRUSELON", f"{VM}/mon640/MRUSELON.HTML", "   0   0  Structure   180  USELON                 Start of monitor record"),
    ("MRUSELON", f"{VM}/mon640/MRUSELON.HTML", "  20  14  Character     8  USELON_VMDUSER         User logon identification"),
    ("MRUSELON", f"{VM}/mon640/MRUSELON.HTML", "  28  1C  Unsigned      2  USELON_VMDCPUAD        Processor address"),
    ("MRUSELON", f"{VM}/mon640/MRUSELON.HTML", "  30  1E  Bitstring     1  USELON_VMDMODE         Guest machine mode. This is"),
    # Domain 4 record 2, logoff
    ("MRUSELOF", f"{VM}/mon430/MRUSELOF.HTML", "  0   0  Structure  284  USELOF              Start of monitor record"),
    ("MRUSELOF", f"{VM}/mon430/MRUSELOF.HTML", " 20  14  Character    8  USELOF_VMDUSER      USERID"),
    ("MRUSELOF", f"{VM}/mon430/MRUSELOF.HTML", " 28  1C  Unsigned     2  USELOF_VMDCPUAD     Processor ID"),
    ("MRUSELOF", f"{VM}/mon430/MRUSELOF.HTML", " 30  1E  Bitstring    1  USELOF_VMDMODE      "),
    ("MRUSELOF", f"{VM}/mon540/MRUSELOF.HTML", "0 0 Structure 444 USELOF Start of monitor record"),
    ("MRUSELOF", f"{VM}/mon540/MRUSELOF.HTML", "20 14 Character 8 USELOF_VMDUSER USERID"),
    ("MRUSELOF", f"{VM}/mon540/MRUSELOF.HTML", "28 1C Unsigned 2 USELOF_VMDCPUAD Processor ID"),
    ("MRUSELOF", f"{VM}/mon540/MRUSELOF.HTML", "30 1E Bitstring 1 USELOF_VMDMODE Guest machine mode. This is"),
    ("MRUSELOF", f"{VM}/mon540/MRUSELOF.HTML", "31 1F Bitstring 1 USELOF_CALMODE Architectural mode of the"),
    ("MRUSELOF", f"{VM}/mon620/MRUSELOF.HTML", "0 0 Structure 496 USELOF Start of monitor record"),
    ("MRUSELOF", f"{VM}/mon620/MRUSELOF.HTML", "20 14 Character 8 USELOF_VMDUSER USERID"),
    ("MRUSELOF", f"{VM}/mon620/MRUSELOF.HTML", "28 1C Unsigned 2 USELOF_VMDCPUAD Processor ID"),
    ("MRUSELOF", f"{VM}/mon620/MRUSELOF.HTML", "30 1E Bitstring 1 USELOF_VMDMODE Guest machine mode. This is"),
    ("MRUSELOF", f"{VM}/mon620/MRUSELOF.HTML", "31 1F Bitstring 1 USELOF_CALMODE Architectural mode of the"),
    # Domain 0 record 2, processor data
    ("MRSYTPRP", f"{VM_HTTP}/mon540/MRSYTPRP.HTML", "  0   0  Structure  124  SYTPRP                 Start of monitor record"),
    ("MRSYTPRP", f"{VM_HTTP}/mon540/MRSYTPRP.HTML", " 20  14  Unsigned     2  SYTPRP_PFXCPUAD        Real processor's CPU address"),
    ("MRSYTPRP", f"{VM_HTTP}/mon540/MRSYTPRP.HTML", " 22  16  Unsigned     2  SYTPRP_PLSCUHAF        Count of times a VMDBK was"),
    ("MRSYTPRP", f"{VM_HTTP}/mon620/MRSYTPRP.HTML", "   0   0  Structure   140  SYTPRP                 Start of monitor record"),
    ("MRSYTPRP", f"{VM_HTTP}/mon620/MRSYTPRP.HTML", "  20  14  Unsigned      2  SYTPRP_PFXCPUAD        Real processor's CPU"),
    ("MRSYTPRP", f"{VM}/mon640/MRSYTPRP.HTML", "0 0 Structure 352 SYTPRP Start of monitor record"),
    ("MRSYTPRP", f"{VM}/mon640/MRSYTPRP.HTML", "20 14 Unsigned 2 SYTPRP_PFXCPUAD Real processor's CPU address"),
    ("MRSYTPRP", f"{VM}/mon640/MRSYTPRP.HTML", "22 16 Unsigned 2 SYTPRP_PLSCUHAF Count of times a VMDBK was dispatched with 'hard affinity' (i.e., dedicated to this processor)"),
    ("MRSYTPRP", f"{VM}/mon640/MRSYTPRP.HTML", "24 18 Character 8 SYTPRP_PFXPRBTM Total raw CPU time spent in emulation mode on this processor for all users. This field starts at x'7FFFFFFFF_00000000' and advances down (in the negative direction)."),
    ("MRSYTPRP", f"{VM}/mon640/MRSYTPRP.HTML", "32 20 Character 8 SYTPRP_PFXUTIME Total raw CPU time spent on this processor which was charged to users. It includes both time spent running the guest and time that CP s"),
    # Domain 0 record 6, auxiliary storage (paging and spooling slots)
    ("MRSYTASG", f"{VM_HTTP}/mon430/MRSYTASG.HTML", "  0   0  Structure   84  SYTASG              "),
    ("MRSYTASG", f"{VM_HTTP}/mon430/MRSYTASG.HTML", " 20  14  Unsigned     4  SYTASG_CAL90FUL     Number of times available paging"),
    ("MRSYTASG", f"{VM_HTTP}/mon530/MRSYTASG.HTML", "  0   0  Structure   84  SYTASG                 "),
    ("MRSYTASG", f"{VM_HTTP}/mon530/MRSYTASG.HTML", " 20  14  Unsigned     4  SYTASG_CAL90FUL        Number of times available"),
    ("MRSYTASG", f"{VM}/mon610/MRSYTASG.HTML", "0 0 Structure 84 SYTASG"),
    ("MRSYTASG", f"{VM}/mon610/MRSYTASG.HTML", "20 14 Unsigned 4 SYTASG_CAL90FUL Number of times available paging slots were 90 percent full. SAL90FUL in paging data area of HCPPGD"),
    ("MRSYTASG", f"{VM}/mon610/MRSYTASG.HTML", "24 18 Unsigned 4 SYTASG_CAL91FUL Number of times available spooling slots were 90 percent full. SAL90FUL in spooling data area of HCPPGD"),
    ("MRSYTASG", f"{VM}/mon610/MRSYTASG.HTML", "28 1C Unsigned 4 SYTASG_CALSLTA1 Total number "),
    ("MRSYTASG", f"{VM_HTTP}/mon620/MRSYTASG.HTML", "   0   0  Structure    84  SYTASG                 "),
    ("MRSYTASG", f"{VM_HTTP}/mon620/MRSYTASG.HTML", "  20  14  Unsigned      4  SYTASG_CAL90FUL        Number of times available"),
    ("MRSYTASG", f"{VM}/mon710/MRSYTASG.HTML", "   0   0  Structure   108  SYTASG"),
    ("MRSYTASG", f"{VM}/mon710/MRSYTASG.HTML", "  20  14  Unsigned      4  SYTASG_CAL90FUL        Number of times available"),
    ("MRSYTASG", f"{VM}/mon710/MRSYTASG.HTML", "  24  18  Unsigned      4  SYTASG_CAL91FUL        Number of times available"),
    ("MRSYTASG", f"{VM}/mon710/MRSYTASG.HTML", "  28  1C  Unsigned      4  SYTASG_CALSLTA1        DEPRECATED: Use"),
    ("MRSYTASG", f"{SUPPORT}/mon730/mrsytasg.html", "   0   0  Structure   112  SYTASG"),
    ("MRSYTASG", f"{SUPPORT}/mon730/mrsytasg.html", "  20  14  Unsigned      4  SYTASG_CAL90FUL        Number of times available"),
    ("MRSYTASG", f"{VM}/mon740/MRSYTASG.HTML", "0 0 Structure 112 SYTASG"),
    ("MRSYTASG", f"{VM}/mon740/MRSYTASG.HTML", "20 14 Unsigned 4 SYTASG_CAL90FUL Number of times available paging slots were 90 percent full. SAL90FUL in paging data area of HCPPGD"),
    ("MRSYTASG", f"{VM}/mon740/MRSYTASG.HTML", "24 18 Unsigned 4 SYTASG_CAL91FUL Number of times available spooling slots were 90 percent full. SAL90FUL in spooling data area of HCPPGD"),
    ("MRSYTASG", f"{VM}/mon740/MRSYTASG.HTML", "28 1C Unsigned 4 SYTASG_CALSLTA1 DEPRECATED: Use SYTASG_CALSLTA1G. Total number of slots which have been allocated for paging. SALSLTAVg in paging data area of HCPPGD. If SALSLTAVg is too large to fit in this 32-bit field, then set to x'FFFFFFFF'."),
    ("MRSYTASG", f"{VM}/mon740/MRSYTASG.HTML", "32 20 Unsigned 4 SYTASG_CALSL"),  # the copy ends inside the name
    # Domain 0 record 8, users
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "0 0 Structure 100 SYTUSR Start of monitor record"),
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "20 14 Unsigned 4 SYTUSR_SYSUSRS Cardinal count of current"),
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "24 18 Unsigned 4 SYTUSR_SRMCDORM Cardinal count of VMDBKs now in"),
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "28 1C Character 8 SYTUSR_CALMPTRV Accumulated time, in TOD clock"),
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "36 24 Unsigned 4 SYTUSR_CALMPTCT Number of trivial transactions"),
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "40 28 Character 8 SYTUSR_CALMPNTR Accumulated time, in TOD clock"),
    ("MRSYTUSR", f"{VM}/mon430/MRSYTUSR.HTML", "48 30 Unsigned 4 SYTUSR_CALMPNCT Number of non-trivial"),
    ("MRSYTUSR", f"{VM_HTTP}/mon610/MRSYTUSR.HTML", "  0   0  Structure  100  SYTUSR                 Start of monitor record"),
    ("MRSYTUSR", f"{VM_HTTP}/mon610/MRSYTUSR.HTML", " 20  14  Unsigned     4  SYTUSR_SYSUSRS         Cardinal count of current"),
    ("MRSYTUSR", f"{VM}/mon640/MRSYTUSR.HTML", "0 0 Structure 108 SYTUSR Start of monitor record"),
    ("MRSYTUSR", f"{VM}/mon640/MRSYTUSR.HTML", "20 14 Unsigned 4 SYTUSR_SYSUSRS Cardinal count of current logged-on users"),
    ("MRSYTUSR", f"{VM}/mon640/MRSYTUSR.HTML", "24 18 Unsigned 4 SYTUSR_SRMCDORM Cardinal count of VMDBKs now in the dormant list. They represent users with no work currently active. They may be in a wait state, or have no work pending."),
    ("MRSYTUSR", f"{VM}/mon640/MRSYTUSR.HTML", "28 1C Character 8 SYTUSR_CALMPTRV Accumulated time, in TOD clock units, for trivial transactions completed in a virtual MP environment"),
    ("MRSYTUSR", f"{VM}/mon640/MRSYTUSR.HTML", "36 24 Unsigned 4 SYTUSR_CALMPTCT Number of trivial transactions completed in a virtual MP environment"),
    # Domain 0 record 10, scheduler activity (global)
    ("MRSYTSCG", f"{VM}/mon440/MRSYTSCG.HTML", "  0   0  Structure  140  SYTSCG              start of monitor record"),
    ("MRSYTSCG", f"{VM}/mon710/MRSYTSCG.HTML", "   0   0  Structure   156+ SYTSCG                 start of monitor record"),
    ("MRSYTSCG", f"{VM}/mon710/MRSYTSCG.HTML", "  20  14  Unsigned      2  SYTSCG_SRMCDISP        Cardinal count of users in"),
    ("MRSYTSCG", f"{VM}/mon710/MRSYTSCG.HTML", "  22  16  Unsigned      2  SYTSCG_SRMCDLDG        Cardinal count of all"),
    ("MRSYTSCG", f"{VM}/mon710/MRSYTSCG.HTML", "  24  18  Unsigned      2  SYTSCG_SRMC1DSP        Cardinal count of short,"),
    # Domain 1 record 4, system configuration
    ("MRMTRSYS", f"{VM_HTTP}/mon420/MRMTRSYS.HTML", "  0   0  Structure  108  MTRSYS              Start of monitor record"),
    ("MRMTRSYS", f"{VM_HTTP}/mon420/MRMTRSYS.HTML", " 20  14  Bitstring    8  MTRSYS_HCPCPEPP     Program product bit map. This is"),
    ("MRMTRSYS", f"{VM_HTTP}/mon510/MRMTRSYS.HTML", "  0   0  Structure  184  MTRSYS                 Start of monitor record"),
    ("MRMTRSYS", f"{VM}/mon610/MRMTRSYS.HTML", "  0   0  Structure  420  MTRSYS                 Start of monitor record"),
    ("MRMTRSYS", f"{VM}/mon620/MRMTRSYS.HTML", "0 0 Structure 428 MTRSYS Start of monitor record"),
    ("MRMTRSYS", f"{VM}/mon620/MRMTRSYS.HTML", "20 14 Bitstring 8 MTRSYS_HCPCPEPP Program product bit map."),
    ("MRMTRSYS", f"{VM}/mon620/MRMTRSYS.HTML", "28 1C Character 8 MTRSYS_HCPCPEID Version number, in EBCDIC"),
)  # fmt: skip

# Lengths the table documents that this file does not quote: read by the session that wrote the table
# (its notes: /work/notes/zvm_layouts.md and the zvm README), not found again on 2026-11-25. Named here so
# the set cannot grow silently.
EARLIER_LENGTHS = {
    ("MRMTRSYS", "4.3"), ("MRMTRSYS", "4.4"), ("MRMTRSYS", "5.4"),
    ("MRMTREND", "7.3"), ("MRMTREOF", "7.3"),
    ("MRSYTUSR", "7.5"),
    ("MRUSELON", "5.3"), ("MRUSELON", "7.3"),
    ("MRAPLSDT", "4.4"), ("MRAPLSDT", "5.4"), ("MRAPLSDT", "7.5"),
}  # fmt: skip
# Levels a verified field lists whose row is not quoted here (same provenance as above)
EARLIER_ROW_LEVELS = {("MRUSELON", "USELON_VMDUSER", "5.3"), ("MRUSELON", "USELON_VMDCPUAD", "5.3"),
                      ("MRSYTUSR", "SYTUSR_SYSUSRS", "7.5"), ("MRSYTUSR", "SYTUSR_SRMCDORM", "7.5")}  # fmt: skip

ROW = re.compile(
    r"^\s*(?P<dec>\d+)\s+(?P<hex>[0-9A-F]+)\s+(?P<type>Structure|Character|Unsigned|Signed|Bitstring|Address)"
    r"\s+(?P<len>\d+)(?P<plus>\+?)\s+(?P<name>\S+)(?P<rest>.*)$"
)
LEVEL = re.compile(r"/mon(\d)(\d)0/", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    record: str
    url: str
    level: str
    offset: int
    type: str
    length: int
    variable: bool
    name: str


def parse(record_name: str, url: str, line: str) -> Row:
    m = ROW.match(line)
    assert m, f"not a row of IBM's table: {line!r}"
    assert int(m["dec"]) == int(m["hex"], 16), f"IBM's decimal and hex offsets disagree: {line!r}"
    lv = LEVEL.search(url)
    assert lv, url
    return Row(
        record_name, url, f"{lv[1]}.{lv[2]}", int(m["dec"]), m["type"], int(m["len"]), m["plus"] == "+", m["name"]
    )


ROWS = tuple(parse(*q) for q in QUOTES)
FIELD_ROWS = tuple(r for r in ROWS if r.type != "Structure" and r.length > 0)
BY_NAME = {lay_.name: lay_ for lay_ in lay.LAYOUTS.values()}


def same_page(a: str, b: str) -> bool:
    """The two hosts and http/https serve the same table; IBM's file names differ only in case."""
    norm = [
        u.split("://", 1)[1].lower().replace("www.ibm.com/support/pages/zvm/pubs", "www.vm.ibm.com/pubs")
        for u in (a, b)
    ]
    return norm[0] == norm[1]


def ibm_type_fits(ours: str, ibm: str, length: int) -> bool:
    size = lay.Field("", 0, ours, "", False, (), "").size
    if size != length:
        return False
    if ours.startswith(("u", "s")) and ours[1:].isdigit():
        return ibm == ("Unsigned" if ours[0] == "u" else "Signed")
    return ibm in ("Character", "Bitstring")  # EBCDIC text, TOD, CPU timers and raw bytes are Character n


def overlaps(field: lay.Field, row: Row) -> bool:
    return field.offset < row.offset + row.length and row.offset < field.offset + field.size


def same_field(field: lay.Field, row: Row) -> bool:
    return bool(field.ibm_name) and field.ibm_name.startswith(row.name)  # a copy may end inside the name


def conflicts(layout: lay.RecordLayout) -> list[str]:
    """Fields of the table that sit on IBM's row of another field (any level: IBM never moves a field)."""
    out = []
    for f in layout.fields:
        for r in FIELD_ROWS:
            if r.record == layout.name and overlaps(f, r) and not same_field(f, r):
                out.append(
                    f"{layout.name} {f.name} at {f.offset}+{f.size} overlaps IBM's {r.name} at {r.offset}+{r.length} ({r.url})"
                )
    return out


def test_every_quoted_line_is_a_row_of_a_record_the_table_has() -> None:
    assert len(ROWS) == len(QUOTES) > 80
    assert {r.record for r in ROWS} <= set(BY_NAME)
    assert all(
        r.url.startswith(("https://www.vm.ibm.com/pubs/mon", "http://www.vm.ibm.com/pubs/mon", SUPPORT)) for r in ROWS
    )


def test_every_verified_field_is_backed_by_ibms_row_quoted_here() -> None:
    missing, wrong, levels = [], [], []
    for layout in lay.LAYOUTS.values():
        for f in (f for f in layout.fields if f.verified):
            rows = [r for r in FIELD_ROWS if r.record == layout.name and r.name == f.ibm_name]
            if not rows:
                missing.append(f"{layout.name} {f.ibm_name}")
                continue
            for r in rows:
                if r.offset != f.offset or not ibm_type_fits(f.type, r.type, r.length):
                    wrong.append(
                        f"{layout.name} {f.ibm_name}: table {f.offset} {f.type}, IBM {r.offset} {r.type} {r.length} ({r.url})"
                    )
            if not any(same_page(f.url, r.url) for r in rows):
                wrong.append(f"{layout.name} {f.ibm_name}: the table cites {f.url}, no row quoted from it")
            quoted = {r.level for r in rows}
            unquoted = {(layout.name, f.ibm_name, lv) for lv in f.levels} - {
                (layout.name, f.ibm_name, lv) for lv in quoted
            }
            levels += sorted(unquoted - EARLIER_ROW_LEVELS)
            levels += [
                f"{layout.name} {f.ibm_name}: IBM shows it at {lv}, the table does not say so"
                for lv in quoted - set(f.levels)
            ]
    assert not missing and not wrong and not levels, (missing, wrong, levels)


def test_every_quoted_structure_length_is_documented_in_the_table_and_vice_versa() -> None:
    quoted: dict[tuple[str, str], tuple[int, bool]] = {}
    for r in ROWS:
        if r.type == "Structure":
            assert quoted.setdefault((r.record, r.level), (r.length, r.variable)) == (r.length, r.variable), r
    for (name, level), (length, variable) in quoted.items():
        layout = BY_NAME[name]
        assert layout.lengths.get(level) == length, (
            f"IBM: {name} is {length} bytes at z/VM {level}; table: {layout.lengths}"
        )
        assert not variable or layout.variable, f"IBM marks {name} variable ({length}+) at {level}"
    in_table = {(lay_.name, lv) for lay_ in lay.LAYOUTS.values() for lv in lay_.lengths}
    assert in_table - set(quoted) == EARLIER_LENGTHS


def test_no_field_of_the_table_sits_on_another_ibm_field() -> None:
    assert [c for layout in lay.LAYOUTS.values() for c in conflicts(layout)] == []


def test_the_overlap_check_refuses_the_old_mruseact_cpu_timer_offsets() -> None:
    """The reader once took VMDTTIME at 32 and VMDVTIME at 40 (MRUSEATE's places): IBM's 6.2 row at 32
    is the 1-byte USEACT_VMDSLIST, so the check must fail on them (it is not a check that cannot fail)."""
    useact = BY_NAME["MRUSEACT"]
    old = [lay.Field("total_cpu_time", 32, "cputimer", "USEACT_VMDTTIME", False, (), "")]
    bad = lay.RecordLayout(4, 3, "MRUSEACT", tuple(old), useact.lengths, useact.urls)
    assert [c.split(" (")[0] for c in conflicts(bad)] == [
        "MRUSEACT total_cpu_time at 32+8 overlaps IBM's USEACT_VMDSLIST at 32+1"
    ]
    # the table's present (unverified) 36/44 do not collide with a row IBM shows, and stay off by default
    assert conflicts(useact) == []
    timers = {f.ibm_name: f for f in useact.fields if f.type == "cputimer"}
    assert set(timers) == {"USEACT_VMDTTIME", "USEACT_VMDVTIME"}
    assert not any(f.verified for f in timers.values()) and not set(timers.values()) & set(useact.decoded(False))


def test_an_unverified_field_whose_ibm_row_is_quoted_must_be_flipped_to_verified() -> None:
    stale = [
        f"{layout.name} {f.ibm_name}"
        for layout in lay.LAYOUTS.values()
        for f in layout.fields
        if not f.verified
        and any(r.record == layout.name and r.name == f.ibm_name and r.offset == f.offset for r in FIELD_ROWS)
    ]
    assert stale == []


@pytest.mark.parametrize(("level", "length"), [("4.3", 284), ("5.4", 444), ("6.2", 496)])
def test_a_logoff_record_of_each_documented_length_is_read_not_dead_lettered(level: str, length: int) -> None:
    """MRUSELOF is 444 bytes at z/VM 5.4 (VM/mon540/MRUSELOF.HTML): such a record was a dead letter
    ("no z/VM level has this length") while the table knew only 284 and 496."""
    logoff = record(4, 2, _tod(1), length, ((20, "8s", "LNXA    ".encode("cp037")), (28, "H", 0)))
    _, items = read_any(monwrite([logoff, mrmtrend(_tod(2))]))
    items = list(items)
    assert not [i for i in items if isinstance(i, Damage)]
    recs = [i for i in items if isinstance(i, MonRecord) and (i.domain, i.record) == (4, 2)]
    assert [(r.length, r.level) for r in recs] == [(length, level)]


def test_a_logoff_record_between_documented_lengths_is_still_a_dead_letter() -> None:
    odd = record(4, 2, _tod(1), 460, ((20, "8s", "LNXA    ".encode("cp037")),))
    _, items = read_any(monwrite([odd, mrmtrend(_tod(2))]))
    damage = [i for i in items if isinstance(i, Damage)]
    assert len(damage) == 1 and "460 bytes" in damage[0].message and "444 at z/VM 5.4" in damage[0].message


def test_scheduler_record_of_zvm_4_4_is_read() -> None:
    """MRSYTSCG is 140 bytes at 4.4 (VM/mon440/MRSYTSCG.HTML) and "156+" at 7.1: a 4.4 record is read;
    its dispatch-list count at 20 (u2) is IBM's row at 7.1, and IBM does not move fields."""
    scg = record(0, 10, _tod(1), 140, ((20, "H", 7),))
    _, items = read_any(monwrite([scg, mrmtrend(_tod(2))]))
    recs = [i for i in items if isinstance(i, MonRecord) and (i.domain, i.record) == (0, 10)]
    assert [(r.length, r.level, r.fields) for r in recs] == [(140, "4.4", {"users_in_dispatch_list": 7})]


# ---------------------------------------------------------------------------------------------------
# The system counts in zvm_system_samples, from records built at the offsets IBM's quoted rows give
# (looked up in QUOTES here, never in the reader's table)
# ---------------------------------------------------------------------------------------------------
def ibm(record_name: str, field: str) -> tuple[int, str]:
    """Offset and struct format of IBM's quoted row."""
    (row,) = {(r.offset, r.type, r.length) for r in FIELD_ROWS if r.record == record_name and r.name == field}
    assert row[1] == "Unsigned", row
    return row[0], {2: "H", 4: "I"}[row[2]]


def system_counts(
    tod: int, logged: int, dormant: int, dispatch: int, full90: int, spool90: int, slots: int
) -> list[bytes]:
    usr = ((*ibm("MRSYTUSR", "SYTUSR_SYSUSRS"), logged), (*ibm("MRSYTUSR", "SYTUSR_SRMCDORM"), dormant))
    scg = ((*ibm("MRSYTSCG", "SYTSCG_SRMCDISP"), dispatch),)
    asg = (
        (*ibm("MRSYTASG", "SYTASG_CAL90FUL"), full90),
        (*ibm("MRSYTASG", "SYTASG_CAL91FUL"), spool90),
        (*ibm("MRSYTASG", "SYTASG_CALSLTA1"), slots),
    )
    # lengths: MRSYTUSR 108 (VM/mon640), MRSYTSCG 156 (VM/mon710, "156+"), MRSYTASG 112 (VM/mon740)
    return [record(0, 8, tod, 108, usr), record(0, 10, tod, 156, scg), record(0, 6, tod, 112, asg)]


def _system_samples(data: bytes) -> tuple[list[dict], dict[str, int]]:
    emitted, counts = records_of_bytes(data, "MONDATA", Options())
    return [e.record for e in emitted if e.topic_key == "zvm_system_samples"], counts


def test_system_counts_read_at_ibms_offsets_reach_zvm_system_samples() -> None:
    data = monwrite(
        system_counts(_tod(59), 40, 25, 7, 2, 0, 1_200_000) + [mrmtrend(_tod(60))]
        + system_counts(_tod(119), 42, 30, 9, 3, 1, 1_500_000) + [mrmtrend(_tod(120))]
    )  # fmt: skip
    samples, counts = _system_samples(data)
    (s,) = samples  # the first interval end has no start yet
    got = {k: s[k] for k in ("users_logged", "users_dormant", "users_in_dispatch_list", "paging_slots_total",
                             "paging_90pct_full_count", "spool_90pct_full_count", "interval_s")}  # fmt: skip
    assert got == {
        "users_logged": 42, "users_dormant": 30, "users_in_dispatch_list": 9, "paging_slots_total": 1_500_000,
        "paging_90pct_full_count": 3, "spool_90pct_full_count": 1, "interval_s": 60.0,
    }  # fmt: skip
    assert SLOTS_TOO_LARGE not in counts


def test_a_paging_slot_total_too_large_for_ibms_32_bit_field_is_published_as_null() -> None:
    """IBM (VM/mon740/MRSYTASG.HTML, quoted above): "If SALSLTAVg is too large to fit in this 32-bit
    field, then set to x'FFFFFFFF'"; the 64-bit SYTASG_CALSLTA1G's offset is not confirmed."""
    data = monwrite(
        system_counts(_tod(59), 1, 1, 1, 0, 0, 5) + [mrmtrend(_tod(60))]
        + system_counts(_tod(119), 1, 1, 1, 0, 0, 0xFFFFFFFF) + [mrmtrend(_tod(120))]
    )  # fmt: skip
    (s,), counts = _system_samples(data)
    assert s["paging_slots_total"] is None and s["paging_90pct_full_count"] == 0
    assert counts[SLOTS_TOO_LARGE] == 1


def test_counts_of_one_interval_do_not_leak_into_the_next() -> None:
    only_first = system_counts(_tod(59), 4, 3, 2, 1, 1, 10)
    data = monwrite(only_first + [mrmtrend(_tod(60)), mrmtrend(_tod(120)), record(0, 8, _tod(179), 108, ((20, "I", 5),)),
                    mrmtrend(_tod(180))])  # fmt: skip
    samples, _ = _system_samples(data)
    assert [(s["users_logged"], s["users_dormant"], s["paging_slots_total"]) for s in samples] == [(5, 0, None)]


def test_the_warehouse_table_takes_every_field_of_the_schema(embedded_path) -> None:  # noqa: ANN001
    """Migration 023 adds the columns the schema added; the sink writes by the schema's field names."""
    from fleetperf.warehouse.clickhouse import migrate
    from fleetperf.warehouse.rows import RowMapper

    settings = embedded_settings(embedded_path, "zvm_counts_test")
    ch, _ = migrate(settings)
    data = monwrite(
        system_counts(_tod(59), 40, 25, 7, 2, 0, 1_200_000) + [mrmtrend(_tod(60))]
        + system_counts(_tod(119), 42, 30, 9, 3, 1, 1_500_000) + [mrmtrend(_tod(120))]
    )  # fmt: skip
    (sample,), _ = _system_samples(data)
    mapper = RowMapper(settings)
    topic = settings.topic("zvm_system_samples")
    rows = [row for _, row in mapper.rows(topic.name, sample)]
    ch.insert(topic.table, rows, column_names=mapper.columns[topic.table])
    got = ch.query(
        "SELECT users_dormant, users_in_dispatch_list, paging_slots_total, paging_90pct_full_count,"
        " spool_90pct_full_count, users_logged FROM zvm_system_samples"
    ).result_rows
    assert got == [(30.0, 9.0, 1_500_000.0, 3.0, 1.0, 42.0)]
