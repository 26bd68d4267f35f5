"""Quick mode's account of a run (issue 29): how many claims the model's own knowledge spared a
search, what that saved, and, when it spared none, why — for the run's details, its JSON and the
reports alike."""

from django.db.models import Count, Q

from verification.inputs.forms import quick_mode
from verification.models import FINISHED, Claim, Verification
from verification.scoring import MODEL_KNOWLEDGE, EvidenceRecord, Scores
from verification.selectors.viewstate import ViewState

# What a claim finished from the model's own knowledge says of itself, wherever it is shown.
FROM_MODEL_KNOWLEDGE = "from the model's own knowledge, not checked against any source"
MODEL_LABEL_WORDS = {"true": "true", "false": "false", "unsure": "unsure"}


def model_knowledge_note(label: str, probability: float | None) -> str:
    """ "from the model's own knowledge, not checked against any source: the model says true
    (99.8%)"."""
    said = f"the model says {MODEL_LABEL_WORDS.get(label, label)}"
    if probability is not None:
        said += f" ({probability:.1%})"
    return f"{FROM_MODEL_KNOWLEDGE}: {said}"


def quick_summary(verification: Verification) -> dict | None:
    """None for a run without quick mode. Searches saved: one per claim skipped; pages: at most
    the run's results per claim each (some would have been refused or shared), so "up to"."""
    if not quick_mode(verification.settings):
        return None
    counts = Claim.objects.filter(sentence__verification=verification).aggregate(
        labelled=Count("pk", filter=~Q(model_label="")),
        with_probability=Count("model_label_probability"),
        skipped=Count("pk", filter=Q(from_model_knowledge=True)),
    )
    skipped, labelled = counts["skipped"], counts["labelled"]
    min_probability = verification.settings.get("quick_min_probability")
    summary = {
        "min_probability": min_probability,
        "labelled_claims": labelled,
        "skipped_claims": skipped,
        "searches_saved": skipped,
        "pages_saved": skipped * int(verification.settings.get("top_k_results") or 0),
        # Whether the model server gave the labels' probabilities; None before any label came.
        "logprobs": counts["with_probability"] > 0 if labelled else None,
    }
    return {**summary, "note": _note(summary, finished=verification.status in FINISHED)}


def _note(summary: dict, *, finished: bool) -> str:
    skipped = summary["skipped_claims"]
    if skipped:
        return (
            f"{skipped} claim{'s' if skipped != 1 else ''} answered from the model's own knowledge, not searched: "
            f"{skipped} web search{'es' if skipped != 1 else ''} and up to {summary['pages_saved']} pages saved"
        )
    if summary["logprobs"] is False:
        return (
            "no search skipped: the model server gave no token probabilities (logprobs), so no label of the "
            "model's could be trusted, and every claim was searched"
        )
    if summary["labelled_claims"]:
        threshold = summary["min_probability"]
        return f"no search skipped: the model was not sure enough of any claim (probability {threshold})"
    return "no search skipped: the model gave no labels" if finished else "no search skipped so far"


# Said of a claim answered from the model's own knowledge while the view leaves it out (the default).
LEFT_OUT_UNLESS_COUNTED = "left out of the score unless the model's own knowledge is counted in"


def no_score_note(tick: dict | None, scores: Scores, *, claims: int, finished: bool) -> str:
    """Why a finished run has no overall score when the claims answered from the model's own
    knowledge are all it has to count and the view leaves them out (`tick`: model_knowledge_tick;
    `claims`: how many the run has); "" otherwise."""
    if not finished or not tick or tick["included"] or scores.overall.total:
        return ""
    count = tick["count"]
    claims_words = f"{count} claim{'s' if count != 1 else ''}"
    put_in = (
        f"Tick “Count the {claims_words} answered from the model's own knowledge” "
        f"to count {'it' if count == 1 else 'them'} in."
    )
    if count == claims:
        return (
            f"No score: every claim was answered {FROM_MODEL_KNOWLEDGE}, and such answers are left out of the "
            f"score. {put_in}"
        )
    return (
        f"No score: no evidence from a source could be counted, and the {claims_words} answered "
        f"{FROM_MODEL_KNOWLEDGE} {'is' if count == 1 else 'are'} left out of the score. {put_in}"
    )


def model_knowledge_tick(records: list[EvidenceRecord], state: ViewState) -> dict | None:
    """The result page's tick that counts the claims answered from the model's own knowledge
    in the scores (kept in the URL, as the source types' ticks are); None when there are none."""
    count = sum(record.kind == MODEL_KNOWLEDGE for record in records)
    if not count:
        return None
    return {"count": count, "included": state.model_knowledge, "toggle_query": state.toggling_model_knowledge().query()}
