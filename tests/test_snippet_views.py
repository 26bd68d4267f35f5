"""Evidence judged from a search snippet (its page refused to be read), wherever evidence is
shown: marked "snippet only" with the reason on the result page, in the JSON, the CSV and the
reports; counted by default, left out with one tick kept in the link like a source type, and
said in the words of its claim and sentence. Runs are built with the ORM (tests/test_views.py)."""

from types import SimpleNamespace

import pytest

from tests.test_reports import csv_rows, download
from tests.test_views import add_claim, add_evidence, get, make_run, one, parse, permalink, query_of
from verification.management.summaries import summary
from verification.models import Evidence, Source, Status, Verification
from verification.selectors import verification_result
from verification.selectors.viewstate import ViewState

pytestmark = pytest.mark.django_db

SNIPPET_TEXT = "Mar 3, 2021 — The Eiffel Tower stands in Paris and is 330 metres tall ..."


@pytest.fixture
def snippeted(db):
    """One claim with a page read (supports) and a page that answered 403, judged from its
    snippet (supports); another claim whose only evidence is a snippet (contradicts)."""
    run = make_run("The Eiffel Tower is in Paris.", "It is 330 metres tall.")
    paris = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    tall = add_claim(run, 1, "The Eiffel Tower is 330 metres tall.")
    refused = add_evidence(paris, "news", "supported", passage=SNIPPET_TEXT, highlights=(), title="Tower facts")
    alone = add_evidence(tall, "blog", "not_supported", passage="The tower is 300 metres tall.", highlights=())
    for item, reason in ((refused, "HTTP 403"), (alone, "a bot challenge")):
        Evidence.objects.filter(pk=item.pk).update(snippet_only=True, unread_reason=reason, relevance=0.0)
        Source.objects.filter(pk=item.source_id).update(status=Status.FAILED, error=f"refused: {reason}")
    return SimpleNamespace(
        run=run, paris=paris, tall=tall, read=add_evidence(paris, "wiki", "supported"), refused=refused, alone=alone
    )


def test_a_snippet_is_marked_with_the_reason_its_page_was_not_read(client, snippeted):
    doc = parse(get(client, permalink(snippeted.run), htmx=True, sentence="0"))

    item = one(doc, f"#evidence-{snippeted.refused.pk}")
    assert "snippet-only" in item.classes
    assert one(item, ".snippet-tag").text_content() == "snippet only"
    assert one(item, ".unread-reason").text_content() == (
        "The page could not be read (HTTP 403): judged from the search result's title and snippet."
    )
    assert one(item, ".passage").text_content() == SNIPPET_TEXT
    read = one(doc, f"#evidence-{snippeted.read.pk}")
    assert "snippet-only" not in read.classes and not read.cssselect(".snippet-tag, .unread-reason")


def test_snippets_count_by_default_and_one_tick_leaves_them_out(client, snippeted):
    everything = parse(get(client, permalink(snippeted.run), htmx=True))
    assert one(everything, "#overall-counts").text_content() == "supported evidence 2 of 3"
    tick = one(everything, "#include-kind-snippet")
    assert tick.get("checked") is not None
    assert query_of(tick.get("hx-get")) == {"exclude_kinds": {"snippet"}}
    assert tick.get("hx-target") == "#result-body" and tick.get("hx-push-url") == "true"
    # Items (the snippets judged), said so beside the pages of the problems list.
    assert one(everything, ".kind-count[data-kind=snippet]").text_content() == "2 items"

    without = parse(get(client, permalink(snippeted.run), htmx=True, sentence="0", exclude_kinds="snippet"))

    assert one(without, "#overall-counts").text_content() == "supported evidence 1 of 1"
    tick = one(without, "#include-kind-snippet")
    assert tick.get("checked") is None
    assert query_of(tick.get("hx-get")) == {"sentence": {"0"}}
    assert one(without, ".kind-count[data-kind=snippet]").text_content() == "2 items, left out"
    assert "Left out: search snippets" in one(without, "#exclusions").text_content()
    box = one(without, f"#include-evidence-{snippeted.refused.pk}")
    assert box.get("checked") is None and box.get("disabled") is not None
    assert box.get("title") == "Search snippets are left out"
    assert "excluded" in one(without, f"#evidence-{snippeted.refused.pk}").classes


