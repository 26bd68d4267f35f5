"""At a server that answers one request at a time (LLM_CONCURRENCY=1) a source-type question
waits behind every sentence's call; when its turn comes it asks the run's other waiting hosts
too, in the same call, and their own questions then send nothing (real DB, FakeLLM on 127.0.0.1)."""

import pytest

from factsite.celery import app as celery_app
from tests.conftest import MODEL
from verification import services, tasks  # noqa: F401 (tasks: registers the steps run below)
from verification.clients import llm_slots
from verification.models import Source
from verification.worker import base

pytestmark = pytest.mark.django_db(transaction=True)

HOSTS = ["daily-news.test", "my-travel-blog.test", "city-wiki.test"]


@pytest.fixture(autouse=True)
def fresh_slots():
    llm_slots._shared.clear()
    yield
    llm_slots._shared.clear()


def run_with_sources_waiting_for_types(hosts):
    """A run whose searches found pages on hosts the rule table does not know, each host's
    question in flight (as three searches leave them, each having sent its own question)."""
    verification = services.verification_create(text="The tower opened in 1889.", settings={"model": MODEL})
    for host in hosts:
        Source.objects.create(verification=verification, url=f"https://{host}/page", host=host, title=f"{host} page")
        assert services.host_category_claim(host)[1]  # this run asks
    return verification


def ask_types(host, verification):
    celery_app.tasks[base.TASK_PREFIX + "hosts_categorize"]([host], str(verification.pk))


def type_questions(world) -> list[list[str]]:
    asked = [r for r in world.llm.requests if "classify websites" in r["messages"][0]["content"]]
    return [
        [line.split("Host: ", 1)[1] for line in r["messages"][-1]["content"].splitlines() if "Host: " in line]
        for r in asked
    ]


def test_at_a_one_slot_server_the_first_question_asks_every_waiting_host_of_the_run(world, settings):
    settings.LLM_CONCURRENCY = 1
    verification = run_with_sources_waiting_for_types(HOSTS)

    for host in HOSTS:
        ask_types(host, verification)

    assert type_questions(world) == [[HOSTS[0], *sorted(HOSTS[1:])]]
    types = dict(Source.objects.filter(verification=verification).values_list("host", "source_type"))
    assert types == {"daily-news.test": "news", "my-travel-blog.test": "blog", "city-wiki.test": "wiki"}


def test_without_a_limit_each_question_asks_its_own_hosts(world, settings):
    settings.LLM_CONCURRENCY = 0  # an API: questions go at once, side by side, each its own
    verification = run_with_sources_waiting_for_types(HOSTS)

    for host in HOSTS:
        ask_types(host, verification)

    assert type_questions(world) == [[host] for host in HOSTS]
    assert not Source.objects.filter(verification=verification, source_type="").exists()
