"""Raw counters of two consecutive records -> the figures sar prints, computed as sar computes them.

Names are those of `sadf -j` (cpu-load-all, memory, swap-pages, paging, queue, network net-dev /
net-edev), so a value can be checked against sysstat's own output. Percentages and rates are
doubles: sar prints them with "%.2f", i.e. Python's format(x, ".2f") of the same double.
Rates use the interval between the records' uptimes (1/100 s), like sar; CPU percentages use each
CPU's own jiffies in the interval (get_per_cpu_interval), like sar.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fleetperf.sources.sysstat import layouts as lay

# Whose definitions the figures follow. sar's definitions change now and then, memused twice;
# by default each file gets those of the sysstat that wrote it (its header names the version), so a
# user comparing with `sar` on the host sees the same figures. `figures(..., sar=(12, 6))` forces one.
LATEST_SAR = (12, 7, 8)
SAR_VERSION = LATEST_SAR  # kept for callers that name "the newest sar"

# memused rules (sysstat's pr_stats.c / json_stats.c, by the release that changed them):
MEMUSED_FREE = "total-free"  # up to 11.7.3 (and every 11.6.x and older): used = total - free
MEMUSED_UNUSED = "total-free-buffers-cached-slab"  # 11.7.4 .. 12.7.7, capped at total
MEMUSED_AVAIL = "total-available"  # 12.7.8 on: used = total - available


def parse_version(text: str) -> tuple[int, ...]:
    """'12.6.1' -> (12, 6, 1); anything unreadable -> the newest sar's definitions."""
    try:
        return tuple(int(x) for x in text.split("."))
    except ValueError:
        return LATEST_SAR


def memused_rule(sar: tuple[int, ...]) -> str:
    """The memused definition of a sar version (a two-part version means its last release)."""
    full = sar if len(sar) >= 3 else (*sar, 99)
    if full >= (12, 7, 8):
        return MEMUSED_AVAIL
    if full >= (11, 7, 4):
        return MEMUSED_UNUSED
    return MEMUSED_FREE


Values = dict[str, float]
Item = tuple[str, Values]  # (item name: "all", "0", "eth0", "" for one-item activities), values


def sp_value(m: int, n: int, p: int) -> float:
    """SP_VALUE: (n - m) / p * 100 in double."""
    return float(n - m) / p * 100


def _ll_sp_value(v1: int, v2: int, itv: int) -> float:
    if v2 < v1:
        # an unsigned long counter that wrapped at 32 bits; any other decrease shows as 0
        return float((v2 - v1) & 0xFFFFFFFF) / itv * 100 if v1 <= 0xFFFFFFFF else 0.0
    return sp_value(v1, v2, itv)


# CPU counters as tuples in lay.CPU_FIELDS order (user nice sys idle iowait steal hardirq softirq guest
# guest_nice): read once per CPU and record instead of a dict lookup per use (cpu-load-all was a quarter of
# sar's arithmetic). The first eight are the jiffies sar sums for a CPU's interval.
_CU, _CN, _CS, _CID, _CIO, _CST, _CHI, _CSI, _CG, _CGN = range(10)
_NO_CPU = (0,) * 10


def _cpu_counters(s: dict) -> tuple[int, ...]:
    g = s.get
    return (g("user", 0), g("nice", 0), g("sys", 0), g("idle", 0), g("iowait", 0), g("steal", 0), g("hardirq", 0),
            g("softirq", 0), g("guest", 0), g("guest_nice", 0))  # fmt: skip


def _cpu_prev(scc: tuple, scp: tuple) -> tuple:
    # a CPU back online restarts idle and iowait from 0 while the others keep their value
    if scc[_CID] < scp[_CID] or scc[_CIO] < scp[_CIO]:
        scp = list(scp)  # type: ignore[assignment]
        for i in (_CID, _CIO):
            if scc[i] < scp[i]:
                scp[i] = 0  # type: ignore[index]
        scp = tuple(scp)
    return scp


