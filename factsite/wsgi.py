import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")
application = get_wsgi_application()

# Without Redis the worker lives in this process: start it now, not at the first submission,
# so that runs a previous process left unfinished resume when the server starts.
from verification.worker.embedded import ensure_embedded_worker  # noqa: E402
from verification.worker.lifecycle import preload_in_background  # noqa: E402

ensure_embedded_worker()
preload_in_background()
