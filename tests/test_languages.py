"""Texts in other languages on the real worker (issue 36), against the fakes on 127.0.0.1: an AI
answer in each tested language is checked in it (claims and queries in its words, the search asked
for its language and country, the judge told the languages), its language shown on the page, in
the JSON, the CLI summary and the reports; a language the tests do not cover is marked "less
tested"; a text in a script factsite cannot read is refused before it runs.

The fake model echoes each sentence as its claim (tests/fakes.py), so a claim in the text's
language is what the decomposition hands on, in any language; each answer's page is a site of
its own that says what the answer says."""

import csv
import io
from pathlib import Path

import pytest
from lxml import html as lxml_html

from tests.fakes import FakePage, FakeSite
from tests.test_engine import wait_for
from verification import services
from verification.inputs.forms import DEFAULT_SETTINGS
from verification.inputs.trails import TrailRefused, trail_submission
from verification.management.summaries import summary
from verification.models import Claim, Source, Verification
from verification.pipeline import languages
from verification.selectors.records import permalink

FIXTURES = Path(__file__).parent / "data" / "languages"

# Google's hl and gl for each tested language (clients/search/serper.py).
GOOGLE = {
    "de": ("de", "de"),
    "es": ("es", "mx"),
    "fr": ("fr", "fr"),
    "zh": ("zh-cn", "cn"),
    "ja": ("ja", "jp"),
    "ar": ("ar", "eg"),
    "hi": ("hi", "in"),
}


def answer(code: str) -> str:
    return (FIXTURES / f"answer_{code}.txt").read_text(encoding="utf-8")


@pytest.fixture
def page_in(world):
    """A site whose page says what the answer in a language says, found by the fake search."""
    sites = []

    def start(code: str) -> FakeSite:
        site = FakeSite(pages={f"/{code}": FakePage(f"{languages.name(code)} page", answer(code))}).start()
        world.serper.sites.append(site)
        sites.append(site)
        return site

    yield start
    for site in sites:
        site.stop()


