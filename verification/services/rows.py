"""Writes of a run's rows as the pipeline makes them: sentences, claims, search results, sources,
evidence and judgements. Status changes are conditional UPDATEs (`transition`)."""

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import F, Q

from verification.inputs.documents import is_upload
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Origin,
    SearchResult,
    Sentence,
    Source,
    Status,
    Verification,
)
from verification.pipeline.decompose import known_by_model
from verification.pipeline.refusals import snippet_passage
from verification.pipeline.types import (
    ClaimDraft,
    Judgement,
    PageSentences,
    Passage,
    SearchHit,
    SegmentedSentence,
)
from verification.services.citations import cited_results_save

# In a run's settings: {claim id: {refusal: search results its domain lists left out}}.
LEFT_OUT_KEY = "left_out_by_claim"


def transition(queryset, *, to: str, **changes) -> bool:
    return queryset.update(status=to, **changes) == 1


def sentences_save(*, verification: Verification, segments: Sequence[SegmentedSentence]) -> list[Sentence]:
    Sentence.objects.bulk_create(
        [
            Sentence(
                verification=verification,
                index=s.index,
                text=s.text,
                start=s.start,
                end=s.end,
                paragraph_index=s.paragraph_index,
                context=list(s.context),
                position_in_context=s.position_in_context,
            )
            for s in segments
        ],
        ignore_conflicts=True,  # a redelivered start task finds them already there
    )
    return list(verification.sentences.all())


def sentence_begin(sentence: Sentence) -> bool:
    """False when the sentence already finished (a redelivered task)."""
    return Sentence.objects.filter(pk=sentence.pk).exclude(status__in=FINISHED).update(status=Status.RUNNING) == 1


def sentence_fail(sentence_id: int, *, reason: str, transient: bool = True) -> None:
    Sentence.objects.filter(pk=sentence_id).exclude(status__in=FINISHED).update(
        status=Status.FAILED, error=reason, transient=transient
    )


def claims_save(
    *, sentence: Sentence, drafts: Sequence[ClaimDraft], budget: int = 0, quick_min_probability: float | None = None
) -> list[Claim] | None:
    """Save a sentence's claims, taking them from the run's budget of `budget` claims (0: no
    limit). None when they do not fit in what is left: the sentence is then not checked.
    `quick_min_probability` (quick mode): the model's labels are kept, and a claim labelled true
    or false with at least this probability is marked as known from the model's knowledge."""
    existing = list(sentence.claims.all())
    if existing:  # a redelivered task: the budget was taken the first time
        return existing
    if budget and drafts and not _budget_take(sentence.verification_id, len(drafts), budget):
        return None
    quick = quick_min_probability is not None
    Claim.objects.bulk_create(
        [
            Claim(
                sentence=sentence,
                index=i,
                text=d.text,
                query=d.query,
                english_query=d.english_query,
                model_label=d.label if quick else "",
                model_label_probability=d.probability if quick else None,
                from_model_knowledge=quick and known_by_model(d, quick_min_probability),
            )
            for i, d in enumerate(drafts)
        ],
        ignore_conflicts=True,
    )
    return list(sentence.claims.all())


def _budget_take(verification_id, count: int, budget: int) -> bool:
    # One conditional UPDATE: sentences decomposed at once cannot overspend together.
    return (
        Verification.objects.filter(pk=verification_id, claims_used__lte=budget - count).update(
            claims_used=F("claims_used") + count
        )
        == 1
    )


def claim_begin_search(claim: Claim) -> bool:
    """Also from reading with no result saved: its search found nothing and the worker died
    before finishing it (a resumed run searches again)."""
    unsearched = Q(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING]) | Q(
        status=ClaimStatus.READING, search_results__isnull=True
    )
    return Claim.objects.filter(unsearched, pk=claim.pk).update(status=ClaimStatus.SEARCHING) == 1


def claim_finish_from_model_knowledge(claim_id: int, *, note: str) -> bool:
    """Quick mode: a claim the model knows is finished without a search (searching → done)."""
    return transition(
        Claim.objects.filter(pk=claim_id, status=ClaimStatus.SEARCHING, from_model_knowledge=True),
        to=ClaimStatus.DONE,
        error=note,
    )


