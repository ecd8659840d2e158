#!/usr/bin/env bash
# Builds the "local" image set of config/images.toml for machines that reach the package registries
# (Debian, PyPI, Maven Central, crates.io) but no image registry, one image after the other:
#   base       Debian bookworm made with debootstrap --variant=minbase, imported with `docker import`
#              (plus the CA certificates this host trusts beyond Debian's, /usr/local/share/ca-certificates,
#              for machines whose egress re-signs TLS)
#   jre        Debian's openjdk-17-jre-headless                        (docker/jre/Dockerfile)
#   kafka      the native stack's Kafka jars from Maven Central        (docker/kafka/)
#   registry   the native stack's Apicurio Registry distribution       (docker/registry/Dockerfile)
#   flink      the native cluster mode's Flink jars, used like the official image (docker/flink/)
#   python     Debian's python3.11, base of the repository's Dockerfile  (docker/python/Dockerfile)
#   rust       Debian's rustc-web/cargo-web, the Dockerfile's nmon scanner stage  (docker/rust/Dockerfile)
#   fleetperf  the repository's Dockerfile on the two above
# Jars come from the same cache as `./fleetperf up` (src/fleetperf/stack/install.py): fetched once.
# Where a registry is reachable none of this is needed: compose and the tests use the official images.
#
#   docker/build-images.sh              # all images (skips the base if it exists)
#   docker/build-images.sh kafka flink  # only these (the base and jre are built when missing)
#   REBUILD_BASE=1 docker/build-images.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export DOCKER_BUILDKIT=0 # the classic builder: Debian's docker.io has no buildx plugin
PY=("$ROOT/.venv/bin/python" "$ROOT/docker/images.py")
[ -x "${PY[0]}" ] || { echo "build-images: run ./fleetperf --help once first (it creates .venv)" >&2; exit 2; }
export PYTHONPATH="$ROOT/src"
docker info >/dev/null 2>&1 || { echo "build-images: no Docker engine answers (docker/dockerd.sh start)" >&2; exit 2; }

image() { "${PY[@]}" get local "$1"; }
eval "$("${PY[@]}" versions)"
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/fleetperf-images.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
declare -A TOOK
step() { # name, command...
  local name=$1 t0=$SECONDS
  shift
  echo "== $name" >&2
  "$@"
  TOOK[$name]=$((SECONDS - t0))
}
build() { # name, context dir, build args...
  local name=$1 context=$2
  shift 2
  docker build -q "$@" -t "$(image "$name")" "$context" 2>&1 | grep -v -E 'legacy builder|BuildKit is currently|environment-variable|^$' || true
  docker image inspect "$(image "$name")" >/dev/null
}
exists() { docker image inspect "$(image "$1")" >/dev/null 2>&1; }

base() {
  command -v debootstrap >/dev/null || { echo "build-images: apt-get install debootstrap" >&2; exit 2; }
  # the mirror this host's apt uses (deb822 sources first, then sources.list)
  local mirror
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  mirror=${mirror:-http://deb.debian.org/debian}
  local rootfs="$STAGE/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$STAGE/debootstrap.log" 2>&1 ||
    { tail -20 "$STAGE/debootstrap.log" >&2; exit 1; }
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$rootfs/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$(image base)" >/dev/null
  rm -rf "$rootfs"
}

artifacts() { eval "$("${PY[@]}" artifacts)"; }
stage() { # name, files... : a build context of hard links (copies across file systems)
  local dir="$STAGE/$1"
  shift
  mkdir -p "$dir"
  for item in "$@"; do
    local src=${item%%=*} dst=${item#*=}
    cp -rl "$src" "$dir/$dst" 2>/dev/null || cp -r "$src" "$dir/$dst"
  done
  echo "$dir"
}

kafka() {
  build kafka "$(stage kafka "$KAFKA_LIBS=libs" docker/kafka/entrypoint.sh=entrypoint.sh \
    docker/kafka/log4j2.properties=log4j2.properties docker/kafka/Dockerfile=Dockerfile)" \
    --build-arg "JRE_IMAGE=$(image jre)" --build-arg "KAFKA_HEAP=$KAFKA_HEAP"
}
registry() {
  build registry "$(stage registry "$REGISTRY_HOME=app" docker/registry/Dockerfile=Dockerfile)" \
    --build-arg "JRE_IMAGE=$(image jre)" --build-arg "REGISTRY_VERSION=$REGISTRY_VERSION" \
    --build-arg "REGISTRY_HEAP=$REGISTRY_HEAP"
}
flink() {
  build flink "$(stage flink "$FLINK_LIB=lib" docker/flink/Dockerfile=Dockerfile docker/flink/entrypoint.sh=entrypoint.sh \
    docker/flink/flink=flink docker/flink/config.yaml=config.yaml \
    docker/flink/log4j-console.properties=log4j-console.properties)" \
    --build-arg "JRE_IMAGE=$(image jre)" --build-arg "FLINK_VERSION=$FLINK_VERSION"
}
fleetperf() {
  build fleetperf . --build-arg "PYTHON_IMAGE=$(image python)" --build-arg "RUST_IMAGE=$(image rust)"
}

WANT=("$@")
[ ${#WANT[@]} -gt 0 ] || WANT=(kafka registry flink python rust fleetperf)
NEW_BASE=0
if [ "${REBUILD_BASE:-0}" = 1 ] || ! exists base; then step base base; NEW_BASE=1; fi
# every image stands on the JRE (Java ones) or the base: a new base rebuilds the JRE first
if [[ " ${WANT[*]} " != *" jre "* ]] && { [ $NEW_BASE = 1 ] || ! exists jre; }; then WANT=(jre "${WANT[@]}"); fi
NEEDS_ARTIFACTS=0
for name in "${WANT[@]}"; do [[ $name =~ ^(kafka|registry|flink)$ ]] && NEEDS_ARTIFACTS=1; done
if [ $NEEDS_ARTIFACTS = 1 ]; then step artifacts artifacts; fi
for name in "${WANT[@]}"; do
  case $name in
    jre | python | rust) step "$name" build "$name" "docker/$name" --build-arg "BASE_IMAGE=$(image base)" ;;
    kafka | registry | flink) step "$name" "$name" ;;
    fleetperf)
      exists python || step python build python docker/python --build-arg "BASE_IMAGE=$(image base)"
      exists rust || step rust build rust docker/rust --build-arg "BASE_IMAGE=$(image base)"
      step fleetperf fleetperf
      ;;
    *) echo "build-images: unknown image '$name' (config/images.toml [local])" >&2; exit 2 ;;
  esac
done
echo "built (seconds):" >&2
for name in "${!TOOK[@]}"; do printf '  %-10s %4ss  %s\n' "$name" "${TOOK[$name]}" "$(image "$name" 2>/dev/null || true)" >&2; done
echo "use them: FLEETPERF_IMAGES=local (tests), docker/compose.sh local ... (compose); docs/docker.md" >&2