def _cpu_interval(scc: tuple, scp: tuple) -> int:
    ishift = 0
    ucur, uprev = scc[_CU] - scc[_CG], scp[_CU] - scp[_CG]
    if ucur < uprev:
        ishift += uprev - ucur
    ncur, nprev = scc[_CN] - scc[_CGN], scp[_CN] - scp[_CGN]
    if ncur < nprev:
        ishift += nprev - ncur
    return sum(scc[:8]) - sum(scp[:8]) + ishift


def _cpu_values(c: tuple, p: tuple, dt: int) -> Values:
    if dt == 0:  # tickless CPU
        return {k: 0.0 for k in _CPU_OUT[:-1]} | {"idle": 100.0}
    ucur, uprev = c[_CU] - c[_CG], p[_CU] - p[_CG]
    ncur, nprev = c[_CN] - c[_CGN], p[_CN] - p[_CGN]
    return {
        "usr": 0.0 if ucur < uprev else _ll_sp_value(uprev, ucur, dt),
        "nice": 0.0 if ncur < nprev else _ll_sp_value(nprev, ncur, dt),
        "sys": _ll_sp_value(p[_CS], c[_CS], dt),
        "iowait": _ll_sp_value(p[_CIO], c[_CIO], dt),
        "steal": _ll_sp_value(p[_CST], c[_CST], dt),
        "irq": _ll_sp_value(p[_CHI], c[_CHI], dt),
        "soft": _ll_sp_value(p[_CSI], c[_CSI], dt),
        "guest": _ll_sp_value(p[_CG], c[_CG], dt),
        "gnice": _ll_sp_value(p[_CGN], c[_CGN], dt),
        "idle": 0.0 if c[_CID] < p[_CID] else _ll_sp_value(p[_CID], c[_CID], dt),
    }


def cpu(cur: list[dict], prev: list[dict]) -> Iterator[Item]:
    """cpu-load-all for "all" and every online CPU. As sar does, "all" is the sum of the online
    CPUs (an offline CPU, all counters 0, is left out; one back online counts from 0)."""
    per_cpu: list[tuple[str, tuple, tuple]] = []
    for i in range(1, min(len(cur), len(prev))):
        scc = _cpu_counters(cur[i])
        total = sum(scc[:8])
        if not total:
            continue
        scp = _cpu_counters(prev[i])
        if sum(scp[:8]) > total:
            scp = _NO_CPU
        per_cpu.append((str(i - 1), scc, _cpu_prev(scc, scp)))
    if per_cpu:
        all_c = tuple(map(sum, zip(*(c for _, c, _ in per_cpu), strict=True)))
        all_p = tuple(map(sum, zip(*(p for _, _, p in per_cpu), strict=True)))
        yield "all", _cpu_values(all_c, all_p, sum(_cpu_interval(c, p) for _, c, p in per_cpu))
    elif cur and prev:  # a file with "all" only
        scc = _cpu_counters(cur[0])
        scp = _cpu_prev(scc, _cpu_counters(prev[0]))
        yield "all", _cpu_values(scc, scp, _cpu_interval(scc, scp))
    for name, scc, scp in per_cpu:
        yield name, _cpu_values(scc, scp, _cpu_interval(scc, scp))


CPU_COUNTERS = lay.CPU_FIELDS
_CPU_OUT = ("usr", "nice", "sys", "iowait", "steal", "irq", "soft", "guest", "gnice", "idle")


def cpu_line(v: Values) -> dict[str, float]:
    """cpu-load-all figures as a cpu_sample's percentages, like sar -u: guest time is inside user,
    irq and softirq count as system."""
    return {
        "user_pct": v["usr"] + v["nice"] + v["guest"] + v["gnice"],
        "sys_pct": v["sys"] + v["irq"] + v["soft"],
        "wait_pct": v["iowait"],
        "idle_pct": v["idle"],
        "steal_pct": v["steal"],
    }


