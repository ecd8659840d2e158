"""The aligner (perfkit/align.py) against the rule it implements, by brute force: every placement of
a row's tokens on the columns (in order, each token on a column its shape fits) is enumerated, the
least-cost ones kept (the cost of the columns left out, nothing for blanks after the last token),
and a token is read where all of them put it, left empty where they disagree. Random rows, seeded,
on columns of the report layouts' own shapes; the banded dynamic programme must agree on every one.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from fleetperf.sources.perfkit.align import BLANK, _fits, align
from fleetperf.sources.perfkit.layouts import FCX112, INTEGER, NUMBER, REQUIRED, SHARE, STATUS, USERID, Column

_INF = 1 << 30


def brute_force(tokens: list[str], columns: tuple[Column, ...]) -> tuple[dict[str, Any], list[str]] | None:
    n, m = len(tokens), len(columns)
    best, placements = _INF, []
    for chosen in itertools.combinations(range(m), n):
        if not all(_fits(t, columns[j]) for t, j in zip(tokens, chosen, strict=True)):
            continue
        last = chosen[-1] if chosen else -1
        left_out = [j for j in range(m) if j not in chosen]
        if any(columns[j].required for j in left_out):
            continue
        cost = sum(columns[j].skip for j in left_out if j < last)
        if cost < best:
            best, placements = cost, [chosen]
        elif cost == best:
            placements.append(chosen)
    if not placements:
        return None
    values: dict[str, Any] = {c.field: None for c in columns}
    unsure: set[str] = set()
    for i, token in enumerate(tokens):
        where = {p[i] for p in placements}
        if len(where) > 1:
            unsure.update(columns[j].field for j in where)
            continue
        column = columns[where.pop()]
        if token != BLANK and token.strip(".,-"):
            values[column.field] = column.shape.convert(token)
    for name in unsure:
        values[name] = None
    return values, sorted(unsure)


COLUMNS = (
    Column("user", ("Userid",), USERID, REQUIRED),
    Column("a", ("A",), NUMBER),
    Column("b", ("B",), NUMBER, 1),
    Column("c", ("C",), INTEGER, 3),
    Column("status", ("Status",), STATUS),
    Column("d", ("D",), INTEGER),
    Column("share", ("Share",), SHARE, 1),
    Column("e", ("E",), NUMBER),
)
POOL = ["LINUX01", "1.5", ".25", "7", "42", "ESA,---,DORM", "3.02A", "100", "...", "-", BLANK, "X?", "12:00:00"]


# numbers of equal cost side by side before a column that must be there: a row missing one of them
# cannot say which
NUMBERS = (
    Column("user", ("Userid",), USERID, REQUIRED),
    *(Column(f"n{k}", (f"N{k}",), NUMBER) for k in range(5)),
    Column("status", ("Status",), STATUS, REQUIRED),
)


def random_row(rng: random.Random, columns: tuple[Column, ...]) -> list[str]:
    n = rng.randint(0, len(columns) - 1)
    # the first (required) column mostly kept; mostly a token of the column's own kind
    kept = sorted(({0} if rng.random() < 0.9 else set()) | set(rng.sample(range(1, len(columns)), n)))
    return [rng.choice(POOL) if rng.random() < 0.1 else _typical(columns[j], rng) for j in kept]


def _typical(column: Column, rng: random.Random) -> str:
    return {
        "userid": rng.choice(["LINUX01", "TCPIP", ">>Mean>>"]),
        "number": rng.choice(["1.5", ".25", "7", "0"]),
        "integer": rng.choice(["7", "42", "0"]),
        "status": "ESA,---,DORM",
        "share": rng.choice(["100", "3.02A"]),
    }.get(column.shape.name, "...")


@pytest.mark.parametrize("seed", range(4))
def test_the_aligner_reads_every_row_as_the_enumeration_of_its_placements(seed: int) -> None:
    rng = random.Random(seed)
    checked = {"read": 0, "none": 0, "ambiguous": 0}
    for columns in (COLUMNS, NUMBERS, FCX112.columns[:9]):
        for _ in range(400):
            tokens = random_row(rng, columns)
            got, want = align(tokens, columns), brute_force(tokens, columns)
            if want is None:
                assert got is None, tokens
                checked["none"] += 1
                continue
            assert got is not None, tokens
            assert (got.values, got.ambiguous) == want, tokens
            checked["ambiguous" if want[1] else "read"] += 1
    # the random rows reach every outcome
    assert min(checked.values()) > 20, checked


def test_a_full_row_is_its_diagonal_and_one_misfit_rejects_it() -> None:
    tokens = ["LINUX01", "1.5", ".25", "7", "ESA,---,DORM", "42", "3.02A", "9"]
    reading = align(tokens, COLUMNS)
    assert reading is not None and reading.ambiguous == []
    assert reading.values == {
        "user": "LINUX01",
        "a": 1.5,
        "b": 0.25,
        "c": 7,
        "status": "ESA,---,DORM",
        "d": 42,
        "share": (3.02, True),
        "e": 9.0,
    }
    assert align([*tokens[:3], "x7", *tokens[4:]], COLUMNS) is None


@pytest.mark.parametrize("seed", range(3))
def test_full_rows_read_on_their_diagonal_as_the_enumeration_reads_them(seed: int) -> None:
    """A row with a token for every column takes align's short path (_diagonal): every such row,
    blanks, missing markers and misfits included, reads as the enumeration of placements reads it."""
    rng = random.Random(seed)
    outcomes = {"read": 0, "none": 0}
    for columns in (COLUMNS, NUMBERS, FCX112.columns):
        for _ in range(300):
            tokens = [rng.choice(POOL) if rng.random() < 0.08 else _typical(c, rng) for c in columns]
            got, want = align(tokens, columns), brute_force(tokens, columns)
            if want is None:
                assert got is None, tokens
                outcomes["none"] += 1
                continue
            assert got is not None and (got.values, got.ambiguous) == want, tokens
            assert list(got.values) == [c.field for c in columns]  # every field, in the columns' order
            outcomes["read"] += 1
    assert min(outcomes.values()) > 20, outcomes


def test_a_cell_fits_a_column_as_the_shapes_say() -> None:
    """_fits against its rule restated: a blank fits a column that may be left out, a missing
    marker ("...", "-", ",") any column but one that is never shown, anything else its shape."""
    import re

    from fleetperf.sources.perfkit import layouts

    shapes = [v for v in vars(layouts).values() if isinstance(v, layouts.Shape)]
    assert len(shapes) >= 12
    cells = [*POOL, "", ".", "-.-", ",", "1,5", "1.", "007", "DED", "YES", "IFL", "0A", "A1", "1e5", "١٢", "12:00"]
    checked = 0
    for shape in shapes:
        for required in (True, False):
            column = Column("f", ("F",), shape, REQUIRED if required else 2)
            for cell in cells:
                if cell == BLANK:
                    want = not required
                elif shape.name == "never":
                    want = False
                else:
                    want = re.fullmatch(r"[.,\-]+", cell) is not None or shape.pattern.match(cell) is not None
                assert _fits(cell, column) == want, (shape.name, required, cell)
                checked += 1
    assert checked == len(shapes) * 2 * len(cells)
