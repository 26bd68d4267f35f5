#!/usr/bin/env bash
# Sets up what the tests need (Debian packages when missing, the virtualenv) and runs them all on
# SQLite, then the engine, API and recovery tests again on PostgreSQL: a throwaway cluster on
# 127.0.0.1, removed at the end. Without PostgreSQL (and no root to install it) only the SQLite
# run happens, and the script says so. Extra arguments go to pytest; naming tests runs just those:
#   bash scripts/test.sh tests/pipeline -k segment        # on SQLite
#   bash scripts/test.sh --postgres-only [tests/test_api.py -k retry]
set -euo pipefail
cd "$(dirname "$0")/.."
# Ctrl-C stops the script, not just the pytest run it interrupts (the EXIT trap cleans up).
trap 'exit 130' INT
trap 'exit 143' TERM

postgres_only=0
if [ "${1:-}" = --postgres-only ]; then
  postgres_only=1
  shift
fi
names_tests=0
for arg in "$@"; do [ -e "${arg%%::*}" ] && names_tests=1; done
# The tests that lean on the database hardest: concurrent workers, joins, transactions.
postgres_tests=(tests/test_engine.py tests/test_api.py tests/test_judging_turn.py)
[ -f tests/test_recovery.py ] && postgres_tests+=(tests/test_recovery.py)
# Who runs a run (owners, adoption) and stopping, with real processes on the shared database.
[ -f tests/test_lifecycle.py ] && postgres_tests+=(tests/test_lifecycle.py)
want_postgres=1
[ $names_tests = 1 ] && [ $postgres_only = 0 ] && want_postgres=0

# initdb and pg_ctl: on PATH, or Debian's newest version, which keeps them off PATH.
pg_bindir() {
  local initdb
  initdb=$(command -v initdb || printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)
  if [ -x "$initdb" ]; then dirname "$(readlink -f "$initdb")"; fi
}
is_root() { [ "$(id -u)" = 0 ]; }

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
# Browser tests drive Debian's Chromium through Playwright (no `playwright install` download).
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ] && ! { is_root && command -v apt-get >/dev/null; }; then
  echo "The tests need: ${missing[*]}. Install them (e.g. sudo apt-get install ${missing[*]}) and run again." >&2
  exit 1
fi
[ $want_postgres = 1 ] && [ -z "$(pg_bindir)" ] && is_root && command -v apt-get >/dev/null && missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash scripts/setup.sh

pg_bin=$(pg_bindir)
if [ $want_postgres = 1 ] && [ -z "$pg_bin" ]; then
  if [ $postgres_only = 1 ]; then
    echo "PostgreSQL is not installed (e.g. sudo apt-get install postgresql)." >&2
    exit 1
  fi
  echo "PostgreSQL is not installed: the tests run on SQLite only (install postgresql to run them on both)."
  want_postgres=0
fi

# The code's shape and style fail the run as a test would: ruff's rules, and the import
# contracts in pyproject.toml (layers, no circles, a pipeline without Django).
if [ $names_tests = 0 ] && [ $postgres_only = 0 ]; then
  echo "--- ruff and import-linter"
  .venv/bin/ruff check . && .venv/bin/ruff format --check . >/dev/null && .venv/bin/lint-imports --no-cache >/dev/null ||
    { .venv/bin/ruff format --check . ; .venv/bin/lint-imports --no-cache; echo "ruff or import-linter failed (above)." >&2; exit 1; }
fi

status=0
if [ $postgres_only = 0 ]; then
  DATABASE_URL= .venv/bin/python -m pytest "$@" || status=$?
fi
[ $want_postgres = 1 ] || exit $status

as_postgres() { if is_root; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_dir=$(mktemp -d /tmp/factsite-pg.XXXXXX)  # /tmp: the postgres user must reach it
stop_postgres() {
  as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
trap stop_postgres EXIT
if is_root; then chown postgres "$pg_dir"; fi
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Trust on loopback and durability off: a cluster that lives for one test run.
if ! as_postgres "$pg_bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust -E UTF8 --locale=C -N \
  >"$pg_dir/initdb.log" 2>&1 ||
  ! as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 -o \
    "-c listen_addresses=127.0.0.1 -p $port -k $pg_dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null; then
  cat "$pg_dir"/*.log >&2
  echo "Could not start a PostgreSQL cluster with $pg_bin." >&2
  exit 1
fi
pg_args=("$@")
[ $names_tests = 1 ] || pg_args=("${postgres_tests[@]}" "$@")
echo "--- on PostgreSQL $("$pg_bin/pg_ctl" --version | awk '{print $3}') (127.0.0.1:$port): ${pg_args[*]}"
pg_status=0
DATABASE_URL="postgres://postgres@127.0.0.1:$port/factsite" .venv/bin/python -m pytest "${pg_args[@]}" || pg_status=$?
# Options alone (`-k segment`) may select no database test: that is not a failure.
[ $pg_status = 5 ] && [ $postgres_only = 0 ] && pg_status=0
[ $status != 0 ] && exit $status
exit $pg_status
