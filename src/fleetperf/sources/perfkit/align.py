"""Reading one report row against its columns, whatever copy of the report it comes from.

Saved screens keep every cell in place, copies with tabs keep blank cells as empty fields, and
copies with collapsed spaces lose blank cells altogether. So a row is a sequence of tokens (values,
missing markers such as "..." / "---", and blanks where a tab shows one) that must be placed on the
columns in order, each value on a column whose shape it fits. Among the placements of least cost
(the summed cost of the columns left out before the last token) a token that lands on the same column in all of them is
read; a token that could sit on two columns is not guessed: those columns stay empty and are
reported as ambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fleetperf.sources.perfkit.layouts import MISSING, Column

BLANK = ""
_MISSING = re.compile(rf"{MISSING}\Z")
_INF = 1 << 30


@dataclass
class Reading:
    values: dict[str, Any]
    ambiguous: list[str] = field(default_factory=list)
    # cells that fit their column's shape but do not convert (a 5,000-digit integer): left empty
    unreadable: list[str] = field(default_factory=list)


def tokens_of(line: str) -> list[str]:
    """Cells of a line: tab-separated fields keep blanks (as BLANK), spaces separate values."""
    line = line.rstrip()
    if "\t" not in line:
        return line.split()
    out: list[str] = []
    for cell in line.split("\t"):
        words = cell.split()
        out.extend(words if words else [BLANK])
    return out


def _fits(token: str, column: Column) -> bool:
    if token == BLANK:
        return not column.required
    return column.shape.accepts.match(token) is not None  # a missing marker or the shape ("never": nothing)


def _trailing(cost: int) -> int:
    # blank cells at the end of a line vanish in every copy: leaving them out costs nothing
    return _INF if cost >= _INF else 0


def align(tokens: list[str], columns: tuple[Column, ...]) -> Reading | None:
    """The row's values by field, or None when the tokens cannot be placed on these columns."""
    n, m = len(tokens), len(columns)
    if n > m:
        return None
    # Token i can only sit on columns i .. i + slack (the tokens before it need i columns, those
    # after it n - i - 1): outside that band a placement's cost is _INF one way or the other, so
    # only the band's shapes are tried and its costs computed. A row with a token for every column
    # (every row of a saved screen) has one placement, the diagonal, at no cost. Trying every
    # column for every token (2.5 M shape matches) made `parse perfkit` of 1.3 MB of FCX112/FCX225
    # reports (75 days of a simulated z/VM system) take 5.9 CPU-s; now 2.0 (medians of 5). A full
    # row (every row of that simulated system) is checked token by token, stopping at the first
    # misfit, and read by _diagonal, each cell in one regex match (Shape.accepts): `fleetperf ingest`
    # of those reports 1.93 -> 1.78 CPU-s (bench/collectors.py --runs 5 --against 060f1ad).
    slack = m - n
    if slack == 0:  # one placement: each token on its column, checked in order, the first misfit ends it
        for t, c in zip(tokens, columns, strict=True):
            if not _fits(t, c):
                return None
        return _diagonal(tokens, columns)
    # fits[i][k]: tokens[i] fits columns[i + k]
    fits = [[_fits(t, columns[i + k]) for k in range(slack + 1)] for i, t in enumerate(tokens)]
    skip = [_INF if c.required else c.skip for c in columns]
    # forward[i][j]: least cost placing tokens[:i] on columns[:j]; backward: tokens[i:] on columns[j:]
    forward = [[_INF] * (m + 1) for _ in range(n + 1)]
    forward[0][0] = 0
    for i in range(n + 1):
        for j in range(i, i + slack + 1):
            here = forward[i][j]
            if here >= _INF:
                continue
            if j < m:
                forward[i][j + 1] = min(forward[i][j + 1], here + (_trailing(skip[j]) if i == n else skip[j]))
                if i < n and fits[i][j - i]:
                    forward[i + 1][j + 1] = min(forward[i + 1][j + 1], here)
    best = forward[n][m]
    if best >= _INF:
        return None
    backward = [[_INF] * (m + 1) for _ in range(n + 1)]
    backward[n][m] = 0
    for i in range(n, -1, -1):
        for j in range(i + slack, i - 1, -1):
            if j < m:
                backward[i][j] = min(backward[i][j], backward[i][j + 1] + (_trailing(skip[j]) if i == n else skip[j]))
                if i < n and fits[i][j - i]:
                    backward[i][j] = min(backward[i][j], backward[i + 1][j + 1])
    # the columns each token sits on in the placements of least cost
    places = [
        [j for j in range(i, i + slack + 1) if fits[i][j - i] and forward[i][j] + backward[i + 1][j + 1] == best]
        for i in range(n)
    ]
    return _reading(tokens, columns, places)


def _diagonal(tokens: list[str], columns: tuple[Column, ...]) -> Reading:
    """_reading of a row with a token for every column (each token on its own column): the same
    values, without the placements' bookkeeping (most rows of most reports are such rows)."""
    values: dict[str, Any] = {}
    unreadable: list[str] = []
    for token, column in zip(tokens, columns, strict=True):
        if token == BLANK or _MISSING.match(token):
            values.setdefault(column.field, None)
            continue
        try:
            values[column.field] = column.shape.convert(token)
        except (ValueError, OverflowError):
            values.setdefault(column.field, None)
            unreadable.append(column.field)
    return Reading(values, [], unreadable)


def _reading(tokens: list[str], columns: tuple[Column, ...], places: list[list[int]]) -> Reading:
    """Each token read on its column; a token with more than one place is not guessed."""
    values: dict[str, Any] = {c.field: None for c in columns}
    unsure: set[str] = set()
    unreadable: list[str] = []
    for token, where in zip(tokens, places, strict=True):
        if len(where) > 1:
            unsure.update(columns[j].field for j in where)
            continue
        column = columns[where[0]]
        if token != BLANK and not _MISSING.match(token):
            try:
                values[column.field] = column.shape.convert(token)
            except (ValueError, OverflowError):
                unreadable.append(column.field)
    for name in unsure:
        values[name] = None
    return Reading(values, sorted(unsure), unreadable)
