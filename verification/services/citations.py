"""The text's own citations (issue 34), saved with the run."""

from collections.abc import Sequence

from verification.models import Citation, Sentence
from verification.pipeline.citations import CitedText


def over_cap(cap: int) -> str:
    return f"not read: a run reads at most {cap} cited addresses (MAX_CITED_SOURCES)"


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
