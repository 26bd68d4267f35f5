"""The text's own citations on the result page (issue 34): each marker a badge where it stood, its
outcome in words, opening on what its source said; a summary line; cited sources marked in the
evidence panel and left out with one tick kept in the link; the form's choice; the CSV's columns.
Runs are saved as the form saves them (services.verification_create: sentences and citations
from the pipeline), their reading and judging built with the ORM."""

from types import SimpleNamespace

import pytest

from tests.test_reports import csv_rows, download
from tests.test_views import (
    ESCAPED_SCRIPT,
    RUN_SETTINGS,
    SCRIPT,
    add_claim,
    add_evidence,
    get,
    make_run,
    one,
    parse,
    permalink,
    query_of,
)
from verification import services
from verification.models import Citation, ClaimStatus, Evidence, Origin, SearchResult, Source, Status, Verification
from verification.web.reports import CSV_COLUMNS

pytestmark = pytest.mark.django_db

MINUTES = "https://minutes.example.org/tram"
COST = "https://paper.example.org/cost"
PARKS = "https://paper.example.org/parks"
GONE = "https://orders.example.org/gone"
TEXT = (
    "Riverton approved a tram line in 2024 [1]. The tram line will cost 40 million dollars [2]. "
    "The tram runs along the boulevard. [3] Riverton ordered twelve tram cars [4][9].\n\n"
    "Sources:\n"
    f"[1] Riverton council minutes {MINUTES}\n"
    f"[2] {SCRIPT} {COST}\n"
    f"[3] City paper: parks {PARKS}\n"
    f"[4] Tram orders {GONE}\n"
)
CITED_PASSAGE = "The council of Riverton approved a tram line in 2024 after a long debate."


def cited_source(run, url: str, *, status=Status.DONE, error: str = "") -> Source:
    """The Source a claim of the citing sentence took to read, as services.cited_results_save saves it."""
    source = Source.objects.create(
        verification=run, url=url, host=url.split("/")[2], title="", origin=Origin.CITED, status=status, error=error
    )
    Citation.objects.filter(verification=run, url=url).update(source=source)
    return source


def judged(claim, source: Source, verdict: str, *, passage: str, rationale: str = "") -> Evidence:
    SearchResult.objects.create(claim=claim, source=source, rank=9, status=Status.DONE)
    return Evidence.objects.create(
        claim=claim,
        source=source,
        index=0,
        passage=passage,
        highlights=[[0, len(passage)]],
        relevance=0.9,
        verdict=verdict,
        rationale=rationale,
        status=Status.DONE,
    )


@pytest.fixture
def cited(db):
    """An answer whose [1] supports its sentence, [2] contradicts it, [3] (after its sentence's full
    stop) does not say it, [4] answered 404 and [9] points nowhere; a web page supports sentence 1 too."""
    run = services.verification_create(text=TEXT, settings=RUN_SETTINGS)
    Verification.objects.filter(pk=run.pk).update(status=Status.DONE)
    run.sentences.update(status=Status.DONE)
    run.refresh_from_db()
    claims = [add_claim(run, index, sentence.text) for index, sentence in enumerate(run.sentences.order_by("index"))]
    minutes = judged(
        claims[0], cited_source(run, MINUTES), "supported", passage=CITED_PASSAGE, rationale="The minutes say so."
    )
    cost = judged(
        claims[1],
        cited_source(run, COST),
        "not_supported",
        passage="The tram line will not cost 40 million dollars; the budget is far higher.",
        rationale=f"It says the opposite {SCRIPT}.",
    )
    parks = judged(claims[2], cited_source(run, PARKS), "irrelevant", passage="The parks department planted oaks.")
    cited_source(run, GONE, status=Status.FAILED, error="the page answered HTTP 404")
    web = add_evidence(claims[0], "news", "supported", title="Tram news")
    return SimpleNamespace(run=run, claims=claims, minutes=minutes, cost=cost, parks=parks, web=web)


def badges(doc) -> list[tuple[str, str, str]]:
    return [
        (badge.get("data-outcome"), one(badge, ".citation-name").text_content(), one(badge, ".citation-words").text)
        for badge in doc.cssselect(".text details.citation")
    ]


