#!/usr/bin/env bash
# Sets up what the tests need (Debian packages when missing, the virtualenv) and runs them all.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/pipeline -k segment`.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
# Browser tests drive Debian's Chromium through Playwright (no `playwright install` download).
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "The tests need: ${missing[*]}. Install them (e.g. sudo apt-get install ${missing[*]}) and run again." >&2
    exit 1
  fi
fi
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
