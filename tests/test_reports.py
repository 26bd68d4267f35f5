"""The report to hand on (issue 17.2): Markdown, a standalone HTML page and a CSV of the evidence,
each of the view in the query string (rule and exclusions), and the JSON's whole text. Outside
content stays inert in every format: the Markdown is read back with a real Markdown parser, the
HTML with lxml, the CSV with the csv module. Runs are built with the ORM (tests/test_views.py)."""

import csv
import io
from types import SimpleNamespace

import lxml.html
import pytest
from markdown_it import MarkdownIt

from tests.test_trail_views import finished_trail
from tests.test_views import SCRIPT, add_claim, add_evidence, get, make_run, one, parse, permalink
from verification.models import Evidence, Source, Status, Verification
from verification.scoring import compute_scores
from verification.selectors import evidence_records
from verification.selectors.trail_result import trail_result
from verification.web.templatetags.factsite import percent
from verification.web.trail_reports import trail_csv, trail_report_html, trail_report_markdown

pytestmark = pytest.mark.django_db

DECISIVE_RULE = "Score rule: decisive, supporting ÷ (supporting + contradicting)."
# Each download's content type and the end of its attachment's name.
FORMATS = {
    "report.md": ("text/markdown; charset=utf-8", "report.md"),
    "report.html": ("text/html; charset=utf-8", "report.html"),
    "evidence.csv": ("text/csv; charset=utf-8", "evidence.csv"),
}


@pytest.fixture
def scored(db):
    """Two sentences with claims and evidence of several types and verdicts, and a greeting."""
    run = make_run("The Eiffel Tower is in Paris.", "It was completed in 1889.", "I hope this helps!")
    paris = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    built = add_claim(run, 1, "The Eiffel Tower was completed in 1889.")
    return SimpleNamespace(
        run=run,
        wiki=add_evidence(paris, "wiki", "supported", relevance=0.9, title="Eiffel Tower - Encyclopedia"),
        news=add_evidence(paris, "news", "supported", relevance=0.8),
        blog=add_evidence(paris, "blog", "not_supported", relevance=0.7, rationale="It places it in Las Vegas."),
        gov=add_evidence(built, "government_website", "supported", relevance=0.9),
        social=add_evidence(built, "social_media", "not_supported", relevance=0.8),
    )


def view_of(scored) -> dict:
    """The view the tests download: the wiki page left out by hand, social media by type, decisive rule."""
    return {"exclude_evidence": str(scored.wiki.pk), "exclude_types": "social_media", "score_rule": "decisive"}


def download(client, run, name: str, **query):
    response = get(client, f"{permalink(run)}/{name}", **query)
    assert response.status_code == 200, response.content
    content_type, filename = FORMATS[name]
    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"] == f'attachment; filename="factsite-{run.pk}-{filename}"'
    return response.content.decode()


def every_evidence(run) -> list[Evidence]:
    return list(Evidence.objects.filter(claim__sentence__verification=run).select_related("source", "claim"))


def markdown_html(text: str):
    """The Markdown as a naive CommonMark renderer with tables shows it: raw HTML passes through,
    and links to any scheme are made (markdown-it refuses `javascript:` itself; not every renderer
    does, so the report must not rely on it)."""
    renderer = MarkdownIt("commonmark").enable("table")
    renderer.validateLink = lambda url: True
    return lxml.html.fragment_fromstring(renderer.render(text), create_parent="div")


def csv_rows(text: str) -> list[dict]:
    assert text.startswith("\ufeff")
    return list(csv.DictReader(io.StringIO(text[1:])))


# --- the JSON


def test_the_json_holds_the_whole_text_as_pasted(client):
    text = "Here is what I found:\n\nThe Eiffel Tower is in Paris.   It opened in 1889.\n"
    run = make_run("The Eiffel Tower is in Paris.", "It opened in 1889.", text=text)

    data = get(client, permalink(run) + ".json").json()

    assert data["text"] == text
    assert list(data)[:3] == ["id", "permalink", "text"]


# --- the links on the page


@pytest.mark.parametrize("htmx", [False, True])
def test_the_page_links_each_report_of_the_view_on_screen(client, scored, htmx):
    query = view_of(scored)

    doc = parse(get(client, permalink(scored.run), htmx=htmx, sentence="1", **query))

    for selector, name in [
        ("#report-md", "report.md"),
        ("#report-html", "report.html"),
        ("#evidence-csv", "evidence.csv"),
    ]:
        href = one(doc, f".actions a{selector}").get("href")
        path, _, params = href.partition("?")
        assert path == f"{permalink(scored.run)}/{name}"
        assert dict(pair.split("=") for pair in params.split("&")) == {"sentence": "1", **query}


