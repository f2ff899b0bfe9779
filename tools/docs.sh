#!/usr/bin/env bash
# The documentation site: the guides in docs/ and an API reference generated from the
# docstrings (mkdocs + mkdocstrings), built with warnings as errors (broken links and
# anchors, docstrings that do not match their signatures, unresolved cross-references).
# Usage: tools/docs.sh [build|serve] [extra mkdocs arguments]
#   build (default): writes the site to build/site
#   serve:           builds and serves it on http://127.0.0.1:8000, rebuilding on changes
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
bin="$VENV/bin"
if [ ! -x "$bin/python" ]; then
  bash tools/setup.sh
fi
if [ ! -x "$bin/mkdocs" ]; then
  "$bin/python" -m pip install -q -e ".[docs]"
fi

command="${1:-build}"
if [ $# -gt 0 ]; then shift; fi
case "$command" in
  build) exec "$bin/mkdocs" build --strict "$@" ;;
  serve) exec "$bin/mkdocs" serve --strict "$@" ;;
  *) echo "usage: tools/docs.sh [build|serve] [mkdocs arguments]" >&2; exit 2 ;;
esac