def claim_fail(claim_id: int, *, reason: str, transient: bool = True) -> None:
    Claim.objects.filter(pk=claim_id).exclude(status__in=[ClaimStatus.DONE, ClaimStatus.FAILED]).update(
        status=ClaimStatus.FAILED, error=reason, transient=transient
    )


@transaction.atomic
def search_results_save(*, claim: Claim, hits: Sequence[SearchHit], host_of, search_round: int = 1) -> list[Source]:
    """One Source per URL per run (shared by every claim that finds it) and one SearchResult
    per hit, of the claim's first or second search (`search_round`); the claim then waits for
    its pages. Returns the sources this call takes to fetch:
    exactly one of the claims that find a page takes it (a conditional update, in the same
    transaction so the whole save is one write)."""
    verification_id = claim.sentence.verification_id
    urls = sorted({hit.url for hit in hits})
    existing = set(Source.objects.filter(verification_id=verification_id, url__in=urls).values_list("url", flat=True))
    # In URL order, and skipping conflicts: two claims saving the same pages at once then
    # neither fail nor deadlock (PostgreSQL did when each went in its own rank order).
    Source.objects.bulk_create(
        [
            Source(verification_id=verification_id, url=hit.url, host=host_of(hit.url), title=hit.title)
            for hit in sorted(hits, key=lambda hit: hit.url)
            if hit.url not in existing
        ],
        ignore_conflicts=True,
    )
    sources = {s.url: s for s in Source.objects.filter(verification_id=verification_id, url__in=urls)}
    SearchResult.objects.bulk_create(
        [
            SearchResult(
                claim=claim,
                source=sources[hit.url],
                rank=hit.rank,
                snippet=hit.snippet,
                title=hit.title,
                provider=hit.provider,
                search_round=search_round,
            )
            for hit in hits
        ],
        ignore_conflicts=True,
    )
    Claim.objects.filter(pk=claim.pk, status=ClaimStatus.SEARCHING).update(status=ClaimStatus.READING)
    return [
        source
        for source in sources.values()
        if source.status == Status.PENDING
        and transition(Source.objects.filter(pk=source.pk, status=Status.PENDING), to=Status.RUNNING)
    ]


@transaction.atomic
def claim_results_save(*, claim: Claim, hits: Sequence[SearchHit], host_of, documents: bool) -> list[Source]:
    """A claim's web hits, with `documents` every document of its run, and every address its
    sentence cites (issue 34: whatever the mode), in one write (a claim never waits for only part
    of its pages). Returns the sources this call takes to fetch."""
    taken = search_results_save(claim=claim, hits=hits, host_of=host_of)
    if documents:
        taken += document_results_save(claim=claim, first_rank=len(hits) + 1)
    return taken + cited_results_save(claim=claim, host_of=host_of)


@transaction.atomic
def document_results_save(*, claim: Claim, first_rank: int = 1) -> list[Source]:
    """The claim cites every document of its run, ranked in the order they were given (no
    search chose them). Returns the documents this call takes to fetch, as search_results_save."""
    documents = list(
        Source.objects.filter(verification_id=claim.sentence.verification_id, origin=Origin.DOCUMENT).order_by("pk")
    )
    SearchResult.objects.bulk_create(
        [SearchResult(claim=claim, source=source, rank=first_rank + i) for i, source in enumerate(documents)],
        ignore_conflicts=True,  # a document the web search found too is cited once
    )
    Claim.objects.filter(pk=claim.pk, status=ClaimStatus.SEARCHING).update(status=ClaimStatus.READING)
    return [
        source
        for source in documents
        if source.status == Status.PENDING
        and transition(Source.objects.filter(pk=source.pk, status=Status.PENDING), to=Status.RUNNING)
    ]


