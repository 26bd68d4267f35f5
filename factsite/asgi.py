import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")
application = get_asgi_application()

# Without Redis the worker lives in this process (see wsgi.py).
from verification.worker.embedded import ensure_embedded_worker  # noqa: E402
from verification.worker.lifecycle import preload_in_background  # noqa: E402

ensure_embedded_worker()
preload_in_background()
