"""`fleetperf parse`: the Kafka messages files make, as JSON lines (no Kafka needed)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from fleetperf import config
from fleetperf.cli.common import EXIT_EPILOG
from fleetperf.sources import registry

HELP = "print the Kafka messages files make, as JSON lines: topic, key, value (no Kafka needed)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "parse", help=HELP, description=HELP, epilog=EXIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.set_defaults(func=run)
    p.add_argument("source", choices=["auto", *registry.SOURCES], help="the files' kind; auto: recognised by content")
    p.add_argument("files", nargs="+", help="files, directories or quoted globs")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    registry.add_options(p, list(registry.SOURCES.values()))


def run(args: argparse.Namespace, s: config.Settings) -> int:
    """JSON lines on stdout; bad input and a summary on stderr; exit status as `ingest`'s."""
    from fleetperf.ingest.publish import EXIT_DEAD_LETTERS, EXIT_FILE_FAILED, EXIT_OK, FILE_ERRORS, classify, expand

    candidates = list(expand(args.files))
    counts: Counter[str] = Counter()
    problems: list[str] = []
    failed = 0
    out = sys.stdout
    binary = getattr(out, "buffer", None)  # where a source's own JSON lines (bytes) go, after out.flush()
    fd = _fileno(binary)  # where a source may write them itself (lines_to_fd)
    if fd is not None and not os.get_blocking(fd):
        # a stdout a parent left non-blocking: a full pipe made writes partial and parse went on,
        # silently short of lines (the raw FileIO of PYTHONUNBUFFERED writes once and returns the
        # count); we wait for the reader as a blocking write does
        os.set_blocking(fd, True)
    names = {key: s.topic(key).name for key in s.topics}
    decode = _decoder(s)
    show = not args.no_progress and len(candidates) > 1 and sys.stderr.isatty()
    if show:  # tqdm imported only for a bar (start-up of a one-file parse, issue 20)
        from tqdm import tqdm

        candidates = tqdm(candidates, unit="file", desc="parse", file=sys.stderr)
    for candidate in candidates:
        source, problem = classify(candidate)
        if args.source != "auto" and (source is None or source.name != args.source):
            forced = registry.get(args.source)
            if source is None and problem is None:
                continue
            source, problem = forced, None
        if source is None:
            if problem is not None:
                failed += 1
                print(f"cannot read {candidate.path}: {problem}", file=sys.stderr)
            continue
        try:
            # a source may write its messages' JSON lines itself (the native sadc path): Lines, a tuple
            read_lines = getattr(source, "read_lines", None)
            # or writes them to our stdout itself: then nothing of ours may wait in a buffer
            # while it does, so everything we write is flushed before the source goes on
            direct = read_lines is not None and fd is not None and getattr(source, "lines_to_fd", False)
            if direct:
                out.flush()
                items = read_lines(Path(candidate.path), args, names, out_fd=fd)
            elif read_lines is not None:
                items = read_lines(Path(candidate.path), args, names)
            else:
                items = source.read(Path(candidate.path), args)
            for emitted in items:
                if isinstance(emitted, tuple):
                    if binary is not None:
                        out.flush()  # the text layer's lines first
                        binary.write(emitted.text)
                    else:
                        out.write(emitted.text.decode("ascii"))
                    counts[emitted.topic_key] += emitted.count
                    if direct:
                        binary.flush()
                    continue
                if emitted.topic_key == "dead_letters":
                    r = emitted.record
                    where = f"line {r['line']}, " if r["line"] else ""
                    problems.append(f"{r['origin_file']} ({where}byte {r['byte_offset']}): {r['error']}")
                counts[emitted.topic_key] += 1
                if emitted.encoded is None:  # the Python parsers' dicts: keys in the schema's order, as decoded ones
                    value = _in_schema_order(s.topic(emitted.topic_key).field_names, emitted.record)
                else:
                    value = decode(emitted.topic_key, emitted.encoded)
                message = {"topic": names[emitted.topic_key], "key": emitted.key, "value": value}
                try:
                    out.write(_to_json(message) + "\n")
                except ValueError:  # a non-finite number: never printed as a value
                    problems.append(f"{candidate.path}: a {emitted.topic_key} record held a non-finite number")
                if direct:
                    out.flush()
        except BrokenPipeError:  # our output was closed (`parse ... | head`), not the file: main() exits quietly
            raise
        except FILE_ERRORS as exc:
            failed += 1
            print(f"cannot read {candidate.path}: {str(exc).removeprefix(f'{candidate.path}: ')}", file=sys.stderr)
    for message in problems:
        print(f"bad input: {message}", file=sys.stderr)
    made = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no records"
    print(f"{len(candidates)} files: {made}; {len(problems)} errors, {failed} files unreadable", file=sys.stderr)
    if failed:
        return EXIT_FILE_FAILED
    return EXIT_DEAD_LETTERS if problems else EXIT_OK


def _fileno(stream: object) -> int | None:
    """The fd beneath a binary stdout, or None (a test's in-memory stream has none)."""
    try:
        return stream.fileno()  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both of the latter
        return None


# One encoder for every message: json.dumps with a non-default argument builds a new encoder per
# call (7.2 us against 5.6 us a sysstat message here; `parse sadc` writes ~84 messages a record).
_to_json = json.JSONEncoder(allow_nan=False).encode


def _decoder(s: config.Settings):  # noqa: ANN202
    """Records the native nmon scanner wrote as Avro bytes, read back with the topic's schema."""
    import io

    schemas: dict[str, object] = {}

    def decode(topic_key: str, avro: bytes) -> dict:
        # fastavro imported on first use: 0.05 CPU s of start-up that `parse sadc` never needs
        from fastavro import parse_schema, schemaless_reader

        schema = schemas.get(topic_key)
        if schema is None:
            # logical types stay the numbers on the wire (as the Python parser's records hold them)
            plain = json.loads(s.topic(topic_key).schema_text(), object_hook=_no_logical_type)
            schema = schemas[topic_key] = parse_schema(plain)
        return schemaless_reader(io.BytesIO(avro), schema, None)  # type: ignore[arg-type]

    return decode


def _in_schema_order(names: tuple[str, ...], record: dict) -> dict:
    """A record's fields in its schema's order (the native scanner's records, decoded, come in that
    order; the same file read by the Python parser then prints the same lines)."""
    ordered = {name: record[name] for name in names if name in record}
    if len(ordered) < len(record):  # a key the schema does not name stays, last (nothing drops it here)
        ordered.update((k, v) for k, v in record.items() if k not in ordered)
    return ordered


def _no_logical_type(obj: dict) -> dict:
    obj.pop("logicalType", None)
    return obj
