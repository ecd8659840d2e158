"""z/VM CP monitor record layouts as IBM publishes them, one table entry per (domain, record), with
the evidence for every field: IBM page URL, the z/VM level(s) whose page shows the row, offset,
length, type, and `verified` (True only when a row of IBM's own table was read; see README.md).

Rules the reader follows from this table:
- IBM's offsets count from the start of the record, the 20-byte header (MRHDR) included.
- Only `verified` fields are decoded unless the caller opts in (`unverified=True`, the CLI's
  `--zvm-unverified`); an unverified value is never published as a fact by default.
- A record's length must be one IBM documents for some level, or longer than the longest documented
  one (IBM grows records within a level by APAR: "Bits will be added to MTRSYS_CALLEVEL for APARs
  that introduce changes to Monitor that may be ambiguous based on record length and release
  level", MRMTRSYS 6.1/7.1). Shorter than every documented level, or between two documented
  lengths, is a length no level has: a dead letter.
- CPU-timer fields carry a `direction`: "down" = complement form (IBM: PFXPRBTM "starts at
  x'7FFFFFFFF_00000000' and advances down"; the vcputime tip: VMDTTIME/VMDVTIME "are stored in
  complement form ... accrual is reflected by the numeric value of the field decreasing").

All big-endian; character fields EBCDIC (code page 037). Linux's APPLDATA OS record is Linux's
layout (arch/s390/appldata/appldata_os.c, modification level 01), not IBM's monitor table.

Field types: u1 u2 u4 u8 (unsigned), s2 s4 (signed), tod (8-byte TOD clock), cputimer (8-byte CPU
timer, value >> 12 = microseconds), ebcdic<n> (blank-padded EBCDIC text), raw<n> (bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER_SIZE = 20  # MRHDR: MRHDRLEN u2, MRHDRZER u2, MRHDRDM u1, *, MRHDRRC u2, MRHDRTOD 8, * 4
MAX_DOMAIN = 10
FRAME_SIZE = 4096  # a monitor frame (page); records never span frames
MCE_SIZE = 12  # monreader: monitor control element before each run of records
EBCDIC = "cp037"
TOD_EPOCH_OFFSET_S = 2208988800  # 1900-01-01 (TOD epoch) to 1970-01-01, leap seconds not counted

# z/VM levels whose monitor record pages exist and were consulted; records of other levels are read
# the same way (IBM appends fields and retires them in place), with the length rule below
LEVELS = ("4.2", "4.3", "4.4", "5.1", "5.3", "5.4", "6.1", "6.2", "6.3", "6.4", "7.1", "7.2", "7.3", "7.4", "7.5")

# IBM's monitor record pages: two hosts carry the same tables
VM = "https://www.vm.ibm.com/pubs"
SUPPORT = "https://www.ibm.com/support/pages/zvm/pubs"
VCPUTIME_TIP = "https://www.vm.ibm.com/perf/tips/vcputime.html"
# MONWRITE's control record (HCPMWTBK, "NOT intended to be used as Programming Interfaces")
MWTBK_URL = f"{VM}/cp640/MWTBK.HTML"
MWTBK_FLAG_OFFSET = 40  # MWTCAFLG: x'E2' sample data, x'C5' event data
MWTBK_FLAGS = (0xE2, 0xC5)
MWTBK_START_OFFSET = 44  # MWTCASTR, signed 4: start address of the records this entry describes
MWTBK_END_OFFSET = 48  # MWTCAEND, signed 4: their end address


@dataclass(frozen=True)
class Field:
    name: str  # our name
    offset: int
    type: str
    ibm_name: str  # IBM's DSECT field name ("" when IBM's row was not read and the name is not known)
    verified: bool  # IBM's row (offset, length, type) was read on the page below
    levels: tuple[str, ...]  # z/VM levels whose IBM page shows this row (verified) or the evidence refers to
    url: str  # IBM page, or the source of the unverified evidence
    direction: str | None = None  # CPU timers: "down" = complement form
    direction_verified: bool = False  # IBM's text states the direction
    note: str = ""

    @property
    def size(self) -> int:
        t = self.type
        if t.startswith("ebcdic"):
            return int(t[6:])
        if t.startswith("raw"):
            return int(t[3:])
        return {"u1": 1, "u2": 2, "s2": 2, "u4": 4, "s4": 4, "u8": 8, "tod": 8, "cputimer": 8}[t]


@dataclass(frozen=True)
class RecordLayout:
    domain: int
    record: int
    name: str  # IBM's record name (MRxxxxxx)
    fields: tuple[Field, ...]
    lengths: dict[str, int] = field(default_factory=dict)  # level -> IBM's "Structure" length
    urls: tuple[str, ...] = ()  # the pages the lengths come from
    variable: bool = False  # the structure is a fixed part followed by variable data (any length >= it)

    def decoded(self, unverified: bool) -> tuple[Field, ...]:
        return self.fields if unverified else tuple(f for f in self.fields if f.verified)

    def need(self, fields: tuple[Field, ...]) -> int:
        return max((f.offset + f.size for f in fields), default=HEADER_SIZE)

    def check_length(self, length: int) -> tuple[str | None, str]:
        """(level, "") when IBM documents this length; (None, "") when longer than every documented
        level (a later level or service); (None, why) when no level has a record of this length."""
        if not self.lengths:
            return None, ""
        for level, documented in self.lengths.items():
            if length == documented:
                return level, ""
        known = ", ".join(f"{n} at z/VM {lv}" for lv, n in self.lengths.items())
        shortest, longest = min(self.lengths.values()), max(self.lengths.values())
        if self.variable and length >= shortest:
            return None, ""
        if length > longest:
            return None, ""
        return None, f"{self.name} of {length} bytes: no z/VM level has this length (IBM documents {known})"


def _r(domain: int, record: int, name: str, fields: tuple[Field, ...], lengths: dict[str, int],
       urls: tuple[str, ...], variable: bool = False) -> RecordLayout:  # fmt: skip
    return RecordLayout(domain, record, name, fields, lengths, urls, variable)


_ZPMD = "pak-center/zpmd recstruct.h (z/VM 5.3 C structs, secondary, not IBM)"

LAYOUTS: dict[tuple[int, int], RecordLayout] = {
    # Domain 1, Monitor: configuration and framing
    (1, 4): _r(
        1,
        4,
        "MRMTRSYS",
        (
            Field(
                "cp_version",
                28,
                "ebcdic8",
                "MTRSYS_HCPCPEID",
                True,
                ("6.2",),
                f"{VM}/mon620/MRMTRSYS.HTML",
                note="Version number, in EBCDIC format",
            ),
            Field("systod_ipl", 36, "tod", "", False, (), "the reader's earlier table (no IBM row read)"),
            Field("system_id", 88, "ebcdic8", "", False, (), "the reader's earlier table (no IBM row read)"),
        ),
        {"4.2": 108, "4.3": 176, "4.4": 176, "5.1": 184, "5.4": 420, "6.1": 420, "6.2": 428},
        (
            f"{VM}/mon420/MRMTRSYS.HTML",
            f"{VM}/mon430/MRMTRSYS.HTML",
            f"{VM}/mon440/MRMTRSYS.HTML",
            f"{VM}/mon510/MRMTRSYS.HTML",
            f"{VM}/mon540/MRMTRSYS.HTML",
            f"{VM}/mon610/MRMTRSYS.HTML",
            f"{VM}/mon620/MRMTRSYS.HTML",
        ),
    ),  # fmt: skip
    (1, 11): _r(1, 11, "MRMTREND", (), {"7.3": 20}, (f"{SUPPORT}/mon730/mrmtrend.html",)),
    (1, 13): _r(1, 13, "MRMTREOF", (), {"7.3": 20}, (f"{SUPPORT}/mon730/mrmtreof.html",)),
    # Domain 0, System
    (0, 2): _r(
        0,
        2,
        "MRSYTPRP",  # processor data, one record per processor (per thread under MT, 6.4 prolog)
        (
            Field(
                "cpu_address",
                20,
                "u2",
                "SYTPRP_PFXCPUAD",
                True,
                ("5.4", "6.2", "6.4"),
                f"{VM}/mon640/MRSYTPRP.HTML",
                note="Real processor's CPU address",
            ),
            Field(
                "problem_state_time",
                24,
                "cputimer",
                "SYTPRP_PFXPRBTM",
                True,
                ("6.4",),
                f"{VM}/mon640/MRSYTPRP.HTML",
                "down",
                True,
                "Total raw CPU time spent in emulation mode on this processor for all users",
            ),
            Field(
                "user_time",
                32,
                "cputimer",
                "SYTPRP_PFXUTIME",
                True,
                ("6.4",),
                f"{VM}/mon640/MRSYTPRP.HTML",
                "down",
                False,
                "Total raw CPU time charged to users (guest + CP on their behalf); direction not stated by IBM",
            ),
            Field(
                "system_time",
                40,
                "cputimer",
                "SYTPRP_PFXTMSYS",
                False,
                ("5.3",),
                _ZPMD,
                "down",
                False,
                "CP time not charged to users",
            ),
            Field(
                "wait_time",
                68,
                "cputimer",
                "SYTPRP_PFXTOTWT",
                False,
                ("5.3",),
                _ZPMD,
                "down",
                False,
                "processor wait time; zpmd's struct gives 68 packed or 72 aligned",
            ),
        ),
        {"5.4": 124, "6.2": 140, "6.4": 352},
        (f"{VM}/mon540/MRSYTPRP.HTML", f"{VM}/mon620/MRSYTPRP.HTML", f"{VM}/mon640/MRSYTPRP.HTML"),
    ),  # fmt: skip
    (0, 6): _r(
        0,
        6,
        "MRSYTASG",  # auxiliary storage (global): paging and spooling slots
        (
            Field(
                "paging_90pct_full_count",
                20,
                "u4",
                "SYTASG_CAL90FUL",
                True,
                ("4.3", "5.3", "6.1", "6.2", "7.1", "7.3", "7.4"),
                f"{VM}/mon740/MRSYTASG.HTML",
                note="Number of times available paging slots were 90 percent full (a count, not a %)",
            ),
            Field(
                "spool_90pct_full_count",
                24,
                "u4",
                "SYTASG_CAL91FUL",
                True,
                ("6.1", "7.1", "7.4"),
                f"{VM}/mon740/MRSYTASG.HTML",
                note="Number of times available spooling slots were 90 percent full",
            ),
            Field(
                "paging_slots_total",
                28,
                "u4",
                "SYTASG_CALSLTA1",
                True,
                ("6.1", "7.1", "7.4"),
                f"{VM}/mon740/MRSYTASG.HTML",
                note="Total slots allocated for paging; deprecated at 7.x (x'FFFFFFFF' when too large: use"
                " SYTASG_CALSLTA1G, offset not found)",
            ),
        ),
        {"4.3": 84, "5.3": 84, "6.1": 84, "6.2": 84, "7.1": 108, "7.3": 112, "7.4": 112},
        (
            f"{VM}/mon430/MRSYTASG.HTML",
            f"{VM}/mon530/MRSYTASG.HTML",
            f"{VM}/mon610/MRSYTASG.HTML",
            f"{VM}/mon620/MRSYTASG.HTML",
            f"{VM}/mon710/MRSYTASG.HTML",
            f"{SUPPORT}/mon730/mrsytasg.html",
            f"{VM}/mon740/MRSYTASG.HTML",
        ),
    ),  # fmt: skip
    (0, 8): _r(
        0,
        8,
        "MRSYTUSR",  # global information on users
        (
            Field(
                "users_logged",
                20,
                "u4",
                "SYTUSR_SYSUSRS",
                True,
                ("4.3", "6.1", "6.4", "7.5"),
                f"{VM}/mon640/MRSYTUSR.HTML",
                note="Cardinal count of current logged-on users",
            ),
            Field(
                "users_dormant",
                24,
                "u4",
                "SYTUSR_SRMCDORM",
                True,
                ("4.3", "6.4", "7.5"),
                f"{VM}/mon640/MRSYTUSR.HTML",
                note="Cardinal count of VMDBKs now in the dormant list",
            ),
        ),
        {"4.3": 100, "6.1": 100, "6.4": 108, "7.5": 108},
        (
            f"{VM}/mon430/MRSYTUSR.HTML",
            f"{VM}/mon610/MRSYTUSR.HTML",
            f"{VM}/mon640/MRSYTUSR.HTML",
            f"{SUPPORT}/mon750/mrsytusr.html",
        ),
    ),  # fmt: skip
    (0, 10): _r(
        0,
        10,
        "MRSYTSCG",  # scheduler activity (global); IBM: Structure "156+" (variable) at 7.1
        (
            Field(
                "users_in_dispatch_list",
                20,
                "u2",
                "SYTSCG_SRMCDISP",
                True,
                ("7.1",),
                f"{VM}/mon710/MRSYTSCG.HTML",
                note="Cardinal count of users in the dispatch list",
            ),
        ),
        {"4.4": 140, "7.1": 156},
        (f"{VM}/mon440/MRSYTSCG.HTML", f"{VM}/mon710/MRSYTSCG.HTML"),
        variable=True,
    ),  # fmt: skip
    # Domain 4, User
    (4, 1): _r(
        4,
        1,
        "MRUSELON",  # logon event, base VMDBK only
        (
            Field("userid", 20, "ebcdic8", "USELON_VMDUSER", True, ("5.3", "5.4", "6.4"), f"{VM}/mon640/MRUSELON.HTML"),
            Field(
                "vcpu_address", 28, "u2", "USELON_VMDCPUAD", True, ("5.3", "5.4", "6.4"), f"{VM}/mon640/MRUSELON.HTML"
            ),
        ),
        {"5.3": 96, "5.4": 176, "6.4": 180, "7.3": 180},
        (
            f"{VM}/mon530/MRUSELON.HTML",
            f"{VM}/mon540/MRUSELON.HTML",
            f"{VM}/mon640/MRUSELON.HTML",
            f"{SUPPORT}/mon730/mruselon.html",
        ),
    ),  # fmt: skip
    (4, 2): _r(
        4,
        2,
        "MRUSELOF",  # logoff event; from 6.2 one per virtual CPU active at logoff plus the base
        (
            Field("userid", 20, "ebcdic8", "USELOF_VMDUSER", True, ("4.3", "5.4", "6.2"), f"{VM}/mon620/MRUSELOF.HTML"),
            Field(
                "vcpu_address", 28, "u2", "USELOF_VMDCPUAD", True, ("4.3", "5.4", "6.2"), f"{VM}/mon620/MRUSELOF.HTML"
            ),
        ),
        {"4.3": 284, "5.4": 444, "6.2": 496},
        (f"{VM}/mon430/MRUSELOF.HTML", f"{VM}/mon540/MRUSELOF.HTML", f"{VM}/mon620/MRUSELOF.HTML"),
    ),  # fmt: skip
    (4, 3): _r(
        4,
        3,
        "MRUSEACT",  # user activity, one record per virtual processor; variable topology tail from 6.3
        (
            Field("userid", 20, "ebcdic8", "USEACT_VMDUSER", True, ("6.1", "6.2"), f"{VM}/mon620/MRUSEACT.HTML"),
            Field("vcpu_address", 28, "u2", "USEACT_VMDCPUAD", True, ("6.1", "6.2"), f"{VM}/mon620/MRUSEACT.HTML"),
            # IBM's 6.2 rows: 30 VMDMODE (1), 31 CALMODE (1), 32 VMDSLIST (1); the rows after 32 were not read.
            # 36/44: zpmd's 5.3 MRUSELOF (same 20-32 prefix, then VMDELIST 33, CALFLAG1 34, VMDSTYPE 35) packed.
            # Still unconfirmed after a second search (2026-11-25, /work/notes/zvm_layouts.md section 9): every
            # stored copy of IBM's MRUSEACT page (mon610-mon730, both hosts) is cut before offset 33, and no
            # public repository holds IBM's table. Kept off by default (`--zvm-unverified`), never published.
            Field(
                "total_cpu_time",
                36,
                "cputimer",
                "USEACT_VMDTTIME",
                False,
                ("5.3",),
                _ZPMD,
                "down",
                True,
                "raw total CPU time; complement form per " + VCPUTIME_TIP,
            ),
            Field(
                "virtual_cpu_time",
                44,
                "cputimer",
                "USEACT_VMDVTIME",
                False,
                ("5.3",),
                _ZPMD,
                "down",
                True,
                "raw virtual CPU time; complement form per " + VCPUTIME_TIP,
            ),
        ),
        {"6.1": 440, "6.2": 508},
        # 6.3+ append MRUSEACT_VMUTOPDA entries, and 7.3 APARs VM66434, VM66678, VM66850, VM66919 change
        # the record (mon730 changes page): lengths above 508 are accepted as later levels
        (f"{VM}/mon610/MRUSEACT.HTML", f"{VM}/mon620/MRUSEACT.HTML"),
    ),  # fmt: skip
    # Domain 10, APPLDATA: a guest's DIAGNOSE X'DC' buffer as found at the sample. IBM: Structure 52
    # (APLSDT_APHDR) followed by the data; "APLSDT_CALDATOF should always be used to locate the
    # APLSDT_ADATA data area". The header's field rows were not read: offsets from the earlier table
    # (they add up to IBM's 52: 20 + 2 + 2 + 8 + 16 + 1 + 3 reserved).
    (10, 2): _r(
        10,
        2,
        "MRAPLSDT",
        (
            Field(
                "data_offset",
                20,
                "s2",
                "APLSDT_CALDATOF",
                False,
                ("4.4", "5.4", "7.5"),
                f"{SUPPORT}/mon750/mraplsdt.html",
                note="name in IBM's prolog, row not read",
            ),
            Field("data_length", 22, "s2", "", False, (), "the reader's earlier table"),
            Field("userid", 24, "ebcdic8", "", False, (), "the reader's earlier table"),
            Field("product_id", 32, "raw16", "", False, (), "the reader's earlier table"),
            Field("status", 48, "u1", "", False, (), "the reader's earlier table"),
        ),
        {"4.4": 52, "5.4": 52, "7.5": 52},
        (f"{VM}/mon440/MRAPLSDT.HTML", f"{VM}/mon540/MRAPLSDT.HTML", f"{SUPPORT}/mon750/mraplsdt.html"),
        variable=True,
    ),  # fmt: skip
}


def unverified_fields() -> list[tuple[str, Field]]:
    """Every field the reader would decode that IBM's text did not confirm."""
    return [(lay.name, f) for lay in LAYOUTS.values() for f in lay.fields if not f.verified]