def test_each_citation_is_a_badge_where_its_marker_stood_with_its_outcome_in_words(client, cited):
    doc = parse(get(client, permalink(cited.run), htmx=True))

    assert badges(doc) == [
        ("supports", "[1]", "supports"),
        ("contradicts", "[2]", "contradicts"),
        ("does_not_say", "[3]", "does not say this"),
        ("does_not_exist", "[4]", "does not exist"),
        ("unresolved", "[9]", "points nowhere"),
    ]
    text = one(doc, ".text")
    # A marker inside a sentence's span stands where it stood, the sentence's link in pieces around it.
    first = one(text, "#sentence-0")
    assert first.text_content() == "Riverton approved a tram line in 2024 "
    assert first.get("aria-label").startswith("Riverton approved a tram line in 2024. (")
    assert first.getnext().get("id") == "citation-0"
    assert first.getnext().getnext().text == "."
    # Two markers side by side are two badges side by side, then the sentence's full stop.
    fourth = one(text, "#citation-3")
    assert fourth.getprevious().text_content() == "Riverton ordered twelve tram cars "
    assert fourth.getnext().get("id") == "citation-4" and fourth.getnext().getnext().text == "."
    # A marker after the full stop stands where it stood, between the sentence and the next one.
    third = one(text, "#citation-2")
    assert third.getprevious().get("id") == "sentence-2" and third.getprevious().tail == " "
    assert third.tail == " "
    # Markers are never shown as words of the text; the reference list is shown as pasted.
    shown = "".join(text.itertext())
    assert "2024 [1]" not in shown and "[4][9]" not in shown
    assert f"[1] Riverton council minutes {MINUTES}" in shown
    # Words, not colour alone: every badge's name says what it is and what its source did.
    summary = one(text, "#citation-1 summary")
    assert summary.text_content() == "Citation [2] contradicts"
    assert summary.get("data-icon") == "✗"


MID_SENTENCE = (
    f"Paris is big [1] and old {SCRIPT} [2]. Rome is older.\n\n"
    "Sources:\n"
    f"[1] Paris facts {MINUTES}\n"
    f"[2] History {COST}\n"
)


def test_a_badge_inside_a_sentence_stands_between_the_words_it_stood_between(client, db):
    run = services.verification_create(text=MID_SENTENCE, settings=RUN_SETTINGS)
    Verification.objects.filter(pk=run.pk).update(status=Status.DONE)
    run.sentences.update(status=Status.DONE)
    add_evidence(add_claim(run, 0, "Paris is big."), "news", "supported", title="Paris news")

    response = get(client, permalink(run), htmx=True, sentence="0")
    assert SCRIPT not in response.content.decode() and ESCAPED_SCRIPT in response.content.decode()
    text = one(parse(response), ".text")

    first = one(text, "#sentence-0")
    group = first.getparent()
    assert "sentence-group" in group.classes
    # The words as pasted (child.text: the score badge is a child of the last piece), each badge
    # between the words its marker stood between.
    pieces = [
        (child.tag, child.get("id"), child.text if child.tag == "a" else one(child, ".citation-name").text_content())
        for child in group
    ]
    assert pieces == [
        ("a", "sentence-0", "Paris is big "),
        ("details", "citation-0", "[1]"),
        ("a", None, f" and old {SCRIPT} "),
        ("details", "citation-1", "[2]"),
        ("a", None, "."),
    ]
    # Every piece is the same sentence: a click on any word selects it, with or without script,
    # and it is shown selected as one.
    links = [child for child in group if child.tag == "a"]
    assert {(a.get("href"), a.get("hx-get"), a.get("data-index"), a.get("data-band")) for a in links} == {
        (first.get("href"), first.get("hx-get"), "0", first.get("data-band"))
    }
    assert all("selected" in a.classes for a in links)
    # One link for the keyboard and a screen reader: the first piece, named by the whole sentence
    # without its markers; the others hidden from both, the score at the sentence's end.
    assert first.get("aria-label").startswith(f"Paris is big and old {SCRIPT}. (")
    assert first.get("aria-current") == "true" and "sentence" in first.classes
    for piece in links[1:]:
        assert piece.get("aria-hidden") == "true" and piece.get("tabindex") == "-1"
        assert "sentence-part" in piece.classes and "sentence" not in piece.classes
        assert piece.get("aria-current") is None
    assert not first.cssselect(".score-badge") and links[-1].cssselect(".score-badge")
    # A sentence without markers inside it is one link, as before.
    second = one(text, "#sentence-1")
    assert second.getparent() is text and second.text_content().startswith("Rome is older.")
    assert len(text.cssselect("a.sentence")) == 2


