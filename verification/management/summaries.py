"""What `manage.py verify` writes in the terminal: a run's progress line while it runs, and its
summary (or a trail run's) when it ends."""

from collections import defaultdict

from verification.models import Verification
from verification.scoring import (
    EVIDENCE_NOUNS,
    SCORE_RULES,
    VERDICT_ICONS,
    Tally,
    outcome_words,
    shown_percent,
)
from verification.scoring.citations import citation_summary


def progress_line(progress: dict) -> str:
    return f"{progress['percent']:3d}%{progress_counts(progress)}"


def progress_counts(progress: dict) -> str:
    if progress.get("kind") == "trail":
        return _trail_counts(progress)
    starting = "  starting: loading the passage model" if progress["starting"] else ""
    pages = progress["pages"]
    return (
        f"{starting}"
        f"  sentences {progress['sentences']['decomposed']}/{progress['sentences']['total']}"
        f"  claims searched {progress['claims']['searched']}/{progress['claims']['total']}"
        f"  pages {pages['fetched'] + pages['failed'] + pages['read_from_snippet']}/{pages['total']}"
        f"  judgements {progress['judgements']['made']}/{progress['judgements']['total']}"
    )


def _trail_counts(progress: dict) -> str:
    """A trail run's counts in its own terms (selectors.trail_progress): it searches no web and
    reads no pages, it reads its texts round by round."""
    documents = progress["documents"]
    return (
        f"  sentences {progress['sentences']['split']}/{progress['sentences']['total']}"
        + (f"  documents read {documents['read']}/{documents['total']}" if documents["total"] else "")
        + f"  texts read {progress['texts']['read']}/{progress['texts']['total']}"
        f"  rounds judged {progress['rounds']['judged']}/{progress['rounds']['total']}"
        f"  claims traced {progress['claims']['ended']}/{progress['claims']['total']}"
    )


def _percent(score: float | None) -> str:
    # shown_percent: the band's percent (29.7% red prints 29%, never an orange-looking 30%).
    return "  —  " if score is None else f"{shown_percent(score):3d}% "


def summary(result: dict, verification: Verification) -> str:
    seconds = (verification.finished_at - verification.created_at).total_seconds()
    lines = [
        f"Verification {result['id']}: {result['status']} in {seconds:.1f} s",
        f"Overall credibility {_percent(result['score']).strip()} "
        f"({result['supported']} of {result['total']} evidence supported; score rule "
        f"{result['score_rule']}: {SCORE_RULES[result['score_rule']]})",
    ]
    if result.get("language"):  # "Language: checked in Hindi: less tested" (issue 36)
        lines.append(f"Language: {result['language']['label']}")
    for problem in result["problems"]:
        lines += _problem_lines(problem)
    citations = result.get("citations") or []
    if citations:
        lines.append(f"Citations: {citation_summary(result['citation_counts'])}")
    cited_by = defaultdict(list)
    for citation in citations:
        cited_by[citation["sentence"]].append(citation)
    lines.append("")
    noun = EVIDENCE_NOUNS.get(result["evidence"], "page")
    for sentence in result["sentences"]:
        lines.append(
            f"[{sentence['band']:>6} {_percent(sentence['score'])}] S{sentence['index'] + 1}: {sentence['text']}"
        )
        # The page's words: the outcome with the counts behind the band beside it.
        tally = Tally(**sentence["counts"], rule=result["score_rule"])
        words = outcome_words(tally, sentence["outcome"], noun="document" if noun == "document" else "source")
        lines.append(f"    {words}: {sentence['note']}")
        lines += [_citation_line(citation) for citation in cited_by[sentence["index"]]]
        for claim in sentence["claims"]:
            # The page's shapes; "…" for an item not judged (failed or still pending).
            marks = " ".join(VERDICT_ICONS.get(e["verdict"] or "", "…") for e in claim["evidence"])
            said = outcome_words(Tally(**claim["counts"], rule=result["score_rule"]), claim["outcome"], noun=noun)
            lines.append(f"    - {claim['text']}  {marks}  [{said}]")
            if claim["outcome"] in ("failed", "no_evidence") or claim.get("from_model_knowledge"):
                lines.append(f"      ({claim['note']})")
    usage = result["usage"]
    lines += [
        "",
        f"LLM calls {usage['llm_calls']} ({_reused(usage)}{usage['prompt_tokens']} prompt + "
        f"{usage['completion_tokens']} completion tokens{_thinking(usage)}), web searches {usage['searches']}"
        + (f" ({usage['searches_cached']} reused from the cache)" if usage.get("searches_cached") else ""),
    ]
    if result.get("quick"):
        lines.append(f"Quick mode: {result['quick']['note']}")
    return "\n".join(lines)


