"""Independent reference computation for the end-to-end test: reads nmon text with the csv module
(not the project's parser) and computes the 1-minute window metrics the pipeline must produce."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path


def snapshots(path: Path) -> tuple[str, float, dict[str, dict[str, float]]]:
    """host id, interval, {tag: {"ts": epoch seconds, "steal": .., "idle": .., "cpus": .., "physc": ..,
    "entitled": .., "pool": .., "pool_idle": ..}}"""
    meta: dict[str, list[str]] = {}
    headers: dict[str, list[str]] = {}
    snaps: dict[str, dict[str, float]] = defaultdict(dict)
    with open(path, newline="") as handle:
        for row in csv.reader(handle):
            if not row:
                continue
            tag = row[0]
            if tag == "AAA":
                meta[row[1]] = row[2:]
            elif tag == "ZZZZ":
                ts = datetime.strptime(f"{row[3]} {row[2]}", "%d-%b-%Y %H:%M:%S").replace(tzinfo=UTC)
                snaps[row[1]]["ts"] = ts.timestamp()
            elif tag in ("CPU_ALL", "LPAR"):
                if not row[1].startswith("T"):
                    headers[tag] = [h.strip() for h in row[2:]]
                    continue
                values = dict(zip(headers[tag], row[2:], strict=False))
                if tag == "CPU_ALL" and values.get("Steal%", "") != "":
                    snaps[row[1]]["steal"] = float(values["Steal%"])
                if tag == "CPU_ALL" and values.get("Idle%", "") != "":
                    snaps[row[1]]["idle"] = float(values["Idle%"])
                # logical CPUs: "CPUs" on Linux, "PhysicalCPUs" on AIX
                cpus = values.get("CPUs") or values.get("PhysicalCPUs") or ""
                if tag == "CPU_ALL" and cpus != "":
                    snaps[row[1]]["cpus"] = int(float(cpus))
                if tag == "LPAR":
                    snaps[row[1]]["physc"] = float(values["PhysicalCPU"])
                    snaps[row[1]]["entitled"] = float(values["entitled"])
                    snaps[row[1]]["pool"] = float(values["poolCPUs"])
                    snaps[row[1]]["pool_idle"] = float(values["PoolIdle"])
    host = meta["host"][0]
    if "SerialNumber" in meta and "LPARNumberName" in meta:
        host = f"{meta['SerialNumber'][0]}-{meta['LPARNumberName'][0]}"
    return host, float(meta["interval"][0]), dict(snaps)


def window_metrics(path: Path, window_s: int = 60) -> dict[tuple[str, str, int], tuple[float, int]]:
    """{(host_id, metric, window_start_epoch_s): (value, samples)} with ratio-of-sums semantics."""
    host, dt, snaps = snapshots(path)
    sums: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in snaps.values():
        start = int(s["ts"] // window_s * window_s)
        acc = sums[start]
        acc["n"] += 1
        if "steal" in s:
            acc["steal_t"] += dt
            acc["steal"] += s["steal"] * dt
        # utilisation family: busy = 100 - idle; cores = AIX physc, else busy x logical CPUs / 100
        busy = 100.0 - s["idle"] if "idle" in s and 0 <= s["idle"] <= 100 else None
        if busy is not None:
            acc["busy_t"] += dt
            acc["busy"] += busy * dt
        cores = s["physc"] if "physc" in s else None
        if cores is None and busy is not None and s.get("cpus", 0) > 0:
            cores = busy * s["cpus"] / 100.0
        if cores is not None:
            acc["cores_t"] += dt
            acc["cores"] += cores * dt
        if "physc" in s:
            acc["lpar_t"] += dt
            acc["physc"] += s["physc"] * dt
            acc["ent"] += s["entitled"] * dt
            acc["peak"] = max(acc["peak"], s["physc"])
            if s["pool_idle"] > 0:  # PoolIdle 0: the LPAR cannot see its pool
                acc["pool_t"] += dt
                acc["pool_used"] += (s["pool"] - s["pool_idle"]) * dt
                acc["pool"] += s["pool"] * dt
    out = {}
    for start, acc in sums.items():
        n = int(acc["n"])
        if acc["steal_t"]:
            out[(host, "steal_pct", start)] = (acc["steal"] / acc["steal_t"], n)
        if acc["busy_t"]:
            out[(host, "busy_pct", start)] = (acc["busy"] / acc["busy_t"], n)
        if acc["cores_t"]:
            out[(host, "cpu_cores", start)] = (acc["cores"] / acc["cores_t"], n)
        if acc["lpar_t"]:
            out[(host, "physc", start)] = (acc["physc"] / acc["lpar_t"], n)
            out[(host, "entc_pct", start)] = (100 * acc["physc"] / acc["ent"], n)
            # VPs needed = roundup(peak physc) + vpm_xvcpus (0), at least one (seed 000 L7364)
            out[(host, "vps_needed", start)] = (float(max(math.ceil(acc["peak"] - 1e-9), 1)), n)
        if acc["pool_t"]:
            out[(host, "pool_used", start)] = (acc["pool_used"] / acc["pool_t"], n)
            out[(host, "pool_used_pct", start)] = (100 * acc["pool_used"] / acc["pool"], n)
    return out
