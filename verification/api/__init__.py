"""The REST API (django-ninja): runs, step endpoints, uploads, schemas."""
