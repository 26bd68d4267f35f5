"""The cross-run cache as a fresh install has it (no CACHE_URL, no REDIS_URL): it keeps what
CACHE_TTL promises however many answers a run stores, is bounded by CACHE_MAX_BYTES, and a
cache that cannot work is a miss, never an error."""

import runpy

import pytest
from django.core.cache import caches

from factsite.settings import BASE_DIR
from verification.clients import cache

# One page's sentences, about what the page cache holds for a real news or wiki page.
PAGE = [f"Sentence {i} of a page that a claim cited, as long as a sentence usually is." for i in range(80)]


def default_cache(monkeypatch, location, **env) -> dict:
    """The CACHES entry settings.py builds with neither CACHE_URL nor REDIS_URL, moved to `location`."""
    monkeypatch.setenv("CACHE_URL", "")
    monkeypatch.setenv("REDIS_URL", "")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    built = runpy.run_path(str(BASE_DIR / "factsite" / "settings.py"))["CACHES"]["default"]
    return {**built, "LOCATION": str(location)}


@pytest.fixture
def use_cache(settings):
    def use(config: dict) -> None:
        settings.CACHES = {"default": config}

    yield use
    caches.close_all()


def test_it_keeps_more_answers_than_a_long_run_stores(monkeypatch, tmp_path, use_cache):
    use_cache(default_cache(monkeypatch, tmp_path))

    for i in range(1000):
        cache.store(cache.cache_key("page-sentences", f"https://example.org/{i}"), PAGE)

    assert cache.lookup(cache.cache_key("page-sentences", "https://example.org/0")) == PAGE
    assert cache.lookup(cache.cache_key("page-sentences", "https://example.org/999")) == PAGE


def test_it_is_bounded_by_size_and_lets_the_oldest_go(monkeypatch, tmp_path, use_cache):
    use_cache(default_cache(monkeypatch, tmp_path, CACHE_MAX_BYTES=str(2_000_000)))

    for i in range(1000):  # about 7 MB
        cache.store(cache.cache_key("page-sentences", f"https://example.org/{i}"), PAGE)

    assert cache.lookup(cache.cache_key("page-sentences", "https://example.org/0")) is None
    assert cache.lookup(cache.cache_key("page-sentences", "https://example.org/999")) == PAGE
    # SQLite's write-ahead logs (a few MB per shard, reused, not growing) are not entries.
    files = [path for path in tmp_path.rglob("*") if path.is_file() and not path.name.endswith(("-wal", "-shm"))]
    assert sum(path.stat().st_size for path in files) < 2_500_000


def test_a_cache_that_cannot_open_its_directory_is_a_miss(monkeypatch, tmp_path, use_cache):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    use_cache(default_cache(monkeypatch, blocker / "cache"))
    key = cache.cache_key("search", "https://search.example", "eiffel tower", 5)

    cache.store(key, ["hit"])

    assert cache.lookup(key) is None
    assert cache.remember(key, lambda: ["computed"]) == ["computed"]
