"""A trail run's page (issue 26; the form that starts one is web/trail_start.py): its permalink —
the summary a pipeline's builder reads first, the final text coloured by the share of each
sentence's claims found fully supported, and the selected claim's trail: the stages as columns
from the sources to the final text, the nodes it visited with each round's verdict, the selected
sentences marked, the path of a supported claim and where an unsupported one entered.

What the page shows comes from selectors.trail_result; here it is only arranged for the
templates. Outside text (node texts, step names, ids, reasoning) is escaped by the templates."""

from collections import defaultdict

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render

from verification import selectors, services
from verification.access import ownership
from verification.models import FINISHED, Status, Verification
from verification.scoring import NOT_CHECKED, OUTCOME_ICONS, TRAIL_VERDICT_LABELS, TRAIL_VERDICTS, band, trail_score
from verification.selectors.result_json import retryable
from verification.selectors.result_page import passage_parts, result_legend
from verification.selectors.trail_result import CANCELLED, is_trail, trail_node_text, trail_result
from verification.web.trail_form import plain_number

# `is_trail` too: views.result hands a trail run to `trail_page`.
__all__ = ["is_trail", "trail_node", "trail_page"]

TEXT_WITHHELD = (
    "The texts of a trail are the documents of the person who started it: others see the sentences selected in "
    "them, and the final text."
)
# A verdict drawn with the shape of the result page's outcome that says the same.
VERDICT_SHAPES = {
    "fully_supported": "supported",
    "not_fully_supported": "unconfirmed",
    "contradicted": "contradicted",
    "inconclusive": "mixed",
}


def trail_page(request: HttpRequest, verification: Verification) -> HttpResponse:
    """A trail run's permalink; `?claim=<id>` selects a claim. HTMX gets the body's fragment, and
    a poll of a finished run a 286, which swaps it in and stops polling."""
    is_creator = ownership.is_creator(request, verification)
    may_read = ownership.may_read_trail_texts(request, verification)
    result = trail_result(verification, with_texts=may_read)
    finished = verification.status in FINISHED
    claims = {claim["id"]: claim for claim in result["claims"]}
    selected = claims.get(_claim_id(request.GET.get("claim", "")))
    query = f"?claim={selected['id']}" if selected else ""
    context = {
        "verification": verification,
        "result": result,
        "finished": finished,
        "query": query,
        "title": selectors.title_words(verification.text),
        "seconds": services.working_seconds(verification),
        "is_creator": is_creator,
        "may_edit": may_read,
        "can_retry": finished
        and verification.status != Status.CANCELLED
        and retryable(verification) > 0
        and is_creator,
        "headline": entered_headline(result["summary"]),
        "verdict_counts": verdict_counts(result["summary"]["verdicts"]),
        "score": _tag(result["score"]),
        "legend": _legend(),
        "text_parts": _text_parts(verification.text, result, selected),
        "claim_groups": _claim_groups(result, selected),
        "progress": None if finished else result["progress"],
        "problems": _problems(result),
        "selected": selected,
        "trail": claim_trail(result, selected) if selected else None,
    }
    fragment = request.htmx and not request.htmx.history_restore_request
    template = "verification/trail.html#trail-body" if fragment else "verification/trail.html"
    status = 286 if fragment and finished and request.htmx.trigger == "result-body" else 200
    return render(request, template, context, status=status)


def trail_node(request: HttpRequest, verification_id, index: int) -> HttpResponse:
    """One text of a trail run whole, opened from its page, which shows only the sentences selected
    in it (a book of a node made a page of megabytes, redrawn at every poll); `?claim=<id>` marks
    what that claim selected. HTMX gets the text alone, to open in place; a link followed without
    JavaScript, a page of its own. Only the final text is anyone's, as on the page."""
    verification = selectors.verification_or_404(verification_id)
    if not is_trail(verification):
        raise Http404("This run is not a trail.")
    claim = _claim_id(request.GET.get("claim", ""))
    node = trail_node_text(verification, index, claim_id=claim)
    if node is None:
        raise Http404("This trail has no such text.")
    if not (node["is_final"] or ownership.may_read_trail_texts(request, verification)):
        return HttpResponseForbidden(TEXT_WITHHELD, content_type="text/plain; charset=utf-8")
    context = {
        "verification": verification,
        "node": node,
        "parts": marked_parts(node["text"], node["marked"]),
        "query": "" if claim is None else f"?claim={claim}",
        "title": selectors.title_words(verification.text),
    }
    fragment = request.htmx and not request.htmx.history_restore_request
    template = "verification/trail_node.html#node-text" if fragment else "verification/trail_node.html"
    return render(request, template, context)


