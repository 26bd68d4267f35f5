"""Starting a trail run from what a user already has (issue 38.9): the /trail form takes a file
in any format `manage.py trail_import` reads (a LangChain run, GraphRAG output) and a trail
result's own JSON; a finished trail offers Edit (the builder filled, for who may read its
texts) and Check again (a new run of the same trail, its texts never shown to a visitor)."""

import io
import json
import zipfile

import pytest
from django.test import Client

from tests.pipeline.test_trail_import import graphrag_folder, langchain_run, write
from tests.test_trail_views import EXAMPLE, TEXTS, example_form, finished_trail
from verification.access import ownership
from verification.inputs.trails import TrailRefused
from verification.models import TrailNode, Verification
from verification.selectors.trail_copy import trail_of_run
from verification.web.trail_form import builder_of_trail, trail_data

pytestmark = pytest.mark.django_db


def upload(name: str, content: bytes | str) -> io.BytesIO:
    file = io.BytesIO(content.encode() if isinstance(content, str) else content)
    file.name = name
    return file


def nodes_of(run: Verification) -> dict[str, TrailNode]:
    return {node.key: node for node in TrailNode.objects.filter(verification=run)}


def started(response) -> Verification:
    assert response.status_code == 302, response.content.decode()[:2000]
    run = Verification.objects.get(pk=response["Location"].removeprefix("/v/"))
    assert run.settings["evidence"] == "trail"
    return run


def refusals(response) -> str:
    assert response.status_code == 400 and not Verification.objects.exists()
    return response.content.decode().split('id="form-errors"')[1].split("</div>")[0]


def owned(client: Client, run: Verification) -> Verification:
    """The run, started by the browser `client` is."""
    token = ownership.new_token()
    client.cookies[ownership.COOKIE] = token
    Verification.objects.filter(pk=run.pk).update(creator=ownership.creator_key(token))
    return Verification.objects.get(pk=run.pk)


# --- the form takes any format trail_import reads


def test_a_langchain_run_dropped_into_the_form_starts_its_trail(client, configured):
    response = client.post("/trail", {"source-count": 3, "trail_file": upload("run.json", json.dumps(langchain_run()))})

    nodes = nodes_of(started(response))
    assert set(nodes) == {"doc-1", "doc-2", "doc-3", "map-1", "map-2", "map-3", "final"}
    assert nodes["map-2"].inputs == ["doc-2"] and nodes["map-2"].step == "map summary"
    assert nodes["final"].text == "A mill, a frozen river and a ferry."


def graphrag_zip(tmp_path, answer: str | None = None) -> bytes:
    folder = graphrag_folder(tmp_path / "output")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for table in folder.iterdir():
            archive.write(table, f"output/{table.name}")
        archive.writestr("output/lancedb/ignored.bin", b"\0" * 64)
        if answer is not None:
            archive.writestr("answer.txt", answer)
    return buffer.getvalue()


def test_a_graphrag_zip_and_its_answer_start_a_trail_of_the_reports_its_markers_cite(client, configured, tmp_path):
    answer = "The beta and gamma units agree. [Data: Reports (1)]"

    response = client.post("/trail", {"trail_file": upload("output.zip", graphrag_zip(tmp_path, answer))})

    nodes = nodes_of(started(response))
    assert set(nodes) == {"text-unit-11", "text-unit-12", "report-1", "answer"}
    assert nodes["answer"].inputs == ["report-1"] and nodes["answer"].text == answer
    assert nodes["report-1"].inputs == ["text-unit-11", "text-unit-12"]


def test_a_graphrag_zip_with_its_entities_table_takes_the_text_units_a_cited_entity_was_written_from(
    client, configured, tmp_path
):
    folder = graphrag_folder(tmp_path / "output")
    write(folder, "entities", {"id": ["e-5"], "human_readable_id": [5], "text_unit_ids": [["u-d"]]})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for table in folder.iterdir():
            archive.write(table, f"output/{table.name}")
        archive.writestr("answer.txt", "Delta stands [Data: Entities (5); Reports (1)].")

    response = client.post("/trail", {"trail_file": upload("output.zip", buffer.getvalue())})

    nodes = nodes_of(started(response))
    assert nodes["answer"].inputs == ["report-1", "text-unit-13"]
    assert set(nodes) == {"text-unit-11", "text-unit-12", "text-unit-13", "report-1", "answer"}


