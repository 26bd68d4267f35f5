"""What a viewer of a result has chosen — the selected sentence, the evidence and source types
left out — kept in the URL's query string, so the address bar is always a shareable link to
exactly what is on screen."""

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from verification.models import SourceType

SOURCE_TYPES = frozenset(SourceType.values)


@dataclass(frozen=True)
class ViewState:
    sentence: int | None = None
    excluded_ids: frozenset[int] = frozenset()
    excluded_types: frozenset[str] = frozenset()

    @classmethod
    def from_query(cls, query) -> "ViewState":
        """Lenient: a hand-edited or truncated link shows what it can rather than an error."""
        sentence = query.get("sentence", "")
        return cls(
            sentence=int(sentence) if sentence.isdigit() else None,
            excluded_ids=frozenset(int(p) for p in query.get("exclude_evidence", "").split(",") if p.isdigit()),
            excluded_types=frozenset(t for t in query.get("exclude_types", "").split(",") if t in SOURCE_TYPES),
        )

    def query(self) -> str:
        params = {}
        if self.sentence is not None:
            params["sentence"] = self.sentence
        if self.excluded_ids:
            params["exclude_evidence"] = ",".join(map(str, sorted(self.excluded_ids)))
        if self.excluded_types:
            params["exclude_types"] = ",".join(sorted(self.excluded_types))
        return "?" + urlencode(params, safe=",") if params else ""

    def selecting(self, sentence: int | None) -> "ViewState":
        return replace(self, sentence=sentence)

    def toggling_evidence(self, evidence_id: int) -> "ViewState":
        return replace(self, excluded_ids=self.excluded_ids ^ {evidence_id})

    def toggling_type(self, source_type: str) -> "ViewState":
        return replace(self, excluded_types=self.excluded_types ^ {source_type})
