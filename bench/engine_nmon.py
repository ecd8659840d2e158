"""The embedded engine's own work on nmon snapshots (issue 24 goal 1), apart from Kafka and Python.

The sink hands the engine each batch's nmon snapshots as one Avro object container, inserted into
`nmon_snapshots_in` (a Null table) whose two views write `nmon_sections` and `nmon_labels`
(sql/033, sql/038). On real files this insert is the largest single cost of a backfill (about 40 %
of the whole stack's CPU for the Linux corpus file as 40 hosts, docs/warehouse.md "Session 30"),
so what it is made of is measured here, without the rest of the stack:

1. an nmon file is parsed once by the collector's own parser (the native scanner where it is
   built) into the Avro bodies it publishes, written as --hosts hosts (host_id rewritten);
2. each variant runs in a fresh process on a fresh embedded warehouse migrated by sql/: the bodies
   framed as the sink frames them (containers of the snapshots that fit the sink's BATCH_BYTES),
   inserted with the sink's settings and deduplication tokens, one after the other;
3. printed per variant: CPU seconds of that process (every engine thread) until the inserts have
   returned and until the background merges have finished, the inserts' wall seconds, and the
   rows stored (the same for every variant that keeps a view, or the variant is wrong).

Variants, run in rounds that alternate them (the machine is shared; medians of --rounds):
  views       the warehouse as migrated (what the sink pays)
  no-labels   without nmon_labels' view (its share)
  no-sections without nmon_sections' view
  avro-only   both views dropped: reading the Avro into the Null table
  NAME=FILE   the warehouse as migrated, then FILE's statements (a view or setting tried)

    PYTHONPATH=src .venv/bin/python bench/engine_nmon.py \\
        --file ../shared/corpus/nmon/linux_centos7_kvm_nmon16g_1000snap.nmon --hosts 40 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src")]

from fleetperf.avro_plan import encode_string  # noqa: E402
from fleetperf.ingest.watermark import _varint as read_long  # noqa: E402 - an Avro long at a position

MARK = "ENGINE_NMON "
BUILTIN = {
    "views": "",
    "no-labels": "DROP VIEW IF EXISTS nmon_labels_of_snapshots;",
    "no-sections": "DROP VIEW IF EXISTS nmon_sections_from_snapshots;",
    "avro-only": "DROP VIEW IF EXISTS nmon_labels_of_snapshots;\nDROP VIEW IF EXISTS nmon_sections_from_snapshots;",
}


def snapshot_bodies(path: Path) -> list[bytes]:
    """The Avro bodies (no Confluent header) of the file's nmon snapshots, as the collector writes them."""
    import io
    import json
    from datetime import UTC

    from fastavro import parse_schema, schemaless_writer

    from fleetperf import config
    from fleetperf.sources.nmon import native_parser, parser

    schema = parse_schema(json.loads(config.load().topic("nmon_snapshots").schema_text()))
    read = native_parser.parse_file if native_parser.available() else parser.parse_file
    bodies = []
    for e in read(path, UTC):
        if e.topic_key != "nmon_snapshots":
            continue
        if e.encoded is not None:
            bodies.append(bytes(e.encoded))
        else:  # the Python parser (no native scanner built): its record, encoded as the producer does
            buf = io.BytesIO()
            schemaless_writer(buf, schema, e.record)
            bodies.append(buf.getvalue())
    return bodies


def as_host(body: bytes, host_id: str) -> bytes:
    """The body with its first field (host_id, nmon_snapshot.avsc) replaced."""
    n, at = read_long(body, 0)
    return encode_string(host_id) + body[at + n :]


def write_bodies(path: Path, hosts: int, out: Path) -> tuple[int, int]:
    bodies = snapshot_bodies(path)
    if not bodies:
        raise SystemExit(f"{path}: no nmon snapshot read")
    n, at = read_long(bodies[0], 0)
    host = bodies[0][at : at + n].decode()
    count = size = 0
    with open(out, "wb") as f:
        for h in range(hosts):
            for body in bodies:
                b = as_host(body, f"{host}-e{h:03d}") if hosts > 1 else body
                f.write(struct.pack("<I", len(b)))
                f.write(b)
                count += 1
                size += len(b)
    return count, size


def read_bodies(path: Path) -> list[bytes]:
    data = path.read_bytes()
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        out.append(data[i + 4 : i + 4 + n])
        i += 4 + n
    return out


