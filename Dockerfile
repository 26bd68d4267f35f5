FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY factsite factsite
COPY verification verification
# torch first, from the CPU index: the default index would bring GBs of CUDA packages.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
 && pip install .
COPY . .
RUN DJANGO_SECRET_KEY=build python manage.py collectstatic --no-input -v0
EXPOSE 8000
CMD ["gunicorn", "factsite.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "60"]
