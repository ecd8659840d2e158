"""`fleetperf sql`: a statement's own trailing FORMAT clause is honoured (the CLI used to append its
own and the engine refused two), and rows print in the formats analysts expect."""

from __future__ import annotations

from fleetperf.cli.commands.sql import render, split_format


def test_a_trailing_format_clause_is_taken_off_and_remembered() -> None:
    assert split_format("SELECT 1 AS x FORMAT Vertical") == ("SELECT 1 AS x", "vertical")
    assert split_format("select 1 format JSONEachRow;\n") == ("select 1", "jsoneachrow")
    assert split_format("SELECT 'FORMAT Vertical' AS s") == ("SELECT 'FORMAT Vertical' AS s", None)
    assert split_format("SELECT 1") == ("SELECT 1", None)


def test_rows_render_as_vertical_csv_json_tsv() -> None:
    columns, rows = ["host", "steal"], [["lnx1", 12.5], ["lnx2", None]]
    assert render(columns, rows, "vertical") == "Row 1:\n host: lnx1\nsteal: 12.5\n\nRow 2:\n host: lnx2\nsteal: \n"
    assert render(columns, rows, "csv") == "host,steal\nlnx1,12.5\nlnx2,\n"
    assert render(columns, rows, "json") == '{"host": "lnx1", "steal": 12.5}\n{"host": "lnx2", "steal": null}\n'
    assert render(columns, rows, "tsv") == "host\tsteal\nlnx1\t12.5\nlnx2\t\n"
    assert render(columns, rows, "pretty") == "host  steal\nlnx1  12.5\nlnx2\n"
