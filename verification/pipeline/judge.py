"""Claims + evidence passages → a verdict and rationale for each passage.

One call judges the evidence of several claims (those decomposed together, as their pages are
read), up to BATCH_SIZE items: the instructions are read once per call instead of once per
claim, and the model can compare passages. The design paper asked once per claim and passage.

The run sends no paragraph: its claims were made to stand alone when they were decomposed
(pronouns resolved from the paragraph), so the paragraph reaches the model once, there. A
caller whose claim does not stand alone (the API's judge step) can still give its context.

The answer is plain lines, not JSON: a model writes every character of its answer, slowly on
a local server, and JSON's keys and quotes were about as long as the verdicts themselves."""

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from . import languages, lazy
from .types import ClaimToJudge, EvidenceToJudge, JsonLLM, Judgement, MalformedAnswer, Verdict

# Evidence items (pages) per call: four claims' at the default top-k, so claims share the
# instructions; few enough that a small local model keeps track and a failed call fails few
# items. Its answer (a line an item) is shorter than 16 items' were in JSON.
BATCH_SIZE = 20
# An item is up to top-k excerpts of one page (with context), so it gets room for several.
MAX_PASSAGE_CHARS = 4000
MAX_TITLE_CHARS = 150

# A reason only where the passage decides something: a local model writes about 30 tokens a
# second, and most passages are irrelevant, so their reasons were most of the answer, and then
# their bare verdict lines (about a tenth of the answer on the laptop bench); the reason for a
# supporting or refuting passage is what the reader checks, and comes before its verdict so the
# model reasons first. The closing line says the model went through every passage: without it
# (an answer cut short) an unlisted passage fails as having no verdict (a retry asks again),
# never taken for irrelevant. "irrelevant" is spelled out because models otherwise call
# off-topic passages "refutes", which would count against a true claim. The verdicts are
# FEVER's words, short and familiar to models. The same text on every call, so a local server
# reuses its computed prefix. A claim and a passage in different languages are labelled so
# (build_prompt), and the third line says a passage in another language counts: models otherwise
# call a Spanish claim's English source irrelevant for its words alone.
SYSTEM_PROMPT = """Judge each passage (E1..) against the claim (C1..) above it, from the passage alone.
A passage is excerpts of one page, joined by " … "; "the same passage as E1" is E1's text again.
A passage in another language than its claim is judged by what it says: it can support or refute it.
supports: it states or clearly implies the claim;
refutes: it is about the claim's subject and contradicts it;
irrelevant: it does not address the claim, or says too little to decide.
Write a line for each passage that supports or refutes, a reason (at most 15 words) before the verdict:
E1: <reason> | supports
Leave out the irrelevant passages, and end with this line, which stands for all of them:
Others: irrelevant"""

# What one answer may hold (issue 37: a small model that does not stop on its own wrote for
# minutes): a line a passage, with its reason of at most 15 words, and the closing line.
ANSWER_TOKENS_PER_ITEM = 40
ANSWER_TOKENS_BASE = 32

T = TypeVar("T")

NO_VERDICT = "the model gave no verdict for this evidence"


