"""Edit, and see what changed (issue 17): *Edit text* keeps the view's rule and source types left
out, the runs link both ways, and the edited run says which sentences were added, removed or
reworded and which outcomes moved."""

import lxml.html
import pytest

from tests.test_views import add_claim, add_evidence, make_run
from verification.models import Verification

pytestmark = pytest.mark.django_db

TOWER = "The Eiffel Tower is in Paris."
BUILT = "It was completed in 1889."
STEEL = "It is made of steel."
IRON = "It is made of wrought iron."
TALL = "It is 330 metres tall."


def parse(response):
    return lxml.html.document_fromstring(response.content.decode())


def judged(run, index: int, *verdicts: str) -> None:
    claim = add_claim(run, index, run.sentences.get(index=index).text)
    for verdict in verdicts:
        add_evidence(claim, "news", verdict)


def edited(earlier, *sentences) -> Verification:
    run = make_run(*sentences)
    Verification.objects.filter(pk=run.pk).update(edited_from=earlier)
    run.refresh_from_db()
    return run


def changes_of(client, run, query="") -> dict[str, list[str]]:
    doc = parse(client.get(f"/v/{run.pk}{query}"))
    return {
        kind: [" ".join(item.text_content().split()) for item in doc.cssselect(f"#changes li.change-{kind}")]
        for kind in ("added", "removed", "reworded", "moved")
    }


def test_an_edited_run_says_what_was_added_removed_reworded_and_which_outcomes_moved(client):
    earlier = make_run(TOWER, BUILT, STEEL)
    judged(earlier, 0, "supported")
    judged(earlier, 1, "not_supported")
    judged(earlier, 2, "not_supported")
    later = edited(earlier, TOWER, BUILT.replace("1889", "1889 for the World's Fair"), IRON, TALL)
    judged(later, 0, "supported")
    judged(later, 1, "supported")
    judged(later, 2, "supported")
    judged(later, 3, "supported")

    changes = changes_of(client, later)

    assert changes["reworded"] == [
        f"S2 reworded: “{BUILT}” → “It was completed in 1889 for the World's Fair.”",
        f"S3 reworded: “{STEEL}” → “{IRON}”",
    ]
    assert changes["added"] == [f"S4 added: “{TALL}”"]
    assert changes["removed"] == []
    assert changes["moved"] == [
        "S2: contradicted → supported “It was completed in 1889 for the World's Fair.”",
        f"S3: contradicted → supported “{IRON}”",
    ]
    doc = parse(client.get(f"/v/{later.pk}"))
    (back,) = doc.cssselect("#changes-heading a")
    assert back.get("href") == f"/v/{earlier.pk}"
    # And the earlier run points forward to the newest edit.
    (forward,) = parse(client.get(f"/v/{earlier.pk}")).cssselect("#edited-into a")
    assert forward.get("href") == f"/v/{later.pk}"


def test_a_removed_sentence_and_an_unchanged_outcome_are_told_apart(client):
    earlier = make_run(TOWER, "Bananas are berries.", BUILT)
    judged(earlier, 0, "supported")
    judged(earlier, 2, "supported")
    later = edited(earlier, TOWER, BUILT)
    judged(later, 0, "supported")
    judged(later, 1, "supported")

    changes = changes_of(client, later)

    assert changes == {"added": [], "removed": ["Removed: “Bananas are berries.”"], "reworded": [], "moved": []}


def test_outcomes_are_compared_under_the_viewers_rule_and_source_types(client):
    earlier = make_run(TOWER)
    claim = add_claim(earlier, 0, TOWER)
    add_evidence(claim, "blog", "not_supported")
    add_evidence(claim, "news", "supported")
    later = edited(earlier, TOWER)
    judged(later, 0, "supported")

    assert changes_of(client, later)["moved"] == [f"S1: mixed evidence → supported “{TOWER}”"]
    # Leaving blogs out, the earlier run was supported too: nothing moved.
    assert changes_of(client, later, "?exclude_types=blog")["moved"] == []


def test_edit_keeps_the_views_rule_and_types_left_out(client, configured):
    earlier = make_run(TOWER)
    page = parse(client.get(f"/v/{earlier.pk}?score_rule=decisive&exclude_types=blog&exclude_evidence=7&sentence=0"))
    (edit,) = [a for a in page.cssselect("a.button") if a.text_content() == "Edit text"]
    assert edit.get("href") == f"/?edit={earlier.pk}&exclude_types=blog&score_rule=decisive"

    form = parse(client.get(edit.get("href")))
    (view,) = form.cssselect("input[name=view]")
    response = client.post(
        "/", {"text": TOWER + " " + BUILT, "edited_from": str(earlier.pk), "view": view.get("value")}
    )

    later = Verification.objects.exclude(pk=earlier.pk).get()
    assert later.edited_from_id == earlier.pk
    assert response["Location"] == f"/v/{later.pk}?exclude_types=blog&score_rule=decisive"


def test_a_view_field_cannot_smuggle_anything_into_the_redirect(client, configured):
    earlier = make_run(TOWER)

    response = client.post(
        "/",
        {"text": TOWER, "edited_from": str(earlier.pk), "view": "?score_rule=x&next=//evil.example&exclude_types=blog"},
    )

    later = Verification.objects.exclude(pk=earlier.pk).get()
    assert response["Location"] == f"/v/{later.pk}?exclude_types=blog"


def test_a_run_that_was_not_edited_shows_no_changes(client):
    run = make_run(TOWER)

    doc = parse(client.get(f"/v/{run.pk}"))

    assert not doc.cssselect("#changes") and not doc.cssselect("#edited-into")
