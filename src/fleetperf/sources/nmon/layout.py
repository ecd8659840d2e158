"""How nmon sections map to (section, entity, metric): decided once per header line, so data
lines only convert numbers. The table below is the whole mapping; see README.md beside this file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from fleetperf.ingest.validate import Kind

# per-CPU sections: CPU01 / CPU001 -> section CPU, entity "1"; CPU_ALL -> entity "ALL"
_PER_CPU = re.compile(r"^(CPU|PCPU|SCPU)(\d+|_ALL)$")
# sections whose columns are entities (disks, disk groups, volume groups, file systems);
# nmon splits long disk lists into DISKBUSY1, DISKBUSY2, ...
_COLUMNS_ARE_ENTITIES = re.compile(r"^(DISK[A-Z]+|DG[A-Z]+|VG[A-Z]+|JFSFILE|JFSINODE)(\d*)$")
# columns "<entity><sep><metric>": NET* "en0-read-KB/s", IOADAPT "fcs0_read-KB/s"
_ENTITY_PREFIXED = {"NET": "-", "NETPACKET": "-", "NETERROR": "-", "NETSIZE": "-", "IOADAPT": "_"}
# text columns of known sections; everything else in a known section must be a number
_TEXT_COLUMNS = {
    "TOP": {"PID", "Command", "WLMclass"},
    # UARG (nmon -T): Linux 'PID,ProgName,FullCommand' (nmon 16n's source: "UARG,%s,%07d,%s,%s");
    # AIX 'PID,PPID,COMM,THCOUNT,USER,GROUP,FullCommand' (IBM's "Process statistics" page lists the
    # fields, not verified against an AIX file here: the corpus has none)
    "UARG": {"PID", "ProgName", "COMM", "USER", "GROUP", "FullCommand"},
}
# sections of one line per process: the text columns that name the row's one entity, 'PID name',
# as TOP does, so that a process's TOP and UARG rows meet. UARG rows had entity '': every command
# line of a snapshot had the same key in nmon_labels (host, section, entity, label, ts), and the
# ReplacingMergeTree kept one of them (60 processes a snapshot -> 1 FullCommand, seen here).
_ENTITY_COLUMNS = {"TOP": ("PID", "Command"), "UARG": ("PID", "ProgName", "COMM")}
# a last column that is the rest of the line, commas and all: UARG's FullCommand (nmon -T, a
# process's arguments as given). Linux nmon 16n writes them unquoted, so a command line with commas
# (seen here: a JSON argument, 33 fields) was cut at its first comma and the rest dropped.
_REST_OF_LINE = {"UARG": "FullCommand"}
KNOWN = {
    "CPU",
    "PCPU",
    "SCPU",
    "LPAR",
    "POOLS",
    "MEM",
    "MEMNEW",
    "MEMUSE",
    "MEMPAGES4KB",
    "MEMPAGES64KB",
    "MEMPAGES16MB",
    "MEMPAGES16GB",
    "PAGE",
    "PAGING",
    "PROC",
    "PROCAIO",
    "FILE",
    "VM",
    "NET",
    "NETPACKET",
    "NETERROR",
    "NETSIZE",
    "IOADAPT",
    "TOP",
    "JFSFILE",
    "JFSINODE",
}

# what a value may be (ingest/validate.py): nmon writes -1 for "not available" and deltas of wrapped
# counters in MEM, PROC, VM, PAGE... (seen in real Linux files), and DISKBUSY above 100 (101.0 in a
# real Linux file), so only these are checked beyond "a finite number":
_NON_NEGATIVE = {"CPU", "PCPU", "SCPU", "LPAR", "NET", "NETPACKET", "NETERROR", "NETSIZE", "IOADAPT"}
_PERCENT = {"CPU"}  # CPU01 / CPU_ALL columns ending in % (User%, Sys%, Wait%, Idle%, Steal%)

# typed CpuSample fields (schemas/cpu_sample.avsc) from CPU_ALL and LPAR
CPU_SAMPLE_FIELDS = (
    "user_pct",
    "sys_pct",
    "wait_pct",
    "idle_pct",
    "steal_pct",
    "cpus",
    "physc",
    "entitled",
    "virtual_cpus",
    "pool_cpus",
    "pool_idle",
)
INT_CPU_FIELDS = {"cpus", "virtual_cpus"}
_CPU_COLUMNS = {
    "CPU_ALL": {
        "User%": "user_pct",
        "Sys%": "sys_pct",
        "Wait%": "wait_pct",
        "Idle%": "idle_pct",
        "Steal%": "steal_pct",
        "CPUs": "cpus",
        "PhysicalCPUs": "cpus",
    },
    "LPAR": {
        "PhysicalCPU": "physc",
        "entitled": "entitled",
        "virtualCPUs": "virtual_cpus",
        "poolCPUs": "pool_cpus",
        "PoolIdle": "pool_idle",
    },
}


@dataclass(frozen=True)
class Header:
    section: str
    columns: list[str]
    numeric: list[int]  # positions of the numeric columns, in value order
    text: list[int]  # positions of text columns (-> labels)
    entities: list[str]
    metrics: list[str]
    strict: bool  # known section: a non-number in a numeric column is an error
    top: bool = False
    entity_from_labels: tuple[str, ...] = ()
    cpu_fields: tuple[tuple[str, int], ...] = ()
    kinds: tuple[int, ...] = ()  # validate.Kind per numeric column, in value order
    rest: int | None = None  # the column that takes the rest of the line (_REST_OF_LINE), the last

    def cells(self, values: list[bytes]) -> list[bytes]:
        """A data line's cells after its tag, the rest-of-line column joined again."""
        if self.rest is not None and len(values) > self.rest + 1:
            return [*values[: self.rest], b",".join(values[self.rest :])]
        return values

    @property
    def width(self) -> int:
        return len(self.columns)

    # for the parser's fast path: positions among the numbers that must not be negative / are percentages
    @cached_property
    def signed(self) -> tuple[int, ...]:
        return tuple(p for p, k in enumerate(self.kinds) if k >= Kind.NON_NEGATIVE)

    @cached_property
    def percent(self) -> tuple[int, ...]:
        return tuple(p for p, k in enumerate(self.kinds) if k == Kind.PERCENT)

    @cached_property
    def small_counts(self) -> tuple[int, ...]:
        return tuple(p for p, k in enumerate(self.kinds) if k == Kind.SMALL_COUNT)


