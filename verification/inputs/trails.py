"""A trail as it is submitted (the form's builder or file, the API, `manage.py verify --trail`),
validated once: its shape (pipeline/trail_graph.parse_trail, with the server's size limits), the
final text the run checks, the model, and VeriTrail's q. Every refusal names the node and the
problem, in words a person can act on."""

import json
import sys
from dataclasses import dataclass

from django.conf import settings

from verification.clients import providers
from verification.inputs.documents import looks_binary
from verification.inputs.forms import DEFAULT_SETTINGS, unsupported_script_message
from verification.pipeline import languages, trail_citations
from verification.pipeline.citations import read_citations
from verification.pipeline.trail_graph import Trail, TrailError, parse_trail
from verification.pipeline.types import SegmentedSentence
from verification.pipeline.urls import UnsafeAddress, parse_web_address

MAX_Q = 10


class TrailRefused(ValueError):
    """Why a submitted trail cannot run, as the person who sent it is told."""


@dataclass(frozen=True)
class TrailSubmission:
    trail: Trail
    settings: dict
    segments: tuple[SegmentedSentence, ...]


def trail_from_json(raw: bytes | str) -> object:
    """A trail file's bytes decoded (the form's file input, the CLI's file)."""
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TrailRefused(f"The trail file is not JSON: {error}.") from None
    except ValueError:
        # Python converts at most sys.get_int_max_str_digits() digits to an int (CVE-2020-10735).
        raise TrailRefused(
            f"The trail file holds a number of over {sys.get_int_max_str_digits():,} digits: a trail's only numbers "
            "are its nodes' stages."
        ) from None
    except RecursionError:
        raise TrailRefused(
            "The trail file is nested too deeply to read: a trail is an object whose 'nodes' are objects."
        ) from None


def trail_submission(data: object, *, model: str | None = None, q: int | None = None) -> TrailSubmission:
    try:
        trail = parse_trail(data, max_nodes=settings.TRAIL_MAX_NODES, max_chars=settings.TRAIL_MAX_CHARS)
    except TrailError as error:
        raise TrailRefused(f"The trail is not valid: {error}.") from None
    for node in trail.nodes:
        if node.text is not None and looks_binary(node.text):
            raise TrailRefused(f"The trail is not valid: node {node.id!r}: its text has binary or control characters.")
        if node.document is not None:
            _check_document(node.id, node.document)
    final = trail.node(trail.final)
    if final.text is None or not final.text.strip():
        raise TrailRefused(f"The trail is not valid: node {final.id!r}, the final text, needs its 'text' to check.")
    if script := languages.unsupported_script(final.text):
        raise TrailRefused(f"The final text (node {final.id!r}): {unsupported_script_message(script)}")
    # Split without its citation markers ("[Data: Reports (2)]"), as a pasted text is: they are
    # no part of a claim. Spans stay in the text as given, which the trail page shows.
    # In its language (issue 36), as services.trail_create detects it too.
    language = languages.detect_language(read_citations(final.text).text) or "en"
    segments = tuple(trail_citations.final_segments(final.text, language))
    if not segments:
        raise TrailRefused(f"The final text (node {final.id!r}) has no sentence to check.")
    budget = settings.MAX_CLAIMS_PER_RUN
    if budget > 0 and len(segments) > budget:
        raise TrailRefused(
            f"The final text has {len(segments):,} sentences; a run checks at most {budget:,} claims "
            "(MAX_CLAIMS_PER_RUN). Shorten it or split it into several runs."
        )
    return TrailSubmission(trail=trail, settings=_run_settings(model, q), segments=segments)


def _check_document(node_id: str, document) -> None:
    if document.upload:
        raise TrailRefused(
            f"The trail is not valid: node {node_id!r}: uploaded files are not taken in a trail yet; "
            "give the document's text, or its web address."
        )
    try:
        parse_web_address(document.url)
    except UnsafeAddress as error:
        raise TrailRefused(f"The trail is not valid: node {node_id!r}: {error}.") from None


def _run_settings(model: str | None, q: int | None) -> dict:
    names = providers.model_names()
    if model is not None and model not in names:
        raise TrailRefused(f"The model {model!r} is not one this server offers ({', '.join(names) or 'none'}).")
    if q is not None and not 1 <= q <= MAX_Q:
        raise TrailRefused(f"q is the number of Not Fully Supported verdicts in a row; give 1 to {MAX_Q}.")
    return {
        **DEFAULT_SETTINGS,
        "model": model or (names[0] if names else ""),
        "evidence": "trail",
        "trail_q": q or settings.TRAIL_Q,
    }
