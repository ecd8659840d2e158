"""LACP hash skew of one aggregation and direction (DOMAIN.md; seed 000 L5947, L6069-6177).

Totals are recomputed from the member ports, never taken from printed totals."""

from __future__ import annotations

import math


def hash_skew(per_port: dict[str, int]) -> dict[str, object]:
    """shares per port (%), max share x N (1.0 = perfectly even), coefficient of variation,
    active ports (ports that carried traffic)."""
    total = sum(per_port.values())
    n = len(per_port)
    if n == 0 or total == 0:
        return {"shares": {}, "max_share_x_n": None, "cv": None, "active_ports": 0, "total": total}
    shares = {port: 100.0 * count / total for port, count in per_port.items()}
    mean = total / n
    std = math.sqrt(sum((c - mean) ** 2 for c in per_port.values()) / n)
    return {
        "shares": shares,
        "max_share_x_n": max(per_port.values()) / total * n,
        "cv": std / mean,
        "active_ports": sum(1 for c in per_port.values() if c > 0),
        "total": total,
    }


def lacp_in_sync(actor: dict[str, str], partner: dict[str, str]) -> bool:
    """Anything but IN_SYNC on both ends is a failure (seed 000 L12817)."""
    return actor.get("Synchronization") == "IN_SYNC" and partner.get("Synchronization") == "IN_SYNC"
