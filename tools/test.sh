#!/usr/bin/env bash
# The project's checks: lint, format, types, then every test (unit and mini-cluster).
# Usage: tools/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
bin="$VENV/bin"
if [ ! -x "$bin/pytest" ]; then
  bash tools/setup.sh
fi

echo "== ruff check"; "$bin/ruff" check .
echo "== ruff format --check"; "$bin/ruff" format --check .
echo "== pyright"; "$bin/pyright" --pythonpath "$bin/python"
echo "== pytest"; "$bin/pytest" -q -p no:cacheprovider "$@"
