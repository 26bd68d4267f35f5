"""The trail pages (issue 26): the builder as a pure function (boxes → the trail's JSON), the form's
refusals with nothing typed lost, a trail run's permalink and its HTMX fragments. Runs are built with
the ORM (fast, exact); tests/browser/test_trails_ui.py runs one on the real worker."""

import io
import json

import lxml.html
import pytest
from django.http import QueryDict
from django.test import Client
from django.utils import timezone

from tests.conftest import MODEL, ROOT
from verification import services
from verification.access import ownership
from verification.inputs.trails import TrailRefused, trail_submission
from verification.models import Claim, ClaimStatus, Status, TrailNode, TrailRound, TrailSelection, Verification
from verification.web.trail_form import builder_from_data, trail_data
from verification.web.trails import entered_headline

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
EXAMPLE = json.loads((ROOT / "docs" / "examples" / "trail.json").read_text())
TEXTS = {node["id"]: node["text"] for node in EXAMPLE["nodes"]}
HOSTILE = "<script>alert(1)</script>"


def form_data(fields: dict) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in fields.items():
        data.setlist(name, value if isinstance(value, list) else [str(value)])
    return data


def trail_file(content: str) -> io.BytesIO:
    upload = io.BytesIO(content.encode())
    upload.name = "trail.json"
    return upload


def example_form(**extra) -> dict:
    """The example trail as a person types it into the builder (three source boxes, one empty)."""
    return {
        **{"source-count": 3, "source-0-name": "src-a", "source-0-text": TEXTS["src-a"]},
        **{"source-1-name": "src-b", "source-1-text": TEXTS["src-b"], "source-2-text": ""},
        **{"level-count": 1, "level-0-step": "section summary", "level-0-count": 2},
        **{"level-0-0-name": "sum-1", "level-0-0-text": TEXTS["sum-1"]},
        **{"level-0-0-seen": 3, "level-0-0-from": ["0", "1", "2"], "level-0-1-seen": 3, "level-0-1-from": ["0", "1"]},
        **{"final-name": "final", "final-step": "final answer", "final-text": TEXTS["final"]},
        **extra,
    }


# --- the builder, pure


def test_the_builder_makes_the_example_trail_leaving_empty_boxes_out():
    assert trail_data(builder_from_data(form_data(example_form()))) == EXAMPLE


def test_a_new_builder_ticks_every_text_below_and_names_the_texts_it_was_not_given_names_for():
    builder = builder_from_data(None)

    assert [box.node_id for box in builder.sources] == ["source-1", "source-2", "source-3"]
    assert [box.node_id for box in builder.levels[0].boxes] == ["level-1-text-1", "level-1-text-2"]
    assert all(option.checked for box in builder.levels[0].boxes for option in box.options)
    assert builder.final.node_id == "final"


def test_unticked_inputs_are_left_out_and_a_text_added_below_is_ticked():
    # Shown with two sources, the first ticked; the third is new since.
    fields = {"source-count": 3, "source-0-text": "A one.", "source-1-text": "B two.", "source-2-text": "C three."}
    fields |= {"level-0-0-text": "S one.", "level-0-0-seen": 2, "level-0-0-from": ["0"], "final-text": "F."}

    trail = trail_data(builder_from_data(form_data(fields)))

    summary = next(node for node in trail["nodes"] if node["id"] == "level-1-text-1")
    assert summary["from"] == ["source-1", "source-3"]
    assert "step" not in summary  # no step name given: the page says "stage 1"
    assert trail["nodes"][-1] == {"id": "final", "step": "final text", "from": ["level-1-text-1"], "text": "F."}