def _citation_line(citation: dict) -> str:
    """ "    cites [2] https://…: contradicts its sentence", with why where the outcome says too little."""
    what = citation["url"] or citation["title"]
    reason = f" ({citation['reason']})" if citation["reason"] else ""
    return f"    cites {citation['marker']}{' ' + what if what else ''}: {citation['outcome_label']}{reason}"


def _problem_lines(problem: dict) -> list[str]:
    """A step's failed items with their first reasons; then, told apart (no failure), its pages
    whose search snippet was judged in their place."""
    lines = []
    for snippet, count in ((False, problem["count"]), (True, problem["read_from_snippet"])):
        reasons = [f"{r['reason']} ×{r['count']}" for r in problem["reasons"] if r["read_from_snippet"] is snippet]
        if not count:
            continue
        told = "1 page read from its snippet" if count == 1 else f"{count} pages read from their snippets"
        head = (
            f"{problem['label'].capitalize()}: {told}"
            if snippet
            else (f"Problem in {problem['label']}: {count} failed")
        )
        lines.append(f"{head} ({'; '.join(reasons[:3])})")
    return lines


def trail_summary(result: dict) -> str:
    """A trail run in the terminal: where unsupported claims entered first (what a pipeline's
    builder fixes), then each sentence with its claims' verdicts and entry steps."""
    summary = result["summary"]
    lines = [f"Trail check {result['id']}: {result['status']}, {summary['claims']} claims"]
    for entry in summary["entered_at"]:
        lines.append(f"  {entry['count']} unsupported claim(s) entered at '{entry['step']}'")
    if summary["entered_at_final_step"]:
        lines.append(f"  {summary['entered_at_final_step']} unsupported claim(s) entered at the final step")
    lines.append("")
    claims = {(claim["sentence"], claim["index"]): claim for claim in result["claims"]}
    for sentence in result["sentences"]:
        lines.append(
            f"[{sentence['band']:>6} {_percent(sentence['score'])}] S{sentence['index'] + 1}: {sentence['text']}"
        )
        for index in sentence["claims"]:
            claim = claims[(sentence["index"], index)]
            lines.append(f"    - {claim['text']}  [{claim['verdict_label']}]")
            if claim["entered"]:
                lines.append(f"      {claim['entered']['words']}")
            elif claim["path"]:
                lines.append(f"      supported down to: {', '.join(claim['path']['sources'])}")
            elif claim["error"]:
                lines.append(f"      ({claim['error']})")
    usage = result["usage"]
    tokens = (
        f"{_reused(usage)}{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens"
        f"{_thinking(usage)}"
    )
    lines += ["", f"LLM calls {usage['llm_calls']} ({tokens})"]
    return "\n".join(lines)


def _reused(usage: dict) -> str:
    """The model's answers taken from the cache: a run answered from it makes no call, and
    "LLM calls 0" alone reads as if nothing was asked."""
    cached = usage.get("llm_cached", 0)
    return f"{cached} answer{'' if cached == 1 else 's'} reused from the cache; " if cached else ""


def _thinking(usage: dict) -> str:
    """The completion tokens a model spent thinking, where it thought."""
    return f", {usage['reasoning_tokens']} of them thinking" if usage.get("reasoning_tokens") else ""
