"""Performance Toolkit report layouts, described once as data (the reader is driven by these tables).

Each report names the words its header must carry (`key`: all on one line, this is how a table is
found, whichever of screen, batch listing or copy it comes from) and its columns in print order.
A column gives the header words it sits under, the token shape its cells have, and what it costs
when a row does not show it: copies of reports lose blank cells, and the aligner (align.py) picks
the cheapest reading of a row and leaves a cell empty when two readings tie.

Sources: z/VM Performance Toolkit report figures and field tables reproduced in seed 004
(FCX112 L881-926 and L2576-2600, FCX162 L3879-3907, FCX225 L4619-4637, FCX126 L4141-4256).
Adding a report or a level's variant is a new entry here, not new code (plus its record mapping in
records.py if it feeds a new entity).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

# The aligner never lets a required column go missing.
REQUIRED = -1


# A cell that shows a value is missing ("...", "---", ","): it fits any column but "never"'s.
MISSING = r"[.,\-]+"


@dataclass(frozen=True)
class Shape:
    name: str
    pattern: re.Pattern[str]
    convert: Callable[[str], Any]
    # what a non-blank cell on such a column may be: a value of the shape or a missing marker, in
    # one match (align.py tries it on every cell of every row)
    accepts: re.Pattern[str]


def _shape(name: str, regex: str, convert: Callable[[str], Any] = str) -> Shape:
    accepts = r"(?!)" if name == "never" else rf"(?:{MISSING}|{regex})\Z"
    return Shape(name, re.compile(rf"(?:{regex})\Z", re.ASCII), convert, re.compile(accepts, re.ASCII))


def _share(text: str) -> tuple[float, bool]:
    # "3.02A" is an absolute share (percent of the system), "100" a relative one.
    return (float(text[:-1]), True) if text.endswith("A") else (float(text), False)


def _weight(text: str) -> tuple[int | None, bool]:
    return (None, True) if text == "DED" else (int(text), False)


NUMBER = _shape("number", r"\d+\.?\d*|\.\d+", float)
INTEGER = _shape("integer", r"\d+", int)
USERID = _shape("userid", r"(?=[A-Z0-9$#@_-]*[A-Z$#@])[A-Z0-9$#@_-]{1,8}|>>Mean>>")
TIME = _shape("time", r"\d\d:\d\d:\d\d|>>Mean>>")
STATUS = _shape("status", r"[A-Z-]{2,4},[A-Z0-9-]{2,4},[A-Z-]{2,5}")
SHARE = _shape("share", r"(?:\d+\.?\d*|\.\d+)A?", _share)
PARTITION = _shape("partition", r"(?=[A-Z0-9$#@]*[A-Z])[A-Z0-9$#@]{1,8}")
UPID = _shape("upid", r"[0-9A-F]{2}")
WEIGHT = _shape("weight", r"\d+|DED", _weight)
YESNO = _shape("yes/no", r"YES|NO", lambda t: t == "YES")
CPU_TYPE = _shape("cpu type", r"CP|IFL|ICF|ZIIP|ZAAP|IIP|AAP|MIX")
NEVER = _shape("never", r"(?!)")


@dataclass(frozen=True)
class Column:
    field: str
    header: tuple[str, ...]  # header words; "a|b" accepts either spelling
    shape: Shape
    skip: int = 2  # cost of a row not showing this column; REQUIRED: never missing

    @property
    def required(self) -> bool:
        return self.skip == REQUIRED


def absent(column: Column) -> Column:
    """The column as a continuation row shows it: always blank."""
    return replace(column, shape=NEVER, skip=0)


@dataclass(frozen=True)
class Layout:
    fcx: str
    name: str
    title: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    # a continuation row (per logical CPU of the partition above it) has these leading columns blank
    continuation_blank: int = 0
    # ... and always show these
    continuation_required: tuple[str, ...] = ()

    def row_variants(self) -> list[tuple[str, tuple[Column, ...]]]:
        variants = [("row", self.columns)]
        if self.continuation_blank:
            blank = tuple(absent(c) for c in self.columns[: self.continuation_blank])
            rest = tuple(
                replace(c, skip=REQUIRED) if c.field in self.continuation_required else c
                for c in self.columns[self.continuation_blank :]
            )
            variants.append(("continuation", blank + rest))
        return variants


_GUEST_CPU = (
    # always printed, first after the key: the last cell to go missing
    Column("cpu_pct", ("%CPU",), NUMBER, 3),
    Column("tcpu_s", ("TCPU",), NUMBER, REQUIRED),
    Column("vcpu_s", ("VCPU",), NUMBER, REQUIRED),
    # blank when VCPU is zero, so it is the first cell a copy loses
    Column("tv_ratio", ("Ratio",), NUMBER, 1),
    Column("virtual_io_rate", ("Total",), NUMBER),
    Column("dasd_io_rate", ("DASD",), NUMBER),
    Column("avoided_io_rate", ("Avoid",), NUMBER),
    Column("diag98_io_rate", ("Diag98",), NUMBER),
    Column("ur_io_rate", ("UR",), NUMBER),
    Column("paging_rate", ("Pg/s",), NUMBER),
    Column("user_status", ("User", "Status"), STATUS, REQUIRED),
)

FCX112 = Layout(
    fcx="FCX112",
    name="USER",
    title="General User Resource Utilization",
    key=("Userid", "%CPU", "TCPU", "VCPU"),
    columns=(
        Column("userid", ("Userid",), USERID, REQUIRED),
        *_GUEST_CPU,
        Column("logged_min", ("Logged",), NUMBER),
        Column("active_min", ("Active",), NUMBER),
        Column("spool_pages", ("Pages",), NUMBER),
        Column("spool_page_rate", ("SPg/s",), NUMBER),
        Column("mdc_insert_rate", ("MDC/s",), NUMBER),
        Column("share", ("Share",), SHARE),
    ),
)

FCX162 = Layout(
    fcx="FCX162",
    name="USERLOG",
    title="Resource Usage Log for User",
    key=("End", "Time", "%CPU", "TCPU", "VCPU"),
    columns=(Column("end_time", ("Interval", "End", "Time"), TIME, REQUIRED), *_GUEST_CPU),
)

FCX225 = Layout(
    fcx="FCX225",
    name="SYSSUMLOG",
    title="System Performance Summary by Time",
    key=("Busy", "T/V", "Elist"),
    columns=(
        Column("end_time", ("Interval", "End", "Time"), TIME, REQUIRED),
        Column("busy_pct", ("Pct", "Busy"), NUMBER, REQUIRED),
        Column("tv_ratio", ("T/V",), NUMBER, REQUIRED),
        Column("capture_ratio", ("Cap-", "ture"), NUMBER),
        Column("online_cpus", ("On-", "line"), NUMBER),
        Column("users_logged", ("Log-", "ged"), NUMBER),
        Column("users_active", ("Activ",), NUMBER),
        Column("io_rate", ("SSCH", "+RSCH"), NUMBER),
        Column("dasd_resp_ms", ("DASD", "Resp", "msec"), NUMBER),
        Column("users_in_elist", ("Users", "in", "Elist"), NUMBER),
        Column("paging_xstore_rate", ("PGIN+", "PGOUT"), NUMBER),
        Column("paging_dasd_rate", ("Read+", "Write"), NUMBER),
        Column("spool_page_rate", ("<Spl",), NUMBER, 1),
    ),
)

FCX126 = Layout(
    fcx="FCX126",
    name="LPAR",
    title="Logical Partition Activity",
    key=("Partition", "Nr.", "Upid", "#Proc"),
    columns=(
        Column("partition", ("Partition",), PARTITION, REQUIRED),
        Column("lpar_number", ("Nr.",), INTEGER, REQUIRED),
        Column("upid", ("Upid",), UPID, REQUIRED),
        Column("proc_count", ("#Proc",), INTEGER, REQUIRED),
        Column("weight", ("Weight",), WEIGHT),
        Column("wait_completion", ("Wait-C",), YESNO, 1),
        Column("capped", ("Cap",), YESNO, 1),
        Column("load_pct", ("%Load",), NUMBER),
        # every partition with processors prints its first CPU on its own row
        Column("cpu", ("CPU",), INTEGER, 3),
        Column("busy_pct", ("%Busy",), NUMBER),
        Column("ovhd_pct", ("%Ovhd",), NUMBER),
        # only the partition z/VM itself runs in has these three
        Column("susp_pct", ("%Susp",), NUMBER, 1),
        Column("vmld_pct", ("%VMld|%Vml|%Vmlid",), NUMBER, 1),
        Column("logld_pct", ("%Logld",), NUMBER, 1),
        Column("cpu_type", ("Type",), CPU_TYPE),
    ),
    continuation_blank=4,
    continuation_required=("weight", "cpu", "busy_pct"),
)

LAYOUTS: tuple[Layout, ...] = (FCX112, FCX162, FCX225, FCX126)
BY_FCX = {layout.fcx: layout for layout in LAYOUTS}