def test_the_final_text_is_made_from_the_highest_level_given():
    fields = {"source-count": 1, "source-0-text": "A.", "level-count": 2, "level-0-count": 1, "level-0-0-text": "L1."}
    fields |= {"level-1-count": 1, "level-1-0-text": "", "final-text": "F."}

    trail = trail_data(builder_from_data(form_data(fields)))

    assert [node["id"] for node in trail["nodes"]] == ["source-1", "level-1-text-1", "final"]
    assert trail["nodes"][-1]["from"] == ["level-1-text-1"]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"source-0-text": "A."}, "Paste the final text"),
        ({"final-text": "F."}, "Paste at least one source"),
        ({"source-0-text": "A.", "final-text": "F.", "level-0-0-text": "L.", "level-0-0-seen": 1}, "'level-1-text-1'"),
        ({"source-0-text": "A.", "source-0-name": "final", "final-text": "F."}, "Two texts are named 'final'"),
    ],
    ids=["no-final-text", "no-source", "made-from-nothing", "one-name-twice"],
)
def test_a_builder_missing_a_text_or_an_input_is_refused_in_words(fields, says):
    with pytest.raises(TrailRefused) as refused:
        trail_data(builder_from_data(form_data({"source-count": 1, **fields})))

    assert says in str(refused.value)


def test_the_box_counts_are_capped_and_junk_counts_fall_back_to_the_defaults():
    builder = builder_from_data(form_data({"source-count": 10_000, "level-count": "x"}))

    assert len(builder.sources) == 30 and len(builder.levels) == 1


@pytest.mark.parametrize("junk", ["²", "٣", "9" * 5_001], ids=["superscript-two", "arabic-indic-three", "5001-digits"])
def test_a_counter_that_is_no_plain_number_is_junk_like_any_other(junk):
    fields = {"source-count": junk, "level-count": junk, "level-0-count": junk, "level-0-0-seen": junk}
    builder = builder_from_data(form_data({**fields, "level-0-0-from": [junk, "0"], "add": f"text-{junk}"}))

    assert len(builder.sources) == 3 and len(builder.levels) == 1 and len(builder.levels[0].boxes) == 2
    assert builder.levels[0].boxes[0].inputs == frozenset({0}) and builder.focus == ""


# --- the form page


def test_the_home_page_links_to_a_form_of_sources_a_level_the_final_text_a_file_the_model_and_q(client, configured):
    configured.TRAIL_Q = 2
    home = client.get("/").content.decode()
    assert 'href="/trail" id="trail-link">Check against the steps that made it</a>' in home

    html = client.get("/trail").content.decode()

    assert all(f'name="source-{i}-text"' in html for i in range(3)) and 'name="source-3-text"' not in html
    assert 'name="level-0-0-text"' in html and 'name="level-0-step"' in html and 'name="final-text"' in html
    assert html.count('name="level-0-0-from"') == 3 and 'type="file" name="trail_file"' in html
    assert f'<option value="{MODEL}"' in html and 'name="q" value="2"' in html


def test_adding_a_box_renders_one_more_keeping_what_was_typed_and_htmx_gets_only_the_builder(client, configured):
    response = client.post("/trail", example_form(add="source"))

    html = response.content.decode()
    assert response.status_code == 200 and not Verification.objects.exists()
    assert "<html" in html and 'name="source-3-text"' in html
    assert TEXTS["sum-1"] in html and 'value="src-a"' in html and 'value="section summary"' in html
    # The new source is ticked as an input of the level's texts; the focus goes to its box.
    assert 'name="level-0-0-from" value="3" checked' in html
    assert 'id="source-3-text" rows="4" data-text-of="source-3" autofocus' in html

    fragment = client.post("/trail", example_form(add="level"), headers=HTMX).content.decode()
    assert fragment.lstrip().startswith('<div class="trail-builder" id="trail-builder">') and "<html" not in fragment
    assert 'name="level-1-step"' in fragment and 'name="level-1-0-from" value="0" checked' in fragment


def shown_empty_notes(html: str) -> set[str]:
    """The texts the page says are "(empty)" where a reader without JavaScript sees it."""
    notes = lxml.html.fromstring(html).cssselect("[data-empty-of]")
    return {note.get("data-empty-of") for note in notes if note.get("hidden") is None}


def test_a_new_builder_says_no_text_is_empty_before_anything_is_typed(client, configured):
    # Without JavaScript the notes stay as rendered: "(empty)" beside every text would stay after typing.
    html = client.get("/trail").content.decode()

    assert len(lxml.html.fromstring(html).cssselect("[data-empty-of]")) == 6 and shown_empty_notes(html) == set()


