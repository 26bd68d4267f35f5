"""Domain lists and duplicates through the real engine (API → Celery worker on Redis → fake
search, sites and model on 127.0.0.1), and the block list's validation in the API and the form.

The fake sites all live on 127.0.0.1; a site served as http://localhost:<port> has a host name
of its own (localhost resolves from /etc/hosts, so nothing leaves the machine), which is what
the lists match."""

import re

import lxml.html
import pytest

from tests.conftest import free_port
from tests.fakes import FakePage, FakeSite
from tests.test_engine import all_evidence, run, wait_for
from verification.models import Verification
from verification.pipeline import judge
from verification.pipeline.domains import MAX_RUN_BLOCKED_DOMAINS

pytestmark = pytest.mark.django_db(transaction=True)

TOWER = "The Eiffel Tower is in Paris, France."


class LocalhostSite(FakeSite):
    """A fake site addressed by the name localhost rather than 127.0.0.1."""

    @property
    def url(self) -> str:
        return f"http://localhost:{self.httpd.server_address[1]}"


@pytest.fixture
def localhost_site(world):
    site = LocalhostSite(
        pages={
            "/tower": FakePage(
                "Eiffel Tower facts - localhost news",
                "The Eiffel Tower is in Paris, France, on the Champ de Mars.\n\nIt is a wrought-iron lattice tower.",
            )
        }
    ).start()
    world.serper.sites.append(site)
    yield site
    site.stop()


def hosts(result) -> set[str]:
    return {source["host"].split(":")[0] for source in result["sources"]}


def test_a_blocked_host_is_never_fetched_and_absent_from_the_result(client, world, celery_worker, localhost_site):
    result = wait_for(client, run(client, TOWER, retrieval_mode="sparse", blocked_domains=["WWW.Localhost."]))

    assert result["status"] == "done", result["error"]
    assert not localhost_site.hits
    assert "localhost" not in hosts(result) and hosts(result) == {"127.0.0.1"}
    assert all(not e["host"].startswith("localhost") for e in all_evidence(result))
    assert result["settings"]["blocked_domains"] == ["localhost"]
    assert result["left_out"] == {"blocked": 1, "not_allowed": 0}
    assert sum(site.hits.total() for site in world.sites if site is not localhost_site) > 0


def test_without_a_block_list_the_same_host_is_read(client, world, celery_worker, localhost_site):
    result = wait_for(client, run(client, TOWER, retrieval_mode="sparse"))

    assert localhost_site.hits["/tower"] == 1
    assert "localhost" in hosts(result)
    assert result["left_out"] == {"blocked": 0, "not_allowed": 0}
    assert result["settings"]["blocked_domains"] == []


def test_the_servers_block_list_applies_to_every_run_and_is_shown(
    client, world, celery_worker, localhost_site, settings
):
    settings.BLOCKED_DOMAINS = ["localhost"]
    verification_id = run(client, TOWER, retrieval_mode="sparse")
    result = wait_for(client, verification_id)

    assert not localhost_site.hits and "localhost" not in hosts(result)
    assert result["settings"]["server_blocked_domains"] == ["localhost"]
    assert result["left_out"]["blocked"] == 1
    page = lxml.html.fromstring(client.get(f"/v/{verification_id}").content)
    assert "localhost (this site's list)" in page.cssselect("#blocked-domains")[0].text_content()
    assert page.cssselect("#results-left-out")[0].text_content().startswith("1 on a blocked domain")