def test_the_snippet_tick_keeps_the_other_exclusions_and_they_keep_it(client, snippeted):
    query = {"exclude_types": "blog", "exclude_evidence": str(snippeted.read.pk), "exclude_kinds": "snippet"}

    doc = parse(get(client, permalink(snippeted.run), htmx=True, sentence="0", **query))

    assert query_of(one(doc, "#include-kind-snippet").get("hx-get")) == {
        "sentence": {"0"},
        "exclude_evidence": {str(snippeted.read.pk)},
        "exclude_types": {"blog"},
    }
    for box in doc.cssselect("input[name=evidence], input[name=source_type]"):
        assert query_of(box.get("hx-get"))["exclude_kinds"] == {"snippet"}
    assert "exclude_kinds" not in query_of(one(doc, "#show-all").get("href"))


@pytest.mark.parametrize("kinds", ["nope", "snippet'\"><", "model", ",,"])
def test_an_unknown_kind_in_the_link_is_ignored(client, snippeted, kinds):
    assert ViewState.from_query({"exclude_kinds": kinds}).excluded_kinds == frozenset()
    data = get(client, permalink(snippeted.run) + ".json", exclude_kinds=kinds).json()
    assert data["excluded_kinds"] == [] and data["total"] == 3


def test_an_edited_run_keeps_the_snippet_choice_but_not_the_ids():
    state = ViewState(excluded_ids=frozenset({4}), excluded_kinds=frozenset({"snippet"}))

    assert state.carried_to_another_run().query() == "?exclude_kinds=snippet"
    assert state.including_everything().query() == ""
    assert state.toggling_kind("snippet").query() == "?exclude_evidence=4"


def test_the_words_say_how_much_was_snippets(client, snippeted):
    data = get(client, permalink(snippeted.run) + ".json").json()

    paris, tall = (sentence["claims"][0] for sentence in data["sentences"])
    assert paris["note"] == "2 pages support it; 1 of the 2 pages judged from its search snippet only"
    assert paris["counts"]["snippets"] == 1
    assert tall["note"] == "1 page contradicts it; judged from its search snippet alone (the page could not be read)"
    assert data["sentences"][0]["note"].endswith("1 of the 2 sources judged from its search snippet only")


def marked(entry: dict) -> tuple:
    return entry["snippet_only"], entry["unread_reason"]


def test_the_json_marks_each_snippet_and_leaves_them_out_on_request(client, snippeted):
    data = get(client, f"/api/verifications/{snippeted.run.pk}").json()
    items = {e["id"]: e for s in data["sentences"] for c in s["claims"] for e in c["evidence"]}

    assert marked(items[snippeted.refused.pk]) == (True, "HTTP 403")
    assert marked(items[snippeted.alone.pk]) == (True, "a bot challenge")
    assert marked(items[snippeted.read.pk]) == (False, "")
    assert data["excluded_kinds"] == [] and data["counts"]["snippets"] == 2

    without = get(client, f"/api/verifications/{snippeted.run.pk}", exclude_kinds="snippet").json()

    assert without["excluded_kinds"] == ["snippet"]
    assert (without["supported"], without["total"], without["counts"]["excluded"]) == (1, 1, 2)


def test_the_downloads_mark_each_snippet_with_the_reason(client, snippeted):
    rows = {row["url"]: row for row in csv_rows(download(client, snippeted.run, "evidence.csv"))}
    assert marked(rows[snippeted.refused.source.url]) == ("yes", "HTTP 403")
    assert marked(rows[snippeted.read.source.url]) == ("no", "")

    markdown = download(client, snippeted.run, "report.md", exclude_kinds="snippet")
    assert "snippet only: the page could not be read (HTTP 403)" in markdown
    assert "Left out: search snippets (pages that could not be read)." in markdown

    html = parse(get(client, f"{permalink(snippeted.run)}/report.html"))
    notes = [note.text_content() for note in html.cssselect(".report-footnotes li")]
    assert sum("snippet only: the page could not be read (a bot challenge)" in note for note in notes) == 1
    assert sum("snippet only" in note for note in notes) == 2


def test_a_page_whose_snippet_was_judged_is_not_told_as_lost(client, snippeted):
    claim = add_claim(snippeted.run, 0, "The Eiffel Tower is in France.")
    lost = add_evidence(claim, "news", "supported")
    Source.objects.filter(pk=lost.source_id).update(status=Status.FAILED, error="the page answered HTTP 503")
    lost.delete()

    problems = get(client, permalink(snippeted.run) + ".json").json()["problems"]

    fetch = next(p for p in problems if p["step"] == "fetch")
    assert {r["reason"] for r in fetch["reasons"]} == {
        "refused: HTTP 403; judged from its search snippet instead",
        "refused: a bot challenge; judged from its search snippet instead",
        "the page answered HTTP 503",
    }