def test_a_builder_sent_back_says_which_texts_below_were_empty(client, configured):
    html = client.post("/trail", example_form(add="source")).content.decode()

    assert shown_empty_notes(html) == {"source-2", "source-3"}


def test_a_running_trail_tells_a_reader_without_javascript_to_reload_it(client, configured):
    run = finished_trail()
    query = f"?claim={claim_id(run, 'gold')}"
    assert "reload-note" not in client.get(f"/v/{run.pk}{query}").content.decode()
    Verification.objects.filter(pk=run.pk).update(status=Status.RUNNING)

    note = lxml.html.fromstring(client.get(f"/v/{run.pk}{query}").content).cssselect("noscript #reload-note")[0]

    assert "updates itself with JavaScript" in note.text_content()
    assert note.cssselect("a")[0].get("href") == f"/v/{run.pk}{query}"


def test_posting_the_builder_starts_a_trail_run_and_redirects_to_its_permalink(client, configured):
    response = client.post("/trail", example_form(model=MODEL, q="1"))

    run = Verification.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/v/{run.pk}"
    assert run.settings["evidence"] == "trail" and run.settings["trail_q"] == 1 and run.text == TEXTS["final"]
    nodes = {node.key: node for node in TrailNode.objects.filter(verification=run)}
    assert set(nodes) == {"src-a", "src-b", "sum-1", "final"}
    assert nodes["sum-1"].inputs == ["src-a", "src-b"] and nodes["sum-1"].step == "section summary"
    # The browser is its creator: it may cancel and delete it.
    assert ownership.is_creator(client.get("/").wsgi_request, run)
    # A trail file is checked instead of the builder's texts.
    assert client.post("/trail", {"source-count": 3, "trail_file": trail_file(json.dumps(EXAMPLE))}).status_code == 302
    assert TrailNode.objects.filter(verification=Verification.objects.exclude(pk=run.pk).get()).count() == 4


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            json.dumps({"nodes": [*EXAMPLE["nodes"][:3], {**EXAMPLE["nodes"][3], "from": ["sum-1", "sum-9"]}]}),
            "node &#x27;final&#x27;: &#x27;from&#x27; names &#x27;sum-9&#x27;, which is not a node",
        ),
        ("\x89PNG not a trail", "The trail file is not JSON"),
        (
            json.dumps({"nodes": [{**EXAMPLE["nodes"][0], "stage": 10**30}, *EXAMPLE["nodes"][1:]]}),
            "node &#x27;src-a&#x27;: &#x27;stage&#x27; is a whole number from 0 to 1,000,000",
        ),
        ("[" * 100_000 + "]" * 100_000, "The trail file is nested too deeply"),
        ('{"nodes": [{"id": "a", "text": "A.", "stage": ' + "1" * 5_001 + "}]}", "a number of over 4,300 digits"),
    ],
    ids=["unknown-input", "not-json", "huge-stage", "nested-100k-deep", "5001-digit-number"],
)
def test_an_invalid_trail_file_is_refused_naming_the_node_and_keeping_the_typed_text(client, configured, content, says):
    response = client.post("/trail", {**example_form(), "trail_file": trail_file(content)})

    html = response.content.decode()
    assert response.status_code == 400 and not Verification.objects.exists()
    assert says in html.split('id="form-errors"')[1].split("</div>")[0] and "Choose the trail file again" in html
    assert TEXTS["sum-1"] in html and 'value="section summary"' in html


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"level-0-1-name": "sum-1", "level-0-1-text": "Another."}, "Two texts are named &#x27;sum-1&#x27;"),
        ({"q": "11"}, "(q): Ensure this value is less than or equal to 10."),
        ({"model": "no-such-model"}, "Select a valid choice."),
        ({"final-text": ""}, "Paste the final text"),
    ],
    ids=["duplicate-name", "q-too-big", "unknown-model", "no-final-text"],
)
def test_a_refused_builder_says_why_above_the_form_and_loses_nothing(client, configured, extra, says):
    response = client.post("/trail", example_form(**extra))

    html = response.content.decode()
    assert response.status_code == 400 and not Verification.objects.exists()
    assert says in html.split('id="form-errors"')[1].split("</div>")[0]
    assert TEXTS["src-b"] in html and 'value="src-b"' in html and 'value="final answer"' in html


