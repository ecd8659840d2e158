"""z/VM CP monitor record layouts, described once as tables; `monitor.py` decodes and
`monitor_writer.py` encodes records from them, so a new z/VM level is a change here only.

Level followed: the monitor record descriptions IBM publishes for z/VM 5.3 and later (MRRECHDR,
MRMTRSYS, MRMTREOF, MRMTREND, MRSYTPRP, MRUSEACT, MRAPLSDT); the fields read here sit at the same
offsets in the z/VM 7.x descriptions (fields are only ever appended). Linux's APPLDATA OS record
is arch/s390/appldata/appldata_os.c (modification level 01: steal and cpu_id per CPU). All
big-endian; character fields EBCDIC (code page 037).

Field types: u1 u2 u4 u8 (unsigned), s2 s4 (signed), tod (8-byte TOD clock), cputimer (8-byte CPU
timer, value >> 12 = microseconds), ebcdic<n> (blank-padded EBCDIC text), raw<n> (bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

HEADER_SIZE = 20  # MRHDR: MRHDRLEN u2, MRHDRZER u2, MRHDRDM u1, *, MRHDRRC u2, MRHDRTOD 8, * 4
MAX_DOMAIN = 10
FRAME_SIZE = 4096  # a monitor frame (page); records never span frames
MCE_SIZE = 12  # monreader: monitor control element before each run of records
EBCDIC = "cp037"
TOD_EPOCH_OFFSET_S = 2208988800  # 1900-01-01 (TOD epoch) to 1970-01-01, leap seconds not counted


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    type: str

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
    name: str  # IBM's DSECT name
    fields: tuple[Field, ...]

    @property
    def min_length(self) -> int:
        return max((f.offset + f.size for f in self.fields), default=HEADER_SIZE)


def _f(*specs: tuple[str, int, str]) -> tuple[Field, ...]:
    return tuple(Field(n, o, t) for n, o, t in specs)


LAYOUTS: dict[tuple[int, int], RecordLayout] = {
    # Domain 1, Monitor: configuration and framing
    (1, 4): RecordLayout(1, 4, "MRMTRSYS", _f(("systod_ipl", 36, "tod"), ("system_id", 88, "ebcdic8"))),
    (1, 11): RecordLayout(1, 11, "MRMTREND", ()),  # interval end: all sample data of the interval precede it
    (1, 13): RecordLayout(1, 13, "MRMTREOF", ()),  # end of frame: the rest of the 4K frame is unused
    # Domain 0, System: per processor, cumulative since IPL
    (0, 2): RecordLayout(
        0,
        2,
        "MRSYTPRP",
        _f(
            ("cpu_address", 20, "u2"),
            ("problem_state_time", 24, "cputimer"),  # PFXPRBTM: guest (emulation) time
            ("user_time", 32, "cputimer"),  # PFXUTIME: CP time charged to users
            ("system_time", 40, "cputimer"),  # PFXTMSYS: CP time not charged to users
            ("wait_time", 68, "cputimer"),  # PFXTOTWT: processor in wait state
        ),
    ),
    # Domain 4, User: one record per virtual processor of a guest, cumulative since logon
    (4, 3): RecordLayout(
        4,
        3,
        "MRUSEACT",
        _f(
            ("userid", 20, "ebcdic8"),  # VMDUSER
            ("vcpu_address", 28, "u2"),  # VMDCPUAD
            ("total_cpu_time", 32, "cputimer"),  # VMDTTIME: virtual + CP time on its behalf
            ("virtual_cpu_time", 40, "cputimer"),  # VMDVTIME
        ),
    ),
    # Domain 10, APPLDATA: a guest's DIAGNOSE X'DC' buffer as found at the sample
    (10, 2): RecordLayout(
        10,
        2,
        "MRAPLSDT",
        _f(
            ("data_offset", 20, "s2"),  # APLSDT_CALDATOF: always locate the data by it
            ("data_length", 22, "s2"),  # APLSDT_CALDATLN
            ("userid", 24, "ebcdic8"),
            ("product_id", 32, "raw16"),  # APLSDT_MDGPROD
            ("status", 48, "u1"),
        ),
    ),
}

# Linux APPLDATA product id (appldata_base.c): prod_nr "LNXAPPL" (EBCDIC) u8[7], prod_fn u16,
# record_nr u8, version_nr u16, release_nr u16, mod_lvl u16
LINUX_PRODUCT = "LNXAPPL"
APPLDATA_OS_RECORD = 0x02

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
