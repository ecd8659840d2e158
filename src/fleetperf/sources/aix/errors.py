"""The one error type of the AIX text parsers: names the line that could not be read."""

from __future__ import annotations


class CommandOutputError(ValueError):
    def __init__(self, line_no: int, message: str, line: str) -> None:
        super().__init__(f"line {line_no}: {message}: {line.strip()[:120]!r}")
        self.line_no = line_no
