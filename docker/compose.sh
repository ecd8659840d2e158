#!/usr/bin/env bash
# docker compose on docker-compose.yml with an image set of config/images.toml:
#   docker/compose.sh official up -d     # the official images (same as `docker compose up -d`)
#   docker/compose.sh local up -d        # the images of docker/build-images.sh, embedded ClickHouse
#   docker/compose.sh local down -v
#   docker/compose.sh local --profile cluster up -d   # the cluster profile: 3 Kafka brokers, a Flink
#                                                     # session cluster (docker/compose.cluster.yml)
#   docker/compose.sh local --profile cluster down -v
# Passwords come from .env beside docker-compose.yml (mode 0600; docker-compose.yml's header), or from
# the file named by FLEETPERF_COMPOSE_ENV.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SET=${1:?usage: docker/compose.sh official|local COMPOSE-ARGS...}
shift
IMAGES="$ROOT/docker/images-$SET.env"
[ -f "$IMAGES" ] || { echo "compose.sh: no $IMAGES (image sets: config/images.toml)" >&2; exit 2; }
docker compose version >/dev/null 2>&1 || { echo "compose.sh: needs Compose v2 (docker/install-compose.sh)" >&2; exit 2; }
SECRETS=${FLEETPERF_COMPOSE_ENV:-$ROOT/.env}
ARGS=(--project-directory "$ROOT" -f "$ROOT/docker-compose.yml" -f "$ROOT/docker/compose.images.yml")
[ -f "$SECRETS" ] && ARGS+=(--env-file "$SECRETS")
ARGS+=(--env-file "$IMAGES")
# no ClickHouse server image in the set: the warehouse keeps the embedded engine
grep -q '^FLEETPERF_CLICKHOUSE_IMAGE=$' "$IMAGES" && ARGS+=(-f "$ROOT/docker/compose.embedded.yml")
# the cluster profile lives in its own file (its header says why); added, last, when it is asked for
PREV=""
for arg in "$@" "${COMPOSE_PROFILES:+--profile=$COMPOSE_PROFILES}"; do
  case "$PREV $arg" in
    "--profile cluster" | *" --profile="*cluster*) ARGS+=(-f "$ROOT/docker/compose.cluster.yml"); break ;;
  esac
  PREV=$arg
done
exec docker compose "${ARGS[@]}" "$@"