def test_graphrag_tables_chosen_together_take_the_final_text_as_their_answer(client, configured, tmp_path):
    folder = graphrag_folder(tmp_path / "output")
    tables = [upload(path.name, path.read_bytes()) for path in sorted(folder.iterdir())]

    response = client.post("/trail", {"final-text": "Every unit is described.", "trail_file": tables})

    nodes = nodes_of(started(response))
    assert nodes["answer"].inputs == ["report-0", "report-1", "report-2"]  # it cites none: every report
    assert nodes["answer"].text == "Every unit is described."


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (lambda tmp: [upload("output.zip", graphrag_zip(tmp))], "GraphRAG output needs the answer to check"),
        (
            lambda tmp: [upload("output.zip", graphrag_zip(tmp, "Fine. [Data: Reports (7)]"))],
            "no report in community_reports.parquet has the community number or id '7'",
        ),
        (lambda tmp: [upload("broken.zip", b"PK\x03\x04 not really")], "The zip could not be read"),
        (lambda tmp: [upload("notes.json", '{"summary": "x"}')], "a LangChain map-reduce run (with"),
    ],
    ids=["no-answer", "cites-an-unknown-report", "broken-zip", "unknown-json"],
)
def test_a_file_the_form_cannot_read_as_a_trail_is_refused_saying_what_it_takes(
    client, configured, tmp_path, files, says
):
    response = client.post("/trail", {**example_form(**{"final-text": ""}), "trail_file": files(tmp_path)})

    errors = refusals(response)
    assert says in errors.replace("&#x27;", "'")
    assert str(tmp_path) not in errors and "factsite-graphrag-" not in errors


def test_the_form_says_which_formats_it_takes_and_what_graphrag_needs(client, configured):
    html = client.get("/trail").content.decode()

    field = html.split('class="field trail-file"')[1].split("</div>\n  </div>")[0]
    assert 'name="trail_file"' in field and "multiple" in field and ".zip" in field
    assert "LangChain" in field and "GraphRAG" in field and "answer.txt" in field and "--report" in field


# --- a trail result's JSON is a trail file


def test_a_trail_results_json_dropped_into_the_form_runs_its_trail_again(configured):
    creator = Client()
    run = owned(creator, finished_trail())
    downloaded = creator.get(f"/api/trails/{run.pk}").content

    response = creator.post("/trail", {"source-count": 3, "trail_file": upload("result.json", downloaded)})

    again, before = nodes_of(started(response)), nodes_of(run)
    assert {key: (n.text, n.inputs, n.step) for key, n in again.items()} == {
        key: (n.text, n.inputs, n.step) for key, n in before.items()
    }


def test_a_trail_result_whose_texts_were_withheld_is_refused_as_holding_no_trail(client, configured):
    run = owned(Client(), finished_trail())
    downloaded = client.get(f"/api/trails/{run.pk}").content

    response = client.post("/trail", {"source-count": 3, "trail_file": upload("result.json", downloaded)})

    assert Verification.objects.count() == 1 and response.status_code == 400
    assert "carries its texts only for the person who ran it" in response.content.decode().replace("&#x27;", "'")


# --- Edit: the builder filled with a finished trail


def test_the_builder_filled_from_a_run_makes_the_same_trail(configured):
    run = finished_trail()

    assert trail_data(builder_of_trail(trail_of_run(run))) == EXAMPLE


def test_a_trail_whose_shape_the_builder_has_not_is_refused_naming_why(configured):
    shortcut = {"nodes": [*EXAMPLE["nodes"][:3], {**EXAMPLE["nodes"][3], "from": ["sum-1", "src-b"]}]}
    run = finished_trail(shortcut)

    with pytest.raises(TrailRefused, match="not made from every text of the highest level"):
        builder_of_trail(trail_of_run(run))