def memory(cur: list[dict], sar: tuple[int, ...] = SAR_VERSION) -> Iterator[Item]:
    m = cur[0]
    g = m.get
    tlm, tls = g("tlmkb", 0), g("tlskb", 0)
    # files older than MemAvailable (sysstat < 11.x) count free memory as available, as sar does
    avail = g("availablekb", g("frmkb", 0))
    rule = memused_rule(sar)
    if rule == MEMUSED_AVAIL:
        nousedmem = avail
    elif rule == MEMUSED_UNUSED:
        nousedmem = min(g("frmkb", 0) + g("bufkb", 0) + g("camkb", 0) + g("slabkb", 0), tlm)
    else:
        nousedmem = g("frmkb", 0)
    values: Values = {
        "memfree": g("frmkb", 0),
        "avail": avail,
        "memused": tlm - nousedmem,
        "memused-percent": sp_value(nousedmem, tlm, tlm) if tlm else 0.0,
        "buffers": g("bufkb", 0),
        "cached": g("camkb", 0),
        "commit": g("comkb", 0),
        "commit-percent": sp_value(0, g("comkb", 0), tlm + tls) if tlm + tls else 0.0,
        "active": g("activekb", 0),
        "inactive": g("inactkb", 0),
        "dirty": g("dirtykb", 0),
    }
    for raw, name in (("anonpgkb", "anonpg"), ("slabkb", "slab"), ("kstackkb", "kstack"), ("pgtblkb", "pgtbl"),
                      ("vmusedkb", "vmused"), ("shmemkb", "shmem")):  # fmt: skip
        if raw in m:
            values[name] = m[raw]
    used = tls - g("frskb", 0)
    values |= {
        "swpfree": g("frskb", 0),
        "swpused": used,
        "swpused-percent": sp_value(g("frskb", 0), tls, tls) if tls else 0.0,
        "swpcad": g("caskb", 0),
        "swpcad-percent": sp_value(0, g("caskb", 0), used) if used else 0.0,
    }
    yield "", values


def _rates(cur: dict, prev: dict, names: dict[str, str], itv: int, wrap32: bool = False) -> Values:
    if wrap32:  # unsigned int counters: sar's difference is taken modulo 2**32 (a counter that wrapped)
        return {out: float((cur[raw] - prev.get(raw, 0)) & 0xFFFFFFFF) / itv * 100
                for raw, out in names.items() if raw in cur}  # fmt: skip
    # sp_value inlined (the same expression, the same double): a call per counter was a tenth of the time
    return {out: float(cur[raw] - prev.get(raw, 0)) / itv * 100 for raw, out in names.items() if raw in cur}


_PCSW = {"processes": "proc", "context_switch": "cswch"}
_SWAP = {"pswpin": "pswpin", "pswpout": "pswpout"}
_PAGE = {
    "pgpgin": "pgpgin", "pgpgout": "pgpgout", "pgfault": "fault", "pgmajfault": "majflt", "pgfree": "pgfree",
    "pgscan_kswapd": "pgscank", "pgscan_direct": "pgscand", "pgsteal": "pgsteal",
}  # fmt: skip
_EDEV = {
    "rx_errors": "rxerr", "tx_errors": "txerr", "collisions": "coll", "rx_dropped": "rxdrop",
    "tx_dropped": "txdrop", "tx_carrier_errors": "txcarr", "rx_frame_errors": "rxfram",
    "rx_fifo_errors": "rxfifo", "tx_fifo_errors": "txfifo",
}  # fmt: skip


