#!/bin/bash
# Kafka (KRaft, combined broker + controller by default) configured like the official apache/kafka image:
# every environment variable KAFKA_<NAME> becomes the server property <name> (lower case; "_" -> ".",
# "__" -> "_", "___" -> "-"), so docker-compose.yml and tests/providers/containers.py configure this
# image and the official one with the same variables. The storage is formatted on the first start
# (cluster id from CLUSTER_ID, else a new one); later starts keep the data of the volume.
set -euo pipefail
# SERVER_PROPERTIES: where the file goes (tests/unit/test_compose_config.py runs this script on the host)
PROPS=${SERVER_PROPERTIES:-/opt/kafka/config/server.properties}
mkdir -p "$(dirname "$PROPS")"
: > "$PROPS"
while IFS='=' read -r name value; do
  case "$name" in
    # the launcher's own variables, not server properties
    KAFKA_HEAP_OPTS | KAFKA_OPTS | KAFKA_JVM_PERFORMANCE_OPTS | KAFKA_LOG4J_OPTS | KAFKA_JMX_OPTS | KAFKA_VERSION | KAFKA_LIBS_DIR) continue ;;
    KAFKA_*) ;;
    *) continue ;;
  esac
  key=${name#KAFKA_}
  key=$(printf '%s' "$key" | tr '[:upper:]' '[:lower:]' | sed -e 's/___/-/g' -e 's/__/\x01/g' -e 's/_/./g' -e 's/\x01/_/g')
  printf '%s=%s\n' "$key" "$value" >> "$PROPS"
done < <(env)
grep -q '^log.dirs=' "$PROPS" || echo "log.dirs=/var/lib/kafka/data" >> "$PROPS"
# no configuration given: one combined node on 9092, as the official image starts without variables
if ! grep -q '^process.roles=' "$PROPS"; then
  cat >> "$PROPS" <<'DEFAULTS'
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
controller.quorum.voters=1@localhost:9093
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
DEFAULTS
fi
LOG_DIR=$(sed -n 's/^log.dirs=//p' "$PROPS" | cut -d, -f1)
CP="${KAFKA_LIBS_DIR:-/opt/kafka/libs}/*"
if [ ! -f "$LOG_DIR/meta.properties" ]; then
  id=${CLUSTER_ID:-$(java -cp "$CP" kafka.tools.StorageTool random-uuid)}
  java -cp "$CP" kafka.tools.StorageTool format -t "$id" -c "$PROPS" --ignore-formatted
fi
# shellcheck disable=SC2086  # KAFKA_HEAP_OPTS / KAFKA_LOG4J_OPTS / KAFKA_OPTS hold several JVM flags
exec java ${KAFKA_HEAP_OPTS:--Xmx512m} ${KAFKA_LOG4J_OPTS:-} ${KAFKA_OPTS:-} -cp "$CP" kafka.Kafka "$PROPS"
