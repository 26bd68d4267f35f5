"""A deterministic language model for the trail steps, answering by what each prompt says.

It knows no fixture and no sentence id: for evidence selection it reads the prompt's claim and
its "S<n>: text" lines and picks the sentences that share enough content words with the claim;
for the verdict it reads the evidence the prompt shows (a source's marked sentences, an
intermediate text's summary). A sentence that negates where the claim does not ("not", "never")
contradicts it. So what the loop finds follows from the texts, and a bug in what the steps send
changes what comes back."""

import json
import math
import re
from typing import Any

from verification.pipeline.passages import STOPWORDS
from verification.pipeline.trail_verdict import MARK
from verification.pipeline.types import LLMUsage

NEGATIONS = frozenset({"not", "never", "no", "nor", "neither", "none"})
# Share of the claim's content words a sentence must hold to be selected (at least two words).
SELECT_SHARE = 0.4
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"^S(\d+): (.*)$", re.MULTILINE)
_HEADER = re.compile(r"^(?:Source|Intermediate text) \d+, (its evidence|what it says about the claim):$")
# The summary this model writes joins its sentences with this, so the verdict can take them apart.
JOIN = "; "


def content_words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in STOPWORDS and word not in NEGATIONS}


def negated(text: str) -> bool:
    return not NEGATIONS.isdisjoint(_WORD.findall(text.lower()))


def selects(claim: str, sentence: str) -> bool:
    words = content_words(claim)
    needed = min(len(words), max(2, math.ceil(SELECT_SHARE * len(words))))
    return len(words & content_words(sentence)) >= needed


class TrailTestModel:
    """Implements JsonLLM. `invent_ids`: every selection also names an id of the sentence after the
    prompt's last (maybe in the node's next prompt) and one no node has. `plain`: answers in the
    plain lines a small model writes instead of JSON."""

    def __init__(self, *, invent_ids: bool = False, plain: bool = False) -> None:
        self.invent_ids, self.plain = invent_ids, plain
        self.calls: list[dict[str, Any]] = []
        self.usage = LLMUsage()

    def complete(self, *, system, user, schema_name, schema, parse, on_text=None, max_tokens=0, done=None):
        answer = {
            "evidence_selection": self.select,
            "evidence_selections": self.select_many,
            "trail_verdict": self.verdict,
            "trail_verdicts": self.verdict_many,
        }[schema_name](user)
        self.calls.append({"schema_name": schema_name, "system": system, "user": user, "answer": answer})
        self.usage.calls += 1
        # About four characters a token: enough to compare costs between runs.
        self.usage.prompt_tokens += (len(system) + len(user)) // 4
        self.usage.completion_tokens += len(json.dumps(answer)) // 4
        return parse(answer)

    def calls_for(self, schema_name: str) -> list[dict[str, Any]]:
        return [call for call in self.calls if call["schema_name"] == schema_name]

    def select(self, user: str) -> Any:
        claim = _claim(user)
        lines = _SENTENCE.findall(user)
        picked = [(number, text) for number, text in lines if selects(claim, text)]
        ids = [f"S{number}" for number, _ in picked]
        if self.invent_ids:
            ids += [f"S{max(int(number) for number, _ in lines) + 1}", "S999999"]
        summary = JOIN.join(text for _, text in picked)
        if self.plain:
            return f"Sentences: {', '.join(ids) or 'none'}\nSummary: {summary}"
        return {"sentence_ids": ids, "summary": summary}

    def select_many(self, user: str) -> Any:
        """Several claims against one text (trail_select_many): each claim answered as `select`
        answers one."""
        claims = dict(re.findall(r"^(C\d+): (.*)$", user.split("\n\nText:\n")[0], re.MULTILINE))
        text = user.split("\n\nText:\n", 1)[1]
        entries = []
        for label, claim in claims.items():
            one = self.select(f"Claim: {claim}\n\nText:\n{text}")
            if self.plain:
                entries.append(f"{label}\n{one}")
            else:
                entries.append({"claim": label, **one})
        return "\n".join(entries) if self.plain else {"selections": entries}

    def verdict(self, user: str) -> Any:
        claim = _claim(user)
        words = content_words(claim)
        supporting, contradicting = [], []
        for line in evidence_lines(user):
            if len(words & content_words(line)) >= min(2, len(words)):
                (contradicting if negated(line) != negated(claim) else supporting).append(line)
        covered = set().union(*map(content_words, supporting)) >= words
        if supporting and contradicting:
            verdict = "inconclusive"
        elif contradicting:
            verdict = "contradicted"
        else:
            verdict = "fully_supported" if covered else "not_fully_supported"
        reasoning = f"{len(supporting)} passages support it and {len(contradicting)} contradict it."
        if self.plain:
            return f"Reasoning: {reasoning}\nVerdict: {verdict.replace('_', ' ')}"
        return {"reasoning": reasoning, "verdict": verdict}

    def verdict_many(self, user: str) -> Any:
        """Several claims' rounds (trail_verdict_many): each "[Cn] " block is the prompt of one
        claim asked alone, answered as `verdict` answers it."""
        blocks = re.split(r"^\[(C\d+)\] ", user, flags=re.MULTILINE)[1:]
        entries = []
        for label, block in zip(blocks[::2], blocks[1::2], strict=True):
            one = self.verdict(block)
            entries.append(f"{label}\n{one}" if self.plain else {"claim": label, **one})
        return "\n".join(entries) if self.plain else {"verdicts": entries}


def _claim(user: str) -> str:
    return re.match(r"Claim: (.*)", user).group(1)


def evidence_lines(user: str) -> list[str]:
    """The verdict prompt's evidence: a source's marked sentences, an intermediate text's
    summary (split back into its sentences)."""
    lines: list[str] = []
    kind = None
    for line in user.splitlines():
        header = _HEADER.match(line)
        if header:
            kind = header.group(1)
        elif kind == "its evidence" and line.startswith(MARK):
            lines.append(line[len(MARK) :].strip())
        elif kind == "what it says about the claim" and line.strip():
            lines += line.split(JOIN)
    return lines