def test_a_page_read_from_its_snippet_is_not_a_failure_on_the_page(client, snippeted):
    """Both pages that refused were judged from their snippets: nothing failed, so no red banner
    and no "Parts of this verification failed (2 items)"; the pages are still listed, said to be
    read from their snippets, and the run ends saying everything found was judged."""
    doc = parse(get(client, permalink(snippeted.run)))

    notice = one(doc, "#problems")
    words = " ".join(notice.text_content().split())
    assert "notice-error" not in notice.classes and notice.get("role") == "status"
    assert "Parts of this verification failed" not in words and "item" not in words
    assert words.startswith("2 pages could not be read, and their search snippets were judged in their place")
    assert one(notice, "#problem-details summary").text_content() == "Which parts, and why"
    fetch = one(notice, "li[data-step=fetch]")
    assert " ".join(fetch.text_content().split()).startswith("Reading pages: 2 pages read from their snippets ")
    assert {li.text_content() for li in fetch.cssselect("li.read-from-snippet")} == {
        "refused: HTTP 403; judged from its search snippet instead",
        "refused: a bot challenge; judged from its search snippet instead",
    }
    assert not notice.cssselect("li.lasting, #retry-scope")
    assert one(doc, "#run-ended-message").text_content() == (
        "Verification finished: all the evidence found has been judged."
    )


def test_a_page_read_from_its_snippet_is_not_counted_among_the_failures(client, snippeted):
    lost = add_evidence(add_claim(snippeted.run, 0, "The Eiffel Tower is in France."), "news", "supported")
    Source.objects.filter(pk=lost.source_id).update(status=Status.FAILED, error="the page answered HTTP 503")
    lost.delete()

    banner = one(parse(get(client, permalink(snippeted.run))), "#problems")

    assert "notice-error" in banner.classes and banner.get("role") == "alert"
    words = " ".join(banner.text_content().split())
    assert words.startswith("Parts of this verification failed (1 item);")
    assert " ".join(one(banner, "li[data-step=fetch]").text_content().split()).startswith(
        "Reading pages: 1 failed, 2 pages read from their snippets "
    )
    # The same title as while nothing had failed: it lists the pages read from their snippets too.
    assert one(banner, "#problem-details summary").text_content() == "Which parts, and why"
    assert "refused: HTTP 403; judged from its search snippet instead" in words
    assert "the page answered HTTP 503" in words


def test_the_json_counts_a_page_read_from_its_snippet_apart_from_the_failures(client, snippeted):
    lost = add_evidence(add_claim(snippeted.run, 0, "The Eiffel Tower is in France."), "news", "supported")
    Source.objects.filter(pk=lost.source_id).update(status=Status.FAILED, error="the page answered HTTP 503")
    lost.delete()

    data = get(client, f"/api/verifications/{snippeted.run.pk}").json()

    fetch = next(p for p in data["problems"] if p["step"] == "fetch")
    assert (fetch["count"], fetch["read_from_snippet"]) == (1, 2)
    assert {(r["reason"], r["count"], r["read_from_snippet"]) for r in fetch["reasons"]} == {
        ("refused: HTTP 403; judged from its search snippet instead", 1, True),
        ("refused: a bot challenge; judged from its search snippet instead", 1, True),
        ("the page answered HTTP 503", 1, False),
    }
    pages = data["progress"]["pages"]
    assert (pages["failed"], pages["read_from_snippet"]) == (1, 2)
    assert pages["total"] == pages["fetched"] + pages["failed"] + pages["read_from_snippet"]


def test_the_terminal_summary_says_a_page_was_read_from_its_snippet(snippeted):
    Verification.objects.filter(pk=snippeted.run.pk).update(finished_at=snippeted.run.created_at)
    run = Verification.objects.get(pk=snippeted.run.pk)

    lines = summary(verification_result(run), run).splitlines()

    assert not any("failed" in line for line in lines[:4]), lines[:4]
    assert "Reading pages: 2 pages read from their snippets (refused: HTTP 403; judged from its search" in lines[2]
