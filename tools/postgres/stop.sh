#!/usr/bin/env bash
# Stop a cluster started by tools/postgres/start.sh and delete its directory.
#   tools/postgres/stop.sh [DIR]     (default: the cluster started last)
set -euo pipefail

STATE_FILE="${TMPDIR:-/tmp}/flink-agents-postgres.last"
DIR="${1:-}"
if [[ -z "$DIR" ]]; then
    [[ -f "$STATE_FILE" ]] || { echo "stop.sh: no cluster recorded in $STATE_FILE" >&2; exit 1; }
    DIR="$(cat "$STATE_FILE")"
fi
if [[ ! -d "$DIR/data" ]]; then
    echo "stop.sh: $DIR is not a cluster made by start.sh" >&2
    exit 1
fi

if [[ -n "${PG_BIN:-}" ]]; then
    BIN="$PG_BIN"
elif [[ -f "$DIR/bin" ]]; then
    BIN="$(cat "$DIR/bin")"  # the server start.sh used
else
    BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    [[ -n "$BIN" && -x "$BIN/pg_ctl" ]] || BIN="$(dirname "$(command -v pg_ctl)")"
fi

if [[ "$(id -u)" == "0" ]]; then
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >&2 || true
else
    "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >&2 || true
fi
rm -rf "$DIR"
if [[ -f "$STATE_FILE" && "$(cat "$STATE_FILE")" == "$DIR" ]]; then
    rm -f "$STATE_FILE"
fi
echo "stop.sh: stopped and removed $DIR" >&2