def batches(items: Sequence[T], size: int = BATCH_SIZE) -> list[list[T]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def pack(groups: Sequence[Sequence[T]], size: int = BATCH_SIZE) -> list[list[T]]:
    """Groups (a claim's evidence) packed in order into batches of at most `size`; a group is
    split only when it does not fit in a batch of its own."""
    packed: list[list[T]] = []
    for group in groups:
        for part in batches(group, size):
            if packed and len(packed[-1]) + len(part) <= size:
                packed[-1].extend(part)
            else:
                packed.append(list(part))
    return packed


def build_prompt(claims: Sequence[ClaimToJudge]) -> str:
    """Each claim (C1..) with its passages (E1.., numbered across claims). A page title the
    passage already starts with is not repeated. Paragraphs come first, each once, only when
    a claim has one (see the module's docstring)."""
    paragraphs: dict[str, int] = {}
    for claim in claims:
        if claim.context:
            paragraphs.setdefault(claim.context, len(paragraphs) + 1)
    parts = []
    if paragraphs:
        listed = "\n".join(f"P{n}: {text}" for text, n in paragraphs.items())
        parts.append(f"Paragraphs the claims come from (they only tell what a claim means):\n{listed}")
    # Imported here: numpy and BM25 are not every process's (a web server's start).
    passages_module = lazy.load("verification.pipeline.passages")
    number = 0
    shown: dict[str, str] = {}  # a passage's text → the label it was first shown under
    for c, claim in enumerate(claims, start=1):
        notes = [f"from P{paragraphs[claim.context]}"] if claim.context else []
        if _tells_language(claim):
            notes.append(f"in {languages.name(claim.language)}")
        origin = f" ({', '.join(notes)})" if notes else ""
        passages = []
        for item in claim.items:
            number += 1
            text = passages_module.judged_text(
                claim.text, item.passage, item.highlights, language=item.language or "en"
            )[:MAX_PASSAGE_CHARS]
            # Two claims of a sentence often get the same excerpts of a page: read once.
            body = f"the same passage as {shown[text]}" if text in shown else text
            shown.setdefault(text, f"E{number}")
            passages.append(f"E{number}{_title(item, claim.language)}\n{body}")
        parts.append(f"C{c}{origin}: {claim.text}\n" + "\n\n".join(passages))
    return "\n\n".join(parts)


def _tells_language(claim: ClaimToJudge) -> bool:
    """Whether the prompt names the claim's language: when it is not English, or when one of
    its passages is in another one. English claims on English pages read as they always did."""
    if not claim.language:
        return False
    return claim.language != "en" or any(_other_language(item, claim.language) for item in claim.items)


def _other_language(item: EvidenceToJudge, claim_language: str) -> bool:
    """Both languages are known, and they differ."""
    return bool(item.language and claim_language) and item.language != claim_language


def _title(item: EvidenceToJudge, claim_language: str = "") -> str:
    title = item.source_title[:MAX_TITLE_CHARS]
    # A page in another language than the claim says so, for the judge to read it across.
    language = f"; in {languages.name(item.language)}" if _other_language(item, claim_language) else ""
    if item.snippet_only:  # a few words the engine chose, cut anywhere: the judge should know
        return (
            f" (from: {title}; its search snippet only{language})"
            if title
            else f" (from: a search snippet only{language})"
        )
    if title and not item.passage.startswith(title):
        return f" (from: {title}{language})"
    return f" ({language[2:]})" if language else ""


def judge_claims(llm: JsonLLM, claims: Sequence[ClaimToJudge], *, prompt_tokens: int = 0) -> list[Judgement]:
    """One call for up to BATCH_SIZE items of several claims; a judgement per item, in order.
    `prompt_tokens`: what one prompt may hold (a server's context, LLM_CONTEXT_TOKENS): items
    that do not fit together are asked in as many calls as they need (0: one call)."""
    return [judgement for part in fit_prompts(claims, prompt_tokens) for judgement in _judge_together(llm, part)]


def fit_prompts(claims: Sequence[ClaimToJudge], prompt_tokens: int) -> list[list[ClaimToJudge]]:
    """The claims and their items in order, cut into groups whose prompt fits `prompt_tokens`
    (0: one group); an item too large alone still gets a call of its own."""
    if not prompt_tokens:
        return [list(claims)]
    budget = prompt_tokens - _tokens(SYSTEM_PROMPT)
    groups: list[list[ClaimToJudge]] = [[]]
    for claim in claims:
        for item in claim.items:
            grown = _with_item(groups[-1], claim, item)
            if groups[-1] and _tokens(build_prompt(grown)) > budget:
                groups.append(_with_item([], claim, item))
            else:
                groups[-1] = grown
    return [group for group in groups if group]


def _with_item(group: list[ClaimToJudge], claim: ClaimToJudge, item: EvidenceToJudge) -> list[ClaimToJudge]:
    if group and group[-1].text == claim.text and group[-1].context == claim.context:
        return [*group[:-1], replace(group[-1], items=(*group[-1].items, item))]
    return [*group, replace(claim, items=(item,))]


def _tokens(text: str) -> int:
    # Three characters a token: a floor for English prose, so a prompt estimated to fit does.
    return len(text) // 3


def _judge_together(llm: JsonLLM, claims: Sequence[ClaimToJudge]) -> list[Judgement]:
    items = [item for claim in claims for item in claim.items]
    labels = {f"E{i}": item.key for i, item in enumerate(items, start=1)}
    return llm.complete(
        system=SYSTEM_PROMPT,
        user=build_prompt(claims),
        schema_name="judgements",
        schema=None,
        parse=lambda answer: parse_judgements(answer, labels),
        max_tokens=ANSWER_TOKENS_BASE + ANSWER_TOKENS_PER_ITEM * len(items),
        done=lambda answer: answer_complete(answer, labels),
    )


def answer_complete(answer: str, labels: dict[str, str]) -> bool:
    """Whether an answer went through every passage: its closing line, or a verdict for each."""
    lines = answer.splitlines()
    if any(map(_OTHERS_IRRELEVANT.match, lines)):
        return True
    answered = {entry["evidence"].upper() for entry in map(parse_line, lines) if entry}
    return set(labels) <= answered


def judge_claim(llm: JsonLLM, *, claim: str, items: Sequence[EvidenceToJudge], context: str = "") -> list[Judgement]:
    return judge_claims(llm, [ClaimToJudge(text=claim, context=context, items=tuple(items))])


# "E1: reason | verdict" as asked (the verdict first also goes, as do a list number and
# Markdown around the label or the verdict); without a "|", "E1: verdict: reason" or "E1: reason: verdict" (" - ",
# " — ", "=>" or "Verdict:" for the colon), which models fall back to.
_LABEL = re.compile(r"^\W*(?:\d{1,3}[.)]\s*\W*)?(E\d+)\b[\W_]*(.*)$")
_VERDICT = r"([A-Za-z_]+(?:[ -][A-Za-z_]+){0,3}?)"
_VERDICT_FIRST = re.compile(rf"^{_VERDICT}\W*?(?::|\s[-–—]|[–—])\s*(.*)$")
_VERDICT_LAST = re.compile(rf"^(.*?)\s*(?::|\s[-–—]\s|=>|->|→|\bverdict\b\W*)\W*{_VERDICT}[\W_]*$", re.IGNORECASE)


def parse_line(line: str) -> dict | None:
    """One line of a plain-text answer → {"evidence", "verdict", "rationale"}, or None; a line
    with a verdict alone has no rationale."""
    label = _LABEL.match(line.strip())
    if not label:
        return None
    rest = label.group(2).strip()
    if parse_verdict(rest) is not None:  # a verdict alone, as asked for an irrelevant passage
        return {"evidence": label.group(1), "verdict": rest, "rationale": ""}
    if "|" in rest:
        fields = [field.strip() for field in rest.split("|")]
        for verdict, reason in ((fields[-1], fields[:-1]), (fields[0], fields[1:])):
            if parse_verdict(verdict) is not None:
                return {"evidence": label.group(1), "verdict": verdict, "rationale": " | ".join(reason)}
        return None
    for pattern, reason_at, verdict_at in ((_VERDICT_FIRST, 2, 1), (_VERDICT_LAST, 1, 2)):
        match = pattern.match(rest)
        if match and parse_verdict(match.group(verdict_at)) is not None:
            return {"evidence": label.group(1), "verdict": match.group(verdict_at), "rationale": match.group(reason_at)}
    return None


def parse_judgements(answer: Any, labels: dict[str, str]) -> list[Judgement]:
    """The answer → one Judgement per label (E1.. → evidence key). Items the model left out
    are irrelevant when the answer ends as asked ("Others: irrelevant"), else they get an
    error; an answer that judges none of them and has no such line is malformed. Plain lines
    as asked, or the JSON some models write anyway ({"judgements": [{"evidence", "rationale",
    "verdict"}]})."""
    if isinstance(answer, dict) and isinstance(answer.get("judgements"), list):
        entries = answer["judgements"]
    elif isinstance(answer, list):
        entries = answer
    elif isinstance(answer, str):
        entries = [entry for entry in map(parse_line, answer.splitlines()) if entry]
    else:
        raise MalformedAnswer("expected one line per passage (E1: reason | verdict) or a 'judgements' list")
    found: dict[str, Judgement] = {}
    others_irrelevant = isinstance(answer, str) and any(map(_OTHERS_IRRELEVANT.match, answer.splitlines()))
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        label = str(entry.get("evidence", "")).strip().upper()
        verdict = parse_verdict(entry.get("verdict"))
        if label in labels and verdict is not None and label not in found:
            rationale = " ".join(str(entry.get("rationale") or "").split()).strip("*_<> ")
            found[label] = Judgement(key=labels[label], verdict=verdict, rationale=rationale)
    if not found and not others_irrelevant:
        raise MalformedAnswer("no usable verdict in the answer")
    left = Judgement(key="", verdict=Verdict.IRRELEVANT, rationale="") if others_irrelevant else None
    return [
        found.get(label) or replace(left or Judgement(key="", verdict=None, rationale="", error=NO_VERDICT), key=key)
        for label, key in labels.items()
    ]


# The closing line that stands for every passage the answer leaves out ("Others: irrelevant",
# or "All other passages - irrelevant.", as models reword it).
_OTHERS_IRRELEVANT = re.compile(
    r"^\W*(?:all\s+)?(?:the\s+)?(?:others?|rest|remaining)(?:\s+passages?)?\W*(?:[:=-]|->|→)?\W*irrelevant\W*$",
    re.IGNORECASE,
)


_VERDICT_WORDS = {
    "supported": Verdict.SUPPORTED,
    "supports": Verdict.SUPPORTED,
    "true": Verdict.SUPPORTED,
    "not_supported": Verdict.NOT_SUPPORTED,
    "unsupported": Verdict.NOT_SUPPORTED,
    "refutes": Verdict.NOT_SUPPORTED,
    "refuted": Verdict.NOT_SUPPORTED,
    "contradicted": Verdict.NOT_SUPPORTED,
    "contradicts": Verdict.NOT_SUPPORTED,
    "false": Verdict.NOT_SUPPORTED,
    "irrelevant": Verdict.IRRELEVANT,
    "not_relevant": Verdict.IRRELEVANT,
    "not_enough_info": Verdict.IRRELEVANT,
}


def parse_verdict(value: Any) -> Verdict | None:
    if not isinstance(value, str):
        return None
    words = re.sub(r"[^a-z]+", " ", value.lower().replace("_", " "))
    return _VERDICT_WORDS.get("_".join(words.split()))
