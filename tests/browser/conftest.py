"""Headless Chromium (Debian's, driven by Playwright with no `playwright install`) against
pytest-django's live server, the real Celery worker and the fake outside world."""

import os
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import sync_playwright

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run
# there unless told that this thread is not really async.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
# pytest-django's default is "localhost", which may resolve to ::1; tests talk to 127.0.0.1 only.
os.environ["DJANGO_LIVE_TEST_SERVER_ADDRESS"] = "127.0.0.1"

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps trying to reach Google's services.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run `apt-get install chromium` (bash scripts/test.sh does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def new_context(browser, live_server):
    """Opens fresh browser contexts (no shared cookies, storage or history) on the live server.
    Any request the pages make to a host other than 127.0.0.1 is aborted and fails the test."""
    contexts, outside = [], []

    def only_loopback(route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    def open_context(**options):
        context = browser.new_context(base_url=live_server.url, **{"viewport": VIEWPORT, **options})
        context.set_default_timeout(15_000)
        context.route("**/*", only_loopback)
        contexts.append(context)
        return context

    yield open_context
    for context in contexts:
        context.close()
    assert not outside, f"the pages tried to reach beyond 127.0.0.1: {outside}"


@pytest.fixture
def page(new_context):
    return new_context().new_page()


# The sentence of the sample (sample.txt) the fake model holds back in the `held` fixture.
HELD_WORD = "1930"


@pytest.fixture
def held(world, settings):
    """The fake model holds back the sample's "1930" sentence (split on its own) until the test
    calls `release()`: the run stays running, everything else finished, for as long as the test
    needs."""
    settings.DECOMPOSE_CHUNK_SENTENCES = 1
    world.llm.held_words = (HELD_WORD,)
    yield world.llm
    world.llm.release()
