"""Reuse of outside answers across runs (search results, page texts, claims, judgements) for
CACHE_TTL seconds. Keys hash everything the answer depends on, endpoint and model included.
A cache that fails (Redis down) is a miss, never an error."""

import hashlib
import json
import logging
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache

T = TypeVar("T")
logger = logging.getLogger(__name__)
_MISSING = object()


def cache_key(kind: str, *parts) -> str:
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    return f"factsite:{kind}:{digest}"


def lookup(key: str):
    """The cached value, or None on a miss (or when caching is off)."""
    if settings.CACHE_TTL <= 0:
        return None
    try:
        return cache.get(key)
    except Exception:  # any backend's connection error
        logger.warning("cache read failed for %s", key, exc_info=True)
        return None


def store(key: str, value) -> None:
    if settings.CACHE_TTL <= 0:
        return
    try:
        cache.set(key, value, settings.CACHE_TTL)
    except Exception:
        logger.warning("cache write failed for %s", key, exc_info=True)


def remember(key: str, compute: Callable[[], T]) -> T:
    """The cached value, or `compute()` stored for next time (exceptions are not cached)."""
    value = lookup(key)
    if value is None:
        value = compute()
        store(key, value)
    return value
