"""POWER translation-miss metrics from PMU counters (seed 000 L8254-8332; DOMAIN.md golden cases).

All rates are per completed instruction, in percent; CPI = cycles / instructions; MIPS =
instructions / counting duration / 1e6. The Flink job computes the same over windows (issue #7)."""

from __future__ import annotations


def slb_metrics(counters: dict[str, int], duration_s: float | None) -> dict[str, float]:
    inst = counters.get("PM_RUN_INST_CMPL")
    if not inst:
        return {}
    out: dict[str, float] = {}
    dslb, islb = counters.get("PM_DSLB_MISS"), counters.get("PM_ISLB_MISS")
    if dslb is not None:
        out["dslb_miss_rate"] = 100.0 * dslb / inst
    if islb is not None:
        out["islb_miss_rate"] = 100.0 * islb / inst
    if dslb is not None and islb is not None:
        out["slb_miss_rate"] = 100.0 * (dslb + islb) / inst
    if "PM_IERAT_MISS" in counters:
        out["ierat_miss_rate"] = 100.0 * counters["PM_IERAT_MISS"] / inst
    if "PM_RUN_CYC" in counters:
        out["cpi"] = counters["PM_RUN_CYC"] / inst
    if duration_s:
        out["mips"] = inst / duration_s / 1e6
    return out
