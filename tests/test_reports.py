"""The result JSON holds the whole text as pasted (issue 17.2)."""

import pytest

from tests.test_views import get, make_run, permalink

pytestmark = pytest.mark.django_db


# --- the JSON


def test_the_json_holds_the_whole_text_as_pasted(client):
    text = "Here is what I found:\n\nThe Eiffel Tower is in Paris.   It opened in 1889.\n"
    run = make_run("The Eiffel Tower is in Paris.", "It opened in 1889.", text=text)

    data = get(client, permalink(run) + ".json").json()

    assert data["text"] == text
    assert list(data)[:3] == ["id", "permalink", "text"]
