"""The SQL cookbook's queries, read from docs/sql-cookbook.md (the one place they are written)."""

from __future__ import annotations

import re

from fleetperf.config import REPO_ROOT

COOKBOOK = REPO_ROOT / "docs" / "sql-cookbook.md"
_ENTRY = re.compile(r"^### (\d+)\. ([^\n]+)\n.*?```sql\n(.*?)```", flags=re.M | re.S)


def queries() -> dict[int, tuple[str, str]]:
    """number -> (title, sql), in the order of the document."""
    return {int(n): (title.strip(), sql) for n, title, sql in _ENTRY.findall(COOKBOOK.read_text())}
