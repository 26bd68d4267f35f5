"""What the simulated services were asked, when, and how long each answer took — and, from
those calls, a run's critical path: the longest chain decompose → search → page → judge that
one of its claims had to wait for, priced at the durations the calls actually took.

The servers of tests/fakes.py are recorded from the outside (`record`): every request's start
and end, what it was about (an LLM call's kind and prompt, a search's query, a page's URL), its
status and, for the LLM, its answer and token counts. Matching a claim to its calls uses only
text, never how many sentences or claims a call carries, so it keeps working when the app
decomposes several sentences per call or judges several claims per call."""

import json
import re
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

# The JSON schema names factsite's LLM calls ask for, as the steps of the report.
KINDS = {"claims": "decompose", "judgements": "judge", "source_type": "categorize", "source_types": "categorize"}


@dataclass(frozen=True)
class Call:
    service: str  # "llm", "search" or "page"
    kind: str  # the LLM call's step ("decompose", "judge", "categorize", …); else the service
    about: str  # the LLM's prompt (its messages joined), the search query, the page's URL
    start: float  # time.time() when the request arrived, and when its answer was sent
    end: float
    status: int
    answer: str = ""  # the LLM's message
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # A streamed answer: (time, characters of the answer sent by then), event by event.
    written: tuple[tuple[float, int], ...] = ()

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def seconds_until_written(self, text: str) -> float:
        """Seconds from the start until the answer held `text` and the end of its line (the
        whole call's when the answer was not streamed, or does not hold it)."""
        at = self.answer.find(text)
        if not self.written or at < 0:
            return self.seconds
        line_end = self.answer.find("\n", at + len(text))
        needed = len(self.answer) if line_end < 0 else line_end + 1
        return next((t for t, sent in self.written if sent >= needed), self.end) - self.start

    @property
    def ok(self) -> bool:
        return self.status == 200


class CallLog:
    """Every request the recorded servers answered, in the order they ended."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def record(self, server, service: str) -> None:
        """Record `server`'s requests (a started or unstarted LoopbackServer of tests/fakes.py)."""
        log = self

        class Recorded(server.httpd.RequestHandlerClass):
            def _body(self) -> dict:
                self._recorded_request = super()._body()
                return self._recorded_request

            def _send(self, status, body, *args, **kwargs) -> None:
                self._recorded_response = (status, body)
                super()._send(status, body, *args, **kwargs)

            def _event(self, payload: dict) -> None:  # a streamed answer's event, when it was sent
                super()._event(payload)
                self._recorded_events.append((time.time(), payload))

            def _timed(self, handle) -> None:
                start = time.time()
                self._recorded_request, self._recorded_response, self._recorded_events = {}, (0, b""), []
                try:
                    handle()
                finally:
                    log.add(_call(service, self, start, time.time()))

        for method in ("do_GET", "do_POST"):  # only those the server answers (else 501, unrecorded)
            if hasattr(Recorded, method):
                handle = getattr(Recorded, method)
                setattr(Recorded, method, lambda self, handle=handle: self._timed(lambda: handle(self)))
        server.httpd.RequestHandlerClass = Recorded

    def add(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def between(self, start: float, end: float) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.start >= start and c.end <= end]


def _call(service: str, handler, start: float, end: float) -> Call:
    request, (status, body) = handler._recorded_request, handler._recorded_response
    if service == "search":
        return Call(service, service, request.get("q", ""), start, end, status)
    if service == "page":
        return Call(service, service, handler.owner.url + handler.path, start, end, status)
    messages = request.get("messages") or []
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("name", "")
    kind = KINDS.get(schema, schema or _kind_without_schema(messages))
    answer, usage, written = "", {}, ()
    if handler._recorded_events:
        status, answer, usage, written = 200, *_streamed(handler._recorded_events)
    elif status == 200:
        payload = json.loads(body)
        answer, usage = payload["choices"][0]["message"]["content"], payload.get("usage", {})
    prompt = "\n".join(m.get("content", "") for m in messages)
    if status == 200 and not usage.get("completion_tokens"):
        # A stream the client left once its answer was complete never got the server's count:
        # counted as the fake counts (len // 4).
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(answer) // 4}
    return Call(
        service,
        kind,
        prompt,
        start,
        end,
        status,
        answer,
        usage.get("prompt_tokens", 0),
        usage.get("completion_tokens", 0),
        written,
    )


def _streamed(events: list[tuple[float, dict]]) -> tuple[str, dict, tuple[tuple[float, int], ...]]:
    """A streamed answer's text, its usage, and when each length of it had been sent."""
    text, usage, written = "", {}, []
    for at, event in events:
        usage = event.get("usage") or usage
        for choice in event.get("choices") or []:
            text += (choice.get("delta") or {}).get("content") or ""
        written.append((at, len(text)))
    return text, usage, tuple(written)


def _kind_without_schema(messages: list[dict]) -> str:
    system = messages[0].get("content", "").lower() if messages else ""
    if "claim" in system and ("split" in system or "atomic" in system):
        return "decompose"
    if "classify" in system:
        return "categorize"
    return "judge"


