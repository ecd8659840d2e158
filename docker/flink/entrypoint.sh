#!/bin/bash
# Entry point of the local Flink image, used like the official `flink` image's (documented there:
# `jobmanager` | `taskmanager` | any other command run as given; JOB_MANAGER_RPC_ADDRESS, default the
# container's host name; FLINK_PROPERTIES, lines of `key: value` that override conf/config.yaml;
# TASK_MANAGER_NUMBER_OF_TASK_SLOTS). Written for this project, not taken from the official image.
# The official scripts derive JVM sizes from the memory settings with flink-dist's BashJavaUtils,
# which Maven Central lacks; here they are the native cluster mode's (stack/cluster.py: JobManager
# -Xmx512m, TaskManager heap TM_HEAP and direct memory TM_DIRECT), overridable by FLINK_JM_JVM_OPTS
# and FLINK_TM_JVM_OPTS; env.java.opts.all of the configuration is added as Flink's scripts do.
set -euo pipefail
FLINK_HOME=${FLINK_HOME:-/opt/flink}
CONF_DIR=${FLINK_CONF_DIR:-$FLINK_HOME/conf}
CONF=$CONF_DIR/config.yaml

# set_option KEY VALUE: replaces the key's line; values single-quoted (in YAML '' is one quote)
set_option() {
  awk -v k="$1:" 'index($0, k) != 1' "$CONF" >"$CONF.new"
  printf "%s: '%s'\n" "$1" "${2//\'/\'\'}" >>"$CONF.new"
  mv "$CONF.new" "$CONF"
}
# get_option KEY: the value, unquoted ("" when absent)
get_option() {
  local value
  value=$(awk -v k="$1:" 'index($0, k) == 1 { v = substr($0, length(k) + 1) } END { print v }' "$CONF")
  value=${value#"${value%%[![:space:]]*}"}
  value=${value#\'}
  value=${value%\'}
  printf '%s' "${value//\'\'/\'}"
}

set_option jobmanager.rpc.address "${JOB_MANAGER_RPC_ADDRESS:-$(hostname -f 2>/dev/null || hostname)}"
set_option blob.server.port 6124
set_option query.server.port 6125
[ -z "${TASK_MANAGER_NUMBER_OF_TASK_SLOTS:-}" ] || set_option taskmanager.numberOfTaskSlots "$TASK_MANAGER_NUMBER_OF_TASK_SLOTS"
if [ -n "${FLINK_PROPERTIES:-}" ]; then
  while IFS= read -r line; do
    line=$(printf '%s' "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
    [ -n "$line" ] || continue
    key=${line%%:*}
    value=${line#*:}
    value=${value#"${value%%[![:space:]]*}"}
    set_option "$key" "$value"
  done <<<"$FLINK_PROPERTIES"
fi

# shellcheck disable=SC2206  # env.java.opts.all holds several JVM flags
JAVA_OPTS_ALL=($(get_option env.java.opts.all))
run_java() { # main class, JVM size flags (one word list), arguments...
  local main=$1 sizes=$2
  shift 2
  # shellcheck disable=SC2086
  exec java $sizes "${JAVA_OPTS_ALL[@]}" "-Dlog4j.configurationFile=$CONF_DIR/log4j-console.properties" \
    -cp "$FLINK_HOME/lib/*" "$main" --configDir "$CONF_DIR" "$@"
}

case "${1:-help}" in
  jobmanager)
    shift
    echo "Starting Job Manager"
    run_java org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint "${FLINK_JM_JVM_OPTS:--Xmx512m}" "$@"
    ;;
  taskmanager)
    shift
    echo "Starting Task Manager"
    run_java org.apache.flink.runtime.taskexecutor.TaskManagerRunner \
      "${FLINK_TM_JVM_OPTS:--Xmx384m -XX:MaxDirectMemorySize=192m}" "$@"
    ;;
  help)
    echo "usage: $(basename "$0") jobmanager|taskmanager|COMMAND... (COMMAND e.g. flink run -d JAR)"
    ;;
  *)
    exec "$@"
    ;;
esac
