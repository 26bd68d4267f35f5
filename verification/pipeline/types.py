"""Plain data passed between pipeline steps. No Django here: steps are testable alone."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class StepError(Exception):
    """An outside failure a person can read: the item that hit it is marked failed with
    `str(error)` as its reason and the run goes on.

    `transient`: whether trying again may end otherwise (a timeout, a busy or failing server).
    Only the raiser knows the cause, so it says when a retry would meet the same answer (HTTP 403
    or 404, not a web page, an unreadable PDF, a refused address); "Retry failed parts" then
    leaves the item alone. Unknown causes stay transient: a useless retry costs less than a
    failure nobody may retry."""

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient

    def __reduce__(self):
        # Raised in the CPU pool's processes: the flag must survive pickling back.
        return (type(self), (str(self),), {"transient": self.transient})


class RefusedAddress(StepError):
    """A web address the fetcher refuses to contact at all (it leads into a private network, or
    hides which host it names): the fault of whoever gave the address, not of a page, so a
    retry meets the same refusal."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message, transient=transient)


class SourceType(StrEnum):
    NEWS = "news"
    BLOG = "blog"
    WIKI = "wiki"
    SOCIAL_MEDIA = "social_media"
    SCIENTIFIC_MEDICAL_ARTICLE = "scientific_medical_article"
    GOVERNMENT_WEBSITE = "government_website"
    OTHER = "other"
    # The user's own documents; never a category a web page is put in.
    YOUR_DOCUMENT = "your_document"


class Verdict(StrEnum):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not_supported"
    IRRELEVANT = "irrelevant"


@dataclass(frozen=True)
class Span:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class SegmentedSentence:
    index: int
    text: str
    start: int
    end: int
    paragraph_index: int
    # The sentences of the paragraph chunk this sentence belongs to: the context the LLM
    # sees when it decomposes the sentence. Long paragraphs are chunked to a prompt budget.
    context: tuple[str, ...]
    position_in_context: int


@dataclass(frozen=True)
class ClaimDraft:
    text: str
    query: str
    # Quick mode: "true", "false" or "unsure" from the model's own knowledge ("" when not asked
    # or not given), and the probability of that label's tokens (None without logprobs).
    label: str = ""
    probability: float | None = None
    # A query in English beside the claim's own, for a text in a language whose web is thin
    # (languages.LARGE_WEB); "" otherwise.
    english_query: str = ""


@dataclass(frozen=True)
class TokenLogprob:
    """One token of an answer as the server wrote it, with its log probability."""

    token: str
    logprob: float


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    snippet: str
    rank: int
    # The search provider that found it ("serper", "wikipedia", …).
    provider: str = ""


@dataclass(frozen=True)
class Page:
    url: str
    final_url: str
    title: str
    text: str
    # As the page or PDF states it; None when it does not.
    published: date | None = None


@dataclass(frozen=True)
class PageSentences:
    """A page ready for passage selection: what a run keeps (in the shared cache, not per run)."""

    url: str
    final_url: str
    title: str
    sentences: tuple[str, ...]
    # A default, so that pages cached before dates were read still load.
    published: date | None = None
    # The language of its text (ISO 639-1, pipeline/languages.py), which it was split in; "" when
    # the detector could not tell, None when it was not asked (a page cached before languages were read).
    language: str | None = None


@dataclass(frozen=True)
class Passage:
    text: str
    # Character spans inside `text` of the sentences that matched the claim best: the UI
    # highlights them, the rest of the passage is context.
    highlights: tuple[tuple[int, int], ...]
    score: float
    # Index of the passage's first sentence on its page: excerpts of one page are shown and
    # judged in page order.
    position: int = 0


@dataclass(frozen=True)
class EvidenceToJudge:
    key: str
    source_title: str
    passage: str
    # The ranker's chosen sentences in `passage` (the rest is their context); none: all of it.
    highlights: tuple[tuple[int, int], ...] = ()
    # The passage is the search engine's snippet of a page that could not be read.
    snippet_only: bool = False
    # The language of its page (ISO 639-1; "" when not known).
    language: str = ""


@dataclass(frozen=True)
class ClaimToJudge:
    """A claim and its evidence, as one call judges it with others; `context`: the paragraph
    it came from, for a claim that does not stand alone ("" for a run's decomposed claims)."""

    text: str
    context: str
    items: tuple[EvidenceToJudge, ...]
    # The claim's language, its text's (ISO 639-1; "" when not known).
    language: str = ""


@dataclass(frozen=True)
class Judgement:
    key: str
    verdict: Verdict | None
    rationale: str
    error: str = ""


@dataclass
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of the completion tokens, those a model spent thinking (hidden, in a field, or in a
    # <think> block removed from the answer).
    reasoning_tokens: int = 0


class MalformedAnswer(ValueError):
    """The model's answer does not have the shape a step asked for."""


class JsonLLM(Protocol):
    """What a step needs from a language model: one answer, parsed by the step's own pure
    `parse` function (which raises MalformedAnswer to get one more try). With a `schema` the
    answer is JSON of that schema; with none it is the plain text the prompt asks for (JSON the
    model writes anyway comes decoded). A step that can use an answer's first lines before the
    rest is written passes `on_text`: it gets the plain-text answer so far as it arrives (from
    a server that streams). A step that needs the answer's token probabilities passes
    `logprobs` (how many alternatives per token to ask for, at least 1): `parse` and `on_text`
    then get a second argument, the answer's tokens so far (TokenLogprob), or None from a server
    that gives none. `max_tokens` caps the answer (sized by the step to its input); `done` says
    whether an answer is complete (one cut at the cap is used only if it is), and `on_text` may
    return True once it is (the rest of a stream is not read)."""

    def complete(
        self,
        *,
        system: str,
        user: str,
        schema_name: str,
        schema: dict | None,
        parse: Callable[..., T],
        on_text: Callable[..., bool | None] | None = None,
        logprobs: int = 0,
        max_tokens: int = 0,
        done: Callable[[str], bool] | None = None,
    ) -> T: ...


class SearchProvider(Protocol):
    # `language`: the query's (ISO 639-1), passed only when it is known (search.search_claim).
    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]: ...


@dataclass(frozen=True)
class FetchedDocument:
    url: str
    final_url: str
    content_type: str
    charset: str | None
    body: bytes


class Fetcher(Protocol):
    def fetch(self, url: str, *, refuse: Callable[[str], str | None] | None = None) -> FetchedDocument: ...


class Embedder(Protocol):
    def encode(self, texts: list[str]) -> Any:
        """Unit-length vectors, one row per text (a numpy array)."""
        ...
