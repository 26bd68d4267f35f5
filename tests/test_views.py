"""The web UI: the paste form, the about page, the result permalink with its HTMX fragment, the
live recompute kept in the query string, and the JSON download. Runs are built with the ORM
(fast, exact); one test goes through a real run on the fake world (tests/fakes.py)."""

import importlib
import itertools
import json
import time
from datetime import timedelta
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import lxml.html
import pytest
from django.db import connection
from django.template.defaultfilters import floatformat
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.conftest import MODEL
from verification.access import ownership
from verification.inputs.forms import DEFAULT_SETTINGS
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    SearchResult,
    Sentence,
    Source,
    Status,
    Verification,
)
from verification.scoring import EvidenceRecord, Tally, compute_scores

HTMX = {"HX-Request": "true"}
SCRIPT = "<script>alert(1)</script>"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
SENTENCE = "The Eiffel Tower is in Paris, France."
RUN_SETTINGS = {"model": MODEL, **DEFAULT_SETTINGS}
# What a run stores of the domain lists when neither it nor the server has any.
NO_DOMAIN_LISTS = {"blocked_domains": [], "server_blocked_domains": [], "server_allowed_domains": []}


@pytest.fixture
def configured(configured):
    """The shared settings with a second model, for the model choice on the form."""
    configured.LLM_MODELS = f"{MODEL},other-model"
    return configured


@pytest.fixture
def unconfigured(settings):
    """A fresh clone: the default OpenAI model and no keys at all."""
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = "https://api.openai.com/v1"
    settings.LLM_MODELS = "gpt-4o-mini"
    settings.SERPER_API_KEY = ""
    settings.CELERY_EMBEDDED_WORKER = False


# --- building stored runs

_serial = itertools.count(1)


def make_run(*sentences: str, text: str | None = None, status=Status.DONE) -> Verification:
    """A run whose sentences are found, in order, in `text` (by default the sentences joined)."""
    text = " ".join(sentences) if text is None else text
    run = Verification.objects.create(text=text, settings=RUN_SETTINGS, status=status)
    position = 0
    for index, sentence in enumerate(sentences):
        start = text.index(sentence, position)
        Sentence.objects.create(
            verification=run,
            index=index,
            text=sentence,
            start=start,
            end=start + len(sentence),
            paragraph_index=0,
            context=list(sentences),
            position_in_context=index,
            status=Status.DONE if status in FINISHED else Status.RUNNING,
        )
        position = start + len(sentence)
    return run


def add_claim(run: Verification, sentence_index: int, text: str, *, status=ClaimStatus.DONE) -> Claim:
    sentence = run.sentences.get(index=sentence_index)
    return Claim.objects.create(
        sentence=sentence, index=sentence.claims.count(), text=text, query=text.rstrip("."), status=status
    )


def add_evidence(
    claim: Claim,
    source_type: str,
    verdict: str,
    *,
    relevance: float = 0.5,
    title: str | None = None,
    passage: str = "The tower stands in Paris, France. It is 330 metres tall.",
    highlights=((0, 34),),
    rationale: str = "The passage says so.",
    status=Status.DONE,
) -> Evidence:
    n = next(_serial)
    host = f"{source_type.replace('_', '-')}-{n}.example.org"
    source = Source.objects.create(
        verification=claim.sentence.verification,
        url=f"https://{host}/page",
        host=host,
        title=f"Page {n}" if title is None else title,
        source_type=source_type,
        type_decided_by="rules",
        status=Status.DONE,
    )
    SearchResult.objects.create(claim=claim, source=source, rank=1, status=Status.DONE)
    return Evidence.objects.create(
        claim=claim,
        source=source,
        index=0,
        passage=passage,
        highlights=[list(span) for span in highlights],
        relevance=relevance,
        verdict=verdict,
        rationale=rationale,
        status=status,
    )


def records_of(run: Verification) -> list[EvidenceRecord]:
    evidence = Evidence.objects.filter(claim__sentence__verification=run).select_related("claim__sentence", "source")
    return [
        EvidenceRecord(e.pk, e.claim.sentence.index, e.claim_id, e.source.source_type, e.verdict, e.status == "failed")
        for e in evidence
    ]


@pytest.fixture
def scored(db):
    """Three sentences: one well supported (a blog against it), one mostly contradicted (a
    government page for it), a greeting with no claim."""
    run = make_run("The Eiffel Tower is in Paris.", "It was completed in 1889.", "I hope this helps!")
    paris = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    france = add_claim(run, 0, "The Eiffel Tower is in France.")
    built = add_claim(run, 1, "The Eiffel Tower was completed in 1889.")
    return SimpleNamespace(
        run=run,
        paris=paris,
        france=france,
        built=built,
        wiki=add_evidence(paris, "wiki", "supported", relevance=0.9, title="Eiffel Tower - Encyclopedia"),
        news=add_evidence(paris, "news", "supported", relevance=0.8),
        blog_against=add_evidence(
            paris, "blog", "not_supported", relevance=0.7, rationale="The blog places it in Las Vegas."
        ),
        blog=add_evidence(france, "blog", "supported", relevance=0.6),
        irrelevant=add_evidence(france, "news", "irrelevant", relevance=0.5),
        gov=add_evidence(built, "government_website", "supported", relevance=0.9),
        social=add_evidence(built, "social_media", "not_supported", relevance=0.8),
        social_again=add_evidence(built, "social_media", "not_supported", relevance=0.7),
    )


# --- reading pages


def get(client, url: str, *, htmx: bool = False, **params):
    return client.get(url, params, headers=HTMX if htmx else {})


def textarea_value(element) -> str:
    """What a browser shows: HTML drops the one newline right after <textarea> (lxml keeps it)."""
    text = element.text_content()
    return text[1:] if text.startswith("\n") else text


def parse(response):
    return lxml.html.document_fromstring(response.content.decode())


def one(doc, selector: str):
    found = doc.cssselect(selector)
    assert len(found) == 1, f"{selector}: {len(found)} matches"
    return found[0]


def field_of(doc, name: str):
    """The `.field` block holding a form control: where its label, hint and error belong."""
    control = doc.cssselect(f'[name="{name}"]')[0]
    return next(el for el in control.iterancestors() if "field" in el.classes)


def query_of(url: str) -> dict[str, set[str]]:
    return {key: set(value[0].split(",")) for key, value in parse_qs(urlsplit(url).query).items()}


def permalink(run: Verification) -> str:
    return f"/v/{run.pk}"


# --- GET /


@pytest.mark.django_db
def test_home_shows_the_paste_form_with_models_modes_and_advanced_defaults(client, configured):
    response = get(client, "/")

    assert response.status_code == 200
    doc = parse(response)
    form = one(doc, "form.verify-form")
    assert form.get("method") == "post" and form.get("action") == "/"
    textarea = one(form, "textarea[name=text]")
    # No maxlength: a browser would cut a long paste silently; the server refuses it with the limit named.
    assert not textarea_value(textarea) and textarea.get("maxlength") is None
    assert textarea.get("data-max-chars") == "20000"
    options = form.cssselect("select[name=model] option")
    assert [o.get("value") for o in options] == [MODEL, "other-model"]
    assert [o.get("value") for o in options if o.get("selected") is not None] == [MODEL]
    radios = form.cssselect("input[name=retrieval_mode]")
    assert [(r.get("type"), r.get("value"), r.get("checked") is not None) for r in radios] == [
        ("radio", "dense", True),
        ("radio", "sparse", False),
    ]
    advanced = one(form, "details.advanced")
    assert advanced.get("open") is None
    for name, label, low, high in [
        ("top_k_results", "Web results per claim", "1", "10"),
        ("top_k_passages", "Passages per page", "1", "10"),
        ("context_size", "Context sentences", "0", "5"),
    ]:
        number = one(advanced, f"input[name={name}]")
        assert (number.get("type"), number.get("value"), number.get("min"), number.get("max")) == (
            "number",
            str(DEFAULT_SETTINGS[name]),
            low,
            high,
        )
        field = field_of(doc, name)
        assert one(field, "label").text_content() == label
        assert one(field, ".hint").text_content().endswith(f"({low}–{high}). Default: {DEFAULT_SETTINGS[name]}.")
    assert not doc.cssselect(".notice-warning")


