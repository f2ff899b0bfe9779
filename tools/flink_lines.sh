#!/usr/bin/env bash
# The smoke set on every supported Flink line: for each line a virtual environment with that
# line's latest apache-flink and the project (made once, then reused: .venvs-flink/<line>,
# or $FLINK_LINES_VENVS/<line>), then the tests that cover the guarantees: core cases of the
# fault matrix, restore with a durable store, the newcomer path, upstream's quickstart on the
# mini-cluster, two jobs one after the other on one standalone session cluster, runs parked
# for approval across a restore, and Kafka in and out with the line's connector.
# Every test here starts Flink: on a shared machine run it under the Flink lock
# (`flock /tmp/flink.lock tools/flink_lines.sh 1.20`).
# Usage: tools/flink_lines.sh [LINE ...]   (default: 1.20 2.0 2.1 2.2 2.3)
#        extra pytest arguments after `--`, e.g. tools/flink_lines.sh 2.2 -- -x
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENVS="${FLINK_LINES_VENVS:-.venvs-flink}"
ALL_LINES=(1.20 2.0 2.1 2.2 2.3)

lines=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; break; fi
  lines+=("$1"); shift
done
if [ ${#lines[@]} -eq 0 ]; then lines=("${ALL_LINES[@]}"); fi

SMOKE=(
  # What every reach into PyFlink's, py4j's, Beam's, pemja's, asyncio's and pydantic's
  # internals assumes still holds in this line's versions (no JVM; the compat modules).
  "tests/runtime/compat"
  "tests/compat"
  # The fault matrix's core cases: a failure at a model call, at a tool call and in an action
  # after a model call, with and without a store, direct and fused, parallelism 1 and 2.
  "e2e_tests/test_fault_matrix.py::test_every_input_exactly_once[model-ends_early-p2-sqlite-direct]"
  "e2e_tests/test_fault_matrix.py::test_every_input_exactly_once[tool-trickle-p1-no_store-fused]"
  "e2e_tests/test_fault_matrix.py::test_every_input_exactly_once[action_after_model-ends_early-p1-sqlite-fused]"
  "e2e_tests/test_fault_matrix.py::test_every_input_exactly_once[drain-ends_early-p2-no_store-direct]"
  # Restore from a checkpoint with a durable store: no model call is made twice.
  "e2e_tests/test_durable_restart.py"
  # The README's path: local runner, mini-cluster, session cluster, savepoint and restore.
  "e2e_tests/test_newcomer_path.py::test_newcomer_path"
  # Upstream's quickstart as a Flink job on the mini-cluster.
  "e2e_tests/test_upstream_quickstart.py::test_quickstart_as_a_flink_job[workflow_single_agent_example.py]"
  # Two jobs one after the other on one standalone session cluster (one TaskManager).
  "e2e_tests/test_many_jobs.py::TestOneSessionCluster::test_jobs_one_after_another"
  # Runs parked for a person's approval (keyed state and a processing-time timer) across a
  # restart from a checkpoint.
  "e2e_tests/test_approvals_restore.py"
  # Kafka in and out with the line's connector (tools/kafka/connector.sh), exactly once.
  "e2e_tests/test_kafka_fault_matrix.py::test_every_input_answered_exactly_once_through_kafka[action_before_model-p2-no_store]"
)

# Installed next to the project: the smoke set's test tools only. Not the `dev` extra: its
# provider SDKs and OpenTelemetry exporter want a newer protobuf than Flink 1.20's Beam
# (<4.24) allows, and pip spends many minutes backtracking before it finds versions that fit.
# setuptools<80.9: apache-flink 1.20 lets pip pick setuptools 81, whose pkg_resources
# warns on import, and its Beam imports it in every Python worker: the warning would land in
# the TaskManager's output (docs/deployment.md#flink-versions says so for users).
TOOLS=("pytest>=8" "pytest-asyncio>=0.23" "hypothesis>=6.100" "setuptools<80.9")

# A venv is remade when pyproject.toml or what is installed next to it changed.
stamp_of() { { cat pyproject.toml; echo "${TOOLS[*]}"; } | sha256sum | cut -d' ' -f1; }

status=0
summary=()
for line in "${lines[@]}"; do
  venv="$VENVS/$line"
  started=$(date +%s)
  if [ ! -x "$venv/bin/pytest" ] || [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$(stamp_of)" ]; then
    echo "== Flink $line: installing into $venv"
    if [ ! -x "$venv/bin/python" ]; then
      "$PYTHON" -m venv "$venv"
      "$venv/bin/python" -m pip install -q --upgrade pip
    fi
    # ollama: upstream's quickstart talks to an (offline) Ollama; kafka: the Kafka test's client
    extras="postgres,ollama,kafka"
    if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null 2>&1; then extras="$extras,java"; fi
    "$venv/bin/python" -m pip install -q "apache-flink==$line.*" -e ".[$extras]" "${TOOLS[@]}"
    stamp_of >"$venv/.stamp"
  fi
  installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("apache-flink"))')
  made=$(date +%s)
  echo "== Flink $line: apache-flink $installed, $("$venv/bin/python" --version)"
  if "$venv/bin/python" -m pytest -q -p no:cacheprovider "${SMOKE[@]}" "$@"; then
    result=passed
  else
    result=FAILED; status=1
  fi
  ended=$(date +%s)
  summary+=("Flink $line (apache-flink $installed): $result; venv $((made - started)) s, tests $((ended - made)) s")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
