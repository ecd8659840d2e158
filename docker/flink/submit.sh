#!/usr/bin/env bash
# The job-submit service of docker/compose.cluster.yml: submits the fleetperf job jar to the session
# cluster with `flink run` (the jar's main builds the job on this client and hands it to the
# JobManager), detached, at FLEETPERF_PARALLELISM; runs in the official `flink` image or the local one.
# - the job already running (an `up` of a running stack): nothing to do;
# - a savepoint or retained checkpoint on the state volume (an `up` after `stop`, or after a crash):
#   the newest complete one is restored (`flink run -s ... -n`), so windows and offsets continue;
# - exits 0 once the job is RUNNING, non-zero with the client's output otherwise (the warehouse waits
#   for this service to complete successfully).
set -euo pipefail
JAR=${FLEETPERF_JOB_JAR:?}
SETTINGS=${FLEETPERF_JOB_SETTINGS:?}
PARALLELISM=${FLEETPERF_PARALLELISM:?}
STATE=$(dirname "$SETTINGS")
NAME=fleetperf-derived-metrics
TIMEOUT=${FLEETPERF_SUBMIT_TIMEOUT:-420}

running() { # the job's line in `flink list -r` (RUNNING, or CREATED/RESTARTING on the way there)
  local out
  out=$(flink list -r 2>&1) || { echo "$out" >&2; return 2; }
  grep -E ": $NAME \((RUNNING|CREATED|RESTARTING|INITIALIZING)\)" <<<"$out" || return 1
}

# the JobManager's REST endpoint answers some seconds after its container starts
deadline=$((SECONDS + TIMEOUT))
until out=$(flink list -r 2>&1); do
  if [ $SECONDS -ge $deadline ]; then
    echo "$out" >&2
    echo "submit.sh: the JobManager did not answer within ${TIMEOUT}s" >&2
    exit 1
  fi
  sleep 3
done
if grep -qE ": $NAME \(" <<<"$out"; then
  echo "submit.sh: $NAME is already running:"
  grep -E ": $NAME \(" <<<"$out"
  exit 0
fi

args=(run -d -p "$PARALLELISM")
restore=""
for dir in $(ls -1td "$STATE"/flink-savepoints/*/ "$STATE"/flink-checkpoints/*/chk-*/ 2>/dev/null); do
  if [ -f "$dir/_metadata" ]; then
    restore=${dir%/}
    break
  fi
done
if [ -n "$restore" ]; then
  echo "submit.sh: restoring from $restore"
  # an operator removed by an upgrade must not block the restore of the others
  args+=(-s "file://$restore" -n)
fi
flink "${args[@]}" "$JAR" --settings "$SETTINGS"

until line=$(running); do
  if [ $SECONDS -ge $deadline ]; then
    echo "submit.sh: $NAME not RUNNING within ${TIMEOUT}s" >&2
    exit 1
  fi
  sleep 5
done
echo "submit.sh: $line"