@pytest.mark.parametrize("htmx", [False, True])
def test_a_finished_page_holds_the_whole_report_for_printing(client, scored, htmx):
    doc = parse(get(client, permalink(scored.run), htmx=htmx, sentence="1", **view_of(scored)))

    printed = one(doc, "#result-body #print-report.print-only")
    assert len(printed.cssselect(".report-sentence")) == 3
    urls = [u.text_content() for u in printed.cssselect(".report-footnotes .report-url")]
    assert sorted(urls) == sorted(item.source.url for item in every_evidence(scored.run))
    assert one(printed, ".report-rule").text_content() == DECISIVE_RULE


def test_a_page_still_running_says_to_print_it_once_done(client):
    run = make_run("The Eiffel Tower is in Paris.", status=Status.RUNNING)

    printed = one(parse(get(client, permalink(run))), "#print-report")

    assert "still being checked" in printed.text_content() and not printed.cssselect(".report")


# --- what every format says


def test_the_markdown_report_says_what_was_run_the_rule_what_is_left_out_and_every_item(client, scored):
    expected = compute_scores(
        evidence_records(scored.run), rule="decisive", excluded_ids={scored.wiki.pk}, excluded_types={"social_media"}
    )
    text = download(client, scored.run, "report.md", **view_of(scored))

    for line in (
        f"- Model: {scored.run.settings['model']}",
        "- Score rule: decisive, supporting ÷ (supporting + contradicting)",
        "- This view leaves evidence out. Source types left out: social media. 1 evidence item left out by hand. "
        "2 evidence items not counted.",
        f"- Overall credibility: {percent(expected.overall.score)}, most evidence supports it "
        f"(supported evidence {expected.overall.supported} of {expected.overall.total})",
    ):
        assert line in text.splitlines(), line
    assert "LLM calls: 0; tokens: 0; web searches: 0" in text
    shown = markdown_html(text)
    table = [[cell.text_content() for cell in row.cssselect("td")] for row in shown.cssselect("table tbody tr")]
    assert [row[0] for row in table] == ["S1", "S2", "S3"]
    assert [row[3] for row in table] == [s.text for s in scored.run.sentences.order_by("index")]
    assert table[2][2] == "nothing to check"
    items = every_evidence(scored.run)
    links = {a.get("href"): a.text_content() for a in shown.cssselect("a")}
    for item in items:
        assert links[item.source.url] == item.source.title
        counted = item.pk not in (scored.wiki.pk, scored.social.pk)
        footnote = next(line for line in text.splitlines() if f"]({item.source.url})" in line)
        assert ("· counted ·" in footnote) == counted, footnote
        assert f"S{item.claim.sentence.index + 1}, “" in footnote
    assert text.count("[^") == 2 * len(items)  # each item cited once and defined once
    assert "it contradicts · counted" in text and "It places it in Las Vegas" in text


def test_the_html_report_is_standalone_and_shows_every_item_with_its_url(client, scored):
    text = download(client, scored.run, "report.html", **view_of(scored))

    doc = lxml.html.document_fromstring(text)
    # Opened from disk, anywhere: nothing to fetch, nothing to run.
    assert not doc.cssselect("script, link, img, iframe, object, [style], [src]")
    assert len(doc.cssselect("head style")) == 1
    assert one(doc, ".report-rule").text_content() == DECISIVE_RULE
    assert "Source types left out: social media." in one(doc, ".report-left-out").text_content()
    assert [s.text_content().split(" ", 1)[1] for s in doc.cssselect(".report-sentence-text")] == [
        "The Eiffel Tower is in Paris.",
        "It was completed in 1889.",
        "I hope this helps!",
    ]
    notes = doc.cssselect(".report-footnotes > li")
    assert len(notes) == len(every_evidence(scored.run))
    for item in every_evidence(scored.run):
        note = next(n for n in notes if one(n, ".report-url").text_content() == item.source.url)
        assert one(note, ".report-title a").get("href") == item.source.url
        counted = item.pk not in (scored.wiki.pk, scored.social.pk)
        assert note.get("data-counted") == ("yes" if counted else "no")
    refs = [a.get("href") for a in doc.cssselect(".report-claims a.report-ref")]
    assert refs == [f"#report-fn{n}" for n in range(1, len(notes) + 1)]
    assert one(doc, ".text").text_content() == scored.run.text