def _claim_id(value: str) -> int | None:
    return plain_number(value, digits=18)


def entered_headline(summary: dict) -> str:
    """The steps to fix, said first: "2 unsupported claims entered at 'section summary', 1 at the final step"."""
    parts = [(entry["count"], f"at '{entry['step']}'") for entry in summary["entered_at"]]
    if summary["entered_at_final_step"]:
        parts.append((summary["entered_at_final_step"], "at the final step"))
    if summary["entered_undetermined"]:
        parts.append((summary["entered_undetermined"], "where the trail cannot tell"))
    if not parts:
        return ""
    (count, where), rest = parts[0], parts[1:]
    first = f"{count} unsupported claim{'s' if count != 1 else ''} entered {where}"
    return ", ".join([first, *(f"{count} {where}" for count, where in rest)])


def verdict_counts(verdicts: dict) -> list[dict]:
    """Every verdict with its count (0 too: "0 contradicted" is news), then what is not decided."""
    rows = [
        {"verdict": verdict, "label": TRAIL_VERDICT_LABELS[verdict], "count": verdicts.get(verdict, 0)}
        for verdict in TRAIL_VERDICTS
    ]
    failed, cancelled = verdicts.get("failed", 0), verdicts.get(CANCELLED, 0)
    ended = (*TRAIL_VERDICTS, "failed", CANCELLED)
    pending = sum(count for key, count in verdicts.items() if key not in ended)
    rows += [{"verdict": "failed", "label": "failed", "count": failed}] if failed else []
    rows += [{"verdict": CANCELLED, "label": "not checked (cancelled)", "count": cancelled}] if cancelled else []
    rows += [{"verdict": "pending", "label": "being checked", "count": pending}] if pending else []
    return rows


def _tag(score: float | None) -> dict:
    return {"score": score, "band": band(score)}


def _verdict_tag(verdict: str | None, status: str = "") -> dict:
    """A verdict as a tag: coloured by the score it gives (1 or 0), drawn with its shape."""
    if verdict:
        shape = VERDICT_SHAPES.get(verdict, "pending")
        label = TRAIL_VERDICT_LABELS.get(verdict, verdict)
        return {"label": label, "band": band(trail_score([verdict])), "shape": shape, "icon": OUTCOME_ICONS[shape]}
    if status == CANCELLED:  # its run was cancelled before it was reached
        return {"label": "not checked", "band": "none", "shape": NOT_CHECKED, "icon": OUTCOME_ICONS[NOT_CHECKED]}
    shape = "failed" if status == Status.FAILED else "pending"
    label = "failed" if shape == "failed" else "being checked"
    return {"label": label, "band": "none", "shape": shape, "icon": OUTCOME_ICONS[shape]}


def _legend() -> dict:
    """The result page's bands, and the verdicts drawn with the shapes of its outcomes."""
    shapes = [*((VERDICT_SHAPES[verdict], TRAIL_VERDICT_LABELS[verdict]) for verdict in TRAIL_VERDICTS)]
    shapes.append(("pending", "being checked"))
    return {
        "bands": result_legend()["bands"],
        "shapes": [{"outcome": shape, "icon": OUTCOME_ICONS[shape], "label": label} for shape, label in shapes],
    }


def _sentence_shape(claims: list[dict]) -> str:
    """A sentence's shape: its claims' verdict when they agree, mixed when they do not."""
    if not claims:
        return "no_evidence"
    if any(claim["verdict"] is None and claim["status"] not in (Status.FAILED, CANCELLED) for claim in claims):
        return "pending"
    if all(claim["status"] == CANCELLED for claim in claims):
        return NOT_CHECKED
    verdicts = {claim["verdict"] for claim in claims if claim["verdict"]}
    if not verdicts:
        return "failed"
    return VERDICT_SHAPES[verdicts.pop()] if len(verdicts) == 1 else "mixed"


def _text_parts(text: str, result: dict, selected: dict | None) -> list[dict]:
    """The final text as given: plain gaps, and each sentence coloured by its band, a link to
    its first claim's trail."""
    claims = defaultdict(list)
    for claim in result["claims"]:
        claims[claim["sentence"]].append(claim)
    parts, position = [], 0
    for sentence in result["sentences"]:
        if sentence["start"] > position:
            parts.append({"gap": text[position : sentence["start"]]})
        own = claims[sentence["index"]]
        shape = {"pending": "pending", "running": "pending", CANCELLED: NOT_CHECKED}.get(
            sentence["status"], _sentence_shape(own)
        )
        decided = [claim["verdict"] for claim in own if claim["verdict"]]
        supported = decided.count("fully_supported")
        parts.append(
            {
                **sentence,
                "claim": own[0]["id"] if own else None,
                "shape": shape,
                "icon": OUTCOME_ICONS.get(shape, ""),
                "said": f"{supported} of {len(decided)} claims fully supported"
                if decided
                else ("not checked" if shape == NOT_CHECKED else "being checked"),
                "selected": selected is not None and selected["sentence"] == sentence["index"],
            }
        )
        position = sentence["end"]
    if position < len(text):
        parts.append({"gap": text[position:]})
    return parts