@pytest.mark.django_db
def test_home_names_the_missing_keys(client, unconfigured):
    notice = one(parse(get(client, "/")), ".notice-warning").text_content()

    assert "SERPER_API_KEY" in notice
    assert "OPENAI_API_KEY" in notice


@pytest.mark.django_db
def test_home_does_not_ask_for_an_openai_key_when_the_model_has_its_own_server(client, unconfigured, settings):
    settings.LLM_MODELS = "llama3.1:8b=http://127.0.0.1:11434/v1"

    notice = one(parse(get(client, "/")), ".notice-warning").text_content()

    assert "SERPER_API_KEY" in notice
    assert "OPENAI_API_KEY" not in notice


# --- POST /


@pytest.mark.django_db
def test_posting_a_text_stores_a_run_and_redirects_to_its_permalink(client, configured):
    response = client.post(
        "/",
        {
            "text": "The Eiffel Tower is in Paris.\r\nIt was completed in 1889.",
            "model": "other-model",
            "retrieval_mode": "sparse",
            "top_k_results": "2",
            "top_k_passages": "",
            "context_size": "0",
        },
    )

    run = Verification.objects.get()
    assert response.status_code in (302, 303)
    assert response["Location"] == permalink(run)
    assert run.status == Status.PENDING and run.edited_from is None
    assert run.text == "The Eiffel Tower is in Paris.\nIt was completed in 1889."  # offsets index this text
    assert run.settings == {
        "model": "other-model",
        "retrieval_mode": "sparse",
        "top_k_results": 2,
        "top_k_passages": DEFAULT_SETTINGS["top_k_passages"],
        "context_size": 0,
        "evidence": "web",
        "quick": False,
        "citations": "also_search",
        **NO_DOMAIN_LISTS,
        "second_search_below": 2,  # SECOND_SEARCH_BELOW's default, kept with the run
        "write_search_queries": True,  # WRITE_SEARCH_QUERIES's default, kept with the run
    }


@pytest.mark.django_db
def test_posting_only_the_text_runs_with_the_defaults(client, configured):
    client.post("/", {"text": SENTENCE})

    assert Verification.objects.get().settings == {
        "model": MODEL,
        **DEFAULT_SETTINGS,
        **NO_DOMAIN_LISTS,
        "second_search_below": 2,
        "write_search_queries": True,
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        pytest.param({"text": ""}, "text", "Paste some text to verify.", id="empty"),
        pytest.param({"text": "   \n\t  "}, "text", "The text is empty", id="whitespace"),
        pytest.param({"text": "x" * 101}, "text", "the limit is 100", id="too-long"),
        pytest.param({"text": "Paris " + "\x01\x02\x03\x1b\x7f" * 8}, "text", "binary", id="control-characters"),
        pytest.param({"text": "\U0001f600 \U0001f44d\n\U0001f680"}, "text", "no sentence to check", id="emoji-only"),
        pytest.param({"text": "!!! ... ???\n--"}, "text", "no sentence to check", id="punctuation-only"),
        pytest.param({"text": SENTENCE, "top_k_results": "0"}, "top_k_results", "greater than or equal to 1", id="k0"),
        pytest.param(
            {"text": SENTENCE, "top_k_passages": "11"}, "top_k_passages", "less than or equal to 10", id="p11"
        ),
        pytest.param({"text": SENTENCE, "context_size": "abc"}, "context_size", "whole number", id="context-abc"),
        pytest.param({"text": SENTENCE, "retrieval_mode": "magic"}, "retrieval_mode", "valid choice", id="mode"),
        pytest.param({"text": SENTENCE, "model": "gpt-9-imaginary"}, "model", "valid choice", id="model"),
    ],
)
def test_an_invalid_form_is_shown_again_with_the_error_at_its_field_and_nothing_lost(
    client, configured, settings, data, field, says
):
    settings.MAX_TEXT_CHARS = 100
    data = {"retrieval_mode": "sparse", **data}

    response = client.post("/", data)

    assert response.status_code == 400
    assert not Verification.objects.exists()
    doc = parse(response)
    errors = doc.cssselect(".field-error")
    assert len(errors) == 1
    assert says in one(field_of(doc, field), ".field-error").text_content()
    assert textarea_value(one(doc, "textarea[name=text]")) == data["text"]
    if field != "retrieval_mode":
        assert one(doc, "input[name=retrieval_mode][value=sparse]").get("checked") is not None
    if field in ("top_k_results", "top_k_passages", "context_size"):
        assert one(doc, f"input[name={field}]").get("value") == data[field]
        assert one(doc, "details.advanced").get("open") is not None  # the error is not hidden


@pytest.mark.django_db
@pytest.mark.parametrize(("missing", "other"), [("SERPER_API_KEY", "OPENAI_API_KEY"), ("OPENAI_API_KEY", None)])
def test_posting_without_a_key_is_refused_naming_the_variable_and_keeping_the_text(
    client, configured, settings, missing, other
):
    setattr(settings, missing, "")
    if missing == "OPENAI_API_KEY":
        settings.OPENAI_BASE_URL = "https://api.openai.com/v1"
    text = "The Eiffel Tower is in Paris.\nIt was completed in 1889."

    response = client.post("/", {"text": text, "retrieval_mode": "sparse", "top_k_results": "7"})

    assert response.status_code == 503
    assert not Verification.objects.exists()
    doc = parse(response)
    notice = one(doc, ".notice-warning").text_content()
    assert missing in notice
    if other:
        assert other not in notice
    assert textarea_value(one(doc, "textarea[name=text]")) == text
    assert one(doc, "input[name=top_k_results]").get("value") == "7"


@pytest.mark.django_db
def test_a_post_without_the_csrf_token_is_refused(configured):
    client = Client(enforce_csrf_checks=True)
    client.get("/")

    response = client.post("/", {"text": SENTENCE})

    assert response.status_code == 403
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_the_form_carries_a_csrf_token_that_is_accepted(configured):
    client = Client(enforce_csrf_checks=True)
    token = one(parse(client.get("/")), "form input[name=csrfmiddlewaretoken]").get("value")

    response = client.post("/", {"text": SENTENCE, "csrfmiddlewaretoken": token})

    assert response.status_code == 302
    assert Verification.objects.count() == 1


@pytest.mark.django_db
def test_htmx_requests_send_the_csrf_token_from_the_body_hx_headers(configured):
    client = Client(enforce_csrf_checks=True)
    headers = json.loads(one(parse(client.get("/")), "body").get("hx-headers"))

    response = client.post("/", {"text": SENTENCE}, headers={**HTMX, "X-CSRFToken": headers["X-CSRFToken"]})

    assert response.status_code == 302
    assert Verification.objects.count() == 1


# --- editing a run's text


@pytest.mark.django_db
def test_the_edit_link_prefills_the_text_and_settings_of_the_run(client, configured):
    old = make_run(SENTENCE)
    old.settings = {"model": "other-model", "retrieval_mode": "sparse", "top_k_results": 8, "top_k_passages": 2}
    old.save()

    doc = parse(get(client, "/", edit=str(old.pk)))

    assert textarea_value(one(doc, "textarea[name=text]")) == SENTENCE
    assert one(doc, "select[name=model] option[selected]").get("value") == "other-model"
    assert one(doc, "input[name=retrieval_mode][checked]").get("value") == "sparse"
    assert one(doc, "input[name=top_k_results]").get("value") == "8"
    assert one(doc, "input[name=top_k_passages]").get("value") == "2"
    assert one(doc, "input[name=context_size]").get("value") == str(DEFAULT_SETTINGS["context_size"])
    assert one(doc, "input[name=edited_from]").get("value") == str(old.pk)
    assert doc.cssselect(f'a[href="{permalink(old)}"]')


@pytest.mark.django_db
@pytest.mark.parametrize("edit", ["not-a-uuid", "2f1e7c38-0000-4000-8000-000000000000"])
def test_an_edit_link_to_no_run_shows_the_empty_form(client, configured, edit):
    response = get(client, "/", edit=edit)

    assert response.status_code == 200
    doc = parse(response)
    assert not doc.cssselect("input[name=edited_from]")
    assert not textarea_value(one(doc, "textarea[name=text]"))


