#!/usr/bin/env bash
# The two commands of the README, plus `down`.
#   ./cdc demo   install everything, start the stack and the platform with a demo connector
#   ./cdc test   install everything and run the whole test suite against the real stack
#   ./cdc down   stop everything `demo` started
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-.venv/bin/python}"   # the project-local venv scripts/install.sh creates
command="${1:-help}"; shift || true
case "$command" in
  demo) bash scripts/install.sh; exec "$PYTHON" -m devstack demo "$@" ;;
  test) bash scripts/install.sh; exec "$PYTHON" -m pytest "$@" ;;
  down) [ -x "$PYTHON" ] || command -v "$PYTHON" >/dev/null || { echo "nothing installed yet"; exit 0; }
        exec "$PYTHON" -m devstack down --all ;;
  *) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; [ "$command" = help ] ;;
esac