def test_a_reports_usage_shows_the_answers_reused_beside_the_calls(client, scored):
    """A run served from the cache made no call: "LLM calls: 0" alone read as if nothing was asked."""
    Verification.objects.filter(pk=scored.run.pk).update(llm_calls=0, llm_cached=26, searches=1, searches_cached=5)

    markdown = download(client, scored.run, "report.md")
    html = lxml.html.document_fromstring(download(client, scored.run, "report.html"))

    assert "- LLM calls: 0 (26 answers reused); tokens: 0; web searches: 1 (5 reused)" in markdown.splitlines()
    facts = {
        " ".join(div.cssselect("dt")[0].text_content().split()): " ".join(div.cssselect("dd")[0].text_content().split())
        for div in html.cssselect(".report-facts > div")
    }
    assert facts["LLM calls"] == "0 (26 answers reused)"
    assert facts["Web searches"] == "1 (5 reused)"


def test_a_report_without_reused_answers_says_only_its_calls(client, scored):
    Verification.objects.filter(pk=scored.run.pk).update(llm_calls=1, llm_cached=0)

    assert "- LLM calls: 1; tokens: 0; web searches: 0" in download(client, scored.run, "report.md").splitlines()


def test_the_html_report_has_its_landmarks(client, scored):
    doc = lxml.html.document_fromstring(download(client, scored.run, "report.html"))

    (main,) = doc.cssselect("body > main")
    assert main.cssselect("h1") and main.cssselect(".report-sentences")
    assert [child.tag for child in doc.cssselect("body")[0]] == ["main", "footer"]


def test_the_csv_has_one_row_per_evidence_item_with_whether_it_counts(client, scored):
    text = download(client, scored.run, "evidence.csv", **view_of(scored))

    rows = csv_rows(text)
    assert list(rows[0]) == [
        "sentence", "claim", "outcome", "title", "url", "host", "type", "date", "verdict", "rationale", "counted",
        "snippet_only", "unread_reason", "from_model_knowledge", "text_language", "page_language", "cited_by_text",
        "citation", "citation_outcome",
    ]  # fmt: skip
    by_url = {row["url"]: row for row in rows}
    assert len(rows) == len(by_url) == len(every_evidence(scored.run))
    for item in every_evidence(scored.run):
        row = by_url[item.source.url]
        assert row["sentence"] == item.claim.sentence.text and row["claim"] == item.claim.text
        assert (row["title"], row["host"], row["rationale"]) == (item.source.title, item.source.host, item.rationale)
        assert row["counted"] == ("no" if item.pk in (scored.wiki.pk, scored.social.pk) else "yes")
    assert by_url[scored.blog.source.url]["verdict"] == "contradicts"
    assert by_url[scored.gov.source.url]["type"] == "government website"
    # Under the decisive rule, without the wiki page: 1 supporting, 1 contradicting.
    assert {by_url[scored.news.source.url]["outcome"]} == {"mixed evidence"}


def test_without_a_view_every_item_counts_under_the_default_rule(client, scored):
    text = download(client, scored.run, "report.md")

    assert "- This view leaves nothing out: every evidence item counts." in text.splitlines()
    assert "- Score rule: all, supporting ÷ all judged evidence" in text.splitlines()
    assert {row["counted"] for row in csv_rows(download(client, scored.run, "evidence.csv"))} == {"yes"}


def test_a_copy_of_a_text_names_the_item_it_repeats(client):
    run = make_run("The Eiffel Tower is in Paris.")
    claim = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    original = add_evidence(claim, "news", "supported", relevance=0.5)
    # The copy is the more relevant, so it comes first and names a number after its own.
    copy = add_evidence(claim, "blog", "supported", relevance=0.9)
    Evidence.objects.filter(pk=copy.pk).update(duplicate_of=original)

    doc = lxml.html.document_fromstring(download(client, run, "report.html"))

    first, second = doc.cssselect(".report-footnotes > li")
    assert one(first, ".report-url").text_content() == copy.source.url
    assert "· counted once with [2], the same text" in one(first, ".report-meta").text_content()
    assert one(second, ".report-meta").text_content().endswith("· counted")
    assert "counted once with [^2], the same text" in download(client, run, "report.md")


