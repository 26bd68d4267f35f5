"""What a viewer of a result has chosen — the selected sentence, the evidence and source types
left out — kept in the URL's query string, so the address bar is always a shareable link to
exactly what is on screen."""

import re
from dataclasses import dataclass, replace

from verification.models import SourceType
from verification.scoring import DEFAULT_RULE, valid_rule

SOURCE_TYPES = frozenset(SourceType.values)
_ID = re.compile(r"[0-9]{1,18}")


def parse_ids(value: str) -> list[int]:
    """Comma-separated ids; anything else (words, "²", a 5,000-digit number) is skipped."""
    return [int(part) for part in value.split(",") if _ID.fullmatch(part)]


@dataclass(frozen=True)
class ViewState:
    sentence: int | None = None
    excluded_ids: frozenset[int] = frozenset()
    excluded_types: frozenset[str] = frozenset()
    score_rule: str = DEFAULT_RULE

    @property
    def excludes_anything(self) -> bool:
        return bool(self.excluded_ids or self.excluded_types)

    @classmethod
    def from_query(cls, query) -> "ViewState":
        """Lenient: a hand-edited or truncated link shows what it can rather than an error."""
        sentence = parse_ids(query.get("sentence", ""))
        return cls(
            sentence=sentence[0] if sentence else None,
            excluded_ids=frozenset(parse_ids(query.get("exclude_evidence", ""))),
            excluded_types=frozenset(t for t in query.get("exclude_types", "").split(",") if t in SOURCE_TYPES),
            score_rule=valid_rule(query.get("score_rule")),
        )

    def query(self) -> str:
        # Built by hand, not urlencode: every value is digits or a known [a-z_] type name, and a
        # result page builds hundreds of these links per render.
        params = []
        if self.sentence is not None:
            params.append(f"sentence={self.sentence}")
        if self.excluded_ids:
            params.append("exclude_evidence=" + ",".join(map(str, sorted(self.excluded_ids))))
        if self.excluded_types:
            params.append("exclude_types=" + ",".join(sorted(self.excluded_types)))
        if self.score_rule != DEFAULT_RULE:
            params.append(f"score_rule={self.score_rule}")
        return "?" + "&".join(params) if params else ""

    def selecting(self, sentence: int | None) -> "ViewState":
        return replace(self, sentence=sentence)

    def toggling_evidence(self, evidence_id: int) -> "ViewState":
        return replace(self, excluded_ids=self.excluded_ids ^ {evidence_id})

    def toggling_type(self, source_type: str) -> "ViewState":
        return replace(self, excluded_types=self.excluded_types ^ {source_type})

    def scoring_by(self, rule: str) -> "ViewState":
        return replace(self, score_rule=rule)

    def carried_to_another_run(self) -> "ViewState":
        """What an edited run keeps of this view: the score rule and the source types left out.
        Evidence ids and the selected sentence belong to this run alone."""
        return ViewState(excluded_types=self.excluded_types, score_rule=self.score_rule)

    def including_everything(self) -> "ViewState":
        return replace(self, excluded_ids=frozenset(), excluded_types=frozenset())
