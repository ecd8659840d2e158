#!/usr/bin/env bash
# Docker Compose v2 as a CLI plugin, where the docker client has none: docker-compose.yml uses
# secrets from the environment and inline configs, which Debian's docker-compose 1.29 rejects. Built
# from its Go module with the Go toolchain (about 3.5 minutes on 2 cores, once), into
# ~/.docker/cli-plugins/docker-compose.
set -euo pipefail
VERSION=${COMPOSE_VERSION:-v2.28.1}
if docker compose version >/dev/null 2>&1; then docker compose version; exit 0; fi
command -v go >/dev/null || { echo "install-compose.sh: needs Go (apt-get install golang, or a Go toolchain)" >&2; exit 2; }
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
GOBIN=$BIN GOFLAGS=-p=1 nice go install "github.com/docker/compose/v2/cmd@$VERSION"
mkdir -p ~/.docker/cli-plugins
install -m 0755 "$BIN/cmd" ~/.docker/cli-plugins/docker-compose
docker compose version