@pytest.mark.django_db
def test_posting_an_edit_starts_a_new_run_and_keeps_the_old_one_at_its_link(client, configured):
    old = make_run(SENTENCE)
    edited = "The Eiffel Tower is in Rome, Italy."

    response = client.post("/", {"text": edited, "edited_from": str(old.pk)})

    new = Verification.objects.exclude(pk=old.pk).get()
    assert response["Location"] == permalink(new)
    assert new.edited_from == old and new.text == edited
    old.refresh_from_db()
    assert old.text == SENTENCE
    page = get(client, permalink(old)).content.decode()
    assert SENTENCE in page and edited not in page


@pytest.mark.django_db
def test_an_invalid_edit_keeps_the_link_to_the_run_it_edits(client, configured):
    old = make_run(SENTENCE)

    response = client.post("/", {"text": "", "edited_from": str(old.pk)})

    assert response.status_code == 400
    assert one(parse(response), "input[name=edited_from]").get("value") == str(old.pk)


# --- GET /about


def test_about_explains_the_steps_and_the_score(client, settings):
    settings.MAX_TEXT_CHARS = 12345

    response = get(client, "/about")

    assert response.status_code == 200
    doc = parse(response)
    steps = [li.text_content() for li in doc.cssselect("article ol > li")]
    assert [step.split(".")[0] for step in steps] == [
        "Sentences",
        "Atomic claims",
        "Web search",
        "Scraping",
        "Passages",
        "Source types",
        "Judgement",
        "Score",
    ]
    text = doc.text_content()
    assert "credibility = supporting evidence ÷ all judged evidence" in text
    assert "credibility = supporting ÷ (supporting + contradicting)" in text
    assert "scores 2 ÷ 5 = 40% (orange) under all and 2 ÷ 3 = 67% (green) under decisive" in " ".join(text.split())
    outcomes = [dt.text_content() for dt in doc.cssselect("dt")][:6]
    assert outcomes == ["supported", "contradicted", "mixed evidence", "unconfirmed", "no evidence", "check failed"]
    assert f"Web results per claim (default {DEFAULT_SETTINGS['top_k_results']})" in text
    assert "12345 characters" in text


# --- GET /v/<id>


@pytest.mark.django_db
def test_the_permalink_is_a_full_page(client, scored):
    response = get(client, permalink(scored.run))

    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    doc = parse(response)
    assert one(doc, "header.site-header") is not None
    assert one(doc, "main > #result-body").get("data-status") == "done"


@pytest.mark.django_db
def test_an_htmx_request_gets_only_the_result_fragment(client, scored):
    response = get(client, permalink(scored.run), htmx=True)

    assert response.status_code == 200
    content = response.content.decode().strip()
    assert content.startswith('<div id="result-body"') and content.endswith("</div>")
    assert "<html" not in content and "<body" not in content and "site-header" not in content
    assert one(parse(response), "#result-body .text-panel") is not None


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize(
    "path", ["/v/2f1e7c38-0000-4000-8000-000000000000", "/v/2f1e7c38-0000-4000-8000-000000000000.json", "/v/12345"]
)
def test_an_unknown_permalink_is_a_friendly_404(client, htmx, path):
    response = get(client, path, htmx=htmx)

    assert response.status_code == 404
    text = parse(response).text_content()
    assert "Nothing here" in text and "There is no verification at this address" in text


@pytest.mark.django_db
@pytest.mark.parametrize("status", [Status.PENDING, Status.RUNNING])
def test_an_unfinished_run_polls_every_second_keeping_the_view_state(client, status):
    run = make_run(SENTENCE, status=status)

    doc = parse(get(client, permalink(run), htmx=True, sentence="0", exclude_types="blog"))

    body = one(doc, "#result-body")
    assert body.get("hx-trigger") == "every 1s"
    # Morphed, not replaced: opened rationales, scroll position and focus survive each poll.
    assert body.get("hx-swap") == "morph"
    assert body.get("hx-get") == f"{permalink(run)}?sentence=0&exclude_types=blog"
    assert "Verifying" in one(doc, "section.progress").text_content()


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
def test_a_finished_run_stops_polling(client, scored, htmx):
    doc = parse(get(client, permalink(scored.run), htmx=htmx))

    body = one(doc, "#result-body")
    assert body.get("hx-trigger") is None and body.get("hx-get") is None
    assert not doc.cssselect("section.progress")


@pytest.mark.django_db
def test_an_unfinished_run_tells_a_reader_without_javascript_to_reload_it(client):
    run = make_run(SENTENCE, status=Status.RUNNING)

    doc = parse(get(client, permalink(run), sentence="0"))

    note = one(doc, "#result-body noscript #reload-note")
    assert "updates itself with JavaScript" in note.text_content()
    assert one(note, "a").get("href") == f"{permalink(run)}?sentence=0"


@pytest.mark.django_db
def test_a_finished_run_has_no_reload_note(client, scored):
    assert not parse(get(client, permalink(scored.run))).cssselect("#reload-note")


@pytest.mark.django_db
def test_a_failed_run_shows_why_and_stops_polling(client):
    run = make_run(SENTENCE, status=Status.FAILED)
    Verification.objects.filter(pk=run.pk).update(error="every sentence failed: the API key was refused")

    doc = parse(get(client, permalink(run), htmx=True))

    assert one(doc, "#result-body").get("hx-trigger") is None
    assert "the API key was refused" in one(doc, ".notice-error").text_content()


@pytest.mark.django_db
def test_the_result_page_has_empty_live_regions_outside_what_updates_replace(client, scored):
    doc = parse(get(client, permalink(scored.run)))

    for region in ("#connection-notice", "#run-ended"):
        element = one(doc, f"main > {region}")
        assert element.get("role") == "status" and element.text_content() == ""
    notice = one(doc, "#connection-notice")
    assert "keeps trying" in notice.get("data-polling") and "not applied" in notice.get("data-change")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "error", "message"),
    [
        (Status.RUNNING, "", None),
        (Status.DONE, "", "Verification finished: all the evidence found has been judged."),
        (Status.FAILED, "the API key was refused", "Verification failed: the reason is shown below."),
    ],
)
def test_a_finished_runs_fragment_carries_the_words_that_announce_its_end(client, status, error, message):
    run = make_run(SENTENCE, status=status)
    Verification.objects.filter(pk=run.pk).update(error=error)

    found = parse(get(client, permalink(run), htmx=True)).cssselect("#result-body #run-ended-message")

    assert [(m.text_content(), m.get("hidden")) for m in found] == ([(message, "")] if message else [])


@pytest.mark.django_db
def test_the_text_is_shown_as_pasted_with_each_sentence_a_link(client):
    text = "The Eiffel Tower is in Paris.\n\nIt was completed in 1889.  I hope this helps!"
    run = make_run("The Eiffel Tower is in Paris.", "It was completed in 1889.", "I hope this helps!", text=text)

    doc = parse(get(client, permalink(run), htmx=True))

    panel = one(doc, ".text-panel .text")
    assert "".join(panel.itertext()).replace("—", "") == text  # "—": each sentence's empty score badge
    for link in panel.cssselect("a.sentence"):
        index = link.get("data-index")
        assert link.get("href") == link.get("hx-get") == f"{permalink(run)}?sentence={index}"


# --- live recompute


