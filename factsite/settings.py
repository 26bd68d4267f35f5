"""The only settings module. Everything configurable comes from environment variables
(documented in README.md and .env.example); the defaults run on a laptop with nothing installed."""

import os
import secrets
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")

DEBUG = env.bool("DJANGO_DEBUG", default=False)


def _local_secret_key() -> str:
    """A random key kept in var/ so a fresh clone is secure without configuration and
    sessions/CSRF survive restarts. Deployments set DJANGO_SECRET_KEY instead."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="") or _local_secret_key()
ALLOWED_HOSTS = [h for h in env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"]) if h]
CSRF_TRUSTED_ORIGINS = [o for o in env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[]) if o]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",
    "verification",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "factsite.urls"
WSGI_APPLICATION = "factsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]

# An empty variable (as in a copied .env.example) means the default, like an unset one.
DATABASES = {
    "default": env.db_url_config(env.str("DATABASE_URL", default="") or f"sqlite:///{VAR_DIR / 'factsite.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    # Keep connections across requests and tasks: a worker thread runs many short tasks, and
    # opening a PostgreSQL connection for each costs more than the task's own queries.
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=300)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(exist_ok=True)
    # Many worker threads write at once: WAL lets readers proceed, IMMEDIATE transactions
    # queue writers instead of failing with "database is locked" on lock upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not shared-cache memory, so worker threads in tests wait on locks instead of
    # failing; one per test process, so two test runs on one checkout do not collide.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_factsite_{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en"

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve app and project static files straight from their folders too, so a fresh clone works
# before (or without) collectstatic.
WHITENOISE_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# --- Celery: Redis when REDIS_URL is set, otherwise an in-process worker on a memory broker.
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_EMBEDDED_WORKER = not REDIS_URL
CELERY_EMBEDDED_CONCURRENCY = env.int("CELERY_EMBEDDED_CONCURRENCY", default=8)
CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01} if not REDIS_URL else {}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Cache: shared by the web process and the workers. It holds search results, page texts,
# claims and judgements across runs (an edited text only pays for what changed).
if env.str("CACHE_URL", default=""):
    CACHES = {"default": env.cache_url("CACHE_URL")}
elif REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": VAR_DIR / "cache"}
    }
CACHE_TTL = env.int("CACHE_TTL", default=7 * 24 * 3600)

# --- Outside services. Every endpoint has a base-URL variable so tests and self-hosters
# can point it anywhere.
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="https://api.openai.com/v1")
LLM_MODELS = env.str("LLM_MODELS", default="gpt-4o-mini")
LLM_TIMEOUT = env.float("LLM_TIMEOUT", default=60.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=3)
SERPER_API_KEY = env.str("SERPER_API_KEY", default="")
SERPER_BASE_URL = env.str("SERPER_BASE_URL", default="https://google.serper.dev")
SEARCH_TIMEOUT = env.float("SEARCH_TIMEOUT", default=15.0)
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="sentence-transformers/all-MiniLM-L6-v2")
ALLOW_PRIVATE_FETCH = env.bool("ALLOW_PRIVATE_FETCH", default=False)
FETCH_TIMEOUT = env.float("FETCH_TIMEOUT", default=10.0)
FETCH_MAX_BYTES = env.int("FETCH_MAX_BYTES", default=3_000_000)
MAX_TEXT_CHARS = env.int("MAX_TEXT_CHARS", default=20_000)
# A run still unfinished this long after it started is failed when next looked at (lost work).
RUN_TIMEOUT = env.int("RUN_TIMEOUT", default=1800)