def source_fetched(source: Source, *, page: PageSentences, language: str = "") -> None:
    # An upload keeps its file name as its title: that is how the person knows it.
    title = source.title if is_upload(source.url) else page.title or source.title
    Source.objects.filter(pk=source.pk).update(
        status=Status.DONE, title=title, final_url=page.final_url, published=page.published, language=language
    )


def source_fail(source_id: int, *, reason: str, transient: bool = True, was_read: bool = False) -> None:
    """`was_read`: a page fetched earlier that cannot be read again (gone from the cache and
    from the web) fails too."""
    sources = Source.objects.filter(pk=source_id)
    if not was_read:
        sources = sources.exclude(status__in=FINISHED)
    sources.update(status=Status.FAILED, error=reason, transient=transient)


@transaction.atomic
def results_read(
    reads: Sequence[tuple[SearchResult, Sequence[Passage] | None]], *, unread_reason: str = ""
) -> set[int]:
    """Record the passages chosen for each search result (None: its page could not be read),
    for the results nobody recorded yet, in one transaction. Returns the claims touched: the
    caller asks `claim_start_judging` for each AFTER the commit, so that of two pages of one
    claim finishing at once, the later commit sees both.

    `unread_reason`: why the page was not read, when its search snippet may stand in for it
    (pipeline.refusals.unread_reason). An unread result is then judged from its snippet and
    title (one item marked `snippet_only`); it stays failed, since its page was not read."""
    touched = set()
    for result, chosen in reads:
        status = Status.FAILED if chosen is None else Status.DONE
        if not transition(SearchResult.objects.filter(pk=result.pk, status=Status.PENDING), to=status):
            continue  # recorded by another task that read the same page
        if chosen is None:
            items = _snippet_evidence(result, unread_reason)
        else:
            # Read at last (a retry): the page's own words replace what its snippet stood in for.
            Evidence.objects.filter(claim_id=result.claim_id, source_id=result.source_id, snippet_only=True).delete()
            items = [
                Evidence(
                    claim_id=result.claim_id,
                    source_id=result.source_id,
                    index=i,
                    passage=passage.text,
                    highlights=[list(span) for span in passage.highlights],
                    relevance=round(passage.score, 4),
                )
                for i, passage in enumerate(chosen)
            ]
        # A retried page that fails again finds its snippet item already there (and judged).
        Evidence.objects.bulk_create(items, ignore_conflicts=True)
        touched.add(result.claim_id)
    return touched


def _snippet_evidence(result: SearchResult, unread_reason: str) -> list[Evidence]:
    passage = snippet_passage(result.title, result.snippet)
    if not unread_reason or not passage:
        return []
    return [
        Evidence(
            claim_id=result.claim_id,
            source_id=result.source_id,
            index=0,
            passage=passage,
            highlights=[],
            # Below every passage of a page read: a snippet is what the engine chose to show.
            relevance=0.0,
            snippet_only=True,
            unread_reason=unread_reason,
        )
    ]


@contextmanager
def judging_turn(chunk_id: int) -> Iterator[None]:
    """One caller at a time decides what a decompose chunk (named by its first sentence's id)
    sends to the judge. Pages of one chunk are often read at the same moment; each of their
    tasks would otherwise take the claims it saw ready and send its own half-full judge call,
    every one repeating the instructions. Held until the caller's transaction ends."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [chunk_id])
        # SQLite: the transaction is IMMEDIATE (settings), so it already holds the write lock.
        yield


def claim_start_judging(claim_id: int) -> bool:
    """The last of a claim's pages moves it to judging; False while pages are outstanding."""
    if SearchResult.objects.filter(claim_id=claim_id).exclude(status__in=FINISHED).exists():
        return False
    return transition(Claim.objects.filter(pk=claim_id, status=ClaimStatus.READING), to=ClaimStatus.JUDGING)


