"""Container image names from config/images.toml, with the versions of config/fleetperf.toml filled in.

One reader for the build script (docker/build-images.sh), compose (through the env files this writes,
docker/images-<set>.env) and the testcontainers provider (tests/providers/containers.py).

    PYTHONPATH=src .venv/bin/python docker/images.py env local     # FLEETPERF_*_IMAGE=... lines
    PYTHONPATH=src .venv/bin/python docker/images.py get local kafka
    PYTHONPATH=src .venv/bin/python docker/images.py write-env       # docker/images-*.env from the config
    PYTHONPATH=src .venv/bin/python docker/images.py artifacts       # fetch/build what the images copy
"""

from __future__ import annotations

import os
import shlex
import sys
import tomllib
from pathlib import Path

from fleetperf import config
from fleetperf.stack import install

ROOT = Path(__file__).resolve().parent.parent
IMAGES_TOML = ROOT / "config" / "images.toml"
SETS = ("official", "local")
# image key -> the compose variable that carries it
VARIABLES = {
    "base": "FLEETPERF_BASE_IMAGE",
    "kafka": "FLEETPERF_KAFKA_IMAGE",
    "registry": "FLEETPERF_REGISTRY_IMAGE",
    "clickhouse": "FLEETPERF_CLICKHOUSE_IMAGE",
    "jre": "FLEETPERF_JRE_IMAGE",
    "python": "FLEETPERF_PYTHON_IMAGE",
    "rust": "FLEETPERF_RUST_IMAGE",
    "fleetperf": "FLEETPERF_IMAGE",
    "flink": "FLEETPERF_FLINK_IMAGE",
}


def versions(settings: config.Settings | None = None) -> dict[str, str]:
    s = settings or config.load({})
    return {
        "kafka": s["kafka"]["version"],
        "registry": s["registry"]["version"],
        "flink": install.FLINK_CLUSTER_VERSION,
    }


def selected_set() -> str:
    """FLEETPERF_IMAGES=official|local; official by default (where a registry is reachable)."""
    name = os.environ.get("FLEETPERF_IMAGES", "official")
    if name not in SETS:
        raise SystemExit(f"FLEETPERF_IMAGES={name!r}: choose one of {', '.join(SETS)} (config/images.toml)")
    return name


def images(set_name: str | None = None) -> dict[str, str]:
    """Every image of a set, versions filled in; an empty name means "none in this set"."""
    name = set_name or selected_set()
    raw = tomllib.loads(IMAGES_TOML.read_text())
    if name not in raw:
        raise SystemExit(f"{IMAGES_TOML}: no [{name}] table")
    unknown = set(raw[name]) - set(VARIABLES)
    if unknown:
        raise SystemExit(f"{IMAGES_TOML} [{name}]: unknown keys {sorted(unknown)}; known: {sorted(VARIABLES)}")
    v = versions()
    return {key: str(value).format(**v) for key, value in raw[name].items()}


def env_text(set_name: str) -> str:
    lines = [f"# generated from config/images.toml [{set_name}] by docker/images.py write-env; do not edit"]
    lines += [f"{VARIABLES[key]}={value}" for key, value in sorted(images(set_name).items())]
    return "\n".join(lines) + "\n"


def env_file(set_name: str) -> Path:
    return ROOT / "docker" / f"images-{set_name}.env"


def artifacts() -> dict[str, Path]:
    """What the images copy, fetched into (or found in) the native stack's cache, and the job jar."""
    s = config.load()
    return {
        "KAFKA_LIBS": install.kafka_libs(s),
        "REGISTRY_HOME": install.registry_jar(s).parent,
        "FLINK_LIB": install.flink_cluster_lib(s),
        "JOB_JAR": install.job_jar(),
    }


def main(argv: list[str]) -> int:
    match argv:
        case ["env", set_name]:
            sys.stdout.write(env_text(set_name))
        case ["get", set_name, key]:
            print(images(set_name)[key])
        case ["write-env"]:
            for set_name in SETS:
                env_file(set_name).write_text(env_text(set_name))
                print(f"wrote {env_file(set_name).relative_to(ROOT)}")
        case ["versions"]:
            s = config.load()
            print(f"KAFKA_VERSION={s['kafka']['version']} KAFKA_HEAP={s['kafka']['heap']}")
            print(f"REGISTRY_VERSION={s['registry']['version']} REGISTRY_HEAP={s['registry']['heap']}")
            print(f"FLINK_VERSION={install.FLINK_CLUSTER_VERSION}")
        case ["artifacts"]:
            for key, path in artifacts().items():
                print(f"{key}={shlex.quote(str(path))}")
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