def test_a_badge_opens_on_the_cited_passage_and_the_judges_rationale_without_script(client, cited):
    response = get(client, permalink(cited.run), htmx=True)
    doc = parse(response)

    supports = one(doc, "#citation-0 .citation-panel")
    assert one(supports, ".citation-said").text_content() == "[1] supports its sentence."
    link = one(supports, ".citation-source a")
    assert link.get("href") == MINUTES and link.text_content() == "Riverton council minutes"
    assert one(supports, "blockquote.passage mark").text_content() == CITED_PASSAGE
    assert one(supports, ".citation-rationale").text_content() == "Why: The minutes say so."
    evidence_link = one(supports, "a.citation-evidence").get("href")
    assert evidence_link == f"{permalink(cited.run)}?sentence=0#evidence-{cited.minutes.pk}"
    # The evidence it links to is there, in the sentence's panel.
    assert parse(get(client, permalink(cited.run), sentence="0")).cssselect(f"#evidence-{cited.minutes.pk}")

    contradicts = one(doc, "#citation-1 .citation-panel")
    assert one(contradicts, ".citation-rationale").text_content() == f"Why: It says the opposite {SCRIPT}."
    assert SCRIPT not in response.content.decode() and ESCAPED_SCRIPT in response.content.decode()
    # The title as the reference list gave it, as text: no element of its own.
    assert "alert(1)" in one(contradicts, ".citation-source a").text_content() and not doc.cssselect("script")

    assert one(doc, "#citation-2 .citation-said").text_content() == (
        "[3] does not say this: nothing in it is about what its sentence says."
    )
    gone = one(doc, "#citation-3 .citation-panel")
    assert one(gone, ".citation-said").text_content() == "[4] does not exist: the page answered HTTP 404."
    assert not gone.cssselect("blockquote, a.citation-evidence")
    nowhere = one(doc, "#citation-4 .citation-said").text_content()
    assert nowhere.startswith("[9] points nowhere: no entry 9")


def test_the_summary_line_counts_each_outcome_present(client, cited):
    doc = parse(get(client, permalink(cited.run), htmx=True))

    assert one(doc, "#citation-summary").text_content() == (
        "5 citations: 1 supports its sentence, 1 contradicts it, 1 does not say it, 1 does not exist, 1 points nowhere"
    )


def test_a_text_without_citations_has_no_summary_and_no_badges(client):
    run = make_run("The Eiffel Tower is in Paris.", "It is 330 metres tall.")

    doc = parse(get(client, permalink(run), htmx=True))

    assert not doc.cssselect("#citation-summary, .citation, #include-kind-cited")


def test_the_summary_and_badges_update_while_the_run_goes_on(client, db):
    run = services.verification_create(text=TEXT, settings=RUN_SETTINGS)
    Verification.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    run.sentences.update(status=Status.RUNNING)

    early = parse(get(client, permalink(run), htmx=True))
    assert one(early, "#citation-summary").text_content() == (
        "5 citations: 1 points nowhere, 4 are being checked so far"
    )
    assert one(early, "#result-body").get("hx-trigger") == "every 1s"

    claim = add_claim(run, 0, "Riverton approved a tram line in 2024.", status=ClaimStatus.DONE)
    judged(claim, cited_source(run, MINUTES), "supported", passage=CITED_PASSAGE)
    run.sentences.filter(index=0).update(status=Status.DONE)

    later = parse(get(client, permalink(run), htmx=True))
    assert one(later, "#citation-summary").text_content() == (
        "5 citations: 1 supports its sentence, 1 points nowhere, 3 are being checked so far"
    )
    assert one(later, "#citation-0").get("data-outcome") == "supports"


def test_the_evidence_panel_marks_a_source_the_text_cites(client, cited):
    doc = parse(get(client, permalink(cited.run), htmx=True, sentence="0"))

    assert one(doc, f"#evidence-{cited.minutes.pk} .cited-tag").text_content() == "cited by the text"
    assert not doc.cssselect(f"#evidence-{cited.web.pk} .cited-tag")


