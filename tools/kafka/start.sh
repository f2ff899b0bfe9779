#!/usr/bin/env bash
# Start a single-node Kafka broker (KRaft: broker and controller in one process, no ZooKeeper)
# on 127.0.0.1 for tests, examples and benchmarks; print its bootstrap address as the last line.
#
#   export FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP="$(bash tools/kafka/start.sh)"
#   ...
#   bash tools/kafka/stop.sh
#   bash tools/kafka/start.sh --restart DIR   # a broker of DIR again: same port, same data
#
# Kafka comes from Maven Central (org.apache.kafka:kafka_2.13 and what it needs), fetched with
# `mvn` on first use and cached under ~/.cache/flink-agents/maven (FLINK_AGENTS_CACHE moves it).
# Idempotent: when the broker this script started last still answers, its address is printed
# again and nothing new starts. The broker's directory (data, config, log) is a new temp
# directory; its state file is ${TMPDIR:-/tmp}/flink-agents-kafka.last. Progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/kafka/_fetch.sh
source "$HERE/_fetch.sh"

KAFKA_VERSION="${FLINK_AGENTS_KAFKA_VERSION:-4.1.1}"
STATE_FILE="${TMPDIR:-/tmp}/flink-agents-kafka.last"
RESTART_DIR=""
if [[ "${1:-}" == "--restart" ]]; then
    RESTART_DIR="${2:?start.sh --restart DIR: the directory of a broker start.sh made}"
    [[ -f "$RESTART_DIR/server.properties" && -f "$RESTART_DIR/port" ]] || {
        echo "start.sh: $RESTART_DIR is not a broker made by start.sh" >&2
        exit 1
    }
fi

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Reuse the broker started last, if its process lives and its port answers.
if [[ -z "$RESTART_DIR" && -f "$STATE_FILE" ]]; then
    OLD="$(cat "$STATE_FILE")"
    if [[ -f "$OLD/pid" && -f "$OLD/port" ]] && kill -0 "$(cat "$OLD/pid")" 2>/dev/null \
        && port_in_use "$(cat "$OLD/port")"; then
        echo "start.sh: reusing the Kafka broker in $OLD" >&2
        echo "127.0.0.1:$(cat "$OLD/port")"
        exit 0
    fi
fi

LIB="$(fetch_maven_set "kafka-$KAFKA_VERSION" \
    "org.apache.kafka:kafka_2.13:$KAFKA_VERSION org.apache.logging.log4j:log4j-slf4j-impl:2.24.3")"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

free_port() {
    local candidate
    for _ in $(seq 1 50); do
        candidate=$(( 20000 + RANDOM % 40000 ))
        port_in_use "$candidate" || { echo "$candidate"; return; }
    done
    echo "start.sh: no free port found" >&2
    return 1
}

if [[ -n "$RESTART_DIR" ]]; then
    # The broker of an earlier start: its configuration, port and data are kept.
    DIR="$(cd "$RESTART_DIR" && pwd)"
    PORT="$(cat "$DIR/port")"
    if port_in_use "$PORT"; then
        echo "start.sh: port $PORT of $DIR is in use" >&2
        exit 1
    fi
else
    DIR="$(mktemp -d "${TMPDIR:-/tmp}/flink-agents-kafka.XXXXXX")"
    chmod 700 "$DIR"
    PORT="$(free_port)"
    CONTROLLER_PORT="$(free_port)"
    [[ "$PORT" != "$CONTROLLER_PORT" ]] || CONTROLLER_PORT=$(( PORT + 1 ))

    cat >"$DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$DIR/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Flink's KafkaSink keeps a transaction open for a checkpoint interval and more; a test's
# checkpoints are seconds apart, a user's may be minutes.
transaction.max.timeout.ms=3600000
auto.create.topics.enable=true
PROPS

    cat >"$DIR/log4j2.properties" <<PROPS
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $DIR/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
logger.kafkaserver.name = kafka
logger.kafkaserver.level = WARN
PROPS
fi

JVM_OPTS=(-Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Dlog4j2.configurationFile="$DIR/log4j2.properties" -Djava.awt.headless=true)

if [[ -z "$RESTART_DIR" ]]; then
    # A random id (base64url of 16 bytes) that does not start with '-': the storage tool
    # would read one that does as an option (one start in 64 failed so).
    CLUSTER_ID="-"
    while [[ "$CLUSTER_ID" == -* ]]; do
        CLUSTER_ID="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    done
    # Transactions at version 0: the protocol Flink's Kafka connectors were written against
    # (their exactly-once sink resumes a producer's transaction after a restart).
    "$JAVA" "${JVM_OPTS[@]}" -cp "$LIB/*" kafka.tools.StorageTool format \
        -t "$CLUSTER_ID" -c "$DIR/server.properties" --feature transaction.version=0 \
        >"$DIR/format.log" 2>&1 || { cat "$DIR/format.log" >&2; exit 1; }
fi

nohup "$JAVA" "${JVM_OPTS[@]}" -cp "$LIB/*" kafka.Kafka "$DIR/server.properties" \
    >"$DIR/stdout.log" 2>&1 </dev/null &
echo $! >"$DIR/pid"
printf '%s\n' "$PORT" >"$DIR/port"

# Ready when the broker accepts connections on its listener (within 60 s).
for _ in $(seq 1 240); do
    if ! kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
        echo "start.sh: the Kafka broker exited; its logs follow" >&2
        cat "$DIR/stdout.log" "$DIR/server.log" >&2 2>/dev/null || true
        exit 1
    fi
    if port_in_use "$PORT"; then
        printf '%s\n' "$DIR" >"$STATE_FILE"
        echo "start.sh: Kafka $KAFKA_VERSION on 127.0.0.1:$PORT, data in $DIR; stop with tools/kafka/stop.sh" >&2
        echo "127.0.0.1:$PORT"
        exit 0
    fi
    sleep 0.25
done
echo "start.sh: the Kafka broker did not listen within 60 s; its logs follow" >&2
cat "$DIR/stdout.log" "$DIR/server.log" >&2 2>/dev/null || true
kill "$(cat "$DIR/pid")" 2>/dev/null || true
exit 1
