"""Write an nmon file as a busy AIX LPAR run with `topas_nmon -T` would: every snapshot of SRC with
--processes TOP lines (and their UARG command lines) of its own, in place of SRC's few. For the
backfill and parse benchmarks on files whose bulk is process rows (text labels, one entity per
process) rather than the corpus file's 2 TOP lines a snapshot:

    .venv/bin/python bench/top_heavy.py ../shared/corpus/nmon/aix71_aixlpar_nmon2influxdb.nmon \\
        /tmp/aixtop.nmon --processes 60
    .venv/bin/python bench/backfill.py --file /tmp/aixtop.nmon --hosts 14 --modes after

The process rows are seeded random (PIDs, CPU figures, commands with commas); the rest of SRC is
kept as it is. Headers: TOP as SRC writes it (`TOP,+PID,Time,...`), UARG as IBM's "Process
statistics" page lists AIX's fields (PID, PPID, COMM, THCOUNT, USER, GROUP, full command).
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

_TOP_HEADER = "TOP,+PID,Time,%CPU,%Usr,%Sys,Threads,Size,ResText,ResData,CharIO,%RAM,Paging,Command,WLMclass\n"
_UARG_HEADER = "UARG,+Time,PID,PPID,COMM,THCOUNT,USER,GROUP,FullCommand\n"
_COMMANDS = ("java", "db2sysc", "oracle", "sshd", "syncd", "ksh", "httpd", "rpc.lockd", "dsmc", "nmon")
_TOP_DATA = re.compile(r"^(TOP,[^,]*,T\d+,|UARG,T\d+,)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path, help="an nmon file (its snapshots are kept)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--processes", type=int, default=60, help="TOP and UARG lines per snapshot")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    headers_written = False
    snapshots = 0
    with args.src.open(encoding="utf-8", errors="replace") as src, args.out.open("w") as out:
        for line in src:
            if _TOP_DATA.match(line) or line.startswith(("TOP,+PID", "UARG,+Time")):
                continue  # SRC's own process rows and headers: ours replace them
            if line.startswith("ZZZZ,") and not headers_written:
                out.write(_TOP_HEADER + _UARG_HEADER)
                headers_written = True
            out.write(line)
            if not line.startswith("ZZZZ,"):
                continue
            snapshots += 1
            tag = line.split(",")[1]
            for _ in range(args.processes):
                pid, command = rnd.randrange(1000, 9_999_999), rnd.choice(_COMMANDS)
                cpu, usr, sys_ = rnd.random() * 50, rnd.random() * 40, rnd.random() * 10
                threads, size, data = rnd.randrange(1, 300), rnd.randrange(100, 900_000), rnd.randrange(100, 900_000)
                out.write(
                    f"TOP,{pid},{tag},{cpu:.2f},{usr:.2f},{sys_:.2f},{threads},{size},0,{data},"
                    f"{rnd.randrange(10**7)},{rnd.random():.2f},0,{command},Unclassified\n"
                    f"UARG,{tag},{pid},{rnd.randrange(1, 9999)},{command},{threads},root,system,"
                    f"{command} -Xmx{rnd.randrange(1, 64)}g -Dlist=a,b,c --id {rnd.randrange(10**6)}\n"
                )
    size = args.out.stat().st_size
    print(f"wrote {args.out}: {snapshots} snapshots x {args.processes} processes, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
