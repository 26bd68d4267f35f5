"""The only settings module. Everything configurable comes from environment variables
(each documented in docs/configuration.md, and .env.example); the defaults run on a laptop with nothing installed."""

import os
import secrets
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from verification.pipeline.domains import InvalidDomain, parse_domain_list

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
# A developer's .env beside manage.py fills in what the environment leaves unset. The image sets
# DJANGO_READ_DOT_ENV_FILE=0: there only the environment the container was started with counts,
# never a file that found its way into the image (a baked .env once turned on ALLOW_PRIVATE_FETCH).
if env.bool("DJANGO_READ_DOT_ENV_FILE", default=True):
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
    # /healthz and /readyz, answered before anything else: a container healthcheck asks for them on
    # 127.0.0.1 over http, which the allowed hosts and the https redirect would refuse.
    "verification.worker.health.HealthMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before the CSRF check, which reads the form (and so the whole upload).
    "verification.access.limits.UploadSizeMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # The API has no CSRF token: it takes only JSON bodies, which other sites cannot send (see Limits).
    "verification.access.limits.JsonOnlyApiMiddleware",
    # A trail's body may pass DATA_UPLOAD_MAX_MEMORY_SIZE, up to what TRAIL_MAX_CHARS allows.
    "verification.access.limits.TrailBodyMiddleware",
    "verification.access.limits.SpendingLimitMiddleware",
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
        "OPTIONS": {
            "context_processors": ["django.template.context_processors.request"],
            # The pages' template tags live with the pages (verification/web/), not in the app's
            # top-level templatetags/ where Django would look by itself.
            "libraries": {
                "factsite": "verification.web.templatetags.factsite",
                "reporting": "verification.web.templatetags.reporting",
                "text_languages": "verification.web.templatetags.text_languages",
            },
        },
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
    "filters": {"refusals_without_traceback": {"()": "factsite.logs.RefusalsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # A 403 (or another 4xx) is logged as its one line, "Forbidden (Permission denied): /v/…/cancel".
    "loggers": {"django.request": {"filters": ["refusals_without_traceback"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# --- Celery: Redis when REDIS_URL is set, otherwise an in-process worker on a memory broker.
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_EMBEDDED_WORKER = not REDIS_URL
CELERY_EMBEDDED_CONCURRENCY = env.int("CELERY_EMBEDDED_CONCURRENCY", default=8)
# Processes per worker for parsing pages and ranking passages (verification/worker/cpu.py); 0 runs
# that work in the worker's own threads.
CPU_PROCESSES = int(env.str("CPU_PROCESSES", default="") or os.cpu_count() or 1)
# Seconds one page may take to be read, or its passages chosen, in that pool: past it the item
# fails with the reason ("the PDF took too long to read") and the process goes on (or is
# replaced). A 1 MB web page takes well under a second; hostile documents take minutes.
CPU_TIME_LIMIT = env.float("CPU_TIME_LIMIT", default=30.0)
# Sentences whose claims one LLM call finds (they share its paragraphs and instructions, and are
# judged together); fewer for a small local model that loses track of long answers.
DECOMPOSE_CHUNK_SENTENCES = max(1, env.int("DECOMPOSE_CHUNK_SENTENCES", default=10))

# --- Trails: a text checked through the steps that made it (docs/trails.md; VeriTrail).
# Not Fully Supported verdicts in a row after which a claim stops: 3 gave VeriTrail its best F1,
# 1 its best recall of unsupported claims.
TRAIL_Q = max(1, env.int("TRAIL_Q", default=3))
# What one trail may hold: nodes, and characters of all its given texts together. A trail's body
# (API) or file (form) may be as large as these allow (access/limits.trail_body_limit). 2,000,000
# characters is a long book, segmented in about 3 s.
TRAIL_MAX_NODES = env.int("TRAIL_MAX_NODES", default=500)
TRAIL_MAX_CHARS = env.int("TRAIL_MAX_CHARS", default=2_000_000)
# Distinct texts one claim may read on its way down (the latest verdict stands past it).
TRAIL_MAX_NODE_VISITS = env.int("TRAIL_MAX_NODE_VISITS", default=40)
# What one evidence-selection prompt may hold (a small local model has a small context): a
# longer text is split over several prompts.
TRAIL_PROMPT_CHARS = env.int("TRAIL_PROMPT_CHARS", default=12_000)
TRAIL_PROMPT_SENTENCES = env.int("TRAIL_PROMPT_SENTENCES", default=150)
# A text of more than TRAIL_RANK_ABOVE_SENTENCES sentences is ranked against the claim first and
# only its TRAIL_RANK_TOP_K best sentences (with their neighbours) go to the model; 0 sends every
# sentence, as VeriTrail does (several times the tokens).
TRAIL_RANK_TOP_K = env.int("TRAIL_RANK_TOP_K", default=20)
TRAIL_RANK_ABOVE_SENTENCES = env.int("TRAIL_RANK_ABOVE_SENTENCES", default=40)
# Claims of a run waiting for the same text asked about it in one call (1: a call per claim, as
# VeriTrail does): the text is read once for them all.
TRAIL_BATCH_CLAIMS = max(1, env.int("TRAIL_BATCH_CLAIMS", default=8))
# How long a claim's round waits before asking while other claims of the run are behind it (they
# may reach the same texts and share the call); 0 never waits (more calls, less latency).
TRAIL_BATCH_WAIT_S = env.float("TRAIL_BATCH_WAIT_S", default=1.25)
# No ack emulation on Redis: a message leaves the queue when a worker takes it, and what a dead
# worker held is resumed from the database by the sweeper below. With emulation, a celery 5.7
# worker that held unacknowledged messages when the Redis connection dropped exited
# ("Unrecoverable error: AttributeError: 'NoneType' object has no attribute 'hostname'", while
# restoring them on the closed connection) instead of reconnecting (tests/test_recovery.py).
# Two message priorities (worker/base.py: URGENT 0, ROUTINE 9), each a Redis list of its own, the
# urgent one read first: the tasks a dead worker had taken, sent again, and the sweeper that sends
# them go ahead of the backlog.
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"ack_emulation": False, "priority_steps": [0, 9]} if REDIS_URL else {"polling_interval": 0.01}
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The sweeper: a run with no sign of life (workers beat every 5 s while they hold its tasks)
# for RUN_STALLED_AFTER seconds has its unfinished items enqueued again. Celery beat sends it
# every SWEEP_INTERVAL seconds in deployments; the embedded worker runs it on a timer.
RUN_STALLED_AFTER = env.int("RUN_STALLED_AFTER", default=30)
SWEEP_INTERVAL = env.int("SWEEP_INTERVAL", default=10)
CELERY_BEAT_SCHEDULE = {
    "resume-stalled-runs": {
        "task": "verification.tasks.sweep",
        "schedule": SWEEP_INTERVAL,
        # Ahead of any backlog (worker/base.URGENT): it sends again what a dead worker had taken.
        # No expiry: a sweep that finds nothing is cheap.
        "options": {"priority": 0},
    },
    "delete-old-runs": {"task": "verification.tasks.delete_old_runs", "schedule": 24 * 3600},
}
# Where beat keeps its schedule; beside it, a file it touches on every tick tells its healthcheck
# that it is alive (verification/worker/health.py). The image keeps it in /tmp: /app is read-only to its user.
CELERY_BEAT_SCHEDULE_FILENAME = env.str("BEAT_SCHEDULE_FILE", default="") or str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULER = "verification.worker.health:BeatScheduler"

# --- Cache: shared by the web process and the workers. It holds search results, page texts,
# claims and judgements across runs (an edited text only pays for what changed).
if env.str("CACHE_URL", default=""):
    CACHES = {"default": env.cache_url("CACHE_URL")}
elif REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    # SQLite files (diskcache, shared safely by threads and processes), bounded by size and
    # evicting the oldest writes first. Django's FileBasedCache keeps only 300 entries by default
    # (one long run evicts the last), and lists its whole directory on every write (36 ms a write
    # at 20,000 entries here, against 0.2 ms).
    CACHES = {
        "default": {
            "BACKEND": "diskcache_community.DjangoCache",
            "LOCATION": str(VAR_DIR / "cache"),
            "OPTIONS": {"size_limit": env.int("CACHE_MAX_BYTES", default=2**30)},
        }
    }
CACHE_TTL = env.int("CACHE_TTL", default=7 * 24 * 3600)


def _domain_list(name: str) -> list[str]:
    """A comma list of domains, canonical (lowercase, no "www."); a typo stops the start with
    its name rather than leaving a site unblocked."""
    try:
        return parse_domain_list(env.str(name, default="").split(","))
    except InvalidDomain as error:
        raise ImproperlyConfigured(f"{name}: {error}") from error


# --- Outside services. Every endpoint has a base-URL variable so tests and self-hosters
# can point it anywhere.
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="https://api.openai.com/v1")
# gpt-5-mini: OpenAI's deprecations page retires the GPT-4-era snapshots through 2026.
LLM_MODELS = env.str("LLM_MODELS", default="gpt-5-mini")
# The reasoning effort asked of a model that reasons (issue 37): "lowest" sends the lowest its
# family takes (gpt-5: minimal, gpt-5.1 and later: none, others: none, learned from a refusal);
# a level (none, minimal, low, medium, high) sends that one; "off" sends none.
LLM_REASONING_EFFORT = env.str("LLM_REASONING_EFFORT", default="lowest")
# The tokens a model that thinks may spend thinking in one call, on top of its answer's cap.
LLM_REASONING_TOKENS = max(0, env.int("LLM_REASONING_TOKENS", default=4096))
# The prompt and answer tokens the model's server holds (0: what the server reports or a
# refusal says); prompts are sized to fit. Per model: `;context=N` in LLM_MODELS.
LLM_CONTEXT_TOKENS = max(0, env.int("LLM_CONTEXT_TOKENS", default=0))
# How long what a model's server takes (learned from refusals, or by check_llm) is kept.
LLM_CAPABILITIES_TTL = env.int("LLM_CAPABILITIES_TTL", default=7 * 24 * 3600)
LLM_TIMEOUT = env.float("LLM_TIMEOUT", default=60.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=3)
# Seconds after a call's first attempt in which retries may still start (429s, 5xx, timeouts).
LLM_RETRY_BUDGET = env.float("LLM_RETRY_BUDGET", default=20.0)
# Requests sent to one model's server at once, by all the threads (and, with Redis, all the
# processes) together; waiting ones go a run's first sentences first. 0: any number (an API);
# 1 for a local server that answers one at a time (llama.cpp's server, Ollama).
LLM_CONCURRENCY = max(0, env.int("LLM_CONCURRENCY", default=0))
# Quick mode (issue 29): a claim the model labels true or false from its own knowledge with at
# least this probability (from the label token's logprob) is not searched. FaStfact's 0.995.
QUICK_MIN_PROBABILITY = env.float("QUICK_MIN_PROBABILITY", default=0.995)
SERPER_API_KEY = env.str("SERPER_API_KEY", default="")
SERPER_BASE_URL = env.str("SERPER_BASE_URL", default="https://google.serper.dev")
SEARCH_TIMEOUT = env.float("SEARCH_TIMEOUT", default=15.0)
# A claim with fewer than this many of its web results read as pages (not refused, not only a
# snippet) is searched once more with another query (its own text); 0 never searches again. A
# run keeps the value it started with (inputs/forms.py), so a resumed run decides as it began.
SECOND_SEARCH_BELOW = env.int("SECOND_SEARCH_BELOW", default=2)
# The decomposition writes a web search query for each claim; False: each claim is searched by
# its own words (as VeriScore does), a third less for a local model to write. Kept per run.
WRITE_SEARCH_QUERIES = env.bool("WRITE_SEARCH_QUERIES", default=True)
# Search providers in the order they are tried (verification/clients/providers.py): one without its key
# or address is skipped, one that fails hands over to the next. Wikipedia, keyless, comes last,
# so a fresh clone with only a language model can verify something.
SEARCH_PROVIDERS = [
    name.strip().lower() for name in env.str("SEARCH_PROVIDERS", default="").split(",") if name.strip()
] or ["serper", "brave", "tavily", "searxng", "wikipedia"]
BRAVE_API_KEY = env.str("BRAVE_API_KEY", default="")
BRAVE_BASE_URL = env.str("BRAVE_BASE_URL", default="") or "https://api.search.brave.com"
TAVILY_API_KEY = env.str("TAVILY_API_KEY", default="")
TAVILY_BASE_URL = env.str("TAVILY_BASE_URL", default="") or "https://api.tavily.com"
# A SearXNG instance of your own (its JSON format switched on); empty: not used.
SEARXNG_URL = env.str("SEARXNG_URL", default="")
WIKIPEDIA_BASE_URL = env.str("WIKIPEDIA_BASE_URL", default="") or "https://en.wikipedia.org/w/api.php"
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="sentence-transformers/all-MiniLM-L6-v2")
ALLOW_PRIVATE_FETCH = env.bool("ALLOW_PRIVATE_FETCH", default=False)
FETCH_TIMEOUT = env.float("FETCH_TIMEOUT", default=10.0)
FETCH_MAX_BYTES = env.int("FETCH_MAX_BYTES", default=3_000_000)
# A PDF cut short cannot be read, so PDFs have their own limit (refused over it, not truncated),
# and only their first PDF_MAX_PAGES pages are read.
PDF_MAX_BYTES = env.int("PDF_MAX_BYTES", default=20_000_000)
PDF_MAX_PAGES = env.int("PDF_MAX_PAGES", default=50)
# Evidence published more than this many years ago is flagged as possibly out of date.
STALE_AFTER_YEARS = env.int("STALE_AFTER_YEARS", default=5)
# Domain lists (comma lists; a domain covers its subdomains): search results on a blocked domain,
# or outside the allowed ones when any are listed, are never read nor counted. A run stores the
# lists it started with, so its result says what it left out even after they change.
BLOCKED_DOMAINS = _domain_list("BLOCKED_DOMAINS")
ALLOWED_DOMAINS = _domain_list("ALLOWED_DOMAINS")
MAX_TEXT_CHARS = env.int("MAX_TEXT_CHARS", default=20_000)
# A run with no progress for this long (in spite of the sweeper) is failed with that reason.
RUN_TIMEOUT = env.int("RUN_TIMEOUT", default=1800)
# `manage.py cleanup` deletes runs that finished more than this many days ago; 0 keeps them all.
RUN_RETENTION_DAYS = env.int("RUN_RETENTION_DAYS", default=30)

# --- MCP (docs/mcp.md). `manage.py mcp` (stdio) is one client: its owner token, which alone may
# cancel its runs (a new one, told on standard error, when unset), and the site its permalinks
# point to. Over HTTP (/mcp) both come from the request, as for the API.
MCP_CLIENT_TOKEN = env.str("MCP_CLIENT_TOKEN", default="")
MCP_SITE_URL = env.str("MCP_SITE_URL", default="http://127.0.0.1:8000")

# --- Limits: what one client may ask of the server (docs/api.md, "Limits"). 0 turns a limit off.
# Runs one client address may start per hour, counted from the runs in the database (so across
# web processes, and with the cache down); the command line counts as one client.
RUNS_PER_HOUR = env.int("RUNS_PER_HOUR", default=30)
# What else spends, per client and hour (summed over `Spending` rows, so across web processes):
# calls of the step API that reach a model, a search or a page (/api/steps/…), retries of a run
# (form or API), and megabytes of uploaded files.
STEP_CALLS_PER_HOUR = env.int("STEP_CALLS_PER_HOUR", default=300)
RETRIES_PER_HOUR = env.int("RETRIES_PER_HOUR", default=30)
UPLOAD_MB_PER_HOUR = env.int("UPLOAD_MB_PER_HOUR", default=300)
# How many proxies in front of the app append to X-Forwarded-For: the client address is the
# entry the outermost appended. 0: the connection's own address (REMOTE_ADDR).
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
# Claims one run checks at most. Every sentence costs at least one, so a text with more sentences
# is refused up front; during a run, a sentence whose claims no longer fit is not checked.
MAX_CLAIMS_PER_RUN = env.int("MAX_CLAIMS_PER_RUN", default=60)
# The user's own documents (URLs and uploads) one run may take, and the size of one upload.
MAX_DOCUMENTS = env.int("MAX_DOCUMENTS", default=10)
MAX_UPLOAD_BYTES = env.int("MAX_UPLOAD_BYTES", default=10 * 2**20)
# Distinct addresses a text's own citations may have read per run (issue 34), first cited first;
# the citations of the others are marked as not read, with this limit named. 0: no limit.
MAX_CITED_SOURCES = env.int("MAX_CITED_SOURCES", default=20)


# --- HTTPS and security headers (docs/deploying.md). Off by default, so `runserver` and
# docker-compose over plain http work on a fresh clone (a secure-only CSRF cookie would never
# come back over http, and every form would fail). Served over https, set DJANGO_HTTPS=1 and
# HSTS; `manage.py check --deploy` then has nothing to warn about.
def _env_or(name: str, cast, default):
    """The variable cast, or the default when it is unset or empty (as in a copied .env.example)."""
    return cast(name) if env.str(name, default="") else default


HTTPS = _env_or("DJANGO_HTTPS", env.bool, False)
SECURE_SSL_REDIRECT = _env_or("DJANGO_SECURE_SSL_REDIRECT", env.bool, HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE = _env_or("DJANGO_SECURE_COOKIES", env.bool, HTTPS)
SECURE_HSTS_SECONDS = _env_or("DJANGO_SECURE_HSTS_SECONDS", env.int, 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_or("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", env.bool, False)
SECURE_HSTS_PRELOAD = _env_or("DJANGO_SECURE_HSTS_PRELOAD", env.bool, False)
# Behind a proxy that terminates TLS: the header it sets to "https" (e.g. X-Forwarded-Proto).
# Only when the proxy always sets it: a client could send it too.
_proxy_ssl_header = env.str("DJANGO_SECURE_PROXY_SSL_HEADER", default="")
if _proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
# Content-Security-Policy (django-csp): our pages load only their own files and run no inline
# script or style; htmx's inline indicator style is turned off in base.html. Outermost but for
# SecurityMiddleware, so error responses of the middleware inside it carry the header too.
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1, "csp.middleware.CSPMiddleware")
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
    }
}
