# One image for every process of a deployment (docker-compose.yml): the web server (this CMD),
# `celery worker`, `celery beat` and the one-shot `manage.py migrate`. The build context holds
# only the app's sources (.dockerignore); settings read nothing but the environment the container
# is started with (DJANGO_READ_DOT_ENV_FILE=0), and the processes run as an unprivileged user.
FROM python:3.11-slim
ARG EMBEDDING_MODEL=sentence-transformers/all-MiniLM-L6-v2
ARG EMBEDDING_BACKEND=onnx-int8
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    DJANGO_READ_DOT_ENV_FILE=0 \
    EMBEDDING_MODEL=$EMBEDDING_MODEL EMBEDDING_BACKEND=$EMBEDDING_BACKEND EMBEDDING_CACHE_DIR=/app/var/models \
    BEAT_SCHEDULE_FILE=/tmp/celerybeat-schedule
WORKDIR /app
COPY pyproject.toml README.md ./
COPY factsite factsite
COPY verification verification
# torch first, from the CPU index: the default index would bring GBs of CUDA packages.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
 && pip install .
COPY . .
# The embedding model's ONNX export, built once here (a worker would otherwise build it at its
# first start, as a user that cannot write to /app), and the static files. Owned by root and
# readable by all: the app's user reads them and changes nothing under /app.
RUN python -m verification.clients.embeddings \
 && DJANGO_SECRET_KEY=build python manage.py collectstatic --no-input -v0
RUN useradd --system --user-group --uid 10001 --home-dir /home/factsite --create-home factsite
USER factsite
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=30s --start-period=60s CMD ["python", "-m", "verification.worker.health", "web"]
CMD ["gunicorn", "factsite.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "60"]