def fold(tag: str) -> tuple[str, str | None]:
    """Section name and, for per-CPU sections, the entity."""
    m = _PER_CPU.match(tag)
    if m:
        return m.group(1), "ALL" if m.group(2) == "_ALL" else str(int(m.group(2)))
    m = _COLUMNS_ARE_ENTITIES.match(tag)
    if m:
        return m.group(1), None
    return tag, None


def header(tag: str, columns: list[str]) -> Header:
    """columns: the header's fields after the section title (for TOP: after '+PID')."""
    columns = [c.strip() for c in columns]
    top = tag == "TOP"
    if top:
        columns = ["PID", *columns[1:]]  # the "Time" column is where data lines carry Tnnnn
    section, cpu_entity = fold(tag)
    text_names = _TEXT_COLUMNS.get(section, set())
    numeric = [i for i, c in enumerate(columns) if c not in text_names]
    text = [i for i, c in enumerate(columns) if c in text_names]
    names = [columns[i] for i in numeric]
    # a name that holds for every value is written once (see schemas/nmon_snapshot.avsc)
    every = 1 if names else 0
    if cpu_entity is not None:
        entities, metrics = [cpu_entity] * every, names
    elif _COLUMNS_ARE_ENTITIES.match(tag):
        entities, metrics = names, [section] * every
    elif section in _ENTITY_PREFIXED:
        sep = _ENTITY_PREFIXED[section]
        pairs = [n.split(sep, 1) if sep in n else ["", n] for n in names]
        entities, metrics = [p[0] for p in pairs], [p[1] for p in pairs]
    else:
        entities, metrics = [""] * every, names
    cpu_map = _CPU_COLUMNS.get(tag, {})
    cpu_fields = tuple((cpu_map[n], pos) for pos, n in enumerate(names) if n in cpu_map)
    strict = section in KNOWN or _COLUMNS_ARE_ENTITIES.match(tag) is not None
    kinds = tuple(_kind(section, tag, n) if strict else Kind.ANY for n in names)
    rest = len(columns) - 1 if columns and columns[-1] == _REST_OF_LINE.get(section) else None
    return Header(
        section,
        columns,
        numeric,
        text,
        entities,
        metrics,
        strict,
        top,
        _entity_columns(section, columns),
        cpu_fields,
        kinds,
        rest,
    )


def _entity_columns(section: str, columns: list[str]) -> tuple[str, ...]:
    """TOP: PID and Command always (a missing one is ''); UARG: PID and the program's name where
    the header has them (Linux ProgName, AIX COMM)."""
    named = _ENTITY_COLUMNS.get(section, ())
    return named if section == "TOP" else tuple(c for c in named if c in columns)


def _kind(section: str, tag: str, name: str) -> Kind:
    if _CPU_COLUMNS.get(tag, {}).get(name) in INT_CPU_FIELDS:
        return Kind.SMALL_COUNT  # cpu_samples carries it as an Avro int
    if section in _PERCENT and name.endswith("%"):
        return Kind.PERCENT
    if _COLUMNS_ARE_ENTITIES.match(tag):
        # per disk / file system ratios: Linux nmon writes -nan for a file system of size 0
        return Kind.RATIO
    if section in _NON_NEGATIVE:
        return Kind.NON_NEGATIVE
    return Kind.ANY
