"""Finding the claims of sentences: one LLM call for a chunk of sentences, streamed, each
sentence's claims saved and searched as soon as the model has written them."""

import logging

from django.conf import settings

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, store
from verification.inputs.forms import QUICK_MIN_PROBABILITY, WRITE_SEARCH_QUERIES, quick_mode
from verification.models import (
    Claim,
    Sentence,
)
from verification.pipeline import decompose
from verification.pipeline.types import (
    StepError,
)
from verification.worker import base, chunks, joins

logger = logging.getLogger(__name__)


def _fail_sentences(sentence_ids, *, reason: str, transient: bool = True) -> None:
    for sentence_id in sentence_ids:
        _fail_sentence(sentence_id, reason=reason, transient=transient)


def _fail_sentence(sentence_id, *, reason: str, transient: bool = True) -> None:
    services.sentence_fail(sentence_id, reason=reason, transient=transient)
    joins.after_sentence(Sentence.objects.get(pk=sentence_id))


@base.step("finding the claims of sentences", give_up=_fail_sentences)
def sentences_decompose(sentence_ids: list[int]) -> None:
    """One LLM call for a chunk of sentences (decompose.chunks); each sentence's claims are
    cached on their own, so an edited text asks again only about the sentences whose paragraph
    changed."""
    sentences = list(Sentence.objects.filter(pk__in=sentence_ids).select_related("verification").order_by("index"))
    if not sentences:
        return
    base.hold(sentences[0].verification_id)
    begun = [sentence for sentence in sentences if services.sentence_begin(sentence)]
    # A redelivered task (its worker died while the model still wrote): the sentences whose
    # claims were saved before go on with them, and only the others are asked about again.
    decomposed = set(Claim.objects.filter(sentence__in=begun).values_list("sentence_id", flat=True))
    for sentence in begun:
        if sentence.pk in decomposed:
            _claims_save(sentence, [])
    begun = [sentence for sentence in begun if sentence.pk not in decomposed]
    if not begun:
        return
    llm = providers.llm_client(begun[0].verification.settings["model"], priority=begun[0].index)
    quick = quick_mode(begun[0].verification.settings)
    queries = begun[0].verification.settings.get(WRITE_SEARCH_QUERIES, True)  # True: runs from before it
    system = decompose.system_prompt(quick=quick, queries=queries)
    # Claims and queries in the text's language (pipeline/languages.py), detected when it was saved.
    language = begun[0].verification.language or None
    segmented = {sentence.pk: chunks.segmented(sentence) for sentence in begun}
    keys = {
        pk: cache_key(
            "decompose", llm.base_url, llm.model, system, decompose.build_prompt([s], language, queries=queries)
        )
        for pk, s in segmented.items()
    }
    found = {pk: drafts for pk in keys if (drafts := lookup(keys[pk])) is not None}
    services.usage_add(begun[0].verification_id, llm_cached=len(found))
    for sentence in begun:
        if sentence.pk in found:
            _claims_save(sentence, found[sentence.pk])
    unknown = {sentence.index: sentence for sentence in begun if sentence.pk not in found}
    if not unknown:
        return

    def answered(index: int, drafts: list) -> None:
        # As the model writes them: the first sentences' claims are searched while it writes
        # the rest of the chunk.
        sentence = unknown.pop(index)
        store(keys[sentence.pk], drafts)
        _claims_save(sentence, drafts)

    asked = [segmented[sentence.pk] for sentence in unknown.values()]
    try:
        answers = decompose.decompose_chunk(
            llm, asked, on_sentence=answered, quick=quick, queries=queries, language=language
        )
    except StepError as error:
        answers = {}
        _ask_in_parts([sentence.pk for sentence in unknown.values()], asked=len(asked), error=error)
    finally:
        services.usage_add(begun[0].verification_id, usage=llm.usage)
    if answers and unknown:
        _ask_in_parts([sentence.pk for sentence in unknown.values()], asked=len(asked))


def _ask_in_parts(sentence_ids: list[int], *, asked: int, error: StepError | None = None) -> None:
    """The sentences a call did not answer (it failed after its retries, or the model left them
    out) are asked again in smaller calls, halves, then one sentence each, before any of them
    fails: a bad answer or a bad moment costs the sentences it concerns, not a chunk of ten. A
    failure a retry cannot change fails them at once."""
    if (error is not None and not error.transient) or asked == 1:
        reason = f"finding claims failed: {error or decompose.NOT_ANSWERED}"
        return _fail_sentences(sentence_ids, reason=reason, transient=error.transient if error else True)
    if error is None or len(sentence_ids) == 1:
        base.send("sentences_decompose", sentence_ids)
        return
    half = len(sentence_ids) // 2
    base.send("sentences_decompose", sentence_ids[:half])
    base.send("sentences_decompose", sentence_ids[half:])


@base.step("finding the claims of a sentence", give_up=_fail_sentence)
def sentence_decompose(sentence_id: int) -> None:
    """The one-sentence form of sentences_decompose (messages queued before chunks existed)."""
    sentences_decompose([sentence_id])


def _claims_save(sentence: Sentence, drafts: list) -> None:
    budget = settings.MAX_CLAIMS_PER_RUN
    # Quick mode: a claim the model knows well enough is finished by claim_search, unsearched.
    run_settings = sentence.verification.settings
    trusted = None
    if quick_mode(run_settings):
        trusted = run_settings.get(QUICK_MIN_PROBABILITY, settings.QUICK_MIN_PROBABILITY)
    claims = services.claims_save(sentence=sentence, drafts=drafts, budget=budget, quick_min_probability=trusted)
    if claims is None:
        reason = f"skipped: this run's budget of {budget} claims (MAX_CLAIMS_PER_RUN) was spent"
        # A retry finds the budget as spent as now.
        return _fail_sentence(sentence.pk, reason=reason, transient=False)
    if not claims and services.sentence_finish(sentence.pk, note="no checkable claim in this sentence"):
        joins.after_sentence(sentence)
    for claim in claims:
        base.send("claim_search", claim.pk)