def single(names: dict[str, str], wrap32: bool = False):  # noqa: ANN201 - returns a rate function
    def rates(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
        yield "", _rates(cur[0], prev[0], names, itv, wrap32)

    return rates


def paging(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    values = _rates(cur[0], prev[0], _PAGE, itv)
    scan = values.get("pgscank", 0.0) + values.get("pgscand", 0.0)
    values["vmeff-percent"] = values.get("pgsteal", 0.0) / scan * 100 if scan else 0.0
    yield "", values


def queue(cur: list[dict]) -> Iterator[Item]:
    q = cur[0]
    values: Values = {
        "runq-sz": q.get("nr_running", 0),
        "plist-sz": q.get("nr_threads", 0),
        "ldavg-1": q.get("load_avg_1", 0) / 100,
        "ldavg-5": q.get("load_avg_5", 0) / 100,
        "ldavg-15": q.get("load_avg_15", 0) / 100,
    }
    if "procs_blocked" in q:
        values["blocked"] = q["procs_blocked"]
    yield "", values


def _by_interface(items: list[dict]) -> dict[str, dict]:
    return {it["interface"]: it for it in items if it.get("interface")}


def _previous(cur: dict, prev: dict | None, counters: tuple[str, ...]) -> dict:
    # an interface new since the last sample, or registered again (counters restarted), counts from 0
    if prev is None or any(cur.get(c, 0) < prev.get(c, 0) for c in counters):
        return {}
    return prev


def net_dev(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    before = _by_interface(prev)
    for name, c in _by_interface(cur).items():
        p = _previous(c, before.get(name), ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes"))
        rx = sp_value(p.get("rx_bytes", 0), c["rx_bytes"], itv)
        tx = sp_value(p.get("tx_bytes", 0), c["tx_bytes"], itv)
        values: Values = {
            "rxpck": sp_value(p.get("rx_packets", 0), c["rx_packets"], itv),
            "txpck": sp_value(p.get("tx_packets", 0), c["tx_packets"], itv),
            "rxkB": rx / 1024,
            "txkB": tx / 1024,
            "rxcmp": sp_value(p.get("rx_compressed", 0), c["rx_compressed"], itv),
            "txcmp": sp_value(p.get("tx_compressed", 0), c["tx_compressed"], itv),
            "rxmcst": sp_value(p.get("multicast", 0), c["multicast"], itv),
            "rx_bytes": float(c["rx_bytes"]),
            "tx_bytes": float(c["tx_bytes"]),
            "rx_packets": float(c["rx_packets"]),
            "tx_packets": float(c["tx_packets"]),
        }
        speed = c.get("speed", 0)
        if "speed" in c:
            values["speed"] = float(speed)
            bps = speed * 1000000
            if not speed:
                values["ifutil-percent"] = 0.0
            elif c.get("duplex") == 2:  # full duplex
                values["ifutil-percent"] = max(rx, tx) * 800 / bps
            else:
                values["ifutil-percent"] = (rx + tx) * 800 / bps
        yield name, values


def net_edev(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    before = _by_interface(prev)
    for name, c in _by_interface(cur).items():
        p = _previous(c, before.get(name), tuple(_EDEV))
        yield name, _rates(c, p, _EDEV, itv)


# sysstat.ioconf's fixed majors of SCSI disks: 16 disks per major, 16 minors (disk + 15 partitions) each
_SD_MAJORS = {8: 0, **{65 + i: 1 + i for i in range(7)}, **{128 + i: 8 + i for i in range(8)}}


def _letters(n: int) -> str:
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def disk_name(major: int, minor: int) -> str:
    """What sar prints for a block device (its ioconf names; others as devM-N, as sar without -p)."""
    group = _SD_MAJORS.get(major)
    if group is not None:
        part = minor % 16
        return f"sd{_letters(group * 16 + minor // 16)}{part or ''}"
    return f"dev{major}-{minor}"


def disk(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    before = {(d["major"], d["minor"]): d for d in prev if d.get("major")}
    for c in cur:
        if not c.get("major"):
            continue  # a preallocated, unused entry
        p = before.get((c["major"], c["minor"]))
        if p is None or c.get("nr_ios", 0) < p.get("nr_ios", 0):
            p = {}  # a device new since the last sample, or registered again: counts from 0
        g, h = c.get, p.get
        ios = g("nr_ios", 0) - h("nr_ios", 0)
        sectors = sum(g(f, 0) - h(f, 0) for f in ("rd_sect", "wr_sect", "dc_sect"))
        ticks = sum(g(f, 0) - h(f, 0) for f in ("rd_ticks", "wr_ticks", "dc_ticks"))
        yield (
            disk_name(c["major"], c["minor"]),
            {
                "tps": sp_value(h("nr_ios", 0), g("nr_ios", 0), itv),
                "rkB": sp_value(h("rd_sect", 0), g("rd_sect", 0), itv) / 2,
                "wkB": sp_value(h("wr_sect", 0), g("wr_sect", 0), itv) / 2,
                "dkB": sp_value(h("dc_sect", 0), g("dc_sect", 0), itv) / 2,
                "areq-sz": sectors / ios / 2 if ios else 0.0,
                "aqu-sz": sp_value(h("rq_ticks", 0), g("rq_ticks", 0), itv) / 1000,
                "await": ticks / ios if ios else 0.0,
                "util-percent": sp_value(h("tot_ticks", 0), g("tot_ticks", 0), itv) / 10,
            },
        )


def level(names: dict[str, str]):  # noqa: ANN201 - returns a level function
    """A single-item activity whose figures are the counters as they are (raw name -> sadf -j name)."""

    def levels(cur: list[dict]) -> Iterator[Item]:
        c = cur[0]
        yield "", {out: c[raw] for raw, out in names.items() if raw in c}

    return levels


def _snmp(fields: tuple[str, ...], names: str, wrap32: bool = False):  # noqa: ANN202
    """Counters printed as rates in struct order (json_stats.c): sadf -j names, space-separated."""
    return single(dict(zip(fields, names.split(), strict=True)), wrap32)


def interrupts(cur: list[dict], prev: list[dict], itv: int, nr2: int) -> Iterator[Item]:
    """Per interrupt (item: its name, "sum" first; the names are those of the "all" block) the rate on
    "all" and on each CPU, as sar: the items are CPU-major (all, CPU0, ...) x nr2 interrupts; a CPU whose
    "sum" was 0 before is left out, one whose "sum" is 0 now (offline) too."""
    if nr2 < 1 or not cur or len(cur) % nr2 or len(prev) != len(cur):
        return
    names = [it.get("irq_name", "") for it in cur[:nr2]]
    now_nr = [it.get("irq_nr", 0) for it in cur]  # the counts alone, once: 2-3 times fewer lookups
    before_nr = [it.get("irq_nr", 0) for it in prev]
    shown = [c * nr2 for c in range(1, len(cur) // nr2) if before_nr[c * nr2] and now_nr[c * nr2]]
    labels = [(f"CPU{base // nr2 - 1}", base) for base in shown]
    show_all = bool(before_nr[0] and now_nr[0])
    if not show_all and not labels:
        return
    # one column of rates per CPU shown, each a list comprehension (the per-value work in C), then one dict
    # per interrupt across the columns
    keys, columns = [], []
    if show_all:  # sp_value; a count that went down shows 0
        keys.append("all")
        columns.append(
            [0.0 if n < b else float(n - b) / itv * 100 for n, b in zip(now_nr[:nr2], before_nr[:nr2], strict=True)]
        )
    for label, base in labels:  # unsigned int difference, as sar's
        keys.append(label)
        now_c, before_c = now_nr[base : base + nr2], before_nr[base : base + nr2]
        columns.append([float((n - b) & 0xFFFFFFFF) / itv * 100 for n, b in zip(now_c, before_c, strict=True)])
    for name, row in zip(names, zip(*columns, strict=True), strict=True):
        yield name, dict(zip(keys, row, strict=False))  # as long by construction; strict costs 50 % here


_IO = {"dk_drive": "tps", "dk_drive_rio": "rtps", "dk_drive_rblk": "bread", "dk_drive_wio": "wtps",
       "dk_drive_wblk": "bwrtn", "dk_drive_dio": "dtps", "dk_drive_dblk": "bdscd"}  # fmt: skip


def io(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    c, p = cur[0], prev[0]
    # sar shows 0 for a counter that went down (a disk removed between the two records)
    yield "", {out: 0.0 if c[raw] < p.get(raw, 0) else sp_value(p.get(raw, 0), c[raw], itv)
               for raw, out in _IO.items() if raw in c}  # fmt: skip


def huge(cur: list[dict]) -> Iterator[Item]:
    g = cur[0].get
    free, total = g("frhkb", 0), g("tlhkb", 0)
    yield (
        "",
        {
            "hugfree": free,
            "hugused": total - free,
            "hugused-percent": sp_value(free, total, total) if total else 0.0,
            "hugrsvd": g("rsvdhkb", 0),
            "hugsurp": g("surphkb", 0),
        },
    )


_SERIAL = {"rx": "rcvin", "tx": "xmtin", "frame": "framerr", "parity": "prtyerr", "brk": "brk", "overrun": "ovrun"}


def serial(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    before = {it.get("line"): it for it in prev}
    for c in cur:
        yield str(c["line"]), _rates(c, before.get(c["line"], {}), _SERIAL, itv, wrap32=True)


_SOFTNET = {"processed": "total", "dropped": "dropd", "time_squeeze": "squeezd", "received_rps": "rx_rps",
            "flow_limit": "flw_lim"}  # fmt: skip


def _cpu_item(i: int) -> str:
    return "all" if i == 0 else str(i - 1)


_SOFTNET_ALL = (*_SOFTNET, "backlog_len")


def softnet(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    """As sar: "all" is the sum of the CPUs (the file's item 0 is empty); a CPU without a previous sample
    is left out, one without a current sample (offline) counts with its previous one and is not shown."""
    shown, all_c, all_p = [], dict.fromkeys(_SOFTNET_ALL, 0), dict.fromkeys(_SOFTNET_ALL, 0)
    for i in range(1, min(len(cur), len(prev))):
        c, p = cur[i], prev[i]
        if not any(p.get(f, 0) for f in _SOFTNET_ALL):
            continue
        if not any(c.get(f, 0) for f in _SOFTNET_ALL):
            c = p
        else:
            shown.append((i, c, p))
        for f in _SOFTNET_ALL:  # unsigned int sums, as sar's
            all_c[f] = (all_c[f] + c.get(f, 0)) & 0xFFFFFFFF
            all_p[f] = (all_p[f] + p.get(f, 0)) & 0xFFFFFFFF
    for i, c, p in [(0, all_c, all_p), *shown]:
        yield _cpu_item(i), _rates(c, p, _SOFTNET, itv, wrap32=True) | {"blg_len": float(c.get("backlog_len", 0))}


def cpu_frequency(cur: list[dict]) -> Iterator[Item]:
    for i, c in enumerate(cur):
        yield _cpu_item(i), {"frequency": c.get("cpufreq", 0) / 100}


def filesystem(cur: list[dict]) -> Iterator[Item]:
    for c in cur:
        if not c["fs_name"]:
            continue
        blocks, bfree, files, ffree = c["f_blocks"], c["f_bfree"], c.get("f_files", 0), c.get("f_ffree", 0)
        yield (
            c["fs_name"],
            {
                "MBfsfree": bfree / 1024 / 1024,
                "MBfsused": (blocks - bfree) / 1024 / 1024,
                "%fsused": sp_value(bfree, blocks, blocks) if blocks else 0.0,
                "%ufsused": sp_value(c.get("f_bavail", 0), blocks, blocks) if blocks else 0.0,
                "Ifree": ffree,
                "Iused": files - ffree,
                "%Iused": sp_value(ffree, files, files) if files else 0.0,
            },
        )


def psi(cur: list[dict], prev: list[dict], itv: int) -> Iterator[Item]:
    """Pressure stall: the kernel's averages (1/100 %) and the share of the interval stalled (total in us)."""
    c, p = cur[0], prev[0]
    values: Values = {}
    for kind in ("some", "full"):
        if f"{kind}_total" not in c:
            continue
        for span in ("10", "60", "300"):
            values[f"{kind}_avg{span}"] = c.get(f"{kind}_{span}", 0) / 100
        values[f"{kind}_avg"] = (c[f"{kind}_total"] - p.get(f"{kind}_total", 0)) / (100 * itv)
    yield "", values


# activity id -> (sadf -j section name, function, kind): "rate" functions take (cur, prev, itv),
# "cpu" (cur, prev), "level" (cur)
COMPUTE = {
    lay.A_CPU: ("cpu-load-all", cpu, "cpu"),
    lay.A_PCSW: ("process-and-context-switch", single(_PCSW), "rate"),
    lay.A_SWAP: ("swap-pages", single(_SWAP), "rate"),
    lay.A_PAGE: ("paging", paging, "rate"),
    lay.A_MEMORY: ("memory", memory, "level"),
    lay.A_QUEUE: ("queue", queue, "level"),
    lay.A_DISK: ("disk", disk, "rate"),
    lay.A_NET_DEV: ("net-dev", net_dev, "rate"),
    lay.A_NET_EDEV: ("net-edev", net_edev, "rate"),
    lay.A_IRQ: ("interrupts", interrupts, "rate"),
    lay.A_IO: ("io", io, "rate"),
    lay.A_HUGE: ("hugepages", huge, "level"),
    lay.A_KTABLES: (
        "kernel",
        level({"dentry_stat": "dentunusd", "file_used": "file-nr", "inode_used": "inode-nr", "pty_nr": "pty-nr"}),
        "level",
    ),  # fmt: skip
    lay.A_SERIAL: ("serial", serial, "rate"),
    lay.A_NET_NFS: ("net-nfs", _snmp(lay.NFS_FIELDS, "call retrans read write access getatt", True), "rate"),
    lay.A_NET_NFSD: (
        "net-nfsd",
        _snmp(lay.NFSD_FIELDS, "scall badcall packet udp tcp hit miss sread swrite saccess sgetatt", True),
        "rate",
    ),  # fmt: skip
    lay.A_NET_SOCK: (
        "net-sock",
        level(
            {
                "sock_inuse": "totsck",
                "tcp_inuse": "tcpsck",
                "udp_inuse": "udpsck",
                "raw_inuse": "rawsck",
                "frag_inuse": "ip-frag",
                "tcp_tw": "tcp-tw",
            }
        ),
        "level",
    ),  # fmt: skip
    lay.A_NET_IP: ("net-ip", _snmp(lay.IP_FIELDS, "irec fwddgm idel orq asmrq asmok fragok fragcrt"), "rate"),
    lay.A_NET_EIP: ("net-eip", _snmp(lay.EIP_FIELDS, "ihdrerr iadrerr iukwnpr idisc odisc onort asmf fragf"), "rate"),
    lay.A_NET_ICMP: (
        "net-icmp",
        _snmp(lay.ICMP_FIELDS, "imsg omsg iech iechr oech oechr itm itmr otm otmr iadrmk iadrmkr oadrmk oadrmkr"),
        "rate",
    ),  # fmt: skip
    lay.A_NET_EICMP: (
        "net-eicmp",
        _snmp(lay.EICMP_FIELDS, "ierr oerr idstunr odstunr itmex otmex iparmpb oparmpb isrcq osrcq iredir oredir"),
        "rate",
    ),  # fmt: skip
    lay.A_NET_TCP: ("net-tcp", _snmp(lay.TCP_FIELDS, "active passive iseg oseg"), "rate"),
    lay.A_NET_ETCP: ("net-etcp", _snmp(lay.ETCP_FIELDS, "atmptf estres retrans isegerr orsts"), "rate"),
    lay.A_NET_UDP: ("net-udp", _snmp(lay.UDP_FIELDS, "idgm odgm noport idgmerr"), "rate"),
    lay.A_NET_SOCK6: (
        "net-sock6",
        level({"tcp6_inuse": "tcp6sck", "udp6_inuse": "udp6sck", "raw6_inuse": "raw6sck", "frag6_inuse": "ip6-frag"}),
        "level",
    ),  # fmt: skip
    lay.A_NET_IP6: (
        "net-ip6",
        _snmp(lay.IP6_FIELDS, "irec6 fwddgm6 idel6 orq6 asmrq6 asmok6 imcpck6 omcpck6 fragok6 fragcr6"),
        "rate",
    ),  # fmt: skip
    lay.A_NET_EIP6: (
        "net-eip6",
        _snmp(lay.EIP6_FIELDS, "ihdrer6 iadrer6 iukwnp6 i2big6 idisc6 odisc6 inort6 onort6 asmf6 fragf6 itrpck6"),
        "rate",
    ),  # fmt: skip
    lay.A_NET_ICMP6: (
        "net-icmp6",
        _snmp(
            lay.ICMP6_FIELDS,
            "imsg6 omsg6 iech6 iechr6 oechr6 igmbq6 igmbr6 ogmbr6"
            " igmbrd6 ogmbrd6 irtsol6 ortsol6 irtad6 inbsol6 onbsol6"
            " inbad6 onbad6",
        ),
        "rate",
    ),  # fmt: skip
    lay.A_NET_EICMP6: (
        "net-eicmp6",
        _snmp(lay.EICMP6_FIELDS, "ierr6 idtunr6 odtunr6 itmex6 otmex6 iprmpb6 oprmpb6 iredir6 oredir6 ipck2b6 opck2b6"),
        "rate",
    ),  # fmt: skip
    lay.A_NET_UDP6: ("net-udp6", _snmp(lay.UDP6_FIELDS, "idgm6 odgm6 noport6 idgmer6"), "rate"),
    lay.A_NET_SOFT: ("softnet", softnet, "rate"),
    lay.A_PWR_CPU: ("cpu-frequency", cpu_frequency, "level"),
    lay.A_FILESYSTEM: ("filesystems", filesystem, "level"),
    lay.A_PSI_CPU: ("psi-cpu", psi, "rate"),
    lay.A_PSI_IO: ("psi-io", psi, "rate"),
    lay.A_PSI_MEM: ("psi-mem", psi, "rate"),
}
# sections computed over the interval: not published when the interval is implausible
RATE_SECTIONS = frozenset(section for section, _fn, kind in COMPUTE.values() if kind == "rate")


def sections(
    cur: dict[int, list[dict]],
    prev: dict[int, list[dict]],
    itv: int,
    sar: tuple[int, ...] = SAR_VERSION,
    nr2: dict[int, int] | None = None,
    rates: bool = True,
) -> Iterator[tuple[str, Iterable[Item]]]:
    """(section, its items) for every known activity present in both records, the figures doubles;
    nr2: the activities' second dimension (interrupts per CPU), from the file header; rates=False: the
    sections computed over the interval are left out (an interval that is none). One entry per section,
    not per item: what is decided per section (which bound, whether published) is decided once."""
    for aid, (section, fn, kind) in COMPUTE.items():
        c, p = cur.get(aid), prev.get(aid)
        if not c or p is None:
            continue
        if kind == "cpu":
            yield section, fn(c, p)
        elif kind == "rate":
            if p and rates:  # rates and percentages are computed as doubles already
                yield section, fn(c, p, itv, (nr2 or {}).get(aid, 1)) if aid == lay.A_IRQ else fn(c, p, itv)
        else:  # levels are the file's integers: published as doubles like every figure
            items = fn(c, sar) if aid == lay.A_MEMORY else fn(c)
            yield section, [(item, dict(zip(v, map(float, v.values()), strict=True))) for item, v in items]


def figures(
    cur: dict[int, list[dict]],
    prev: dict[int, list[dict]],
    itv: int,
    sar: tuple[int, ...] = SAR_VERSION,
    nr2: dict[int, int] | None = None,
) -> Iterator[tuple[str, str, Values]]:
    """(section, item, values) for every known activity present in both records."""
    for section, items in sections(cur, prev, itv, sar, nr2):
        for item, values in items:
            yield section, item, values