# Linux APPLDATA product id (appldata_base.c): prod_nr "LNXAPPL" (EBCDIC) u8[7], prod_fn u16,
# record_nr u8, version_nr u16, release_nr u16, mod_lvl u16
LINUX_PRODUCT = "LNXAPPL"
APPLDATA_OS_RECORD = 0x02


def _f(*specs: tuple[str, int, str]) -> tuple[Field, ...]:
    url = "linux arch/s390/appldata/appldata_os.c"
    return tuple(Field(n, o, t, n, True, ("linux",), url) for n, o, t in specs)


# appldata_os_data (packed): header fields, then nr_cpus entries of per_cpu_size bytes at cpu_offset
APPLDATA_OS = _f(
    ("timestamp", 0, "u8"),
    ("sync_count_1", 8, "u4"),
    ("sync_count_2", 12, "u4"),
    ("nr_cpus", 16, "u4"),
    ("per_cpu_size", 20, "u4"),
    ("cpu_offset", 24, "u4"),
    ("nr_running", 28, "u4"),
    ("nr_threads", 32, "u4"),
    ("avenrun_1", 36, "u4"),
    ("avenrun_5", 40, "u4"),
    ("avenrun_15", 44, "u4"),
    ("nr_iowait", 48, "u4"),
)
APPLDATA_OS_HEADER_SIZE = 52
# per CPU, in jiffies (USER_HZ = 100 on s390); steal and cpu_id from modification level 01
APPLDATA_OS_CPU = _f(
    ("user", 0, "u4"),
    ("nice", 4, "u4"),
    ("system", 8, "u4"),
    ("idle", 12, "u4"),
    ("irq", 16, "u4"),
    ("softirq", 20, "u4"),
    ("iowait", 24, "u4"),
    ("steal", 28, "u4"),
    ("cpu_id", 32, "u4"),
)