# --- outside content stays inert

LINK_INJECTION = "[click me](javascript:alert(1))"
HOSTILE_TITLE = f"Title {SCRIPT} {LINK_INJECTION} `code` | a | b"


@pytest.fixture
def hostile(db):
    """Markup, Markdown and spreadsheet formulas everywhere outside content goes: the pasted
    text, a claim, page titles, a page's address, a rationale."""
    sentence = f"The tower | is `tall` {LINK_INJECTION} {SCRIPT}."
    run = make_run(sentence)
    claim = add_claim(run, 0, '=HYPERLINK("https://evil.example","x")')
    titled = add_evidence(
        claim,
        "blog",
        "not_supported",
        title=HOSTILE_TITLE,
        rationale="Because ](javascript:alert(2)) <img src=x onerror=alert(3)>",
    )
    scripted = add_evidence(claim, "news", "supported", title="+SUM(A1:A9)", rationale="-2+3")
    Source.objects.filter(pk=scripted.source_id).update(url="javascript:alert(4)")
    formulas = [add_evidence(claim, "news", "irrelevant", title=start + "cmd|' /C calc'!A0") for start in "=@\t"]
    return SimpleNamespace(run=run, sentence=sentence, titled=titled, scripted=scripted, formulas=formulas)


def test_markup_and_markdown_from_outside_cannot_make_links_html_or_cells_in_the_markdown(client, hostile):
    text = download(client, hostile.run, "report.md")

    shown = markdown_html(text)
    assert not shown.cssselect("script, img")
    # The only links: our own address, and the http(s) pages' titles.
    hrefs = [a.get("href") for a in shown.cssselect("a")]
    assert all(href.startswith(("http://", "https://")) for href in hrefs), hrefs
    assert "javascript:alert(4)" not in hrefs
    titles = [a.text_content() for a in shown.cssselect("a")]
    assert HOSTILE_TITLE in titles  # shown as written, inside its one link
    row = one(shown, "table tbody tr")
    assert [cell.text_content() for cell in row.cssselect("td")][3] == hostile.sentence
    assert SCRIPT in shown.text_content() and "<img src=x onerror=alert(3)>" in shown.text_content()


def test_markup_from_outside_is_text_in_the_html_report(client, hostile):
    doc = lxml.html.document_fromstring(download(client, hostile.run, "report.html"))

    assert not doc.cssselect("script, img, [onerror]")
    assert all(a.get("href").startswith(("http://", "https://", "#")) for a in doc.cssselect("a"))
    assert HOSTILE_TITLE in [t.text_content() for t in doc.cssselect(".report-title")]
    assert "javascript:alert(4)" in [u.text_content() for u in doc.cssselect(".report-url")]  # shown, not linked
    assert one(doc, ".text").text_content() == hostile.sentence


def test_no_csv_cell_from_outside_can_start_a_formula(client, hostile):
    rows = csv_rows(download(client, hostile.run, "evidence.csv"))

    cells = [value for row in rows for value in row.values()]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert {row["claim"] for row in rows} == {'\'=HYPERLINK("https://evil.example","x")'}
    assert sorted(row["title"] for row in rows if row["title"].startswith("'")) == sorted(
        ["'+SUM(A1:A9)", "'=cmd|' /C calc'!A0", "'@cmd|' /C calc'!A0", "'\tcmd|' /C calc'!A0"]
    )
    assert {row["rationale"] for row in rows if row["title"] == "'+SUM(A1:A9)"} == {"'-2+3"}


# --- a trail run's reports


def test_a_trail_report_says_verdicts_and_status_in_the_readers_words_in_every_format(configured):
    run = finished_trail()
    result = trail_result(run, with_texts=True)

    markdown = trail_report_markdown(result, run.text, address="http://testserver/v/1")
    html = lxml.html.document_fromstring(trail_report_html(result, run.text, address="http://testserver/v/1"))
    rows = list(csv.DictReader(io.StringIO(trail_csv(result))))

    for text in (markdown.replace("\\_", "_"), html.text_content()):
        assert "fully_supported" not in text and "not_fully_supported" not in text
        assert "round 1 (fully supported)" in text.lower() and "round 2 (not fully supported)" in text.lower()
        assert "finished · checked through 4 texts" in text.lower()
    assert {row["verdict"] for row in rows} == {"fully supported", "not fully supported"}
    assert {row["round_verdict"] for row in rows} == {"fully supported", "not fully supported"}
