"""Small servers on 127.0.0.1 that speak the real protocols factsite talks to: an
OpenAI-compatible chat-completions server, a Serper-compatible search server and plain web
sites. Used by the tests and by the benchmark (each can add a per-request latency).

The fake model is deterministic but not canned: it reads the prompts factsite sends (numbered
context sentences, E1..En passages, a host and title) and answers from their words, so a change
in what factsite sends changes what comes back."""

import contextlib
import hashlib
import json
import math
import os
import random
import re
import socket
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests import llm_servers
from tests.llm_servers import Reply, ServerProfile
from tests.trail_model import TrailTestModel
from verification.pipeline import decompose, trail_select, trail_select_many, trail_verdict, trail_verdict_many

STOPWORDS = set("a an the is are was were of in on at to for by and or it its this that with as from be been".split())
NEGATIONS = re.compile(r"\b(not|never|no|false|myth|incorrect|wrong|untrue)\b", re.IGNORECASE)


def content_words(text: str) -> set[str]:
    """Its ASCII words, and the words of other scripts (issue 36): a run of letters with one that
    is not ASCII as a word, and in a script written without spaces (Chinese, Japanese) each pair
    of characters, so that texts in any language share words with the pages about them."""
    lowered = text.lower()
    words = {w for w in re.findall(r"[a-z0-9]+", lowered) if w not in STOPWORDS and len(w) > 1}
    for run in re.findall(r"[^\W\d_]+", lowered):
        if run.isascii():
            continue
        if _UNSPACED.search(run):
            words |= {a + b for a, b in zip(run, run[1:], strict=False)}
        elif len(run) > 1:
            words.add(run)
    return words


_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


class _ClosingServer(ThreadingHTTPServer):
    """Keeps its connections, so that stopping closes them: a client's kept-alive connection
    otherwise held a handler thread and two descriptors of the test process for good (a long
    test run passed the 1,024 that select() takes)."""

    daemon_threads = True

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request, client_address) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections, self.connections = self.connections, set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()


class LoopbackServer:
    """A ThreadingHTTPServer on 127.0.0.1 with a free port, run in a daemon thread."""

    def __init__(self, handler_class) -> None:
        handler = type("Handler", (handler_class,), {"owner": self})
        self.httpd = _ClosingServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        # A short poll interval: shutdown() waits for the next poll.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self):
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.httpd.close_connections()


class _Handler(BaseHTTPRequestHandler):
    owner: "LoopbackServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json", headers=None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload) -> None:
        self._send(status, json.dumps(payload).encode())

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")


# --- the language model