def child(bodies_path: Path, extra_sql: str) -> None:
    """One variant in this fresh process: migrate, run its statements, insert, wait for the merges."""
    from fleetperf import config
    from fleetperf.warehouse import clickhouse
    from fleetperf.warehouse.sink import BATCH_BYTES, DEDUP_SETTINGS, ENGINE_INSERT_SETTINGS, object_container

    settings = config.load()
    ch, _ = clickhouse.migrate(settings)
    for statement in clickhouse.statements(extra_sql):
        ch.command(statement)
    schema = settings.topic("nmon_snapshots").schema_text().encode()
    bodies = read_bodies(bodies_path)
    containers, group, size = [], [], 0
    for body in bodies:  # cut as the sink cuts: a batch ends once it holds BATCH_BYTES of Avro
        group.append(body)
        size += len(body)
        if size >= BATCH_BYTES:
            containers.append(object_container(schema, group))
            group, size = [], 0
    if group:
        containers.append(object_container(schema, group))
    del bodies, group

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    c0, t0 = cpu(), time.monotonic()
    for k, data in enumerate(containers):
        token = {"insert_deduplication_token": f"engine_nmon/0/{k}"}
        ch.raw_insert(
            "nmon_snapshots_in", None, data, settings={**DEDUP_SETTINGS, **ENGINE_INSERT_SETTINGS, **token}, fmt="Avro"
        )
    c1, t1 = cpu(), time.monotonic()
    quiet = 0
    while quiet < 3:  # no merge running in three polls 0.3 s apart
        quiet = quiet + 1 if int(ch.command("SELECT count() FROM system.merges")) == 0 else 0
        time.sleep(0.3)
    c2 = cpu()
    stored = {}
    for table, expr in (("nmon_sections", "sum(length(arrayFlatten(rows.values)))"), ("nmon_labels", "count()")):
        stored[table] = int(ch.command(f"SELECT {expr} FROM {table}"))
    stored["parts"] = int(  # what the merges left: a variant that merges less leaves more parts
        ch.command(
            "SELECT count() FROM system.parts WHERE active AND database = currentDatabase() AND table = 'nmon_sections'"
        )
    )
    figures = {
        "inserts": len(containers),
        "cpu_inserts": c1 - c0,
        "cpu_merged": c2 - c0,
        "wall_inserts": t1 - t0,
        **stored,
    }
    print(MARK + " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def run_variant(bodies: Path, sql: str, tmp: Path) -> dict[str, float]:
    state = Path(tempfile.mkdtemp(prefix="state-", dir=tmp))
    env = {**os.environ, "FLEETPERF__STATE__DIR": str(state), "PYTHONPATH": str(ROOT / "src")}
    sql_file = state / "variant.sql"
    sql_file.write_text(sql)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(bodies), str(sql_file)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    shutil.rmtree(state, ignore_errors=True)
    line = next((x for x in proc.stdout.splitlines() if x.startswith(MARK)), None)
    if proc.returncode or line is None:
        raise SystemExit(f"variant failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return {k: float(v) for k, v in (kv.split("=") for kv in line[len(MARK) :].split())}


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]).read_text())
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", type=Path, required=True, help="an nmon file (plain or gzip)")
    p.add_argument("--hosts", type=int, default=1, help="the file's snapshots written as N hosts")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each running every variant once")
    p.add_argument(
        "--variants",
        nargs="+",
        default=list(BUILTIN),
        metavar="VARIANT",
        help=f"{', '.join(BUILTIN)}, or NAME=FILE (the migrated warehouse, then FILE's statements)",
    )
    args = p.parse_args()
    variants: dict[str, str] = {}
    for v in args.variants:
        if v in BUILTIN:
            variants[v] = BUILTIN[v]
        elif "=" in v:
            name, file = v.split("=", 1)
            variants[name] = Path(file).read_text()
        else:
            p.error(f"unknown variant {v!r}")
    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-engine-") as tmp:
        bodies = Path(tmp) / "bodies.bin"
        count, size = write_bodies(args.file, args.hosts, bodies)
        mb = args.file.stat().st_size * args.hosts / 1e6
        print(f"{args.file.name} as {args.hosts} host(s): {mb:.1f} MB of nmon, {count:,} snapshots,", end=" ")
        print(f"{size / 1e6:.1f} MB of Avro")
        results: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
        for r in range(args.rounds):
            for name, sql in variants.items():
                fig = run_variant(bodies, sql, Path(tmp))
                results[name].append(fig)
                print(
                    f"  round {r + 1} {name:<12} {fig['inserts']:.0f} inserts: CPU {fig['cpu_inserts']:.2f} s, "
                    f"+ merges {fig['cpu_merged']:.2f} s, wall {fig['wall_inserts']:.2f} s; "
                    f"values {fig['nmon_sections']:,.0f}, labels {fig['nmon_labels']:,.0f}, "
                    f"nmon_sections parts {fig['parts']:.0f}; "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    print(f"\nmedians of {args.rounds} round(s), CPU seconds of the inserting process (all engine threads)")
    head = ("variant", "inserts CPU", "+ merges", "wall", "MB nmon/CPU-s", "values", "labels")
    print(f"{head[0]:<12} {head[1]:>12} {head[2]:>9} {head[3]:>6} {head[4]:>14} {head[5]:>12} {head[6]:>10}")
    for name, runs in results.items():
        med = {k: statistics.median(f[k] for f in runs) for k in runs[0]}
        print(
            f"{name:<12} {med['cpu_inserts']:>12.2f} {med['cpu_merged']:>9.2f} {med['wall_inserts']:>6.2f} "
            f"{mb / med['cpu_merged']:>14.1f} {med['nmon_sections']:>12,.0f} {med['nmon_labels']:>10,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
