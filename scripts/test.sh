#!/usr/bin/env bash
# Install (first time) and run the full test suite: lint, types, then the tests on SQLite and on PostgreSQL.
# PostgreSQL: PROXYPLANE_TEST_DATABASE_URL if set; else a throwaway server on loopback (installed from
# Debian's packages when missing and we are root). Set PROXYPLANE_SKIP_POSTGRES=1 to skip (not in CI).
# The two engine runs are independent processes on their own databases and temp dirs, so they run side
# by side (each keeps about one core busy); PROXYPLANE_TEST_SERIAL=1 runs them one after the other.
# Then the lean forms' oracle (issue 31): PROXYPLANE_LEAN_OFF_TESTS (the order, stock, wallet and storage
# tests) once more on PostgreSQL with PROXYPLANE_LEAN_STORAGE=0, so each lean form meets its plain twin;
# PROXYPLANE_LEAN_OFF_TESTS="" skips it, and it does not run when tests are named on the command line.
set -euo pipefail
cd "$(dirname "$0")/.."
lean_off_tests="${PROXYPLANE_LEAN_OFF_TESTS-tests/domains/orders tests/domains/stock tests/domains/wallet tests/storage}"
if [ "$#" -gt 0 ]; then lean_off_tests=""; fi

lean_off() {  # the plain path as the oracle of every lean form (PostgreSQL, after the engine runs)
  [ -n "$lean_off_tests" ] || return 0
  echo "== tests on PostgreSQL with the lean forms off: $lean_off_tests"
  # shellcheck disable=SC2086
  PROXYPLANE_LEAN_STORAGE=0 PROXYPLANE_TEST_DATABASE_URL="$1" python -m pytest -q $lean_off_tests
}
bash scripts/install.sh
export PATH="$PWD/.venv/bin:$PATH"
# Browser tests drive Debian's Chromium (never `playwright install`): install it when missing and root.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -qq chromium || (apt-get update -qq && apt-get install -y -qq chromium)) >/dev/null
fi

echo "== ruff"; ruff check .
echo "== mypy"; mypy

pg_url="${PROXYPLANE_TEST_DATABASE_URL:-}"
if [ -z "$pg_url" ]; then
  if [ "${PROXYPLANE_SKIP_POSTGRES:-}" = 1 ] && [ "${CI:-}" != true ]; then
    echo "== tests on SQLite (PostgreSQL run skipped: PROXYPLANE_SKIP_POSTGRES=1)"
    exec env -u PROXYPLANE_TEST_DATABASE_URL python -m pytest "$@"
  fi
  pg_url=$(bash scripts/postgres.sh start)
  trap 'bash scripts/postgres.sh stop' EXIT
fi

if [ "${PROXYPLANE_TEST_SERIAL:-}" = 1 ]; then
  echo "== tests on SQLite"
  env -u PROXYPLANE_TEST_DATABASE_URL python -m pytest "$@"
  echo "== tests on PostgreSQL ($pg_url)"
  PROXYPLANE_TEST_DATABASE_URL="$pg_url" python -m pytest "$@"
  lean_off "$pg_url"
  exit 0
fi

work=$(mktemp -d)
echo "== tests on SQLite and on PostgreSQL ($pg_url), side by side (logs follow when both end)"
env -u PROXYPLANE_TEST_DATABASE_URL python -m pytest --basetemp="$work/sqlite" "$@" >"$work/sqlite.log" 2>&1 &
sqlite_pid=$!
PROXYPLANE_TEST_DATABASE_URL="$pg_url" python -m pytest --basetemp="$work/postgres" "$@" \
  >"$work/postgres.log" 2>&1 &
postgres_pid=$!
sqlite_rc=0; wait "$sqlite_pid" || sqlite_rc=$?
postgres_rc=0; wait "$postgres_pid" || postgres_rc=$?
echo "== tests on SQLite (exit $sqlite_rc)"; cat "$work/sqlite.log"
echo "== tests on PostgreSQL (exit $postgres_rc)"; cat "$work/postgres.log"
rm -rf "$work"
[ "$sqlite_rc" = 0 ] && [ "$postgres_rc" = 0 ] || exit 1
lean_off "$pg_url"