def test_an_allowed_list_reads_only_its_domains(client, world, celery_worker, localhost_site, settings):
    settings.ALLOWED_DOMAINS = ["localhost"]
    result = wait_for(client, run(client, TOWER, retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    assert hosts(result) == {"localhost"}
    assert localhost_site.hits["/tower"] == 1
    assert not any(site.hits for site in world.sites if site is not localhost_site)
    assert result["settings"]["server_allowed_domains"] == ["localhost"]
    assert result["left_out"]["not_allowed"] >= 2  # the wiki and news pages about the tower


def test_a_redirect_to_a_blocked_host_is_refused_before_it_is_followed(client, world, celery_worker, localhost_site):
    localhost_site.pages["/tower"].searchable = False
    wiki = world.sites[0]
    wiki.pages["/moved"] = FakePage("Eiffel Tower Paris France moved", "", redirect_to=localhost_site.url + "/tower")

    result = wait_for(client, run(client, TOWER, retrieval_mode="sparse", blocked_domains=["localhost"]))

    assert wiki.hits["/moved"] == 1
    assert not localhost_site.hits
    moved = next(s for s in result["sources"] if s["url"].endswith("/moved"))
    assert moved["status"] == "failed"
    assert moved["error"] == "the page redirected to another site: localhost is on a blocked domain list"
    assert all(not e["url"].endswith("/moved") for e in all_evidence(result))


def test_a_cached_page_that_had_redirected_to_a_host_now_blocked_is_not_read(
    client, world, celery_worker, localhost_site
):
    localhost_site.pages["/tower"].searchable = False
    wiki = world.sites[0]
    wiki.pages["/moved"] = FakePage("Eiffel Tower Paris France moved", "", redirect_to=localhost_site.url + "/tower")
    first = wait_for(client, run(client, TOWER, retrieval_mode="sparse"))
    assert any(e["url"].endswith("/moved") for e in all_evidence(first))  # read, and cached, by a run without lists

    result = wait_for(client, run(client, TOWER, retrieval_mode="sparse", blocked_domains=["localhost"]))

    assert localhost_site.hits["/tower"] == 1  # only the first run's download
    moved = next(s for s in result["sources"] if s["url"].endswith("/moved"))
    assert moved["status"] == "failed" and "localhost is on a blocked domain list" in moved["error"]
    assert all(not e["url"].endswith("/moved") for e in all_evidence(result))


class MisleadingSite(FakeSite):
    """Its search results name another site before a backslash and this one after it: Python's
    urlsplit reads this one as the host, urllib3 and browsers the other."""

    before_backslash: FakeSite | None = None

    @property
    def url(self) -> str:
        return f"http://localhost:{self.before_backslash.httpd.server_address[1]}\\@127.0.0.1:{self.httpd.server_address[1]}"


def test_a_result_parsers_read_differently_is_refused_before_any_connection_and_says_why(
    client, world, celery_worker, localhost_site
):
    localhost_site.pages["/tower"].searchable = False
    misleading = MisleadingSite(pages={"/tower": FakePage("Eiffel Tower Paris France facts", TOWER)}).start()
    misleading.before_backslash = localhost_site
    world.serper.sites.append(misleading)
    try:
        result = wait_for(client, run(client, TOWER, retrieval_mode="sparse", blocked_domains=["localhost"]))
    finally:
        misleading.stop()

    assert not localhost_site.hits and not misleading.hits
    source = next(s for s in result["sources"] if "\\@" in s["url"])
    assert source["status"] == "failed"
    assert source["error"] == (
        f"refused before connecting: the URL {source['url'][:100]!r} contains a backslash, "
        "which browsers and servers read differently"
    )
    assert all("\\@" not in e["url"] for e in all_evidence(result))


# --- duplicates

ARTICLE = (
    "The Zorbian lighthouse was built in 1742 by local fishermen on the northern cliffs.\n\n"
    "Its lamp was first lit with whale oil and could be seen for twenty miles at sea."
)
CLAIM_TEXT = "The Zorbian lighthouse was built in 1742 by local fishermen."


@pytest.fixture
def syndicated(world):
    """One article at two sites, each with its own title and boilerplate around it."""
    first = FakeSite(pages={"/zorbian": FakePage("Zorbian lighthouse history | Coast News", ARTICLE)}).start()
    copy = FakeSite(
        pages={
            "/wire/zorbian": FakePage(
                "Old lighthouse story - Daily Digest",
                "By our wire service.\n\n" + ARTICLE.replace(" on the ", " on  the ") + "\n\nShare this story.",
            )
        }
    ).start()
    world.serper.sites.extend([first, copy])
    yield first, copy
    first.stop()
    copy.stop()


def zorbian_passages_judged(world) -> int:
    """How many passages about the lighthouse the judge was shown, over all its requests."""
    judge_prompts = [
        request["messages"][-1]["content"]
        for request in world.llm.requests
        if request["messages"][0]["content"] == judge.SYSTEM_PROMPT
    ]
    return sum(
        len(re.findall(r"^E\d+[^\n]*\n[^\n]*Zorbian lighthouse was built", prompt, re.MULTILINE))
        for prompt in judge_prompts
    )


def test_the_same_article_at_two_urls_is_judged_once_and_counts_once(client, world, celery_worker, syndicated):
    verification_id = run(client, CLAIM_TEXT, retrieval_mode="sparse", top_k_passages=1, context_size=0)
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    [claim] = result["sentences"][0]["claims"]
    copies = [e for e in claim["evidence"] if "Zorbian lighthouse was built" in e["passage"]]
    assert len(copies) == 2
    counted = [e for e in copies if e["duplicate_of"] is None]
    duplicate = [e for e in copies if e["duplicate_of"] is not None]
    assert len(counted) == 1 and len(duplicate) == 1
    assert duplicate[0]["duplicate_of"] == counted[0]["id"]
    assert duplicate[0]["verdict"] == counted[0]["verdict"] == "supported"
    assert zorbian_passages_judged(world) == 1
    assert claim["supported"] == 1
    assert result["progress"]["judgements"]["made"] == result["progress"]["judgements"]["total"]

    page = client.get(f"/v/{verification_id}", {"sentence": 0}).content.decode()
    doc = lxml.html.fromstring(page)
    also_at = doc.cssselect(f"#also-at-{counted[0]['id']}")[0].text_content()
    assert duplicate[0]["title"] in also_at and duplicate[0]["host"] in also_at
    assert not doc.cssselect(f"#evidence-{duplicate[0]['id']}")  # shown under the item, not on its own

    unticked = client.get(f"/api/verifications/{verification_id}", {"exclude_evidence": str(counted[0]["id"])}).json()
    assert unticked["sentences"][0]["claims"][0]["supported"] == 0
    left = {e["id"]: e["included"] for e in all_evidence(unticked)}
    assert left[counted[0]["id"]] is False and left[duplicate[0]["id"]] is False


# --- validation of a run's block list


@pytest.fixture
def closed_services(settings):
    """Settings a run can be created with; nothing is ever called (no worker consumes)."""
    closed = f"http://127.0.0.1:{free_port()}"
    settings.OPENAI_API_KEY = "test-openai-key"
    settings.OPENAI_BASE_URL = closed + "/v1"
    settings.LLM_MODELS = "fake-model"
    settings.SERPER_API_KEY = "test-serper-key"
    settings.SERPER_BASE_URL = closed
    settings.CELERY_EMBEDDED_WORKER = False
    settings.CELERY_BROKER_URL = "memory://"


def post(client, **run_settings):
    return client.post("/api/verifications", {"text": TOWER, "settings": run_settings}, content_type="application/json")


def test_the_api_refuses_a_block_list_entry_that_is_not_a_domain(client, closed_services):
    response = post(client, blocked_domains=["example.com", "not a domain"])

    assert response.status_code == 400
    assert "“not a domain” is not a domain" in response.json()["detail"]
    assert not Verification.objects.exists()


def test_the_api_refuses_more_blocked_domains_than_a_run_takes(client, closed_services):
    too_many = [f"site{i}.example" for i in range(MAX_RUN_BLOCKED_DOMAINS + 1)]

    response = post(client, blocked_domains=too_many)

    assert response.status_code == 400
    assert f"a run blocks at most {MAX_RUN_BLOCKED_DOMAINS}" in response.json()["detail"]


def test_the_form_refuses_a_bad_domain_keeps_the_text_and_opens_the_advanced_settings(client, closed_services):
    response = client.post("/", {"text": TOWER, "blocked_domains": "example.com, exa_mple.com"})

    assert response.status_code == 400
    doc = lxml.html.fromstring(response.content)
    assert doc.cssselect("details.advanced")[0].get("open") is not None
    assert "“exa_mple.com” is not a domain" in doc.cssselect("details.advanced .field-error")[0].text_content()
    assert doc.cssselect("textarea[name=text]")[0].text_content().strip() == TOWER


def test_the_form_stores_the_block_list_canonical_with_the_servers_lists(client, closed_services, settings):
    settings.BLOCKED_DOMAINS = ["spam.example"]
    response = client.post("/", {"text": TOWER, "blocked_domains": "WWW.Example.com.\nnews.example.org, example.com"})

    assert response.status_code == 302
    stored = Verification.objects.get().settings
    assert stored["blocked_domains"] == ["example.com", "news.example.org"]
    assert stored["server_blocked_domains"] == ["spam.example"]
    assert stored["server_allowed_domains"] == []
