#!/usr/bin/env bash
# Print the paths of the Flink Kafka connector jars (and the jars they need) that match the
# installed apache-flink, one a line, for `pipeline.jars` / `env.add_jars`:
#
#   bash tools/kafka/connector.sh              # the apache-flink of .venv, else of python3
#   bash tools/kafka/connector.sh 1.20         # a given Flink line
#
# The jars come from Maven Central, fetched with `mvn` on first use and cached under
# ~/.cache/flink-agents/maven (FLINK_AGENTS_CACHE moves it). Where Maven serves the shaded SQL
# connector for the Flink line (flink-sql-connector-kafka, kafka-clients inside) that one jar
# is printed; otherwise flink-connector-kafka with kafka-clients and its compression libraries.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/kafka/_fetch.sh
source "$HERE/_fetch.sh"

FLINK_LINE="${1:-}"
if [[ -z "$FLINK_LINE" ]]; then
    PY="${PYTHON:-}"
    if [[ -z "$PY" ]]; then
        if [[ -x "$HERE/../../.venv/bin/python" ]]; then PY="$HERE/../../.venv/bin/python"; else PY=python3; fi
    fi
    FLINK_VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("apache-flink"))')" || {
        echo "connector.sh: apache-flink is not installed for $PY; pass the Flink line (e.g. 2.2)" >&2
        exit 1
    }
    FLINK_LINE="$(cut -d. -f1,2 <<<"$FLINK_VERSION")"
fi

# The connector release for each Flink line the project supports (1.20 to 2.3); 2.3 has no
# release of its own yet and runs the 2.2 one (tested on the mini-cluster: tests/kafka).
case "$FLINK_LINE" in
    1.20) KIND=plain; VERSION=3.4.0-1.20 ;;
    2.0) KIND=sql; VERSION=4.0.1-2.0 ;;
    2.1) KIND=plain; VERSION=5.0.0-2.1 ;;
    2.2 | 2.3) KIND=sql; VERSION=5.0.0-2.2 ;;
    *)
        echo "connector.sh: no Kafka connector known for Flink $FLINK_LINE (supported: 1.20 to 2.3)" >&2
        exit 1
        ;;
esac

if [[ "$KIND" == sql ]]; then
    LIB="$(fetch_maven_set "flink-sql-connector-kafka-$VERSION" \
        "org.apache.flink:flink-sql-connector-kafka:$VERSION" false)"
    ls "$LIB"/flink-sql-connector-kafka-*.jar
else
    LIB="$(fetch_maven_set "flink-connector-kafka-$VERSION" "org.apache.flink:flink-connector-kafka:$VERSION")"
    # Flink's own jars and SLF4J are on Flink's classpath already.
    ls "$LIB"/*.jar | grep -v -e '/flink-[a-z-]*-[0-9][^/]*\.jar$' -e '/slf4j-' || true
    ls "$LIB"/flink-connector-kafka-*.jar
fi
