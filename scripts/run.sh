#!/usr/bin/env bash
# Sets factsite up (first time only) and starts it at http://127.0.0.1:8000.
# With REDIS_URL set (environment or .env) it also starts a Celery worker on Redis, with the beat
# that sends the sweeper (--beat); without it,
# runs execute on a worker inside the web process, so nothing else needs to be installed.
# The web server is gunicorn, one process with WEB_THREADS threads (factsite/gunicorn_conf.py).
# Ctrl-C or SIGTERM stops everything it started (the server ends its own CPU pool).
set -euo pipefail
# Started with SIGINT ignored (in the background by a script, as some CI runners start jobs), bash
# can neither trap it nor give it back to what it starts, and Ctrl-C would stop nothing as it
# should: start again with SIGINT at its default, as from a terminal (and SIGPIPE and SIGXFSZ,
# which Python ignores, too).
if [ -n "$(trap -p INT)" ]; then
  exec "${PYTHON:-python3}" -c 'import os, signal, sys
for signum in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(signum, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' bash "$0" "$@"
fi
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -f .env ]; then set -a; . ./.env; set +a; fi
.venv/bin/python manage.py migrate --no-input
.venv/bin/python manage.py collectstatic --no-input -v0

started=()
stop() {
  [ ${#started[@]} -gt 0 ] || return 0
  kill -TERM "${started[@]}" 2>/dev/null || true
  wait "${started[@]}" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${REDIS_URL:-}" ]; then
  .venv/bin/celery -A factsite worker --pool=threads --concurrency="${CELERY_CONCURRENCY:-16}" \
    --without-gossip --without-mingle --without-heartbeat --loglevel=INFO --beat &
  started+=($!)
fi
echo "factsite: http://127.0.0.1:${PORT:-8000}/"
# gunicorn, one process with WEB_THREADS threads (factsite/gunicorn_conf.py): runserver reset
# connections under a burst of submissions.
.venv/bin/python -m gunicorn factsite.wsgi -c python:factsite.gunicorn_conf -b "127.0.0.1:${PORT:-8000}" &
started+=($!)
# Until either ends (a signal ends the wait at once, through the traps above).
wait -n