def test_one_tick_leaves_cited_sources_out_kept_in_the_link_and_the_api(client, cited):
    everything = parse(get(client, permalink(cited.run), htmx=True))
    # Counted: minutes and the web page support, cost contradicts, parks does not address its claim.
    assert one(everything, "#overall-counts").text_content() == "supported evidence 2 of 4"
    tick = one(everything, "#include-kind-cited")
    assert tick.get("checked") is not None
    assert query_of(tick.get("hx-get")) == {"exclude_kinds": {"cited"}}
    assert one(everything, ".kind-count[data-kind=cited]").text_content() == "3 items"

    without = parse(get(client, permalink(cited.run), htmx=True, sentence="0", exclude_kinds="cited"))

    assert one(without, "#overall-counts").text_content() == "supported evidence 1 of 1"
    assert one(without, "#include-kind-cited").get("checked") is None
    assert "Left out: sources the text cites" in one(without, "#exclusions").text_content()
    box = one(without, f"#include-evidence-{cited.minutes.pk}")
    assert box.get("disabled") is not None and box.get("title") == "Sources the text cites are left out"
    assert "excluded" in one(without, f"#evidence-{cited.minutes.pk}").classes
    assert one(without, f"#include-evidence-{cited.web.pk}").get("checked") is not None
    # A badge still says what its source said: leaving sources out of the score changes no citation.
    assert one(without, "#citation-0").get("data-outcome") == "supports"
    # The other exclusions keep the tick, and it keeps them.
    both = parse(get(client, permalink(cited.run), htmx=True, exclude_kinds="cited", exclude_types="news"))
    assert query_of(one(both, "#include-kind-cited").get("hx-get")) == {"exclude_types": {"news"}}

    api = client.get(f"/api/verifications/{cited.run.pk}", {"exclude_kinds": "cited"}).json()
    assert (api["supported"], api["total"]) == (1, 1)
    assert api["excluded_kinds"] == ["cited"]


def test_the_form_offers_the_citations_choice_and_stores_it(client, configured):
    doc = parse(client.get("/"))
    choices = {box.get("value"): box for box in doc.cssselect('input[name="citations"]')}
    assert set(choices) == {"also_search", "only"}
    assert choices["also_search"].get("checked") is not None and choices["only"].get("checked") is None
    assert "Cited sources only" in one(doc, "#citations").text_content()

    client.post("/", {"text": TEXT, "citations": "only"})

    assert Verification.objects.get().settings["citations"] == "only"


def test_the_csv_says_which_rows_a_citation_of_the_text_gave(client, cited):
    rows = csv_rows(download(client, cited.run, "evidence.csv"))

    assert tuple(rows[0]) == CSV_COLUMNS and CSV_COLUMNS[-3:] == ("cited_by_text", "citation", "citation_outcome")
    by_url = {row["url"]: row for row in rows if row["claim"]}
    assert (by_url[MINUTES]["cited_by_text"], by_url[MINUTES]["citation"], by_url[MINUTES]["citation_outcome"]) == (
        "yes",
        "[1]",
        "supports its sentence",
    )
    assert by_url[COST]["citation_outcome"] == "contradicts its sentence"
    web = by_url[Source.objects.get(pk=cited.web.source_id).url]
    assert (web["cited_by_text"], web["citation"], web["citation_outcome"]) == ("no", "", "")
    # Citations with no evidence row are rows of their own: nothing of their source was judged.
    alone = [(r["sentence"], r["url"], r["citation"], r["citation_outcome"]) for r in rows if not r["claim"]]
    assert alone == [
        (
            "Riverton ordered twelve tram cars.",
            GONE,
            "[4]",
            "does not exist: the page answered HTTP 404",
        ),
        ("Riverton ordered twelve tram cars.", "", "[9]", alone[1][3]),
    ]
    assert alone[1][3].startswith("points nowhere: no entry 9")


def test_a_badge_speaks_the_pages_language_inside_a_right_to_left_text(client, db):
    # Its words ("supports", "Why: …") are English whatever the text's language: read with the text's
    # lang and dir, a screen reader speaks them with an Arabic voice and they lay out right to left.
    text = "برج إيفل في باريس [1]. بني البرج عام 1889.\n\nالمصادر:\n[1] برج إيفل https://tower.example.org/story"
    run = services.verification_create(text=text, settings=RUN_SETTINGS)

    doc = parse(get(client, permalink(run), htmx=True))

    assert one(doc, ".text").get("lang") == "ar" and one(doc, ".text").get("dir") == "rtl"
    (badge,) = doc.cssselect(".text details.citation")
    assert (badge.get("lang"), badge.get("dir")) == ("en", "ltr")
