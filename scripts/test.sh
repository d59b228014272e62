#!/usr/bin/env bash
# Install (first time) and run the full test suite: lint, types, tests on SQLite, then on PostgreSQL.
# PostgreSQL: PROXYPLANE_TEST_DATABASE_URL if set; else a throwaway server on loopback (installed from
# Debian's packages when missing and we are root). Set PROXYPLANE_SKIP_POSTGRES=1 to skip (not in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export PATH="$PWD/.venv/bin:$PATH"
# Browser tests drive Debian's Chromium (never `playwright install`): install it when missing and root.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -qq chromium || (apt-get update -qq && apt-get install -y -qq chromium)) >/dev/null
fi

echo "== ruff"; ruff check .
echo "== mypy"; mypy
echo "== tests on SQLite"
env -u PROXYPLANE_TEST_DATABASE_URL python -m pytest "$@"

if [ -n "${PROXYPLANE_TEST_DATABASE_URL:-}" ]; then
  echo "== tests on PostgreSQL ($PROXYPLANE_TEST_DATABASE_URL)"
  python -m pytest "$@"
  exit 0
fi
if [ "${PROXYPLANE_SKIP_POSTGRES:-}" = 1 ] && [ "${CI:-}" != true ]; then
  echo "== PostgreSQL run skipped (PROXYPLANE_SKIP_POSTGRES=1)"; exit 0
fi
url=$(bash scripts/postgres.sh start)
trap 'bash scripts/postgres.sh stop' EXIT
echo "== tests on PostgreSQL ($url)"
PROXYPLANE_TEST_DATABASE_URL="$url" python -m pytest "$@"