EXCLUSIONS = [
    pytest.param({}, id="everything"),
    pytest.param({"exclude_types": ["blog"]}, id="no-blogs"),
    pytest.param({"exclude_evidence": ["gov"]}, id="one-evidence"),
    pytest.param({"exclude_evidence": ["gov", "wiki"], "exclude_types": ["blog", "social_media"]}, id="both"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("exclusions", EXCLUSIONS)
def test_scores_are_recomputed_for_what_the_viewer_excludes(client, scored, htmx, exclusions):
    excluded_ids = {getattr(scored, name).pk for name in exclusions.get("exclude_evidence", [])}
    excluded_types = set(exclusions.get("exclude_types", []))
    expected = compute_scores(records_of(scored.run), excluded_ids=excluded_ids, excluded_types=excluded_types)
    if exclusions:  # each case moves the overall score, so a page ignoring it would fail
        assert expected.overall != compute_scores(records_of(scored.run)).overall
    params = {"sentence": "0"}
    if excluded_ids:
        params["exclude_evidence"] = ",".join(map(str, excluded_ids))
    if excluded_types:
        params["exclude_types"] = ",".join(excluded_types)

    doc = parse(get(client, permalink(scored.run), htmx=htmx, **params))

    overall = expected.overall
    score = one(doc, "#overall-score")
    assert float(score.get("data-score")) == pytest.approx(overall.score)
    assert score.text_content() == f"{overall.score:.0%}"
    assert f"band-{overall.band}" in one(doc, ".overall").classes
    assert one(doc, "#overall-counts").text_content() == f"supported evidence {overall.supported} of {overall.total}"
    sentences = doc.cssselect("a.sentence")
    assert len(sentences) == 3
    for link in sentences:
        tally = expected.sentences.get(int(link.get("data-index")), Tally())
        assert link.get("data-band") == tally.band
        assert f"band-{tally.band}" in link.classes
        if tally.score is None:
            assert link.get("data-score") == ""
        else:
            assert float(link.get("data-score")) == pytest.approx(tally.score)
    selected = expected.sentences[0]
    assert one(doc, "#sentence-score").text_content().split() == (
        f"{selected.score:.0%} · supported evidence {selected.supported} of {selected.total}".split()
    )
    shown = {el.get("data-type"): el.text_content() for el in doc.cssselect(".type-percent")}
    present = {r.source_type for r in records_of(scored.run)}
    assert shown == {
        t: "left out" if t in excluded_types else f"{floatformat(expected.distribution.get(t, 0.0), 0)}%"
        for t in present | excluded_types
    }
    for box in doc.cssselect("input[name=source_type]"):
        assert (box.get("checked") is None) == (box.get("value") in excluded_types)


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
def test_selecting_a_sentence_shows_its_claims_and_evidence(client, scored, htmx):
    doc = parse(get(client, permalink(scored.run), htmx=htmx, sentence="0"))

    panel = one(doc, "#evidence")
    assert one(panel, "h2").text_content() == "Sentence 1"
    assert one(panel, ".selected-sentence").text_content() == "The Eiffel Tower is in Paris."
    assert [h.text_content() for h in panel.cssselect("article.claim h3")] == [
        "The Eiffel Tower is in Paris.",
        "The Eiffel Tower is in France.",
    ]
    first_claim = panel.cssselect("article.claim")[0]
    assert [li.get("data-evidence-id") for li in first_claim.cssselect("li.evidence")] == [
        str(e.pk)
        for e in (scored.blog_against, scored.wiki, scored.news)  # what contradicts it first, then by relevance
    ]
    assert (
        one(first_claim, ".claim-outcome").text_content().split()
        == (
            "mixed evidence: supported by 2 of 3 pages read, contradicted by 1 67% · "
            "1 page contradicts it, 2 pages support it"
        ).split()
    )
    second_claim = panel.cssselect("article.claim")[1]
    assert [li.get("data-evidence-id") for li in second_claim.cssselect(".evidence-list")[0].cssselect("li")] == [
        str(scored.blog.pk)
    ]
    assert one(second_claim, "details.irrelevant-group > summary").text_content() == "1 page did not address this claim"
    assert one(second_claim, f"details.irrelevant-group #evidence-{scored.irrelevant.pk}") is not None
    wiki = one(panel, f"#evidence-{scored.wiki.pk}")
    title = one(wiki, "a.source-title")
    assert title.get("href") == scored.wiki.source.url
    assert title.get("target") == "_blank" and title.get("rel") == "noopener noreferrer"
    assert title.text_content() == "Eiffel Tower - Encyclopedia"
    assert one(wiki, ".host").text_content() == scored.wiki.source.host
    assert one(wiki, ".tag").text_content() == "Wiki"
    assert one(wiki, ".verdict").text_content() == "supports"
    assert one(wiki, ".verdict").get("data-icon") == "✓"
    # Its page's language was not told (these rows are made by hand): the browser reads its direction.
    assert lxml.html.tostring(one(wiki, ".passage"), encoding="unicode", with_tail=False) == (
        '<blockquote class="passage" dir="auto">'
        "<mark>The tower stands in Paris, France.</mark> It is 330 metres tall."
        "</blockquote>"
    )
    against = one(panel, f"#evidence-{scored.blog_against.pk}")
    assert one(against, ".verdict").text_content() == "contradicts"
    assert one(against, ".verdict").get("data-icon") == "✗"
    assert "verdict-not_supported" in one(against, ".verdict").classes
    assert one(against, ".rationale summary").text_content() == "Why it contradicts"
    assert one(against, ".rationale p").text_content() == "The blog places it in Las Vegas."
    assert "social media" not in panel.text_content()  # the other sentence's evidence is not shown
    selected = one(doc, "#sentence-0")
    assert "selected" in selected.classes and selected.get("aria-current") == "true"
    assert selected.get("href") == permalink(scored.run)  # selecting it again closes it


@pytest.mark.django_db
def test_evidence_shows_its_source_type_label_and_url_when_untitled(client):
    run = make_run(SENTENCE)
    claim = add_claim(run, 0, SENTENCE)
    untitled = add_evidence(claim, "social_media", "supported", title="")

    item = one(parse(get(client, permalink(run), htmx=True, sentence="0")), f"#evidence-{untitled.pk}")

    assert one(item, "a.source-title").text_content() == untitled.source.url
    assert one(item, ".tag").text_content() == "social media"


@pytest.mark.django_db
def test_a_passage_with_several_highlights_marks_each(client):
    run = make_run(SENTENCE)
    evidence = add_evidence(
        add_claim(run, 0, SENTENCE), "wiki", "supported", passage="aaa bbb ccc ddd", highlights=[(8, 11), (0, 3)]
    )

    item = one(parse(get(client, permalink(run), htmx=True, sentence="0")), f"#evidence-{evidence.pk}")

    assert [m.text_content() for m in item.cssselect(".passage mark")] == ["aaa", "ccc"]
    assert one(item, ".passage").text_content() == "aaa bbb ccc ddd"


@pytest.mark.django_db
def test_the_evidence_panel_says_what_is_still_missing(client):
    run = make_run(SENTENCE, "I hope this helps!", status=Status.RUNNING)
    Sentence.objects.filter(verification=run, index=1).update(status=Status.DONE)
    searching = add_claim(run, 0, SENTENCE, status=ClaimStatus.SEARCHING)
    judged = add_claim(run, 0, "The Eiffel Tower is in France.", status=ClaimStatus.DONE)
    pending = add_evidence(judged, "news", "", status=Status.PENDING)
    failed = add_evidence(judged, "news", "", status=Status.FAILED)

    first = parse(get(client, permalink(run), htmx=True, sentence="0"))
    second = parse(get(client, permalink(run), htmx=True, sentence="1"))

    claims = first.cssselect("article.claim")
    assert "still being checked" in one(claims[0], ".claim-outcome").text_content()
    assert one(first, f"#evidence-{pending.pk} .verdict").text_content() == "judging…"
    assert one(first, f"#evidence-{failed.pk} .verdict").text_content() == "not judged"
    assert "checking" in one(first, "#sentence-0").classes
    assert searching.text in claims[0].text_content()
    assert (
        one(second, "#sentence-outcome").text_content().split()
        == "nothing to check no checkable claim in this sentence".split()
    )


@pytest.mark.django_db
def test_each_toggle_link_flips_exactly_its_own_exclusion(client, scored):
    excluded_ids = {scored.news.pk, scored.gov.pk}

    doc = parse(
        get(
            client,
            permalink(scored.run),
            htmx=True,
            sentence="0",
            exclude_evidence=",".join(map(str, excluded_ids)),
            exclude_types="social_media",
        )
    )

    boxes = doc.cssselect("input[name=evidence]")
    assert len(boxes) == 5
    for box in boxes:
        evidence_id = int(box.get("value"))
        url = box.get("hx-get")
        assert urlsplit(url).path == permalink(scored.run)
        assert query_of(url) == {
            "sentence": {"0"},
            "exclude_evidence": {str(i) for i in excluded_ids ^ {evidence_id}},
            "exclude_types": {"social_media"},
        }
        assert (box.get("checked") is None) == (evidence_id in excluded_ids)
        assert box.get("hx-target") == "#result-body" and box.get("hx-push-url") == "true"
    assert "excluded" in one(doc, f"#evidence-{scored.news.pk}").classes
    for box in doc.cssselect("input[name=source_type]"):
        toggled = {"social_media"} ^ {box.get("value")}
        expected = {"sentence": {"0"}, "exclude_evidence": {str(i) for i in excluded_ids}}
        if toggled:
            expected["exclude_types"] = toggled
        assert query_of(box.get("hx-get")) == expected


@pytest.mark.django_db
def test_evidence_of_an_excluded_source_type_is_unticked_and_locked(client, scored):
    doc = parse(get(client, permalink(scored.run), htmx=True, sentence="0", exclude_types="blog"))

    for evidence in (scored.blog, scored.blog_against):
        box = one(doc, f"input[name=evidence][value='{evidence.pk}']")
        assert box.get("checked") is None and box.get("disabled") is not None
    wiki = one(doc, f"input[name=evidence][value='{scored.wiki.pk}']")
    assert wiki.get("checked") is not None and wiki.get("disabled") is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params",
    [
        {"exclude_evidence": "abc"},
        {"exclude_evidence": "1.5,,-3, 7"},
        {"exclude_types": "nope"},
        {"exclude_types": "blog'\"><"},
        {"sentence": "-1"},
        {"sentence": "abc"},
        {"sentence": "99"},
        {"sentence": "0.5"},
        {"sentence": "²"},
        {"exclude_evidence": "²,³"},
        {"exclude_evidence": "9" * 5000},
    ],
)
def test_junk_in_the_query_string_is_ignored(client, scored, params):
    baseline = parse(get(client, permalink(scored.run), htmx=True))

    response = get(client, permalink(scored.run), htmx=True, **params)

    assert response.status_code == 200
    doc = parse(response)
    assert one(doc, "#overall-counts").text_content() == one(baseline, "#overall-counts").text_content()
    assert one(doc, "#evidence-heading").text_content() == "Evidence"
    assert not doc.cssselect("input[name=evidence]")
    json_response = get(client, permalink(scored.run) + ".json", **params)
    assert json_response.status_code == 200
    assert json_response.json()["excluded_evidence"] == [] and json_response.json()["excluded_types"] == []


# --- escaping


@pytest.fixture
def hostile(db):
    """A run where the pasted text, a source, a passage, a rationale and the errors carry markup."""
    sentence = f"The tower is in Paris {SCRIPT}."
    run = make_run(sentence, text=f"{SCRIPT} {sentence}")
    claim = Claim.objects.create(
        sentence=run.sentences.get(), index=0, text=f"Claim {SCRIPT}", query=SCRIPT, error=f"claim {SCRIPT}"
    )
    evidence = add_evidence(
        claim,
        "blog",
        "not_supported",
        title=f"Title {SCRIPT}",
        passage=f"Passage {SCRIPT} end",
        highlights=[(8, 8 + len(SCRIPT))],
        rationale=f"Rationale {SCRIPT}",
    )
    Source.objects.create(
        verification=run, url="https://down.example.org/", host="down.example.org", status=Status.FAILED,
        error=f"HTTP 500 {SCRIPT}",
    )  # fmt: skip
    return SimpleNamespace(run=run, evidence=evidence)


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
def test_markup_from_the_text_and_the_web_is_escaped_on_the_result_page(client, hostile, htmx):
    response = get(client, permalink(hostile.run), htmx=htmx, sentence="0")

    content = response.content.decode()
    assert SCRIPT not in content
    assert ESCAPED_SCRIPT in content
    doc = parse(response)
    assert not doc.cssselect("#result-body script")
    item = one(doc, f"#evidence-{hostile.evidence.pk}")
    for where in (
        one(doc, ".text-panel .text"),
        one(doc, "#sentence-0"),
        one(doc, ".selected-sentence"),
        one(doc, "article.claim h3"),
        one(item, "a.source-title"),
        one(item, ".passage mark"),
        one(item, ".rationale p"),
        one(doc, "#problems"),
    ):
        assert SCRIPT in where.text_content()


@pytest.mark.django_db
def test_markup_in_the_text_is_escaped_on_the_form(client, configured):
    text = f"Paris {SCRIPT}"
    invalid = client.post("/", {"text": text, "top_k_results": "0"})
    run = make_run(text)
    edit = get(client, "/", edit=str(run.pk))

    for response in (invalid, edit):
        content = response.content.decode()
        assert SCRIPT not in content and ESCAPED_SCRIPT in content
        assert textarea_value(one(parse(response), "textarea[name=text]")) == text


# --- GET /v/<id>.json


@pytest.mark.django_db
def test_the_json_download_applies_the_same_exclusions_as_the_page(client, scored):
    query = {"exclude_evidence": str(scored.wiki.pk), "exclude_types": "social_media", "sentence": "1"}
    expected = compute_scores(records_of(scored.run), excluded_ids={scored.wiki.pk}, excluded_types={"social_media"})

    page = parse(get(client, permalink(scored.run), htmx=True, **query))
    response = client.get(one(page, "a[download]").get("href"))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="factsite-{scored.run.pk}.json"'
    data = json.loads(response.content)
    assert data["id"] == str(scored.run.pk) and data["permalink"] == permalink(scored.run)
    assert (data["score"], data["supported"], data["total"], data["band"]) == (
        expected.overall.score,
        expected.overall.supported,
        expected.overall.total,
        expected.overall.band,
    )
    assert data["source_types"] == expected.distribution
    assert data["excluded_evidence"] == [scored.wiki.pk] and data["excluded_types"] == ["social_media"]
    for sentence in data["sentences"]:
        tally = expected.sentences.get(sentence["index"], Tally())
        assert (sentence["score"], sentence["band"], sentence["total"]) == (tally.score, tally.band, tally.total)
        for claim in sentence["claims"]:
            for item in claim["evidence"]:
                assert item["included"] == (item["id"] != scored.wiki.pk and item["source_type"] != "social_media")
    assert data["settings"] == RUN_SETTINGS


@pytest.mark.django_db
def test_the_json_download_without_exclusions_counts_everything(client, scored):
    expected = compute_scores(records_of(scored.run))

    data = get(client, permalink(scored.run) + ".json").json()

    assert (data["supported"], data["total"]) == (expected.overall.supported, expected.overall.total)
    assert data["excluded_evidence"] == [] and data["excluded_types"] == []


# --- query count


def build_run(sentences: int, claims: int, evidence: int) -> Verification:
    run = make_run(*(f"Sentence number {i} is here." for i in range(sentences)))
    for s in range(sentences):
        for c in range(claims):
            claim = add_claim(run, s, f"Claim {c} of sentence {s}.")
            for e in range(evidence):
                add_evidence(claim, ("news", "blog", "wiki")[e % 3], ("supported", "not_supported")[e % 2])
    Source.objects.create(verification=run, url=f"https://down-{run.pk}.example.org/", status=Status.FAILED)
    return run


def count_queries(client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert get(client, url, **params).status_code == 200
    return len(queries)


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("status", [Status.RUNNING, Status.DONE])
def test_the_result_page_takes_the_same_number_of_queries_for_a_bigger_run(client, htmx, status):
    small = build_run(sentences=2, claims=2, evidence=2)
    big = build_run(sentences=6, claims=6, evidence=6)
    Verification.objects.filter(pk__in=[small.pk, big.pk]).update(status=status)

    small_count = count_queries(client, permalink(small), htmx=htmx, sentence="0")
    big_count = count_queries(client, permalink(big), htmx=htmx, sentence="0")

    assert big_count == small_count


# --- through a real run


@pytest.mark.django_db(transaction=True)
def test_posting_the_form_runs_a_verification_that_the_page_shows_when_done(client, world, celery_worker):
    text = "The Eiffel Tower is in Paris, France. It was completed in 1889.\n\nI hope this helps!"

    response = client.post("/", {"text": text, "retrieval_mode": "sparse", "top_k_results": "3"})

    run = Verification.objects.get()
    assert response.status_code == 302 and response["Location"] == permalink(run)
    assert run.settings["retrieval_mode"] == "sparse" and run.settings["top_k_results"] == 3
    deadline = time.monotonic() + 60
    while True:
        doc = parse(get(client, response["Location"], htmx=True))
        status = one(doc, "#result-body").get("data-status")
        # Polling goes on exactly as long as the run does.
        assert (one(doc, "#result-body").get("hx-trigger") == "every 1s") == (status not in FINISHED)
        if status in FINISHED or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == "done"
    expected = compute_scores(records_of(run))
    assert expected.overall.total > 0
    assert one(doc, "#overall-counts").text_content() == (
        f"supported evidence {expected.overall.supported} of {expected.overall.total}"
    )
    assert [a.text for a in doc.cssselect("a.sentence")][:2] == [
        "The Eiffel Tower is in Paris, France.",
        "It was completed in 1889.",
    ]
    supported = Evidence.objects.filter(claim__sentence__verification=run, verdict="supported").first()
    narrowed = parse(get(client, permalink(run), htmx=True, exclude_evidence=str(supported.pk)))
    expected = compute_scores(records_of(run), excluded_ids={supported.pk})
    assert one(narrowed, "#overall-counts").text_content() == (
        f"supported evidence {expected.overall.supported} of {expected.overall.total}"
    )


@pytest.mark.django_db
def test_a_history_restore_gets_the_whole_page_and_responses_vary_on_htmx(client, scored):
    restore = client.get(permalink(scored.run), headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    fragment = get(client, permalink(scored.run), htmx=True)

    assert b"<html" in restore.content and b"<html" not in fragment.content
    assert "HX-Request" in fragment["Vary"] and "HX-Request" in restore["Vary"]


# --- honest results: rules, exclusions, problems, what was run


@pytest.mark.django_db
@pytest.mark.parametrize("rule", ["all", "decisive"])
def test_the_score_rule_in_the_url_sets_every_number_and_the_switch(client, scored, rule):
    query = {} if rule == "all" else {"score_rule": rule}
    expected = compute_scores(records_of(scored.run), rule=rule)

    doc = parse(get(client, permalink(scored.run), htmx=True, **query))

    assert one(doc, "#overall-counts").text_content() == (
        f"supported evidence {expected.overall.supported} of {expected.overall.total}"
    )
    assert one(doc, f"#rule-{rule}").get("checked") is not None
    other = one(doc, "#rule-decisive" if rule == "all" else "#rule-all")
    assert other.get("checked") is None
    assert query_of(other.get("hx-get")).get("score_rule") == ({"decisive"} if rule == "all" else None)
    for link in doc.cssselect("a.sentence"):
        tally = expected.sentence(int(link.get("data-index")))
        assert link.get("data-band") == tally.band
    # Irrelevant evidence is the difference between the two rules in this run.
    assert expected.overall.total == (8 if rule == "all" else 7)


@pytest.mark.django_db
def test_a_view_that_leaves_things_out_says_what_and_links_to_everything(client, scored):
    doc = parse(
        get(client, permalink(scored.run), exclude_types="blog,news", exclude_evidence=str(scored.gov.pk), sentence="1")
    )

    notice = one(doc, "#exclusions")
    text = " ".join(notice.text_content().split())
    assert "Source types left out: News, Blog." in text
    excluded = 1 + sum(
        e.source.source_type in ("blog", "news")
        for e in Evidence.objects.filter(claim__sentence__verification=scored.run)
    )
    assert f"{excluded} evidence items not counted." in text
    assert query_of(one(notice, "#show-all").get("href")) == {"sentence": {"1"}}
    assert not parse(get(client, permalink(scored.run), sentence="1")).cssselect("#exclusions")


def as_creator(client: Client, run: Verification) -> None:
    """The client becomes the browser that started the run (its owner cookie): a retry is theirs."""
    token = ownership.new_token()
    Verification.objects.filter(pk=run.pk).update(creator=ownership.creator_key(token))
    client.cookies[ownership.COOKIE] = token


@pytest.mark.django_db
def test_failures_show_a_banner_with_counts_reasons_and_a_retry_button(client, scored):
    as_creator(client, scored.run)
    for _ in range(2):
        Source.objects.create(
            verification=scored.run,
            url=f"https://x{next(_serial)}.org/",
            host="x.org",
            status=Status.FAILED,
            error="the page answered HTTP 403",
            source_type="other",
        )
    lost = add_claim(scored.run, 0, "The Eiffel Tower is 330 metres tall.", status=ClaimStatus.FAILED)
    Claim.objects.filter(pk=lost.pk).update(error="web search failed: Serper answered HTTP 503")

    doc = parse(get(client, permalink(scored.run)))

    banner = one(doc, "#problems")
    assert banner.get("role") == "alert"
    steps = {li.get("data-step"): " ".join(li.text_content().split()) for li in banner.cssselect("li[data-step]")}
    assert steps["fetch"] == "Reading pages: 2 failed the page answered HTTP 403 (2×)"
    assert steps["search"] == "Web search: 1 failed web search failed: Serper answered HTTP 503"
    form = one(banner, "form.retry-form")
    assert form.get("action") == f"/v/{scored.run.pk}/retry" and form.get("method") == "post"
    france = one(doc, "#note-0")
    assert "1 claim could not be checked (web search failed: Serper answered HTTP 503)" in france.text_content()


@pytest.mark.django_db
def test_a_clean_run_shows_no_banner_and_a_running_one_no_retry(client, scored):
    assert not parse(get(client, permalink(scored.run))).cssselect("#problems")
    running = make_run(SENTENCE, status=Status.RUNNING)
    add_evidence(add_claim(running, 0, SENTENCE), "news", "", status=Status.FAILED)

    banner = one(parse(get(client, permalink(running))), "#problems")

    assert "Judging evidence: 1 failed" in " ".join(banner.text_content().split())
    assert not banner.cssselect("form")


@pytest.mark.django_db
def test_the_retry_button_requeues_failed_parts_and_keeps_the_view(
    client, scored, configured, django_capture_on_commit_callbacks
):
    as_creator(client, scored.run)
    failed = add_evidence(scored.built, "news", "", status=Status.FAILED)
    failed.error = "judging failed: the model answered HTTP 500"
    failed.save()

    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(f"/v/{scored.run.pk}/retry", {"query": "?sentence=1&score_rule=decisive&next=//evil"})

    assert response.status_code == 302
    assert response["Location"] == f"/v/{scored.run.pk}?sentence=1&score_rule=decisive"
    scored.run.refresh_from_db()
    failed.refresh_from_db()
    assert scored.run.status == Status.RUNNING and scored.run.retries == 1
    assert failed.status == Status.PENDING and failed.error == ""
    assert Claim.objects.get(pk=scored.built.pk).status == ClaimStatus.JUDGING
    assert len(callbacks) == 1  # one judge task for the one failed item
    assert client.get(f"/v/{scored.run.pk}/retry").status_code == 405


@pytest.mark.django_db
def test_the_page_says_what_was_run_and_is_titled_by_the_text(client, scored):
    Verification.objects.filter(pk=scored.run.pk).update(
        llm_calls=12, prompt_tokens=1000, completion_tokens=234, searches=3
    )

    doc = parse(get(client, permalink(scored.run)))

    facts = {
        dt.text_content(): dd.text_content()
        for dt, dd in zip(doc.cssselect("#run-facts dt"), doc.cssselect("#run-facts dd"), strict=True)
    }
    assert facts["Model"] == MODEL and facts["Retrieval"] == DEFAULT_SETTINGS["retrieval_mode"]
    assert facts["Web results per claim"] == str(DEFAULT_SETTINGS["top_k_results"])
    assert facts["Passages per page"] == str(DEFAULT_SETTINGS["top_k_passages"])
    assert facts["Context sentences"] == str(DEFAULT_SETTINGS["context_size"])
    assert facts["LLM calls"] == "12" and facts["Tokens"] == "1234" and facts["Web searches"] == "3"
    assert doc.findtext(".//title").startswith("The Eiffel Tower is in Paris. It was completed in 1889.")


@pytest.mark.django_db
def test_a_toggle_is_announced_and_a_poll_is_not(client, scored):
    toggled = parse(
        client.get(
            permalink(scored.run),
            {"exclude_evidence": str(scored.wiki.pk)},
            headers={**HTMX, "HX-Trigger": f"include-evidence-{scored.wiki.pk}"},
        )
    )
    polled = parse(client.get(permalink(scored.run), headers={**HTMX, "HX-Trigger": "result-body"}))

    expected = compute_scores(records_of(scored.run), excluded_ids={scored.wiki.pk})
    announcement = one(toggled, "#score-announcement")
    assert announcement.get("aria-live") == "polite"
    assert f"supported evidence {expected.overall.supported} of {expected.overall.total}" in announcement.text_content()
    assert one(polled, "#score-announcement").text_content() == ""


@pytest.mark.django_db
def test_each_evidence_checkbox_is_named_by_its_title_and_verdict(client, scored):
    doc = parse(get(client, permalink(scored.run), sentence="0"))

    label = one(doc, f"#evidence-{scored.blog_against.pk} label.include")
    assert " ".join(label.text_content().split()) == f"Count “{scored.blog_against.source.title}” (it contradicts)"


@pytest.mark.django_db
def test_progress_counts_sentences_split_and_never_goes_back(client):
    run = make_run(SENTENCE, "It was completed in 1889.", status=Status.RUNNING)
    add_claim(run, 0, SENTENCE, status=ClaimStatus.READING)

    first = parse(get(client, permalink(run), htmx=True))
    stages = [" ".join(li.text_content().split()) for li in first.cssselect(".stages li")]
    assert stages[:2] == ["sentences split into claims 1/2", "claims searched on the web 1/1"]
    assert int(one(first, "#run-progress").get("value")) == round(25 * 1 / 2 + 25)
    for n in range(6):  # the second sentence's claims arrive: the searched share falls to 1/6
        add_claim(run, 1, f"Claim {n}.", status=ClaimStatus.PENDING)

    later = parse(get(client, permalink(run), htmx=True))

    assert round(25 + 25 * 1 / 7) < round(25 * 1 / 2 + 25)
    assert int(one(later, "#run-progress").get("value")) == round(25 * 1 / 2 + 25)
    assert " ".join(later.cssselect(".stages li")[0].text_content().split()) == "sentences split into claims 2/2"


@pytest.mark.django_db
def test_a_sentence_note_tells_each_failure_once(client):
    run = make_run(SENTENCE)
    paris = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    add_evidence(paris, "wiki", "supported")
    france = add_claim(run, 0, "The Eiffel Tower is in France.")
    add_evidence(france, "news", "", status=Status.FAILED)

    note = " ".join(one(parse(get(client, permalink(run))), "#note-0 .note").text_content().split())

    # Once, with what it was; not also as "1 item could not be judged" beside it.
    assert note == "1 source supports it; 1 claim could not be checked (1 evidence item could not be judged)"


def failed_source(run: Verification, error: str, *, transient: bool) -> Source:
    return Source.objects.create(
        verification=run,
        url=f"https://x{next(_serial)}.org/",
        host="x.org",
        status=Status.FAILED,
        error=error,
        transient=transient,
        source_type="other",
    )


@pytest.mark.django_db
def test_no_retry_is_offered_when_every_failure_would_happen_again(client, scored):
    as_creator(client, scored.run)
    failed_source(scored.run, "the page answered HTTP 403", transient=False)
    failed_source(scored.run, "not a web page (image/png)", transient=False)

    banner = one(parse(get(client, permalink(scored.run))), "#problems")

    assert not banner.cssselect("form.retry-form")
    assert [" ".join(li.text_content().split()) for li in banner.cssselect("li.lasting")] == [
        "the page answered HTTP 403 — a retry will not change this",
        "not a web page (image/png) — a retry will not change this",
    ]
    assert "No retry is offered" in one(banner, "#retry-scope").text_content()
    assert client.post(f"/v/{scored.run.pk}/retry").status_code == 302
    assert Verification.objects.get(pk=scored.run.pk).retries == 0  # nothing was queued


@pytest.mark.django_db
def test_the_retry_button_says_which_failures_it_will_not_change(client, scored):
    as_creator(client, scored.run)
    failed_source(scored.run, "the page answered HTTP 403", transient=False)
    failed_source(scored.run, "the page answered HTTP 503", transient=True)

    banner = one(parse(get(client, permalink(scored.run))), "#problems")

    one(banner, "form.retry-form")
    reasons = {li.text_content().split(" —")[0]: "lasting" in li.classes for li in banner.cssselect("li[data-step] li")}
    assert reasons == {"the page answered HTTP 403": True, "the page answered HTTP 503": False}
    assert "the 1 failure marked “a retry will not change this” will stay" in one(banner, "#retry-scope").text_content()


@pytest.mark.django_db
def test_a_visitor_gets_check_again_not_retry_and_cannot_retry_someone_elses_run(client, scored, configured):
    as_creator(client, scored.run)
    failed_source(scored.run, "the page answered HTTP 503", transient=True)
    visitor = Client()

    banner = one(parse(get(visitor, permalink(scored.run))), "#problems")
    page = visitor.post(f"/v/{scored.run.pk}/retry")
    api = visitor.post(
        f"/api/verifications/{scored.run.pk}/retry",
        content_type="application/json",
        headers={ownership.HEADER: ownership.new_token()},
    )
    anonymous = visitor.post(f"/api/verifications/{scored.run.pk}/retry", content_type="application/json")

    assert not banner.cssselect("form.retry-form") and "Retry" not in banner.text_content()
    assert one(banner, "#check-again").get("href") == f"/?edit={scored.run.pk}"
    assert page.status_code == 403 and api.status_code == 403 and anonymous.status_code == 403
    assert "Check again" in api.json()["detail"]
    run = Verification.objects.get(pk=scored.run.pk)
    assert run.status == Status.DONE and run.retries == 0  # nothing went back to running
    # Its creator still retries it.
    assert one(parse(get(client, permalink(scored.run))), "form.retry-form")
    assert not parse(get(client, permalink(scored.run))).cssselect("#check-again")


@pytest.mark.django_db
def test_the_run_details_say_when_answers_came_from_the_cache_and_when_it_was_retried(client, scored):
    first_end = scored.run.created_at + timedelta(seconds=2)
    retried = first_end + timedelta(minutes=15)
    Verification.objects.filter(pk=scored.run.pk).update(
        llm_cached=7,
        searches_cached=3,
        retries=1,
        worked_seconds=2.0,
        retried_at=retried,
        finished_at=retried + timedelta(seconds=1.5),
    )

    doc = parse(get(client, permalink(scored.run)))

    assert one(doc, "#llm-calls").text_content() == "0 · 7 answers reused from earlier runs (cache)"
    assert one(doc, "#web-searches").text_content() == "0 · 3 reused from earlier runs (cache)"
    # 2 s, then 1.5 s after the retry: not the quarter of an hour it waited for it.
    assert one(doc, "#run-duration").text_content() == "3.5 s working, over 2 passes"
    assert one(doc, "#retried time").get("datetime") == retried.isoformat()


@pytest.mark.django_db
def test_the_site_has_a_favicon_at_the_path_browsers_ask_and_in_every_page(client):
    icon = client.get("/favicon.ico")

    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"
    assert b"".join(icon.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO's header
    links = {link.get("type") or "ico": link.get("href") for link in parse(client.get("/")).cssselect("link[rel=icon]")}
    assert links == {"image/svg+xml": "/static/favicon.svg", "ico": "/favicon.ico"}


@pytest.mark.django_db
def test_a_refused_form_lists_every_error_at_its_top_linked_to_its_field(client, configured):
    response = client.post("/", {"text": "", "top_k_results": "99", "retrieval_mode": "magic"})

    assert response.status_code == 400
    doc = parse(response)
    summary = one(doc, "form.verify-form > #form-errors")
    assert summary.get("autofocus") is not None and summary.get("tabindex") == "-1"
    links = [(a.get("href"), a.text_content()) for a in summary.cssselect("a")]
    assert [href for href, _ in links] == ["#id_text", "#id_retrieval_mode_0", "#id_top_k_results"]
    assert links[0][1] == "Paste the text to verify: Paste some text to verify."
    for href, _ in links:
        control = one(doc, href)
        error_id = f"{control.get('name')}-error"
        assert error_id in control.get("aria-describedby").split() and control.get("aria-invalid") == "true"
        assert field_of(doc, control.get("name")).cssselect(f"#{error_id}.field-error")


@pytest.mark.django_db
def test_the_verify_button_comes_right_after_the_text(client, configured):
    form = one(parse(get(client, "/")), "form.verify-form")
    order = [el for el in form.iter() if el.tag in ("textarea", "button", "select", "fieldset")]

    assert [el.tag for el in order[:3]] == ["textarea", "button", "select"]
    assert len(form.cssselect("button[type=submit]")) == 1


@pytest.mark.django_db
def test_a_url_given_in_web_mode_switches_the_run_to_both(client, configured):
    response = client.post("/", {"text": SENTENCE, "evidence": "web", "sources": "https://example.org/report"})

    assert response.status_code == 302
    run = Verification.objects.get()
    assert run.settings["evidence"] == "both" and run.settings["evidence_switched_from"] == "web"
    facts = one(parse(get(client, permalink(run))), "#evidence-mode").text_content()
    assert facts == "Both: the web and my documents — you chose “The web” and gave documents, so they were read as well"


@pytest.mark.django_db
def test_a_form_refused_for_one_file_names_the_good_files_to_choose_again(client, configured):
    from django.core.files.uploadedfile import SimpleUploadedFile

    files = [
        SimpleUploadedFile("notes.md", b"# Notes\n\nThe tower was completed in 1889.\n"),
        SimpleUploadedFile("photo.pdf", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64),
    ]
    response = client.post("/", {"text": SENTENCE, "evidence": "documents", "files": files})

    assert response.status_code == 400
    doc = parse(response)
    assert one(doc, "#files-to-choose-again").text_content().startswith("Choose again the file that was fine: notes.md")
    assert one(field_of(doc, "files"), "#files-note").text_content().startswith("Choose again: notes.md")
    assert "photo.pdf is not a PDF" in one(field_of(doc, "files"), ".field-error").text_content()


@pytest.mark.django_db
def test_a_run_failed_for_want_of_evidence_says_each_failure_once_in_its_banner(client):
    reason = "web search failed: Serper answered HTTP 503"
    run = make_run(SENTENCE, status=Status.FAILED)
    Verification.objects.filter(pk=run.pk).update(error=f"no evidence could be judged: {reason}")
    lost = add_claim(run, 0, SENTENCE, status=ClaimStatus.FAILED)
    Claim.objects.filter(pk=lost.pk).update(error=reason)

    banner = " ".join(one(parse(get(client, permalink(run))), "#problems").text_content().split())

    assert banner.startswith("This verification failed: no evidence could be judged Web search: 1 failed")
    assert banner.count("HTTP 503") == 1, banner


# --- the first screen's words (issue 27.10, 27.11)


def words_of(element) -> str:
    return " ".join(element.text_content().split())


@pytest.mark.django_db
def test_a_run_with_no_score_yet_says_how_far_its_judging_is_without_saying_so_far_twice(client):
    run = make_run(SENTENCE, status=Status.RUNNING)
    claim = add_claim(run, 0, SENTENCE, status=ClaimStatus.JUDGING)
    add_evidence(claim, "news", "", status=Status.PENDING)
    add_evidence(claim, "wiki", "", status=Status.PENDING)

    label = words_of(one(parse(get(client, permalink(run), htmx=True)), "#overall-label"))

    assert label == "Overall credibility · no score yet (0 of 2 judgements made)"
    assert "so far" not in label  # it said "no score yet so far, from 0 of 2 judgements"


@pytest.mark.django_db
def test_a_running_score_is_marked_running_and_a_finished_one_final(client):
    run = make_run(SENTENCE, status=Status.RUNNING)
    claim = add_claim(run, 0, SENTENCE, status=ClaimStatus.JUDGING)
    add_evidence(claim, "news", "supported")
    add_evidence(claim, "wiki", "", status=Status.PENDING)

    running = one(parse(get(client, permalink(run), htmx=True)), "section.summary")
    assert "running" in running.classes and "final" not in running.classes
    assert words_of(one(running, "#overall-provisional")) == "so far, from 1 of 2 judgements"

    Verification.objects.filter(pk=run.pk).update(status=Status.DONE)
    finished = one(parse(get(client, permalink(run), htmx=True)), "section.summary")
    assert "final" in finished.classes and not finished.cssselect("#overall-provisional")


@pytest.mark.django_db
def test_sentences_that_failed_alike_are_one_line_with_their_count(client):
    run = make_run(
        "The tower is in Paris.", "It is tall.", "It opened in 1889.", "It is old.", "It is iron.", status=Status.FAILED
    )
    Sentence.objects.filter(verification=run, index__in=[0, 1, 3]).update(
        status=Status.FAILED, error="claims could not be extracted: the model failed"
    )
    Sentence.objects.filter(verification=run, index=4).update(status=Status.FAILED, error="the model answered nothing")
    add_evidence(add_claim(run, 2, "The tower opened in 1889."), "wiki", "supported")

    doc = parse(get(client, permalink(run)))

    rows = doc.cssselect(".sentence-notes > li")
    assert [row.get("id") for row in rows] == ["note-0", "note-2", "note-4"]
    group = one(doc, "#note-0")
    assert "note-group" in group.classes
    assert words_of(one(group, ".note-count")) == "3×"
    assert words_of(one(group, ".note")) == "S1–S2, S4 (3 sentences): claims could not be extracted: the model failed"
    # A failure of its own, and a sentence that did not fail, keep their line and their link.
    assert words_of(one(doc, "#note-4 > a")).startswith("S5 ")
    assert words_of(one(doc, "#note-2 .note-score")) == "100%"


@pytest.mark.django_db
def test_a_failed_run_with_nothing_judged_offers_nothing_empty(client):
    run = make_run(SENTENCE, "It is tall.", status=Status.FAILED)
    Verification.objects.filter(pk=run.pk).update(error="no evidence could be judged")

    doc = parse(get(client, permalink(run)))

    assert not doc.cssselect("[data-copy-link], #downloads, #report-md, fieldset.score-rule, input[name=score_rule]")
    assert [words_of(a) for a in doc.cssselect("#run-actions a")] == ["Edit text"]  # not its creator: no Delete

    add_evidence(add_claim(run, 0, SENTENCE), "wiki", "supported")  # something was judged after all
    judged = parse(get(client, permalink(run)))
    assert judged.cssselect("[data-copy-link]") and judged.cssselect("#downloads #report-md")
    assert judged.cssselect("input[name=score_rule]")


# --- a run that changes while its page is built

# The module (the package exports a function of the same name).
result_page_module = importlib.import_module("verification.selectors.result_page")


@pytest.mark.django_db
def test_a_claim_saved_while_the_page_is_built_waits_for_the_next_refresh_instead_of_an_error(client, monkeypatch):
    """The page reads the run's claims for the verdicts, then the selected sentence's claims: a
    claim the decomposition saved in between (seen in CI) has no verdict in this view yet."""
    run = make_run("The tower is in Paris.", status=Status.RUNNING)
    add_claim(run, 0, "The tower is in Paris.", status=ClaimStatus.SEARCHING)
    read_claims = result_page_module.claim_records

    def claims_then_one_more(verification):
        claims = read_claims(verification)
        add_claim(run, 0, "The tower is tall.", status=ClaimStatus.PENDING)  # the decomposition, meanwhile
        return claims

    with monkeypatch.context() as racing:
        racing.setattr(result_page_module, "claim_records", claims_then_one_more)
        during = get(client, permalink(run), sentence=0)
    after = get(client, permalink(run), sentence=0)

    assert during.status_code == 200 and "The tower is in Paris." in during.content.decode()
    assert "The tower is tall." not in during.content.decode()
    assert after.status_code == 200 and "The tower is tall." in after.content.decode()