@transaction.atomic
def judgements_save(judgements: Iterable[Judgement]) -> None:
    """The verdicts of a judge call. A call still in flight when its run was cancelled has its
    answer dropped (its tokens are counted): a cancelled run's result is what it had found when
    it was cancelled, the same on its page, in My checks and in its reports."""
    judged = []
    for judgement in judgements:
        changes = (
            {"status": Status.DONE, "verdict": judgement.verdict, "rationale": judgement.rationale}
            if judgement.verdict
            else {"status": Status.FAILED, "error": judgement.error, "transient": True}
        )
        Evidence.objects.filter(pk=int(judgement.key), status=Status.PENDING).exclude(
            claim__sentence__verification__status=Status.CANCELLED
        ).update(**changes)
        judged.append(int(judgement.key))
    _duplicates_follow(judged)


@transaction.atomic
def evidence_fail(evidence_ids: Iterable[int], *, reason: str, transient: bool = True) -> None:
    evidence_ids = list(evidence_ids)
    Evidence.objects.filter(pk__in=evidence_ids, status=Status.PENDING).update(
        status=Status.FAILED, error=reason, transient=transient
    )
    _duplicates_follow(evidence_ids)


@transaction.atomic
def evidence_mark_duplicates(duplicates: dict[int, int]) -> None:
    """{duplicate id: id of the item that counts for it}, of one claim. Only evidence not judged
    yet becomes a copy (a judged item keeps its own verdict); a copy of an item already judged
    takes its verdict at once."""
    for duplicate_id, original_id in duplicates.items():
        Evidence.objects.filter(pk=duplicate_id, status=Status.PENDING, duplicate_of__isnull=True).update(
            duplicate_of_id=original_id
        )
    _duplicates_follow(set(duplicates.values()))


def _duplicates_follow(evidence_ids: Iterable[int]) -> None:
    """Copies of a text are never judged on their own: they take the verdict (or failure) of the
    item that counts for them once it has one, so they stop holding their claim open."""
    originals = Evidence.objects.filter(pk__in=list(evidence_ids), status__in=FINISHED, duplicates__isnull=False)
    for original in originals.distinct():
        original.duplicates.filter(status=Status.PENDING).update(
            status=original.status,
            verdict=original.verdict,
            rationale=original.rationale,
            error=original.error,
            transient=original.transient,
        )


@transaction.atomic
def claim_left_out_record(*, claim: Claim, counts: dict[str, int], search_round: int = 1) -> None:
    """How many of a claim's search results its run's domain lists left out, by refusal. Set per
    claim and search (its first or second), not added, so a search done again does not count twice."""
    # Kept in the run's settings JSON (under LEFT_OUT_KEY) for want of a column; the row is
    # locked so that claims searched at once do not overwrite each other's counts.
    run = Verification.objects.select_for_update().only("settings").get(pk=claim.sentence.verification_id)
    key = str(claim.pk) if search_round == 1 else f"{claim.pk}:{search_round}"
    left_out = {**run.settings.get(LEFT_OUT_KEY, {}), key: dict(counts)}
    Verification.objects.filter(pk=run.pk).update(settings={**run.settings, LEFT_OUT_KEY: left_out})


def claim_finish(claim_id: int, *, note: str = "", failed: bool = False, transient: bool = True) -> bool:
    """Judging → done once no evidence is left to judge (or straight from reading, with `note`,
    when there was nothing to judge; `failed` when that was because every page failed, and
    `transient` when a retry may read one of them)."""
    if Evidence.objects.filter(claim_id=claim_id, status=Status.PENDING).exists():
        return False
    if SearchResult.objects.filter(claim_id=claim_id).exclude(status__in=FINISHED).exists():
        return False  # a page is still being read (a resumed join may ask early)
    return transition(
        Claim.objects.filter(pk=claim_id, status__in=[ClaimStatus.READING, ClaimStatus.JUDGING]),
        to=ClaimStatus.FAILED if failed else ClaimStatus.DONE,
        error=note,
        transient=transient,
    )


def sentence_finish(sentence_id: int, *, note: str = "") -> bool:
    if (
        Claim.objects.filter(sentence_id=sentence_id)
        .exclude(status__in=[ClaimStatus.DONE, ClaimStatus.FAILED])
        .exists()
    ):
        return False
    return transition(Sentence.objects.filter(pk=sentence_id, status=Status.RUNNING), to=Status.DONE, error=note)
