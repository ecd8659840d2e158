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

from fleetperf.sources.perfkit.layouts import Column

BLANK = ""
_MISSING = re.compile(r"[.,\-]+\Z")
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
    if column.shape.name == "never":
        return False
    return bool(_MISSING.match(token)) or bool(column.shape.pattern.match(token))


def _trailing(cost: int) -> int:
    # blank cells at the end of a line vanish in every copy: leaving them out costs nothing
    return _INF if cost >= _INF else 0


def align(tokens: list[str], columns: tuple[Column, ...]) -> Reading | None:
    """The row's values by field, or None when the tokens cannot be placed on these columns."""
    n, m = len(tokens), len(columns)
    if n > m:
        return None
    skip = [_INF if c.required else c.skip for c in columns]
    fits = [[_fits(t, c) for c in columns] for t in tokens]
    # forward[i][j]: least cost placing tokens[:i] on columns[:j]; backward: tokens[i:] on columns[j:]
    forward = [[_INF] * (m + 1) for _ in range(n + 1)]
    forward[0][0] = 0
    for i in range(n + 1):
        for j in range(m + 1):
            here = forward[i][j]
            if here >= _INF:
                continue
            if j < m:
                forward[i][j + 1] = min(forward[i][j + 1], here + (_trailing(skip[j]) if i == n else skip[j]))
                if i < n and fits[i][j]:
                    forward[i + 1][j + 1] = min(forward[i + 1][j + 1], here)
    best = forward[n][m]
    if best >= _INF:
        return None
    backward = [[_INF] * (m + 1) for _ in range(n + 1)]
    backward[n][m] = 0
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if j < m:
                backward[i][j] = min(backward[i][j], backward[i][j + 1] + (_trailing(skip[j]) if i == n else skip[j]))
                if i < n and fits[i][j]:
                    backward[i][j] = min(backward[i][j], backward[i + 1][j + 1])
    values: dict[str, Any] = {c.field: None for c in columns}
    unsure: set[str] = set()
    unreadable: list[str] = []
    for i, token in enumerate(tokens):
        places = [j for j in range(m) if fits[i][j] and forward[i][j] + backward[i + 1][j + 1] == best]
        if len(places) > 1:
            unsure.update(columns[j].field for j in places)
            continue
        column = columns[places[0]]
        if token != BLANK and not _MISSING.match(token):
            try:
                values[column.field] = column.shape.convert(token)
            except (ValueError, OverflowError):
                unreadable.append(column.field)
    for name in unsure:
        values[name] = None
    return Reading(values, sorted(unsure), unreadable)
