#!/usr/bin/env bash
# Stop a broker started by tools/kafka/start.sh and delete its directory.
#   bash tools/kafka/stop.sh [DIR]     (default: the broker started last)
set -euo pipefail

STATE_FILE="${TMPDIR:-/tmp}/flink-agents-kafka.last"
DIR="${1:-}"
if [[ -z "$DIR" ]]; then
    [[ -f "$STATE_FILE" ]] || { echo "stop.sh: no Kafka broker recorded in $STATE_FILE" >&2; exit 0; }
    DIR="$(cat "$STATE_FILE")"
fi
if [[ ! -f "$DIR/server.properties" ]]; then
    echo "stop.sh: $DIR is not a broker made by start.sh" >&2
    exit 1
fi
if [[ -f "$DIR/pid" ]]; then
    PID="$(cat "$DIR/pid")"
    if kill "$PID" 2>/dev/null; then
        # A controlled shutdown takes a few seconds; after 30 s, kill it.
        for _ in $(seq 1 120); do
            kill -0 "$PID" 2>/dev/null || break
            sleep 0.25
        done
        kill -9 "$PID" 2>/dev/null || true
    fi
fi
rm -rf "$DIR"
if [[ -f "$STATE_FILE" && "$(cat "$STATE_FILE")" == "$DIR" ]]; then
    rm -f "$STATE_FILE"
fi
echo "stop.sh: stopped and removed $DIR" >&2