class _LLMHandler(_Handler):
    def do_GET(self) -> None:
        if self.owner.profile is not None:
            return self._json(*llm_servers.listing(self.owner.profile, self.path))
        # The OpenAI-compatible model list, which `manage.py verify` asks for before a run.
        if not self.path.rstrip("/").endswith("/models"):
            return self._json(404, {"error": {"message": "not found"}})
        self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "tests"}]})

    def do_POST(self) -> None:
        server: FakeLLM = self.owner
        sent = self._body()
        refused = server.refusal(self.path, sent)
        if refused is not None:
            return self._json(refused.status, refused.body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._json(404, {"error": {"message": "not found"}})
        request, cut = llm_servers.as_read(server.profile, sent)
        with server._lock:
            server.at_once += 1
            server.most_at_once = max(server.most_at_once, server.at_once)
            server.prompt_tokens_cut += cut
        try:
            time.sleep(server.latency)
            try:
                status, content = server.answer(request)
            except (KeyError, AttributeError, IndexError):
                if not cut:
                    raise
                # What the prompt asked about was cut off its front: a model answers all the same.
                status, content = 200, llm_servers.LOST_TEXT
            with server._lock:
                server.answers.append(content)
            prompt = " ".join(m["content"] for m in request["messages"])
            with server._slot(), contextlib.suppress(BrokenPipeError, ConnectionResetError):
                # A client that has read all it needs of a stream hangs up (a runaway model's).
                self._answer(request, status, content, prompt)
        finally:
            with server._lock:
                server.at_once -= 1
                server.finished.append(_kind(request, request["messages"][0]["content"]))

    def _answer(self, request: dict, status: int, content: str, prompt: str) -> None:
        server: FakeLLM = self.owner
        reply = llm_servers.reply(server.profile, request, content, prompt)
        read = server.prompt_read(request, prompt)
        if status == 200 and request.get("stream") and server.streams:
            time.sleep(server.answer_seconds(read, 0))
            return self._stream(request, reply)
        time.sleep(server.answer_seconds(read, reply.usage["completion_tokens"] if status == 200 else 0))
        if status != 200:
            return self._json(status, {"error": {"message": content, "type": "fake_error"}})
        server.count_reasoning(reply)
        message = {"role": "assistant", "content": reply.content}
        if reply.reasoning_field:
            message[reply.reasoning_field] = reply.reasoning
        self._json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": reply.finish_reason,
                        "logprobs": {"content": server.token_logprobs(reply.content)}
                        if _gives_logprobs(server, request)
                        else None,
                    }
                ],
                "usage": reply.usage,
            },
        )

    def _stream(self, request: dict, reply: Reply) -> None:
        """The answer as server-sent events, a piece of a few tokens at a time, each after the
        time the model takes to write it (thinking in a field of its own first); the usage last
        when `stream_options` asks for it."""
        server: FakeLLM = self.owner
        content, usage = reply.content, reply.usage
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time())}
        chunk["model"] = request.get("model", "fake")
        self._event({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        time.sleep(server.writing_seconds(reply.hidden_tokens))
        for piece in _pieces(reply.reasoning):
            time.sleep(server.writing_seconds(len(piece) / 4))
            delta = {reply.reasoning_field: piece}
            self._event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        written = ""
        # With logprobs, a token per event, as a server streams them.
        tokens = server.token_logprobs(content) if _gives_logprobs(server, request) else None
        for n, piece in enumerate([t["token"] for t in tokens] if tokens is not None else _pieces(content)):
            time.sleep(server.writing_seconds(len(piece) / 4))
            written += piece
            event = {**chunk, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            if tokens is not None:
                event["choices"][0]["logprobs"] = {"content": [tokens[n]]}
            if server.usage_in_every_event:
                event["usage"] = usage | {"completion_tokens": len(written) // 4}
            self._event(event)
        self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
        if (request.get("stream_options") or {}).get("include_usage"):
            server.count_reasoning(reply)
            self._event({**chunk, "choices": [], "usage": usage})
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _event(self, payload: dict) -> None:
        self._write_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _gives_logprobs(server: "FakeLLM", request: dict) -> bool:
    return server.logprobs and bool(request.get("logprobs"))


def _pieces(content: str, size: int = 12) -> list[str]:
    """The answer cut as a tokenizer might: pieces of about `size` characters, a line's end
    sometimes inside one."""
    return [content[i : i + size] for i in range(0, len(content), size)]


@dataclass
class FakeLLM(LoopbackServer):
    """Failure switches, matched against what a request is about (the target sentence, the
    claim, the host): a word in `fail_words` gets that status (`{"BOOM": 500}`), a word in
    `garbage_words` gets prose instead of JSON, a word in `slow_words` waits that many seconds
    before answering (`{"1930": 4.0}`: one sentence's requests lag behind the others').
    A word in `held_words` holds the request until `release()` (at most `hold_s`): the test
    decides when those answers come; `held` counts the requests that were held.
    `structured=False` makes it answer 400 to `response_format`, like servers without it.
    A request with `stream` gets its answer as server-sent events, written over time.
    `fail_rate` / `garbage_rate`: that share of all calls gets one of `fail_statuses` / prose.
    Each draw depends on `seed`, the request and how many times that request came before, not
    on the order in which concurrent requests arrive, so the same calls fail on every run."""

    latency: float = 0.0
    # Time as a real model takes it: the first token after `first_token_s` plus reading the
    # prompt at `prompt_tokens_per_s`, then one token every 1/`tokens_per_s` (0: instant).
    first_token_s: float = 0.0
    tokens_per_s: float = 0.0
    prompt_tokens_per_s: float = 0.0
    structured: bool = True
    # False: a request for a stream gets the whole answer in one JSON body, as from servers
    # that do not stream.
    streams: bool = True
    # Usage summed so far in every streamed event, as some servers send it (not only in the last).
    usage_in_every_event: bool = False
    fail_words: dict[str, int] = field(default_factory=dict)
    garbage_words: tuple[str, ...] = ()
    slow_words: dict[str, float] = field(default_factory=dict)
    held_words: tuple[str, ...] = ()
    hold_s: float = 60.0
    fail_rate: float = 0.0
    garbage_rate: float = 0.0
    fail_statuses: tuple[int, ...] = (429, 500, 503)
    seed: int = 0
    # Hosts a many-host categorize answer leaves out, as a small model may.
    skipped_hosts: tuple[str, ...] = ()
    # Requests the model works on at once (0: any number): the others wait in arrival order,
    # as at llama.cpp's server or Ollama with one slot (a laptop's model answers one at a time).
    slots: int = 0
    # Reads only the prompt (its messages in order) after the longest prefix it shares with
    # the previous request's, as llama.cpp's server reuses its slot's computed prefix (Ollama
    # likewise): `read` has each request's tokens read, by id(request).
    prefix_cache: bool = False

    # Quick mode: a request that asks for `logprobs` gets them in OpenAI's shape
    # (choices[0].logprobs.content), unless False (a server that has none and says nothing).
    # `knows`: a word of a claim → the label the model gives it and that label token's
    # probability; any other claim is "unsure" at 0.6.
    logprobs: bool = True
    knows: dict[str, tuple[str, float]] = field(default_factory=dict)
    # Claims the decomposition makes of a sentence: 1, one per clause joined by "; " (the
    # default); n > 1, a sentence of fewer clauses is also cut where a real model splits a
    # compound sentence (", and", ", which", ", featuring", ", but"; else before a participle),
    # the cut nearest its middle, into up to n claims that each name the subject (bench/laptop.py
    # --heavy: real models give about two claims a sentence).
    claims_per_sentence: int = 1
    # A real server's ways (tests/llm_servers.py, PROFILES): what it refuses and in which words,
    # what it drops, where its thinking goes, a prompt or an answer too long for it. None: takes
    # everything, thinks not at all.
    profile: ServerProfile | None = None

    def __post_init__(self) -> None:
        LoopbackServer.__init__(self, _LLMHandler)
        self.calls: Counter[str] = Counter()
        self.requests: list[dict] = []
        self.answers: list[str] = []  # what it wrote (or the error's text), in the order written
        # The kind of each call whose answer has been written to the end (or failed), in order.
        self.finished: list[str] = []
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.held = 0
        # Requests between their arrival and their answer's end: now, and the most ever.
        self.at_once = 0
        self.most_at_once = 0
        self.read: dict[int, int] = {}
        self._previous_prompt = ""
        self._queue: deque[object] = deque()
        self._turns = threading.Condition(self._lock)
        self._working = 0
        self.most_working = 0  # the most requests the model worked on at once (with `slots`)
        # With a profile: each request as sent (refused or not), the refusals by what they name
        # ("temperature", "stream_options", "context", "path") and in order as (status, name),
        # the reasoning tokens its usage reported, the prompt tokens cut off the front (Ollama).
        self.sent: list[dict] = []
        self.refused: Counter[str] = Counter()
        self.refusals: list[tuple[int, str]] = []
        self.reasoning_tokens = 0
        self.prompt_tokens_cut = 0

    def release(self) -> None:
        self._released.set()

    def refusal(self, path: str, request: dict) -> llm_servers.Refused | None:
        if self.profile is None:
            return None
        refused = llm_servers.refusal(self.profile, path, request)
        with self._lock:
            self.sent.append(request)
            if refused is not None:
                self.refused[refused.param] += 1
                self.refusals.append((refused.status, refused.param))
        return refused

    def count_reasoning(self, reply: Reply) -> None:
        with self._lock:
            self.reasoning_tokens += reply.reasoning_tokens

    def hosts_asked(self) -> Counter[str]:
        """How many times the categorizer was asked about each host, alone or with others."""
        with self._lock:
            asked = [r["messages"][-1]["content"] for r in self.requests if _asks_types(r)]
        return Counter(host for user in asked for host in re.findall(r"^(?:H\d+\. )?Host: (\S+)", user, re.M))

    @contextlib.contextmanager
    def _slot(self):
        """A slot of the model's `slots` for the time it reads and writes, taken in arrival order."""
        if not self.slots:
            yield
            return
        ticket = object()
        with self._turns:
            self._queue.append(ticket)
            self._turns.wait_for(lambda: self._queue[0] is ticket and self._working < self.slots)
            self._queue.popleft()
            self._working += 1
            self.most_working = max(self.most_working, self._working)
            self._turns.notify_all()
        try:
            yield
        finally:
            with self._turns:
                self._working -= 1
                self._turns.notify_all()

    def prompt_read(self, request: dict, prompt: str) -> int:
        """The prompt tokens the model reads for this request (all of them without `prefix_cache`)."""
        with self._lock:
            shared = _shared_prefix(prompt, self._previous_prompt) if self.prefix_cache else 0
            self._previous_prompt = prompt
            self.read[id(request)] = (len(prompt) - shared) // 4
            return self.read[id(request)]

    def label_for(self, claim: str) -> tuple[str, float]:
        return next((known for word, known in self.knows.items() if word in claim), ("unsure", 0.6))

    def token_logprobs(self, content: str) -> list[dict]:
        """The answer as tokens (a word with the spaces or line break before it), each with its
        logprob as OpenAI gives it: a claim line's label token has the probability `knows`
        gives its claim, every other token about 0.999."""
        tokens = []
        for number, line in enumerate(content.split("\n")):
            pieces = re.findall(r"\s*\S+", line) or [line]
            pieces[0] = ("\n" if number else "") + pieces[0]
            pieces[-1] += line[len(line.rstrip()) :] if line.strip() else ""
            labelled = re.match(r"\s*- (.+?) \| (?:.*\| )?(true|false|unsure)$", line)
            for index, piece in enumerate(p for p in pieces if p):
                last = index == len(pieces) - 1
                probability = self.label_for(labelled.group(1))[1] if labelled and last else 0.999
                logprob = math.log(probability)
                entry = {"token": piece, "logprob": logprob, "bytes": list(piece.encode())}
                tokens.append({**entry, "top_logprobs": [entry]})
        assert "".join(t["token"] for t in tokens) == content
        return tokens

    def answer_seconds(self, prompt_tokens: int, completion_tokens: int) -> float:
        """How long the simulated model takes beyond `latency` (an error answer writes no tokens)."""
        reading = prompt_tokens / self.prompt_tokens_per_s if self.prompt_tokens_per_s else 0.0
        return self.first_token_s + reading + self.writing_seconds(completion_tokens)

    def writing_seconds(self, completion_tokens: float) -> float:
        return completion_tokens / self.tokens_per_s if self.tokens_per_s else 0.0

    def answer(self, request: dict) -> tuple[int, str]:
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        kind = _kind(request, system)
        with self._lock:
            self.calls[kind] += 1
            self.requests.append(request)
            self._attempts[user] += 1
            draw = random.Random(f"{self.seed}:{self._attempts[user]}:{user}").random()
        if request.get("response_format") and not self.structured:
            return 400, "response_format is not supported by this server"
        focus = _focus(kind, user)
        time.sleep(max((delay for word, delay in self.slow_words.items() if word in focus), default=0.0))
        if any(word in focus for word in self.held_words):
            with self._lock:
                self.held += 1
            self._released.wait(self.hold_s)
        for word, status in self.fail_words.items():
            if word in focus:
                return status, f"simulated failure for {word}"
        if draw < self.fail_rate:
            return self.fail_statuses[int(draw / self.fail_rate * len(self.fail_statuses))], "simulated failure"
        if any(word in focus for word in self.garbage_words) or draw < self.fail_rate + self.garbage_rate:
            return 200, "Sorry, I am not able to help with that."
        if kind == "check":  # manage.py check_llm's small requests, answered as asked
            if "numbers" in user or "Count" in user:
                return 200, " ".join(map(str, range(1, 41 if "40" in user else 6)))
            return 200, json.dumps({"answer": "OK"}) if "JSON" in user or request.get("response_format") else "OK"
        answers = {
            "claims": lambda user: _claims(user, self.claims_per_sentence),
            "judgements": _judgements,
            "source_type": _source_type,
            "source_types": _source_types,
            # A trail's steps, answered by what the prompt says (tests/trail_model.py).
            "evidence_selection": TrailTestModel().select,
            "evidence_selections": TrailTestModel().select_many,
            "trail_verdict": TrailTestModel().verdict,
            "trail_verdicts": TrailTestModel().verdict_many,
        }
        payload = answers[kind](user)
        if kind == "claims" and '" | en: "' in user:  # a thin web's language: an English query too
            for claim in (c for entry in payload["sentences"] for c in entry["claims"]):
                # The claim's Latin-script words (names, numbers) stand in for a translation.
                english = " ".join(sorted(w for w in content_words(claim["claim"]) if w.isascii()))
                claim["english_query"] = english
        if kind == "claims" and system.endswith((decompose.QUICK_INSTRUCTION, decompose.QUICK_INSTRUCTION_NO_QUERY)):
            for claim in (c for entry in payload["sentences"] for c in entry["claims"]):
                claim["label"] = self.label_for(claim["claim"])[0]
        if kind == "source_types":
            payload["types"] = [
                e for e in payload["types"] if not any(h in _block(user, e["host"]) for h in self.skipped_hosts)
            ]
        if request.get("response_format"):
            return 200, json.dumps(payload)
        asks_json = "JSON" in system or "Answer with one JSON object only" in user
        if kind in ("source_type", "source_types") and not asks_json:  # plain words, as asked
            return 200, payload["source_type"] if kind == "source_type" else _type_lines(payload)
        if "Answer with one JSON object only" in user or kind not in ("judgements", "claims"):
            return 200, "Here is the answer:\n```json\n" + json.dumps(payload) + "\n```"
        return 200, _as_lines(kind, payload, system)


def _shared_prefix(a: str, b: str) -> int:
    """How many characters `a` and `b` share from their start."""
    return len(os.path.commonprefix([a, b]))


# The system prompt of check_llm's requests (verification/clients/llm_check.py).
CHECK_SYSTEM = "You are a terse assistant."


def _kind(request: dict, system: str) -> str:
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("name")
    if schema:
        return schema
    if system == trail_select.SYSTEM_PROMPT:
        return "evidence_selection"
    if system == trail_select_many.SYSTEM_PROMPT:
        return "evidence_selections"
    if system == trail_verdict.SYSTEM_PROMPT:
        return "trail_verdict"
    if system == trail_verdict_many.SYSTEM_PROMPT:
        return "trail_verdicts"
    if system == CHECK_SYSTEM:
        return "check"
    if "atomic claims" in system:
        return "claims"
    if "Classify every host listed" in system:
        return "source_types"
    if "classify websites" in system:
        return "source_type"
    return "judgements"


def _focus(kind: str, user: str) -> str:
    if kind == "claims":
        return " ".join(_target_sentences(user).values())
    if kind == "judgements":
        return " ".join(claim for claim, _ in _claims_judged(user))
    return user


def _target_sentences(user: str) -> dict[str, str]:
    """{"S3": its text} for every target sentence the prompt names."""
    targets = re.search(r"Target sentences?: (.*)$", user, re.MULTILINE).group(1)
    return {label: _numbered(user)[label] for label in re.findall(r"S\d+", targets)}


def _numbered(user: str) -> dict[str, str]:
    return dict(re.findall(r"^(S\d+): (.*)$", user, re.MULTILINE))


def _paragraph_start(user: str, label: str) -> str:
    """The first sentence of the paragraph (blank-line separated) that holds `label`."""
    context = user.split("Target sentence")[0]
    for paragraph in context.split("\n\n"):
        lines = re.findall(r"^S\d+: (.*)$", paragraph, re.MULTILINE)
        if re.search(rf"^{label}: ", paragraph, re.MULTILINE):
            return lines[0]
    return next(iter(_numbered(user).values()))


def _claims(user: str, per_sentence: int = 1) -> dict:
    """For each target sentence: one claim per clause joined by '; ' (or `per_sentence` claims,
    _cut), with a leading 'It' resolved to the subject of its paragraph's first sentence (a
    crude decontextualization); greetings give none."""
    return {
        "sentences": [
            {"sentence": label, "claims": _sentence_claims(sentence, _paragraph_start(user, label), per_sentence)}
            for label, sentence in _target_sentences(user).items()
        ]
    }


def _sentence_claims(sentence: str, first: str, per_sentence: int = 1) -> list[dict]:
    if re.search(r"\b(hope this helps|hello|thanks)\b", sentence, re.IGNORECASE):
        return []
    subject_match = re.match(r"(.*?)\s+(?:is|was|are|were|has|had)\b", first)
    subject = subject_match.group(1) if subject_match else first.split()[0]
    clauses = [re.sub(r"^(It|This|They)\b", subject, c.strip()) for c in re.split(r";\s*", sentence.rstrip(".!?"))]
    if per_sentence > 1:
        clauses = _cut(clauses, per_sentence, subject)
    return [{"claim": clause + ".", "query": " ".join(sorted(content_words(clause)))} for clause in clauses]


_AUXILIARIES = r"is|was|are|were|has|had|have|be|been|being"
# Where a model splits a compound sentence: a conjunction or a comma before a lowercase word
# (", which won …", ", featuring …"); failing that, before a participle ("… novel | aimed at …").
_JOINS = re.compile(r",?\s+(?:and|but)\s+(?=\w)|,[\"”]?\s+(?=[a-z])")
_PARTICIPLES = re.compile(r"\s+(?=[a-z]+(?:ed|ing)\b)")  # not after an auxiliary ("was aimed"): _break


def _cut(clauses: list[str], parts: int, subject: str) -> list[str]:
    """The clauses, the longest cut in two at the break nearest its middle (at least three
    words a side) until there are `parts` or no clause can be cut; a later part names the
    first part's subject ("Andy Weir wrote it and published it" → "… | Andy Weir published it")."""
    clauses = list(clauses)
    while len(clauses) < parts:
        for index in sorted(range(len(clauses)), key=lambda i: -len(clauses[i])):
            cut = _break(clauses[index])
            if cut:
                head, tail = cut
                clauses[index : index + 1] = [head, _with_subject(tail, head, subject)]
                break
        else:
            return clauses
    return clauses


def _break(clause: str) -> tuple[str, str] | None:
    for pattern in (_JOINS, _PARTICIPLES):
        cuts = [
            m
            for m in pattern.finditer(clause)
            if len(clause[: m.start()].split()) >= 3
            and len(clause[m.end() :].split()) >= 3
            and not (pattern is _PARTICIPLES and re.fullmatch(_AUXILIARIES, clause[: m.start()].split()[-1]))
        ]
        if cuts:
            best = min(cuts, key=lambda m: abs(m.start() - len(clause) / 2))
            return clause[: best.start()].rstrip(' ,"”'), clause[best.end() :]
    return None


def _with_subject(tail: str, head: str, subject: str) -> str:
    """The tail as a claim of its own: the head's subject (its first five words at most before
    an auxiliary), else the paragraph's, before it."""
    tail = re.sub(r"^(?:which|who|that)\s+", "", tail)
    found = re.match(rf"((?:\S+\s+){{0,4}}?\S+)\s+({_AUXILIARIES})\b", head)
    subject, auxiliary = (found.group(1), found.group(2)) if found else (subject, "was")
    first = tail.split()[0]
    if re.fullmatch(_AUXILIARIES, first) or first.endswith("ing") or not first.endswith("ed"):
        return f"{subject} {tail}"
    return f"{subject} {auxiliary} {tail}"


def _claims_judged(user: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(claim, [(E label, passage), ...]), ...] as the judge prompt lists them."""
    judged = []
    user = user.split("\n\nAnswer with one JSON object only")[0]
    # "C1 (from P1, in German): …" and "E1 (from: a title; in English)", as judge.build_prompt labels them.
    for block in re.split(r"\n\n(?=C\d+(?: \([^)\n]*\))?: )", "\n\n" + user)[1:]:
        claim, _, passages = block.partition("\n")
        found = re.findall(r"^(E\d+)(?: \([^\n]*\))?\n(.*?)(?=\n\nE\d+|\Z)", passages, re.MULTILINE | re.DOTALL)
        judged.append((claim.split(": ", 1)[1], found))
    # "the same passage as E1": E1's text, read again
    texts = {label: text for _, found in judged for label, text in found}
    return [(claim, [(label, texts.get(_same_as(text), text)) for label, text in found]) for claim, found in judged]


def _same_as(text: str) -> str:
    match = re.fullmatch(r"the same passage as (E\d+)", text.strip())
    return match.group(1) if match else ""


def _judgements(user: str) -> dict:
    """Supported when the passage holds most of its claim's words, not supported when it also
    negates, irrelevant otherwise; the rationale is one short sentence, as the prompt asks."""
    judgements = []
    for claim, passages in _claims_judged(user):
        words = content_words(claim)
        for label, passage in passages:
            overlap = len(words & content_words(passage)) / max(1, len(words))
            if overlap < 0.6:
                verdict, why = "irrelevant", "The passage does not talk about this."
            elif NEGATIONS.search(passage):
                verdict, why = "not_supported", "The passage says the opposite."
            else:
                verdict, why = "supported", "The passage states this."
            judgements.append({"evidence": label, "rationale": f"{why} (overlap {overlap:.0%})", "verdict": verdict})
    return {"judgements": judgements}


def _as_lines(kind: str, payload: dict, system: str) -> str:
    """The answer in the plain-text form the prompt asks for, when it asks for no JSON: in the
    verdict words it defines; an irrelevant passage left out, or its verdict alone, where it asks that."""
    if kind == "judgements":
        if "Others: irrelevant" in system:  # the irrelevant passages left out, as asked
            lines = [_judgement_line(j, system) for j in payload["judgements"] if j["verdict"] != "irrelevant"]
            return "\n".join([*lines, "Others: irrelevant"])
        return "\n".join(_judgement_line(j, system) for j in payload["judgements"])
    lines = []
    queries = "search query" in system  # else each claim alone, as the prompt without queries shows
    for entry in payload["sentences"]:
        lines.append(f"{entry['sentence']}:")
        lines += [
            f"- {c['claim']}"
            + (f" | {c['query']}" if queries else "")
            + (f" | en: {c['english_query']}" if c.get("english_query") else "")
            + (f" | {c['label']}" if "label" in c else "")
            for c in entry["claims"]
        ]
    return "\n".join(lines)


def _judgement_line(judgement: dict, system: str) -> str:
    verdict = judgement["verdict"]
    if "\nrefutes:" in system:
        verdict = {"supported": "supports", "not_supported": "refutes"}.get(verdict, verdict)
    if verdict == "irrelevant" and "For irrelevant, the verdict alone" in system:
        return f"{judgement['evidence']}: {verdict}"
    return f"{judgement['evidence']}: {judgement['rationale']} | {verdict}"


_TITLE_TYPES = [
    ("wiki", "wiki"),
    ("news", "news"),
    ("blog", "blog"),
    ("journal", "scientific_medical_article"),
    ("gov", "government_website"),
    ("forum", "social_media"),
]


def _source_type(user: str) -> dict:
    text = user.lower()
    return {"source_type": next((t for word, t in _TITLE_TYPES if word in text), "other")}


def _source_types(user: str) -> dict:
    """Each "H1. Host: …" block typed by its own words, as `_source_type` types one host."""
    blocks = re.split(r"^(?=H\d+\. )", user, flags=re.M)
    return {"types": [{"host": b.split(".")[0], **_source_type(b)} for b in blocks if re.match(r"H\d+\. ", b)]}


def _type_lines(payload: dict) -> str:
    return "\n".join(f"{entry['host']}: {entry['source_type']}" for entry in payload["types"])


def _block(user: str, label: str) -> str:
    return next((b for b in re.split(r"^(?=H\d+\. )", user, flags=re.M) if b.startswith(label + ". ")), "")


def _asks_types(request: dict) -> bool:
    return "classify websites" in request["messages"][0]["content"]


# --- web search


class _SearchHandler(_Handler):
    def do_POST(self) -> None:
        server: FakeSerper = self.owner
        if urlsplit(self.path).path != "/search":
            return self._json(404, {"message": "not found"})
        if self.headers.get("X-API-KEY") != server.api_key:
            return self._json(403, {"message": "Unauthorized."})
        request = self._body()
        time.sleep(server.latency)
        with server.lock:
            server.queries.append(request["q"])
            server.bodies.append(request)
        if server.fail_status:
            return self._json(server.fail_status, {"message": server.fail_message, "statusCode": server.fail_status})
        self._json(
            200,
            {
                "searchParameters": {"q": request["q"]},
                "organic": server.results(request["q"], int(request.get("num", 10))),
            },
        )


@dataclass
class FakeSerper(LoopbackServer):
    """Ranks the pages of the given sites by words shared with the query, like a tiny engine."""

    sites: list = field(default_factory=list)
    api_key: str = "test-serper-key"
    latency: float = 0.0
    fail_status: int = 0
    # What a failure says: Serper answers 400 "Not enough credits" when an account's credits are spent.
    fail_message: str = "simulated failure"

    def __post_init__(self) -> None:
        LoopbackServer.__init__(self, _SearchHandler)
        self.queries: list[str] = []
        # Each request's JSON body as sent ({"q", "num", and "hl"/"gl" for a text's language}).
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        self._indexed: dict[str, set[str]] = {}

    def _index(self):
        """Each page's words, computed once: the benchmark's web has hundreds of pages and the
        search latency must be the configured one, not the time spent tokenizing them."""
        for site in self.sites:
            for path, page in site.pages.items():
                url = site.url + path
                if url not in self._indexed:
                    self._indexed[url] = content_words(page.title + " " + page.body)
                yield url, page, self._indexed[url]

    def results(self, query: str, num: int) -> list[dict]:
        words = content_words(query)
        scored = []
        for url, page, page_words in self._index():
            overlap = len(words & page_words)
            if overlap and page.searchable:
                scored.append((-overlap, url, page))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [
            {"title": page.title, "link": url, "snippet": page.body[:150], "position": rank}
            for rank, (_, url, page) in enumerate(scored[:num], start=1)
        ]


# --- web sites


@dataclass
class FakePage:
    title: str
    body: str  # paragraphs separated by blank lines
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    searchable: bool = True
    redirect_to: str = ""

    def html(self) -> bytes:
        paragraphs = "".join(f"<p>{p}</p>\n" for p in self.body.split("\n\n"))
        return (
            f"<!doctype html><html><head><title>{self.title}</title></head><body>"
            f"<nav><a href='/'>Home</a> | <a href='/about'>About</a></nav>"
            f"<article><h1>{self.title}</h1>{paragraphs}</article>"
            f"<footer>Copyright the site. All rights reserved.</footer></body></html>"
        ).encode()


class _SiteHandler(_Handler):
    def do_GET(self) -> None:
        site: FakeSite = self.owner
        time.sleep(site.latency)
        with site.lock:
            site.hits[self.path] += 1
        if site.fail_status:
            return self._send(site.fail_status, b"<h1>Service unavailable</h1>", "text/html")
        page = site.pages.get(urlsplit(self.path).path)
        if page is None:
            return self._send(404, b"<h1>Not found</h1>", "text/html")
        if page.redirect_to:
            return self._send(302, b"", "text/html", {"Location": page.redirect_to})
        refusal = refusal_of(urlsplit(self.path).path, site.refusing)
        if refusal == HANG:
            time.sleep(site.hang_s)
            with contextlib.suppress(OSError):  # a fetcher that gave up before has hung up
                self._send(503, b"<h1>Service unavailable</h1>", "text/html")
            return None
        if refusal == BOT_CHALLENGE:
            return self._send(403, CHALLENGE_PAGE, "text/html; charset=utf-8")
        if refusal == JAVASCRIPT_SHELL:
            return self._send(200, _shell(page.title), "text/html; charset=utf-8")
        self._send(page.status, page.html() if page.status == 200 else b"<h1>Forbidden</h1>", page.content_type)


# How a page of the real web refuses a scraper (FakeSite.refusing): a bot challenge (HTTP 403,
# Cloudflare's "Just a moment…"), an empty shell that only JavaScript fills, or no answer in time.
BOT_CHALLENGE, JAVASCRIPT_SHELL, HANG = "bot challenge", "javascript shell", "hang"
REFUSALS = (BOT_CHALLENGE, JAVASCRIPT_SHELL, HANG)


def refusal_of(path: str, share: float) -> str | None:
    """How the page at `path` refuses when `share` of a site's pages do, or None: drawn from the
    path alone, so the same pages refuse on every run and on every port, and a page that refuses
    at 30 % refuses at 60 % too."""
    digest = hashlib.sha256(path.encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    return REFUSALS[digest[8] % len(REFUSALS)] if draw < share else None


# Cloudflare's challenge, as it answers a scraper (its markers and words, no page of the site).
CHALLENGE_PAGE = (
    b"<!DOCTYPE html><html lang='en-US'><head><title>Just a moment...</title>"
    b"<meta http-equiv='refresh' content='390'><script>window._cf_chl_opt={cvId: '3', cType: 'managed'};"
    b"</script></head><body><div class='main-wrapper'><h1>Just a moment...</h1>"
    b"<p>Checking if the site connection is secure</p><noscript>Enable JavaScript and cookies to continue"
    b"</noscript><p>Ray ID: 8f2a6c1e9b7d4a21</p><p>Performance &amp; security by Cloudflare</p></div>"
    b"</body></html>"
)


def _shell(title: str) -> bytes:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
        "<link rel='stylesheet' href='/static/css/main.7d3f1.css'></head><body>"
        "<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div>"
        "<script src='/static/js/main.3e9a2.js'></script></body></html>"
    ).encode()


@dataclass
class FakeSite(LoopbackServer):
    """One web site (its own port, so its own host for source categorization). `refusing`: the
    share of its pages that refuse a scraper (refusal_of), a hanging one for `hang_s` seconds."""

    pages: dict[str, FakePage] = field(default_factory=dict)
    latency: float = 0.0
    fail_status: int = 0  # every page answers this status (an outage)
    refusing: float = 0.0
    hang_s: float = 15.0

    def __post_init__(self) -> None:
        LoopbackServer.__init__(self, _SiteHandler)
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()


# --- a small world to verify against


def sample_sites() -> list[FakeSite]:
    """Three sites of different kinds about the Eiffel Tower, one that refuses robots."""
    wiki = FakeSite(
        pages={
            "/eiffel": FakePage(
                "Eiffel Tower - Wiki encyclopedia",
                "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n\n"
                "The Eiffel Tower was completed in 1889 for the World's Fair.\n\n"
                "Gustave Eiffel's company designed and built the tower.",
            )
        }
    )
    news = FakeSite(
        pages={
            "/tower-story": FakePage(
                "Paris landmark turns 135 | City News",
                "Visitors climbed the Eiffel Tower in Paris in record numbers this year.\n\n"
                "Contrary to a popular claim, the Eiffel Tower is not made of steel; it is wrought iron.",
            )
        }
    )
    blog = FakeSite(
        pages={
            "/trip": FakePage(
                "My trip to Paris - a travel blog",
                "We saw the Eiffel Tower in Paris, France, lit up at night.\n\n"
                "The tower is 330 metres tall, taller than we expected.",
            ),
            "/blocked": FakePage("Eiffel Tower secrets blog", "The Eiffel Tower Paris secrets.", status=403),
        }
    )
    return [wiki, news, blog]


def main() -> None:
    """`python -m tests.fakes`: run the sample world and print the settings that point at it,
    to try factsite (or take screenshots) with no keys and no internet."""
    sites = [site.start() for site in sample_sites()]
    serper = FakeSerper(sites=sites).start()
    llm = FakeLLM(latency=0.3).start()
    print(f"OPENAI_API_KEY=fake\nOPENAI_BASE_URL={llm.url}/v1\nLLM_MODELS=fake-model")
    print(f"SERPER_API_KEY={serper.api_key}\nSERPER_BASE_URL={serper.url}\nALLOW_PRIVATE_FETCH=1", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
