"""WRITE_SEARCH_QUERIES=false: the model writes no search query and each claim is searched by
its own words (on the real worker, against the fakes on 127.0.0.1); a run keeps the choice it
started with."""

import pytest

from tests.test_engine import KNOWS, all_evidence, claims_of, run, wait_for
from verification.pipeline import decompose

pytestmark = pytest.mark.django_db(transaction=True)


def decomposition_prompts(world) -> list[str]:
    return [r["messages"][0]["content"] for r in world.llm.requests if "atomic claims" in r["messages"][0]["content"]]


def test_without_queries_each_claim_is_searched_by_its_own_words(client, world, celery_worker, settings):
    settings.WRITE_SEARCH_QUERIES = False
    verification_id = run(client, retrieval_mode="sparse")
    settings.WRITE_SEARCH_QUERIES = True  # the run keeps the value it started with
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    claims = claims_of(result)
    assert len(claims) >= 2 and all(c["query"] == text for text, c in claims.items())
    assert sorted(world.serper.queries) == sorted(claims)
    assert set(decomposition_prompts(world)) == {decompose.SYSTEM_PROMPT_NO_QUERY}
    assert result["settings"]["write_search_queries"] is False
    assert any(e["verdict"] == "supported" for e in all_evidence(result))


def test_by_default_the_model_writes_a_query_for_each_claim(client, world, celery_worker):
    result = wait_for(client, run(client, retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    claims = claims_of(result)
    assert all(c["query"] != text for text, c in claims.items())
    assert sorted(world.serper.queries) == sorted(c["query"] for c in claims.values())
    assert result["settings"]["write_search_queries"] is True


def test_quick_mode_without_queries_still_reads_the_models_labels(client, world, celery_worker, settings):
    settings.WRITE_SEARCH_QUERIES = False
    world.llm.knows = KNOWS
    result = wait_for(client, run(client, retrieval_mode="sparse", quick=True))

    assert result["status"] == "done", result["error"]
    claims = claims_of(result)
    known = claims["The Eiffel Tower was completed in 1889."]
    assert known["from_model_knowledge"] and known["model_label_probability"] == pytest.approx(0.999)
    assert claims["The Eiffel Tower is made of steel."]["model_label"] == "false"
    assert sorted(world.serper.queries) == sorted(text for text in claims if text != known["text"])
    assert decomposition_prompts(world) == [decompose.system_prompt(quick=True, queries=False)]
