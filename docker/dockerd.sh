#!/usr/bin/env bash
# A Docker engine of its own for machines where none runs (Debian's docker.io, as root): its own data
# root, socket and pid file, so it touches no other engine and stops by its pid.
#   docker/dockerd.sh start    # prints the DOCKER_HOST to export
#   docker/dockerd.sh stop     # stops it, after removing every container it still has
#   docker/dockerd.sh status
# FLEETPERF_DOCKER_ROOT (default /var/lib/fleetperf-docker) and FLEETPERF_DOCKER_RUN (/run/fleetperf-docker)
# choose the places. Images stay in the data root across starts (docker/build-images.sh builds them once).
set -euo pipefail
DATA=${FLEETPERF_DOCKER_ROOT:-/var/lib/fleetperf-docker}
RUN=${FLEETPERF_DOCKER_RUN:-/run/fleetperf-docker}
SOCK="unix://$RUN/docker.sock"
PIDFILE="$RUN/dockerd.pid"
running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
case "${1:-}" in
  start)
    if running; then echo "export DOCKER_HOST=$SOCK"; exit 0; fi
    command -v dockerd >/dev/null || { echo "dockerd.sh: apt-get install docker.io" >&2; exit 2; }
    [ "$(id -u)" = 0 ] || { echo "dockerd.sh: dockerd needs root" >&2; exit 2; }
    mkdir -p "$DATA" "$RUN"
    nohup dockerd --data-root "$DATA" --exec-root "$RUN/exec" --host "$SOCK" --pidfile "$PIDFILE" \
      >"$RUN/dockerd.log" 2>&1 &
    for _ in $(seq 60); do
      DOCKER_HOST=$SOCK docker info >/dev/null 2>&1 && { echo "export DOCKER_HOST=$SOCK"; exit 0; }
      sleep 0.5
    done
    tail -20 "$RUN/dockerd.log" >&2
    exit 1
    ;;
  stop)
    running || { echo "dockerd.sh: not running" >&2; exit 0; }
    ids=$(DOCKER_HOST=$SOCK docker ps -aq)
    [ -z "$ids" ] || DOCKER_HOST=$SOCK docker rm -f -v $ids >/dev/null
    pid=$(cat "$PIDFILE")
    kill "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.5; done
    echo "dockerd.sh: dockerd $pid still running after 30 s" >&2
    exit 1
    ;;
  status)
    if running; then echo "running (pid $(cat "$PIDFILE")); export DOCKER_HOST=$SOCK"; else echo "not running"; fi
    ;;
  *)
    echo "usage: docker/dockerd.sh start|stop|status" >&2
    exit 2
    ;;
esac