def usage_by_kind(calls: list[Call], answers: int) -> dict:
    """LLM calls and tokens per answer (a submitted text), by kind and in all; failed
    attempts count as calls (they were paid for in time) with the tokens they reported."""
    kinds: dict[str, dict] = defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
    for call in calls:
        if call.service != "llm":
            continue
        for key in (call.kind, "all"):
            kinds[key]["calls"] += 1
            kinds[key]["prompt_tokens"] += call.prompt_tokens
            kinds[key]["completion_tokens"] += call.completion_tokens
    return {kind: {k: round(v / max(1, answers), 1) for k, v in counts.items()} for kind, counts in kinds.items()}


# --- the critical path


@dataclass(frozen=True)
class Chain:
    """One claim's calls, one after the other: the seconds each took (0 for a step that made no
    call, e.g. a cached search) and the sum. `first_s` is the same chain up to the first judge
    call that answered for it: the earliest its sentence could be coloured.

    The decompose step counts its whole call, as issue 15 defines the path. When the answer was
    streamed, the claim's search could begin once its line was written: `decompose_written_s`,
    and the `*_written_s` sums, price the chain that way (a shorter, stricter path)."""

    claim: str
    decompose_s: float
    search_s: float
    page_s: float
    judge_s: float
    first_judge_s: float
    decompose_written_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.decompose_s + self.search_s + self.page_s + self.judge_s

    @property
    def first_s(self) -> float:
        return self.decompose_s + self.search_s + self.page_s + self.first_judge_s

    @property
    def total_written_s(self) -> float:
        return self.total_s - self.decompose_s + self.decompose_written_s

    @property
    def first_written_s(self) -> float:
        return self.first_s - self.decompose_s + self.decompose_written_s


def chains(claims: list[dict], calls: list[Call]) -> list[Chain]:
    """A chain per claim ({"sentence", "claim", "query", "urls"} as bench/measure.py reports
    them): the decompose call that produced it (whose answer names the claim, else whose prompt
    holds its sentence), the search for its query, the slowest fetch of its pages, and the
    judge calls whose prompt holds the claim (those naming it on a line of its own when some
    do: a context paragraph may hold a claim that repeats another sentence)."""
    ok = [c for c in calls if c.ok]
    decomposes = [c for c in ok if c.kind == "decompose"]
    judges = [c for c in ok if c.kind == "judge"]
    searches = defaultdict(list)
    for c in ok:
        if c.service == "search":
            searches[c.about].append(c)
    pages = defaultdict(list)
    for c in calls:  # a page that failed still held its claim up
        if c.service == "page":
            pages[c.about].append(c)
    result = []
    for claim in claims:
        decompose = _decompose_call(claim, decomposes)
        written_s = decompose.seconds_until_written(claim["claim"]) if decompose else 0.0
        after = decompose.start + written_s if decompose else 0.0
        search = _next(searches.get(claim["query"], []), after)
        after = search.end if search else after
        fetched = [_next(pages.get(url, []), after) for url in claim["urls"]]
        page_s = max((f.seconds for f in fetched if f), default=0.0)
        judged = _judge_calls(claim["claim"], judges)
        result.append(
            Chain(
                claim=claim["claim"],
                decompose_s=decompose.seconds if decompose else 0.0,
                search_s=search.seconds if search else 0.0,
                page_s=page_s,
                judge_s=max((j.seconds for j in judged), default=0.0),
                first_judge_s=min((j.seconds for j in judged), default=0.0),
                decompose_written_s=written_s,
            )
        )
    return result


def _decompose_call(claim: dict, decomposes: list[Call]) -> Call | None:
    quoted = json.dumps(claim["claim"])[1:-1]
    producers = [c for c in decomposes if claim["claim"] in c.answer or quoted in c.answer]
    if not producers:
        producers = [c for c in decomposes if claim["sentence"] in c.about]
    return min(producers, key=lambda c: c.start, default=None)


def _judge_calls(claim: str, judges: list[Call]) -> list[Call]:
    holding = [c for c in judges if claim in c.about]
    own_line = re.compile(r"^[^\n]{0,24}?" + re.escape(claim) + r"\s*$", re.MULTILINE)
    return [c for c in holding if own_line.search(c.about)] or holding


def _next(candidates: list[Call], after: float) -> Call | None:
    """The call that began soonest after `after` (the step before it ended), else the latest one
    before it (the same query or page, already asked for by another run)."""
    later = [c for c in candidates if c.start >= after - 0.01]
    if later:
        return min(later, key=lambda c: c.start)
    return max(candidates, key=lambda c: c.start, default=None)


def critical_path(run_claims: list[dict], calls: list[Call]) -> dict:
    """A run's longest chain (its critical path) and its shortest judged one (the first claim's
    critical path), with how many claims were matched to a judge call."""
    found = chains(run_claims, calls)
    judged = [c for c in found if c.judge_s]
    longest = max(found, key=lambda c: c.total_s, default=None)
    first = min(judged, key=lambda c: c.first_s, default=None)
    steps = ("decompose", "search", "page", "judge")
    longest_written = max(found, key=lambda c: c.total_written_s, default=None)
    first_written = min(judged, key=lambda c: c.first_written_s, default=None)
    return {
        "critical_path_s": round(longest.total_s, 3) if longest else None,
        "steps_s": {step: round(getattr(longest, f"{step}_s"), 3) for step in steps} if longest else {},
        "first_claim_path_s": round(first.first_s, 3) if first else None,
        "critical_path_written_s": round(longest_written.total_written_s, 3) if longest_written else None,
        "first_claim_written_path_s": round(first_written.first_written_s, 3) if first_written else None,
        "claims": len(found),
        "claims_judged": len(judged),
    }


def median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None
