#!/bin/sh
# Hand-written serde vs flink-avro's registry format, one thread (see SerdeBench.java):
#   bench/run.sh [records]
# or another bench of this folder with its arguments, e.g. bench/run.sh 0 FlagBench [hosts] [windows]
# flink-avro is fetched for the bench only; the job does not depend on it.
set -e
cd "$(dirname "$0")/.."
mvn -B -ntp -q compile dependency:build-classpath -Dmdep.outputFile=target/bench-cp.txt
mvn -B -ntp -q dependency:get -Dartifact=org.apache.flink:flink-avro:2.3.0 -Dtransitive=false
AVRO_FORMAT="$HOME/.m2/repository/org/apache/flink/flink-avro/2.3.0/flink-avro-2.3.0.jar"
CP="target/classes:$(cat target/bench-cp.txt):$AVRO_FORMAT"
mkdir -p target/bench
javac -d target/bench -cp "$CP" bench/*.java
if [ -n "$2" ]; then
  BENCH="$2"
  shift 2
  java -Xmx512m -cp "target/bench:$CP" "$BENCH" "$@"
else
  java -Xmx512m -cp "target/bench:$CP" SerdeBench "${1:-2000000}"
fi
