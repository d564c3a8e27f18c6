#!/usr/bin/env bash
# The two commands of the README, plus `down`.
#   ./cdc demo   install everything, start the stack (Redis, Kafka, MongoDB emulator, PostgreSQL, MariaDB) and the
#                platform with three demo connectors (MongoDB, PostgreSQL, MariaDB); the first run takes ~5-10 min
#   ./cdc test   install everything and run the whole test suite against the real stack (45-70 min; pytest args ok;
#                CDC_TEST_WORKERS=N runs N test files at a time)
#   ./cdc down   stop everything `demo` started
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-.venv/bin/python}"   # the project-local venv scripts/install.sh creates
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; }
command="${1:-help}"; shift || true
case "$command" in
  demo) bash scripts/install.sh; exec "$PYTHON" -m devstack demo "$@" ;;
  test) bash scripts/install.sh; exec "$PYTHON" -m tests.run_tests "$@" ;;
  down) [ -x "$PYTHON" ] || command -v "$PYTHON" >/dev/null || { echo "nothing installed yet"; exit 0; }
        exec "$PYTHON" -m devstack down --all ;;
  help|-h|--help) usage ;;
  *) echo "./cdc: unknown command '$command'" >&2; usage >&2; exit 2 ;;
esac
