"""The Celery app, and nothing of factsite's own: the worker's start and stop, and the worker
inside the web process when there is no Redis, are in verification/worker/embedded.py; the tasks
are found by autodiscovery (verification/tasks.py) and beat names them by their dotted names."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")
# A starting `celery worker` runs Django's system checks unless this is set: they import the
# whole web side (URLs, the API's schemas; 0.6 s of CPU) for a process that serves no page, and
# `manage.py migrate`, which every start runs first (scripts/run.sh, docker-compose.yml), has
# run them on the same code. Set CELERY_SKIP_CHECKS= (empty) to have the worker run them too.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("factsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