@pytest.mark.parametrize("digit", ["²", "٣"], ids=["superscript-two", "arabic-indic-three"])
def test_a_unicode_digit_in_the_builders_counters_is_refused_in_words_not_a_500(client, configured, digit):
    ticked = {"level-0-0-from": [digit], "level-0-1-from": [digit], "source-count": digit, "level-0-count": digit}

    response = client.post("/trail", example_form(**ticked))
    added = client.post("/trail", example_form(add=f"text-{digit}"))

    assert response.status_code == 400 and not Verification.objects.exists()
    errors = response.content.decode().split('id="form-errors"')[1].split("</div>")[0]
    assert "&#x27;sum-1&#x27; (level 1) is made from none of the texts given below it" in errors
    assert added.status_code == 200 and TEXTS["sum-1"] in added.content.decode()


def test_an_unconfigured_server_refuses_with_503_keeping_the_texts(client, settings):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = "https://api.openai.com/v1"
    settings.LLM_MODELS = "gpt-4o-mini"

    response = client.post("/trail", example_form())

    html = response.content.decode()
    assert response.status_code == 503 and not Verification.objects.exists()
    assert "OPENAI_API_KEY" in html and TEXTS["sum-1"] in html


def test_a_client_over_its_hourly_runs_gets_429_with_retry_after_and_its_texts(client, configured):
    configured.RUNS_PER_HOUR = 1
    assert client.post("/trail", example_form()).status_code == 302

    response = client.post("/trail", example_form())

    html = response.content.decode()
    assert response.status_code == 429 and int(response["Retry-After"]) > 0 and TEXTS["sum-1"] in html
    assert Verification.objects.count() == 1


def test_markup_typed_into_the_builder_comes_back_escaped(client, configured):
    response = client.post("/trail", example_form(**{"level-0-step": HOSTILE, "source-0-name": HOSTILE}, add="source"))

    html = response.content.decode()
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# --- a trail run's page


# Each claim of the example as the worker leaves it: its rounds (candidates, verdict, sentences selected
# per node) and its result: "opened" supported down to src-a, "gold" entered at sum-1, "aquarium" at the end.
OPENED, GOLD = "The Eiffel Tower opened in Paris in 1889.", "The tower was painted gold in 1920."
FS, NFS = "fully_supported", "not_fully_supported"
ROUNDS = {
    "opened": [(["sum-1"], FS, {"sum-1": [OPENED]}), (["src-a", "src-b"], FS, {"src-a": [OPENED]})],
    "gold": [(["sum-1"], FS, {"sum-1": [GOLD]}), (["src-a", "src-b"], NFS, {})],
    "aquarium": [(["sum-1"], NFS, {})],
}
PATH = {"nodes": ["final", "sum-1", "src-a"], "edges": [["sum-1", "final"], ["src-a", "sum-1"]], "sources": ["src-a"]}
RESULTS = {
    "opened": {"verdict": FS, "error_stage": None, "path": PATH},
    "gold": {"verdict": NFS, "error_stage": {"kind": "stage", "stages": [1], "nodes": ["sum-1"]}},
    "aquarium": {"verdict": NFS, "error_stage": {"kind": "final_step", "stages": [2], "nodes": ["final"]}},
}


def finished_trail(trail: dict = EXAMPLE) -> Verification:
    submission = trail_submission(trail, model=MODEL)
    run = services.trail_create(trail=submission.trail, settings=submission.settings, segments=submission.segments)
    run.sentences.update(status=Status.DONE)
    for sentence, key in zip(run.sentences.order_by("index"), ROUNDS, strict=True):
        result = {"reasoning": f"Why {key}.", "stop": "sources_reached", "path": None, **RESULTS[key]}
        claim = Claim.objects.create(
            sentence=sentence, index=0, text=sentence.text, query="", status="done", trail=result
        )
        for index, (candidates, verdict, chosen) in enumerate(ROUNDS[key], start=1):
            done = {"status": Status.DONE, "candidates": candidates, "verdict": verdict, "reasoning": f"Round {index}."}
            trail_round = TrailRound.objects.create(claim=claim, index=index, **done)
            for position, node in enumerate(candidates):
                sentences = {f"S{i}": text for i, text in enumerate(chosen.get(node, []), start=1)}
                selected = {"sentence_ids": list(sentences), "sentences": sentences, "summary": "", "prompts": 1}
                TrailSelection.objects.create(
                    round=trail_round, position=position, node_key=node, status=Status.DONE, result=selected
                )
    Verification.objects.filter(pk=run.pk).update(status=Status.DONE, finished_at=timezone.now())
    return Verification.objects.get(pk=run.pk)


