#!/usr/bin/env bash
# Sets everything up (.venv), then runs the example agent as a PyFlink job on a local
# mini-cluster. With ANTHROPIC_API_KEY or OPENAI_API_KEY set it calls that provider; otherwise
# an offline mock model answers, so no key and no network are needed.
# Usage: tools/demo.sh [--local]   (--local: the pure-Python local runner instead of Flink)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"

bash tools/setup.sh
mode="--flink"
if [ "${1:-}" = "--local" ]; then
  mode=""
fi
exec "$VENV/bin/python" examples/support_triage.py $mode