def _claim_groups(result: dict, selected: dict | None) -> list[dict]:
    by_sentence = defaultdict(list)
    for claim in result["claims"]:
        by_sentence[claim["sentence"]].append(
            {
                **claim,
                "tag": _verdict_tag(claim["verdict"], claim["status"]),
                "selected": selected is not None and selected["id"] == claim["id"],
            }
        )
    return [
        {"number": sentence["index"] + 1, "claims": by_sentence[sentence["index"]]}
        for sentence in result["sentences"]
        if by_sentence[sentence["index"]]
    ]


def _problems(result: dict) -> list[str]:
    """What failed, in words: texts that could not be read, claims whose trail stopped."""
    nodes = [f"'{node['id']}' could not be read: {node['error']}" for node in result["nodes"] if node["error"]]
    claims = [
        f"“{claim['text']}”: {claim['error'] or 'its trail could not be followed'}"
        for claim in result["claims"]
        if claim["status"] == Status.FAILED
    ]
    return nodes + claims


def claim_trail(result: dict, claim: dict) -> dict:
    """The claim's trail as columns, one per stage from the sources (left) to the final text
    (right): the nodes it visited, with each round's verdict and the sentences selected."""
    visits, marked = defaultdict(list), defaultdict(set)
    for trail_round in claim["rounds"]:
        tag = _verdict_tag(trail_round["verdict"], trail_round["status"])
        for selection in trail_round["selections"]:
            chosen = [selection["sentences"][i] for i in selection["sentence_ids"] if i in selection["sentences"]]
            marked[selection["node"]].update(chosen)
            visits[selection["node"]].append(
                {"round": trail_round["index"], "tag": tag, "held": len(chosen), **selection}
            )
    path = claim["path"] or {"nodes": [], "edges": [], "sources": []}
    entered = set(claim["entered"]["nodes"]) if claim["entered"] else set()
    edges = {tuple(edge) for edge in path["edges"]}
    sentence = next((s for s in result["sentences"] if s["index"] == claim["sentence"]), None)
    columns = defaultdict(lambda: {"nodes": [], "steps": [], "unvisited": 0})
    for position, node in enumerate(result["nodes"]):
        column = columns[node["stage"]]
        if node["step"] not in column["steps"]:
            column["steps"].append(node["step"])
        if not (visits[node["id"]] or node["is_final"]):
            column["unvisited"] += 1
            continue
        if node["is_final"] and sentence:  # the final text: the claim's own sentence is marked
            marked[node["id"]].add(sentence["text"])
        column["nodes"].append(
            {
                **node,
                "position": position,
                "visits": visits[node["id"]],
                "marked": _in_order(marked[node["id"]], node["text"]),
                "readable": not node["text_withheld"] and bool(node["text"]),
                "chars": f"{len(node['text'] or ''):,}",
                "on_path": node["id"] in path["nodes"],
                "entered": node["id"] in entered,
                "inputs": [{"id": name, "on_path": (name, node["id"]) in edges} for name in node["inputs"]],
            }
        )
    return {
        "columns": [{"stage": stage, **columns[stage]} for stage in sorted(columns)],
        "rounds": [
            {**trail_round, "tag": _verdict_tag(trail_round["verdict"], trail_round["status"])}
            for trail_round in claim["rounds"]
        ],
        "tag": _verdict_tag(claim["verdict"], claim["status"]),
        "sources": path["sources"],
    }


def _in_order(sentences: set[str], text: str | None) -> list[str]:
    """The marked sentences in the order the text has them (by their words, when it is withheld)."""
    return sorted(sentences, key=lambda sentence: (text.find(sentence), sentence) if text else (0, sentence))


def marked_parts(text: str, sentences: set[str]) -> list[tuple[str, bool]]:
    """A node's whole text cut into (piece, marked) for the `highlighted` filter: the selected
    sentences found in it."""
    spans = []
    for sentence in sentences:
        found = text.find(sentence)
        if found >= 0:
            spans.append((found, found + len(sentence)))
    return passage_parts(text, spans)