def claim_id(run: Verification, words: str) -> int:
    return Claim.objects.get(sentence__verification=run, text__contains=words).pk


def test_the_trail_page_says_first_where_unsupported_claims_entered_and_colours_each_sentence(client, configured):
    run = finished_trail()

    response = client.get(f"/v/{run.pk}")

    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html
    assert "1 unsupported claim entered at &#x27;section summary&#x27;, 1 at the final step." in html
    assert "<strong>1</strong> fully supported" in html and "<strong>2</strong> not fully supported" in html
    assert "<strong>0</strong> contradicted" in html
    assert (
        'id="sentence-0" data-index="0" data-band="green"' in html
        and 'id="sentence-1" data-index="1" data-band="red"' in html
    )
    assert f'href="/v/{run.pk}?claim={claim_id(run, "opened")}"' in html
    assert f"/v/{run.pk}/report.md" in html and f"/v/{run.pk}/report.html" in html
    assert 'hx-trigger="every' not in html  # finished: no polling
    for junk in ("999999", "x", "1" * 40):  # no such claim: none is selected
        assert "The trail of a claim" in client.get(f"/v/{run.pk}?claim={junk}").content.decode()


def test_selecting_an_unsupported_claim_with_htmx_swaps_in_its_trail_saying_where_it_entered(client, configured):
    run = finished_trail()

    response = client.get(f"/v/{run.pk}?claim={claim_id(run, 'gold')}", headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and html.lstrip().startswith('<div id="result-body"')
    entered = html.split('id="claim-entered"')[1].split("</p>")[0]
    assert (
        "This claim entered at &#x27;section summary&#x27;, in &#x27;sum-1&#x27;: its inputs do not support it."
        in entered
    )
    assert 'class="trail-node entered" id="node-2" data-node="sum-1"' in html
    assert "<mark>The tower was painted gold in 1920.</mark>" in html
    # The page differs by who reads it (the creator's texts, Edit): a cache must not hand one reader's to another.
    assert response["Vary"] == "HX-Request, Cookie"


def test_a_supported_claims_path_is_marked_down_to_its_source(client, configured):
    run = finished_trail()

    html = client.get(f"/v/{run.pk}?claim={claim_id(run, 'opened')}").content.decode()

    assert "Supported down to src-a" in html
    assert 'class="trail-node path" id="node-0" data-node="src-a"' in html
    assert 'class="trail-node" id="node-1" data-node="src-b"' in html
    assert '<span class="path">src-a</span>' in html  # sum-1 was made from src-a, on the path
    source_a = html.split('data-node="src-a"')[1].split("</article>")[0]
    assert "<li><mark>The Eiffel Tower opened in Paris in 1889.</mark></li>" in source_a
    # Columns from the sources (stage 0) to the final text (stage 2).
    stages = [part.split('"')[0] for part in html.split('class="trail-column" data-stage="')[1:]]
    assert stages == ["0", "1", "2"]


def test_a_text_with_nothing_selected_shows_no_verdict_of_the_round_as_its_own(client, configured):
    run = finished_trail()

    doc = lxml.html.fromstring(client.get(f"/v/{run.pk}?claim={claim_id(run, 'opened')}").content)

    # Round 2 found the claim fully supported by src-a's sentence; src-b gave nothing to it.
    (nothing,) = doc.cssselect("article[data-node=src-b] .node-visits li")
    assert " ".join(nothing.text_content().split()) == "Round 2: nothing selected"
    assert not nothing.cssselect(".outcome-tag")
    (chosen,) = doc.cssselect("article[data-node=src-a] .node-visits li")
    assert chosen.cssselect(".outcome-tag")[0].get("data-outcome") == "supported"


def test_a_running_trail_polls_and_a_poll_of_a_finished_one_gets_286(client, configured):
    run = finished_trail()
    Verification.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    query = f"?claim={claim_id(run, 'gold')}"

    running = client.get(f"/v/{run.pk}{query}").content.decode()
    assert f'hx-get="/v/{run.pk}{query}" hx-trigger="every 1s"' in running and 'id="progress"' in running

    Verification.objects.filter(pk=run.pk).update(status=Status.DONE)
    poll = client.get(f"/v/{run.pk}{query}", headers={**HTMX, "HX-Trigger": "result-body"})
    assert poll.status_code == 286 and "hx-trigger" not in poll.content.decode()
    assert client.get(f"/v/{run.pk}{query}", headers=HTMX).status_code == 200  # a reader's click is no poll


@pytest.mark.parametrize("claim", ["²", "9" * 5_001, "x"], ids=["superscript-two", "5001-digits", "letters"])
def test_a_claim_in_the_address_that_is_no_claim_id_selects_nothing(client, configured, claim):
    run = finished_trail()

    response = client.get(f"/v/{run.pk}?claim={claim}")

    assert response.status_code == 200 and 'id="claim-verdict"' not in response.content.decode()


def test_the_trail_page_has_no_inline_style_for_the_content_security_policy_to_refuse(client, configured):
    run = finished_trail()
    query = f"?claim={claim_id(run, 'opened')}"
    pages = [
        client.get(f"/v/{run.pk}"),
        client.get(f"/v/{run.pk}{query}"),
        client.get(f"/v/{run.pk}{query}", headers=HTMX),
    ]
    Verification.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    pages += [client.get(f"/v/{run.pk}{query}"), client.get("/trail")]

    assert "style-src 'self'" in pages[0]["Content-Security-Policy"]
    for page in pages:
        html = lxml.html.fromstring(page.content.decode())
        assert html.xpath("//*[@style]") == [] and html.xpath("//style") == []


def test_outside_text_on_the_trail_page_is_escaped(client, configured):
    hostile = json.loads(json.dumps(EXAMPLE))
    hostile["nodes"][2]["step"] = HOSTILE
    hostile["nodes"][0]["text"] += " " + HOSTILE
    run = finished_trail(hostile)

    html = client.get(f"/v/{run.pk}?claim={claim_id(run, 'opened')}").content.decode()

    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_creator_of_a_running_trail_may_cancel_it_and_a_failed_claim_offers_a_retry(client, configured):
    client.post("/trail", example_form())
    run = Verification.objects.get()
    Verification.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    assert 'id="cancel-run"' in client.get(f"/v/{run.pk}").content.decode()

    failed = {"text": "x", "query": "", "status": ClaimStatus.FAILED, "error": "LLM down"}
    Claim.objects.create(sentence=run.sentences.get(index=0), index=0, **failed)
    run.sentences.update(status=Status.DONE)
    Verification.objects.filter(pk=run.pk).update(status=Status.DONE)
    html = client.get(f"/v/{run.pk}").content.decode()
    assert "“x”: LLM down" in html and 'id="delete-run"' in html and f'action="/v/{run.pk}/retry"' in html


def test_a_run_that_is_not_a_trail_still_gets_the_result_page(client):
    run = Verification.objects.create(text="Paris is in France.", settings={"model": MODEL, "evidence": "web"})

    html = client.get(f"/v/{run.pk}").content.decode()

    assert 'id="overall-counts"' in html and "trail-result" not in html


def test_the_headline_names_each_step_then_the_final_step_then_the_undetermined():
    steps = [{"step": "section summary", "stage": 1, "count": 2}, {"step": "part summary", "stage": 2, "count": 1}]
    summary = {"entered_at": steps, "entered_at_final_step": 1, "entered_undetermined": 1}

    headline = "2 unsupported claims entered at 'section summary', 1 at 'part summary', 1 at the final step"
    assert entered_headline(summary) == headline + ", 1 where the trail cannot tell"
    only_final = {"entered_at": [], "entered_at_final_step": 1, "entered_undetermined": 0}
    assert entered_headline(only_final) == "1 unsupported claim entered at the final step"
    assert entered_headline({**only_final, "entered_at_final_step": 0}) == ""


def book(size: int, sentence: str) -> str:
    filler = "Filler words go on here. " * (size // 50)
    return f"{filler}{sentence} {filler}"


def book_trail() -> tuple[Verification, str]:
    """The example, owned, with src-a a book of 1 MB and its other sources and summary just under
    60,000 characters (the size up to which a node's text used to be drawn whole on the page)."""
    trail = json.loads(json.dumps(EXAMPLE))
    for node in trail["nodes"]:
        if node["id"] != "final":
            node["text"] = book(1_000_000 if node["id"] == "src-a" else 59_000, node["text"])
    run, token = finished_trail(trail), ownership.new_token()
    Verification.objects.filter(pk=run.pk).update(creator=ownership.creator_key(token))
    return run, token


def test_a_trail_with_a_book_for_a_text_has_a_small_page_and_the_text_on_demand(configured):
    run, token = book_trail()
    creator = Client()
    creator.cookies[ownership.COOKIE] = token

    page = creator.get(f"/v/{run.pk}?claim={claim_id(run, 'opened')}").content.decode()

    assert len(page.encode()) < 50_000  # 134 KB when each text under 60,000 characters was drawn whole
    node = lxml.html.fromstring(page).get_element_by_id("node-0")
    assert node.get("data-node") == "src-a" and OPENED in node.cssselect(".node-evidence")[0].text_content()
    link = node.cssselect("#node-0-open")[0]
    assert link.get("href") == link.get("hx-get") == f"/v/{run.pk}/node/0?claim={claim_id(run, 'opened')}"
    assert "1,000,0" in node.text_content() and "Filler words" not in node.text_content()

    whole = creator.get(link.get("href"))
    fragment = creator.get(link.get("href"), headers={"HX-Request": "true"})

    assert whole.status_code == fragment.status_code == 200
    text = TrailNode.objects.get(verification=run, key="src-a").text
    assert lxml.html.fromstring(whole.content).get_element_by_id("node-text-0").text_content() == text
    assert f"<mark>{OPENED}</mark>" in fragment.content.decode() and "<html" not in fragment.content.decode()


def test_only_the_final_text_of_a_trail_opens_for_a_visitor(configured):
    run, _ = owned_trail()
    visitor = Client()

    page = visitor.get(f"/v/{run.pk}?claim={claim_id(run, 'opened')}").content.decode()
    final = TrailNode.objects.get(verification=run, key="final").index

    assert 'id="node-0-open"' not in page and f'id="node-{final}-open"' in page
    assert visitor.get(f"/v/{run.pk}/node/0").status_code == 403
    assert UNSELECTED not in visitor.get(f"/v/{run.pk}/node/1").content.decode()
    assert TEXTS["final"] in visitor.get(f"/v/{run.pk}/node/{final}").content.decode()
    assert visitor.get(f"/v/{run.pk}/node/99").status_code == 404


# --- a trail run in the API's run endpoint


@pytest.mark.parametrize("query", ["", "?view=summary"], ids=["whole", "summary"])
def test_a_finished_trail_run_is_served_by_the_run_endpoint_with_its_evidence_trail(client, configured, query):
    run = finished_trail()

    response = client.get(f"/api/verifications/{run.pk}{query}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "done" and body["settings"]["evidence"] == "trail" and body["evidence"] == "trail"
    assert body["settings"]["trail_q"] == run.settings["trail_q"]


# --- a trail's texts are its creator's, as a web check's documents are (issue 38.4)

# Sentences of the example's texts that no selection holds: one the model was shown beside a
# selected sentence (a neighbour, for context), one of a text it read and selected nothing in.
NEIGHBOUR = "Gustave Eiffel's company designed and built the tower."
UNSELECTED = "Millions of people visit the tower every year."


def owned_trail() -> tuple[Verification, str]:
    """The example's finished run, started by the browser or API caller holding the token; its
    selection in src-a showed the model a neighbour of the sentence it selected."""
    run, token = finished_trail(), ownership.new_token()
    Verification.objects.filter(pk=run.pk).update(creator=ownership.creator_key(token))
    selection = TrailSelection.objects.get(round__claim__text__contains="opened", node_key="src-a")
    selection.result = {**selection.result, "sentences": {"S1": OPENED, "S2": NEIGHBOUR}}
    selection.save()
    return run, token


def downloads(client: Client, run: Verification, **headers) -> dict[str, str]:
    query = f"?claim={claim_id(run, 'opened')}"
    paths = [f"/v/{run.pk}{query}", f"/v/{run.pk}/report.md", f"/v/{run.pk}/report.html", f"/v/{run.pk}/evidence.csv"]
    read = {path: client.get(path, headers=headers) for path in [*paths, f"/api/trails/{run.pk}"]}
    assert all(response.status_code == 200 for response in read.values())
    return {path: response.content.decode() for path, response in read.items()}


def test_a_visitor_sees_a_trails_claims_verdicts_and_selected_sentences_but_not_its_texts(configured):
    run, _ = owned_trail()

    read = downloads(Client(), run)

    for path, body in read.items():
        assert "The Eiffel Tower opened in Paris in 1889." in body, path  # selected in src-a
        assert "not fully supported" in body or "not_fully_supported" in body, path
        assert UNSELECTED not in body and NEIGHBOUR not in body, path
    nodes = {node["id"]: node for node in json.loads(read[f"/api/trails/{run.pk}"])["nodes"]}
    assert nodes["src-a"]["text"] is None and nodes["src-a"]["text_withheld"]
    assert nodes["final"]["text"] == TEXTS["final"]  # the text checked, shown to anyone as for any run
    selection = json.loads(read[f"/api/trails/{run.pk}"])["claims"][0]["rounds"][1]["selections"][0]
    assert selection["node"] == "src-a" and selection["sentences"] == {"S1": OPENED}
    assert 'id="texts-withheld"' in read[f"/v/{run.pk}?claim={claim_id(run, 'opened')}"]


def test_the_creator_of_a_trail_reads_its_texts_whole(configured):
    run, token = owned_trail()
    creator = Client()
    creator.cookies[ownership.COOKIE] = token

    page = creator.get(f"/v/{run.pk}?claim={claim_id(run, 'opened')}").content.decode()
    result = Client().get(f"/api/trails/{run.pk}", headers={ownership.HEADER: token}).json()

    assert 'id="node-1-open"' in page and 'id="texts-withheld"' not in page
    assert UNSELECTED in creator.get(f"/v/{run.pk}/node/1").content.decode()  # src-b, opened on demand
    nodes = {node["id"]: node for node in result["nodes"]}
    assert nodes["src-b"]["text"] == TEXTS["src-b"] and not nodes["src-b"]["text_withheld"]
    assert result["claims"][0]["rounds"][1]["selections"][0]["sentences"] == {"S1": OPENED, "S2": NEIGHBOUR}


def test_a_visitor_cannot_retry_someone_elses_trail_and_is_not_offered_it(configured):
    run, token = owned_trail()
    failed = {"text": "x", "query": "", "status": ClaimStatus.FAILED, "error": "LLM down"}
    Claim.objects.create(sentence=run.sentences.get(index=0), index=1, **failed)
    creator, visitor = Client(), Client()
    creator.cookies[ownership.COOKIE] = token

    seen = visitor.get(f"/v/{run.pk}").content.decode()
    refused = visitor.post(f"/api/verifications/{run.pk}/retry", content_type="application/json")

    assert "“x”: LLM down" in seen and f'action="/v/{run.pk}/retry"' not in seen
    assert refused.status_code == 403 and visitor.post(f"/v/{run.pk}/retry").status_code == 403
    assert Verification.objects.get(pk=run.pk).status == Status.DONE
    assert f'action="/v/{run.pk}/retry"' in creator.get(f"/v/{run.pk}").content.decode()