def test_edit_opens_the_builder_filled_with_the_trail_for_its_creator(configured):
    creator = Client()
    run = owned(creator, finished_trail())

    page = creator.get(f"/v/{run.pk}").content.decode()
    html = creator.get(f"/trail?edit={run.pk}").content.decode()

    assert f'href="/trail?edit={run.pk}"' in page and 'id="trail-again"' in page
    assert TEXTS["src-b"] in html and TEXTS["sum-1"] in html and 'value="section summary"' in html
    assert 'value="src-a"' in html and 'name="level-0-0-from" value="1" checked' in html
    assert 'id="edit-notice"' not in html


def test_edit_of_a_trail_the_builder_cannot_show_says_to_use_its_json(configured):
    creator = Client()
    shortcut = {"nodes": [*EXAMPLE["nodes"][:3], {**EXAMPLE["nodes"][3], "from": ["sum-1", "src-b"]}]}
    run = owned(creator, finished_trail(shortcut))

    html = creator.get(f"/trail?edit={run.pk}").content.decode()

    notice = html.split('id="edit-notice"')[1].split("</p>")[0]
    assert "does not fit the builder" in notice and "Trail result (JSON)" in notice
    assert TEXTS["src-b"] not in html


def test_a_visitor_gets_no_edit_and_an_edit_link_opens_none_of_the_texts(client, configured):
    run = owned(Client(), finished_trail())

    page = client.get(f"/v/{run.pk}").content.decode()
    html = client.get(f"/trail?edit={run.pk}").content.decode()

    assert "/trail?edit=" not in page and 'id="trail-again"' in page
    assert "Only the person who ran that trail can open its texts" in html
    assert TEXTS["src-b"] not in html and TEXTS["sum-1"] not in html


# --- Check again: a new run of the same trail, owned by whoever presses it


def test_check_again_starts_a_new_run_of_the_same_trail_owned_by_its_creator(configured):
    creator = Client()
    run = owned(creator, finished_trail())

    again = started(creator.post(f"/v/{run.pk}/trail-again"))

    assert again.pk != run.pk and again.creator == run.creator
    assert {key: (n.text, n.inputs) for key, n in nodes_of(again).items()} == {
        key: (n.text, n.inputs) for key, n in nodes_of(run).items()
    }
    assert again.settings["trail_q"] == run.settings["trail_q"] and again.settings["model"] == run.settings["model"]
    assert "texts_withheld" not in again.settings


def test_a_visitors_check_again_is_their_own_run_whose_texts_stay_closed_to_them(client, configured):
    run = owned(Client(), finished_trail())

    response = client.post(f"/v/{run.pk}/trail-again")

    again = started(response)
    assert TEXTS["src-b"] not in response.content.decode()
    assert again.creator and again.creator != run.creator and again.settings["texts_withheld"] is True
    assert set(nodes_of(again)) == set(nodes_of(run))
    visitor = client.get("/").wsgi_request
    assert ownership.is_creator(visitor, again) and not ownership.may_read_trail_texts(visitor, again)
    assert TEXTS["src-b"] not in client.get(f"/trail?edit={again.pk}").content.decode()
    # Nor do its page, its reports or its JSON show them to its new owner.
    Verification.objects.filter(pk=again.pk).update(status="done")
    for path in [f"/v/{again.pk}", f"/v/{again.pk}/report.md", f"/api/trails/{again.pk}"]:
        assert TEXTS["src-b"] not in client.get(path).content.decode(), path


def test_check_again_is_refused_for_a_run_that_is_not_a_trail(client, configured):
    run = Verification.objects.create(text="Paris is in France.", settings={"evidence": "web"})

    assert client.post(f"/v/{run.pk}/trail-again").status_code == 404
    assert client.get(f"/v/{run.pk}/trail-again").status_code == 405
