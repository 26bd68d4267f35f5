#!/usr/bin/env bash
# Sets factsite up (first time only) and starts it at http://127.0.0.1:8000.
# With REDIS_URL set (environment or .env) it also starts a Celery worker on Redis, with the beat
# that sends the sweeper (--beat); without it,
# runs execute on a worker inside the web process, so nothing else needs to be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -f .env ]; then set -a; . ./.env; set +a; fi
.venv/bin/python manage.py migrate --no-input
.venv/bin/python manage.py collectstatic --no-input -v0
if [ -n "${REDIS_URL:-}" ]; then
  .venv/bin/celery -A factsite worker --pool=threads --concurrency="${CELERY_CONCURRENCY:-16}" \
    --without-gossip --without-mingle --without-heartbeat --loglevel=INFO --beat &
  worker=$!
  trap 'kill $worker 2>/dev/null' EXIT
fi
echo "factsite: http://127.0.0.1:${PORT:-8000}/"
.venv/bin/python manage.py runserver "127.0.0.1:${PORT:-8000}"
