"""What a viewer of a result has chosen — the selected sentence, the evidence, source types and
kinds of evidence (search snippets, sources the text itself cites) left out — kept in the URL's
query string, so the address bar is always a shareable link to exactly what is on screen."""

import re
from dataclasses import dataclass, replace

from verification.models import SourceType
from verification.scoring import DEFAULT_RULE, EVIDENCE_KINDS, MODEL_KNOWLEDGE, valid_rule

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
    # Kinds of evidence left out (scoring.EVIDENCE_KINDS: "snippet", "cited"), as source types are.
    excluded_kinds: frozenset[str] = frozenset()
    # Quick mode's claims answered from the model's own knowledge count only when ticked in
    # (nothing was checked against a source for them): left out by default, unlike the kinds above.
    model_knowledge: bool = False

    @property
    def excludes_anything(self) -> bool:
        return bool(self.excluded_ids or self.excluded_types or self.excluded_kinds)

    @property
    def kinds_left_out(self) -> frozenset[str]:
        """Every kind of evidence record this view leaves out of the scores (compute_scores'
        `excluded_kinds`): those unticked, and the model's own knowledge unless ticked in."""
        return self.excluded_kinds if self.model_knowledge else self.excluded_kinds | {MODEL_KNOWLEDGE}

    @classmethod
    def from_query(cls, query) -> "ViewState":
        """Lenient: a hand-edited or truncated link shows what it can rather than an error."""
        sentence = parse_ids(query.get("sentence", ""))
        return cls(
            sentence=sentence[0] if sentence else None,
            excluded_ids=frozenset(parse_ids(query.get("exclude_evidence", ""))),
            excluded_types=frozenset(t for t in query.get("exclude_types", "").split(",") if t in SOURCE_TYPES),
            score_rule=valid_rule(query.get("score_rule")),
            excluded_kinds=frozenset(k for k in query.get("exclude_kinds", "").split(",") if k in EVIDENCE_KINDS),
            model_knowledge=query.get("model_knowledge") == "1",
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
        if self.excluded_kinds:
            params.append("exclude_kinds=" + ",".join(sorted(self.excluded_kinds)))
        if self.score_rule != DEFAULT_RULE:
            params.append(f"score_rule={self.score_rule}")
        if self.model_knowledge:
            params.append("model_knowledge=1")
        return "?" + "&".join(params) if params else ""

    def selecting(self, sentence: int | None) -> "ViewState":
        return replace(self, sentence=sentence)

    def toggling_evidence(self, evidence_id: int) -> "ViewState":
        return replace(self, excluded_ids=self.excluded_ids ^ {evidence_id})

    def toggling_type(self, source_type: str) -> "ViewState":
        return replace(self, excluded_types=self.excluded_types ^ {source_type})

    def toggling_kind(self, kind: str) -> "ViewState":
        return replace(self, excluded_kinds=self.excluded_kinds ^ {kind})

    def toggling_model_knowledge(self) -> "ViewState":
        return replace(self, model_knowledge=not self.model_knowledge)

    def scoring_by(self, rule: str) -> "ViewState":
        return replace(self, score_rule=rule)

    def carried_to_another_run(self) -> "ViewState":
        """What an edited run keeps of this view: the score rule and the source types and kinds
        left out. Evidence ids and the selected sentence belong to this run alone."""
        return ViewState(
            excluded_types=self.excluded_types,
            score_rule=self.score_rule,
            excluded_kinds=self.excluded_kinds,
            model_knowledge=self.model_knowledge,
        )

    def including_everything(self) -> "ViewState":
        return replace(self, excluded_ids=frozenset(), excluded_types=frozenset(), excluded_kinds=frozenset())