def start(client, text: str) -> str:
    body = {"text": text, "settings": {"retrieval_mode": "sparse", "top_k_passages": 1, "context_size": 0}}
    response = client.post("/api/verifications", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def prompts(world, kind: str) -> list[str]:
    """The user messages of the fake model's calls of one kind ("claims", "judgements")."""
    asked = []
    for request in world.llm.requests:
        system = request["messages"][0]["content"]
        is_claims = "atomic claims" in system
        if (kind == "claims") == is_claims and (kind != "judgements" or "Judge each passage" in system):
            asked.append(request["messages"][-1]["content"])
    return asked


@pytest.mark.parametrize("code", list(GOOGLE))
@pytest.mark.django_db(transaction=True)
def test_an_answer_is_checked_in_its_own_language(client, world, celery_worker, page_in, code):
    site = page_in(code)
    name = languages.name(code)

    result = wait_for(client, start(client, answer(code)))

    assert result["status"] == "done", result["error"]
    assert result["language"] == {
        **languages.described(code),
        "label": f"checked in {name}",
    }
    assert result["language"]["support"] == "tested"
    # The model was told the language; the claims it wrote (the fake writes the text's own sentences)
    # are kept as written, in the language, not translated or cut on the way to the rows.
    assert all(
        f"The text is in {name}: write the claims and their queries in {name}" in p for p in prompts(world, "claims")
    )
    claims = list(Claim.objects.values_list("text", "query", "english_query"))
    assert claims and languages.detect_language(" ".join(text for text, _, _ in claims)) == code
    # Each query in the language was searched in it, asking Google for the language and its country.
    hl, gl = GOOGLE[code]
    own = [body for body in world.serper.bodies if body["q"] in {query for _, query, _ in claims}]
    assert own and all((body["hl"], body["gl"]) == (hl, gl) for body in own)
    # Arabic and Hindi, whose web is thin, were also searched in English where the model wrote an English query.
    english = {query for _, _, query in claims if query}
    assert bool(english) == (code in ("ar", "hi"))
    assert {body["q"] for body in world.serper.bodies if "hl" not in body} == english, "English: no locale"
    # The page in the language was read, its language told, and it supports the answer.
    page = Source.objects.get(url=f"{site.url}/{code}")
    assert page.language == code
    items = [e for s in result["sentences"] for c in s["claims"] for e in c["evidence"]]
    assert any(e["url"] == page.url and e["verdict"] == "supported" and e["language"] == code for e in items)
    assert {s["language"] for s in result["sources"] if s["url"] == page.url} == {code}
    # The judge was told the claims' language.
    assert any(f"C1 (in {name}): " in p for p in prompts(world, "judgements"))
    # The page says which language the text was checked in, and the text reads in its direction.
    document = lxml_html.fromstring(client.get(permalink(Verification.objects.get()), {"sentence": 0}).content)
    assert document.get_element_by_id("run-language").text_content().startswith(f"Checked in {name}")
    text = document.find_class("text")[0]
    assert (text.get("lang"), text.get("dir")) == (code, "rtl" if code == "ar" else "ltr")
    passages = [p for p in document.find_class("passage") if p.get("lang") == code]
    assert passages and {p.get("dir") for p in passages} == {"rtl" if code == "ar" else "ltr"}


WALL = (
    "Die Berliner Mauer fiel am 9. November 1989 nach Massenprotesten in der DDR. "
    "Sie hatte die Stadt seit 1961 geteilt."
)


@pytest.mark.django_db(transaction=True)
def test_a_german_text_and_its_page_are_split_in_german(client, world, celery_worker):
    # Split as English, "am 9." would end a sentence: German keeps the ordinal in it (segment.py).
    site = FakeSite(pages={"/mauer": FakePage("Berliner Mauer", WALL + "\n\nHeute erinnert eine Gedenkstätte daran.")})
    world.serper.sites.append(site.start())
    try:
        result = wait_for(client, start(client, WALL))
    finally:
        site.stop()

    assert result["status"] == "done", result["error"]
    assert [s["text"] for s in result["sentences"]] == [
        "Die Berliner Mauer fiel am 9. November 1989 nach Massenprotesten in der DDR.",
        "Sie hatte die Stadt seit 1961 geteilt.",
    ]
    page = Source.objects.get(url=site.url + "/mauer")
    assert page.language == "de"
    passages = {
        e["passage"] for s in result["sentences"] for c in s["claims"] for e in c["evidence"] if e["url"] == page.url
    }
    assert "Die Berliner Mauer fiel am 9. November 1989 nach Massenprotesten in der DDR." in passages


@pytest.mark.django_db(transaction=True)
def test_a_language_the_tests_do_not_cover_is_marked_less_tested(client, world, celery_worker, page_in):
    page_in("it")

    result = wait_for(client, start(client, answer("it")))

    assert result["status"] == "done", result["error"]
    assert (result["language"]["code"], result["language"]["support"]) == ("it", "less tested")
    assert result["language"]["label"] == "checked in Italian: less tested"
    verification = Verification.objects.get()
    page = client.get(permalink(verification)).content.decode()
    assert "Checked in Italian: less tested" in page
    assert "Language: checked in Italian: less tested" in summary(result, verification)
    markdown = client.get(f"/v/{verification.pk}/report.md").content.decode()
    assert "- Language: checked in Italian: less tested" in markdown
    report = lxml_html.fromstring(client.get(f"/v/{verification.pk}/report.html").content)
    assert report.get_element_by_id("report-language").text_content() == "Checked in Italian: less tested"
    rows = list(csv.DictReader(io.StringIO(client.get(f"/v/{verification.pk}/evidence.csv").content.decode()[1:])))
    assert rows and {row["text_language"] for row in rows} == {"checked in Italian: less tested"}
    assert "it" in {row["page_language"] for row in rows}


@pytest.mark.django_db(transaction=True)
def test_an_english_text_is_checked_in_english_without_a_line_about_it(client, world, celery_worker):
    text = "The Eiffel Tower is in Paris, France. It was completed in 1889 for the World's Fair."

    result = wait_for(client, start(client, text))

    assert result["status"] == "done", result["error"]
    assert result["language"]["label"] == "checked in English"
    assert all("The text is in" not in p for p in prompts(world, "claims"))
    assert all("(in English)" not in p for p in prompts(world, "judgements"))
    # Asked as before languages were read: no country is assumed for English.
    assert world.serper.bodies and all("hl" not in body and "gl" not in body for body in world.serper.bodies)
    page = client.get(permalink(Verification.objects.get())).content.decode()
    assert 'id="run-language"' not in page and 'lang="en" dir="ltr"' in page


@pytest.mark.django_db
def test_a_text_in_a_script_factsite_cannot_read_is_refused_in_words(client, world):
    response = client.post("/api/verifications", {"text": answer("bo")}, content_type="application/json")

    assert response.status_code == 400
    assert "written in the Tibetan script, which factsite cannot yet split into sentences" in response.json()["detail"]
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_the_form_refuses_it_and_says_why(client, world):
    response = client.post("/", {"text": answer("bo")})

    assert response.status_code in (200, 400)
    assert "Tibetan script" in response.content.decode()
    assert not Verification.objects.exists()


def trail(final: str) -> dict:
    return {"nodes": [{"id": "source", "from": [], "text": WALL}, {"id": "final", "from": ["source"], "text": final}]}


def test_a_trails_final_text_is_split_in_its_language(world):
    submission = trail_submission(trail(WALL))

    assert [s.text for s in submission.segments] == [
        "Die Berliner Mauer fiel am 9. November 1989 nach Massenprotesten in der DDR.",
        "Sie hatte die Stadt seit 1961 geteilt.",
    ]


def test_a_trail_whose_final_text_factsite_cannot_read_is_refused(world):
    with pytest.raises(TrailRefused, match="written in the Tibetan script"):
        trail_submission(trail(answer("bo")))


@pytest.mark.django_db
def test_a_trail_runs_final_text_reads_in_its_language(client, world):
    submission = trail_submission(trail(answer("ar")))
    run = services.trail_create(trail=submission.trail, settings=submission.settings, segments=submission.segments)

    document = lxml_html.fromstring(client.get(permalink(run)).content)

    assert run.language == "ar"
    text = document.find_class("text")[0]
    assert (text.get("lang"), text.get("dir")) == ("ar", "rtl")


@pytest.mark.django_db
def test_a_german_answer_citing_english_titles_is_checked_in_german():
    # The reference list's English titles are no words of the answer's: told from them, the
    # answer was English, searched as English, and "am 9." ended a sentence.
    text = (
        "Die Berliner Mauer fiel am 9. November 1989 nach Massenprotesten [1]. "
        "Deutschland wurde am 3. Oktober 1990 wiedervereinigt [2].\n\n"
        "Quellen:\n"
        "[1] The Fall of the Berlin Wall and what came after it in the years that followed, an illustrated history "
        "of the night the border was opened https://history.example/berlin-wall-fall\n"
        "[2] German reunification: how the two states became one again, and what it meant for the people of "
        "both of them https://history.example/reunification"
    )

    run = services.verification_create(text=text, settings=dict(DEFAULT_SETTINGS))

    assert run.language == "de"
    assert [s.text for s in run.sentences.order_by("index")] == [
        "Die Berliner Mauer fiel am 9. November 1989 nach Massenprotesten.",
        "Deutschland wurde am 3. Oktober 1990 wiedervereinigt.",
    ]
