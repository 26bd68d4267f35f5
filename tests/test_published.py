"""Publication dates: stored when a page is read, carried in the result JSON with the stale
flag, and shown next to the source in the evidence panel."""

from datetime import date, timedelta

import lxml.html
import pytest
from django.utils.timezone import localdate

from tests.test_views import add_claim, add_evidence, make_run
from verification import selectors, services
from verification.models import Source, Status
from verification.pipeline.types import PageSentences

SENTENCE = "The Eiffel Tower is in Paris, France."


def years_ago(years: int, days: int = 0) -> date:
    today = localdate()
    return today.replace(year=today.year - years) - timedelta(days=days)


@pytest.mark.parametrize(
    ("published", "today", "years", "stale"),
    [
        (None, date(2025, 6, 1), 5, False),
        (date(2020, 6, 1), date(2025, 6, 1), 5, False),  # exactly five years: not older
        (date(2020, 5, 31), date(2025, 6, 1), 5, True),
        (date(2024, 1, 1), date(2025, 6, 1), 1, True),
        (date(1990, 1, 1), date(2025, 6, 1), 0, False),  # 0 flags nothing
        (date(2019, 2, 27), date(2024, 2, 29), 5, True),  # 29 February, five years back, is the 28th
        (date(2019, 2, 28), date(2024, 2, 29), 5, False),
    ],
)
def test_evidence_older_than_the_setting_is_stale(settings, published, today, years, stale):
    settings.STALE_AFTER_YEARS = years

    assert selectors.is_stale(published, today=today) is stale


@pytest.mark.django_db
def test_a_read_page_stores_its_publication_date():
    run = make_run(SENTENCE)
    source = Source.objects.create(verification=run, url="https://a.example/x", host="a.example")
    page = PageSentences(url=source.url, final_url=source.url, title="T", sentences=("S.",), published=date(2014, 3, 2))

    services.source_fetched(source, page=page)

    assert Source.objects.get(pk=source.pk).published == date(2014, 3, 2)


@pytest.mark.django_db
def test_a_page_read_from_an_old_cache_entry_stores_no_date():
    run = make_run(SENTENCE)
    source = Source.objects.create(verification=run, url="https://a.example/x", host="a.example")

    services.source_fetched(source, page=PageSentences(url=source.url, final_url=source.url, title="T", sentences=()))

    stored = Source.objects.get(pk=source.pk)
    assert stored.status == Status.DONE and stored.published is None


@pytest.mark.django_db
def test_the_result_json_carries_each_sources_date_and_stale_flag(settings):
    settings.STALE_AFTER_YEARS = 5
    run = make_run(SENTENCE)
    claim = add_claim(run, 0, SENTENCE)
    old, recent, undated = (add_evidence(claim, "news", "supported") for _ in range(3))
    Source.objects.filter(pk=old.source_id).update(published=years_ago(5, days=1))
    Source.objects.filter(pk=recent.source_id).update(published=years_ago(5, days=-1))

    result = selectors.verification_result(run)

    by_id = {e["id"]: e for e in result["sentences"][0]["claims"][0]["evidence"]}
    assert (by_id[old.pk]["published"], by_id[old.pk]["stale"]) == (years_ago(5, days=1).isoformat(), True)
    assert (by_id[recent.pk]["published"], by_id[recent.pk]["stale"]) == (years_ago(5, days=-1).isoformat(), False)
    assert (by_id[undated.pk]["published"], by_id[undated.pk]["stale"]) == (None, False)
    sources = {s["id"]: s for s in result["sources"]}
    assert (sources[old.source_id]["published"], sources[old.source_id]["stale"]) == (
        years_ago(5, days=1).isoformat(),
        True,
    )
    assert sources[undated.source_id]["published"] is None


@pytest.mark.django_db
def test_the_evidence_panel_shows_the_date_and_flags_old_sources(client, settings):
    settings.STALE_AFTER_YEARS = 5
    settings.CELERY_EMBEDDED_WORKER = False
    run = make_run(SENTENCE)
    claim = add_claim(run, 0, SENTENCE)
    old, recent, undated = (add_evidence(claim, "news", "supported") for _ in range(3))
    Source.objects.filter(pk=old.source_id).update(published=date(2014, 3, 2))
    Source.objects.filter(pk=recent.source_id).update(published=localdate())

    # The evidence panel of sentence 0, as the page asks for it.
    response = client.get(f"/v/{run.pk}", {"sentence": "0"}, headers={"HX-Request": "true"})
    page = lxml.html.fromstring(response.content.decode())

    def shown(item) -> str:
        found = page.xpath(f"//li[@id='evidence-{item.pk}']//span[contains(@class, 'published')]")
        return " ".join(found[0].text_content().split()) if found else ""

    assert shown(old) == "published 2 Mar 2014 — older than 5 years"
    assert "stale" in page.xpath(f"//li[@id='evidence-{old.pk}']//span[contains(@class, 'published')]/@class")[0]
    assert shown(recent) == f"published {localdate().day} {localdate():%b %Y}"
    assert page.xpath(f"//li[@id='evidence-{recent.pk}']//time/@datetime") == [localdate().isoformat()]
    assert shown(undated) == ""
