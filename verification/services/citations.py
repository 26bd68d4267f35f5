"""The text's own citations (issue 34): saved with the run, and each cited address read as a source
of the claims of the sentences that cite it."""

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from verification.models import Citation, Claim, ClaimStatus, Origin, SearchResult, Sentence, Source, Status
from verification.pipeline.citations import CitedText


def over_cap(cap: int) -> str:
    return f"not read: a run reads at most {cap} cited address{'' if cap == 1 else 'es'} (MAX_CITED_SOURCES)"


def citations_save(
    *, verification, cited: CitedText, sentence_of: Sequence[int | None], sentences: Sequence[Sentence], cap: int
) -> list[Citation]:
    """The citations in the order of the text, each with its sentence. Only the first `cap`
    distinct addresses (0: all) cited by a sentence are to be read; the citations of the others
    say so (`left_out`)."""
    by_index = {sentence.index: sentence for sentence in sentences}
    read: set[str] = set()
    rows = []
    for index, (citation, sentence_index) in enumerate(zip(cited.citations, sentence_of, strict=True)):
        left_out = ""
        if citation.url and not citation.unresolved and sentence_index is not None and citation.url not in read:
            if cap and len(read) >= cap:
                left_out = over_cap(cap)
            else:
                read.add(citation.url)
        rows.append(
            Citation(
                verification=verification,
                index=index,
                sentence=by_index.get(sentence_index),
                marker=citation.marker,
                start=citation.start,
                end=citation.end,
                points_to=str(citation.points_to),
                label=citation.label[:200],
                url="" if citation.unresolved else citation.url or "",
                title=citation.title,
                unresolved=citation.unresolved,
                left_out=left_out,
            )
        )
    return Citation.objects.bulk_create(rows, ignore_conflicts=True)


@transaction.atomic
def cited_results_save(*, claim: Claim, host_of) -> list[Source]:
    """The claim reads every address its sentence cites (within the run's cap): one Source per
    address per run (origin "cited" unless the web search or the user gave it first), one
    SearchResult each, ranked after the claim's others. Returns the sources this call takes to
    fetch, as search_results_save: a page cited fifty times is fetched once."""
    citations = list(
        Citation.objects.filter(sentence_id=claim.sentence_id, left_out="").exclude(url="").order_by("index")
    )
    titles: dict[str, str] = {}
    for citation in citations:
        titles.setdefault(citation.url, citation.title)
    if not titles:
        return []
    verification_id = claim.sentence.verification_id
    urls = sorted(titles)
    Source.objects.bulk_create(
        [
            Source(verification_id=verification_id, url=url, host=host_of(url), title=titles[url], origin=Origin.CITED)
            for url in urls
        ],
        ignore_conflicts=True,  # the web search, the user or another sentence gave it first
    )
    # A cited page the web search found as well is told apart as cited; the user's own stay theirs.
    Source.objects.filter(verification_id=verification_id, url__in=urls, origin=Origin.WEB).update(origin=Origin.CITED)
    sources = {s.url: s for s in Source.objects.filter(verification_id=verification_id, url__in=urls)}
    # In URL order, as the sources above: the claims of one sentence saving at once lock its
    # citations in the same order, so PostgreSQL cannot deadlock them.
    for url in urls:
        Citation.objects.filter(sentence_id=claim.sentence_id, url=url, source__isnull=True).update(source=sources[url])
    last = claim.search_results.aggregate(last=Max("rank"))["last"] or 0
    in_order = list(dict.fromkeys(citation.url for citation in citations))
    SearchResult.objects.bulk_create(
        [SearchResult(claim=claim, source=sources[url], rank=last + 1 + i) for i, url in enumerate(in_order)],
        ignore_conflicts=True,  # a page the web search found too is one result
    )
    Claim.objects.filter(pk=claim.pk, status=ClaimStatus.SEARCHING).update(status=ClaimStatus.READING)
    return [
        source
        for source in sources.values()
        if source.status == Status.PENDING
        and Source.objects.filter(pk=source.pk, status=Status.PENDING).update(status=Status.RUNNING) == 1
    ]
