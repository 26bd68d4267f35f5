"""Starting a trail run (issue 26): the form (the builder, or a file in any format a trail is read
from: inputs/trail_files), Edit (the form's builder filled with a run's trail) and Check again (a
new run of a run's trail, owned by whoever presses it).

A trail's texts are its creator's documents: only who may read them gets them in the builder. A
visitor's Check again copies them on the server, and its copy keeps them closed to its new owner
(`texts_withheld`, access/ownership.may_read_trail_texts)."""

import dataclasses
import uuid

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from verification import selectors
from verification.access import limits, ownership
from verification.clients import providers
from verification.inputs.trails import MAX_Q, TrailRefused, TrailSubmission, trail_submission
from verification.models import Verification
from verification.pipeline.trail_import import TrailImportError
from verification.selectors.trail_copy import trail_of_run
from verification.selectors.trail_result import is_trail
from verification.web.trail_form import TrailForm, builder_of_trail
from verification.worker import start

NOT_READABLE = (
    "Only the person who ran that trail can open its texts in the builder. “Check again” on its page starts "
    "your own run of the same trail."
)


@require_http_methods(["GET", "POST"])
def trail_new(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        form, notice = _edit_form(request, _run_to_edit(request.GET.get("edit", "")))
        return _form_page(request, form, notice=notice)
    form = TrailForm(request.POST, request.FILES)
    if form.adding:
        # One more box, everything typed kept; htmx swaps only the builder.
        return _form_page(request, form, fragment=bool(request.htmx))
    if not form.is_valid():
        return _form_page(request, form, status=400)
    try:
        data = form.cleaned_data
        submission = trail_submission(data["trail"], model=data["model"] or None, q=data["q"])
    except TrailRefused as refusal:
        return _form_page(request, form, status=400, refusal=str(refusal))
    return _started(request, form, submission)


@require_POST
def trail_again(request: HttpRequest, verification_id) -> HttpResponse:
    """A new run of the run's trail, with its model (when still offered) and q."""
    verification = selectors.verification_or_404(verification_id)
    if not is_trail(verification):
        raise Http404("This run is not a trail.")
    readable = ownership.may_read_trail_texts(request, verification)
    model = verification.settings.get("model")
    try:
        submission = trail_submission(
            trail_of_run(verification),
            model=model if model in providers.model_names() else None,
            q=verification.settings.get("trail_q"),
        )
    except (TrailRefused, TrailImportError) as refusal:
        form, _ = _edit_form(request, verification)
        return _form_page(request, form, status=400, refusal=str(refusal))
    if not readable:
        submission = dataclasses.replace(submission, settings={**submission.settings, "texts_withheld": True})
    return _started(request, _edit_form(request, verification)[0], submission)


def _started(request: HttpRequest, form: TrailForm, submission: TrailSubmission) -> HttpResponse:
    """The run started and the reader sent to it, or the form again saying why not."""
    if providers.configuration_problems(submission.settings["model"], web_search=False):
        return _form_page(request, form, status=503)  # the page names the variables to set
    client = limits.request_client(request)
    token = ownership.request_token(request) or ownership.new_token()
    started = start.start_trail_run(client, submission, creator=ownership.creator_key(token))
    if isinstance(started, limits.RateLimited):
        # Said above the form, every text kept, as for any other refusal.
        response = _form_page(request, form, status=429, refusal=started.message())
        response["Retry-After"] = str(started.retry_after)
        return response
    return ownership.remember(redirect(reverse("verification:result", args=[started.pk])), request, token)


def _run_to_edit(value: str) -> Verification | None:
    """The trail run an Edit link names (`?edit=<id>`); None for no id, or not one of a trail."""
    try:
        verification = Verification.objects.filter(pk=uuid.UUID(value)).first()
    except ValueError:
        return None
    return verification if verification is not None and is_trail(verification) else None


def _edit_form(request: HttpRequest, verification: Verification | None) -> tuple[TrailForm, str]:
    """The form filled with the run's trail, model and q for who may read its texts; else the
    empty form, and what the page tells them."""
    if verification is None:
        return TrailForm(), ""
    if not ownership.may_read_trail_texts(request, verification):
        return TrailForm(), NOT_READABLE
    initial = {"model": verification.settings.get("model"), "q": verification.settings.get("trail_q")}
    try:
        return TrailForm(initial=initial, builder=builder_of_trail(trail_of_run(verification))), ""
    except TrailRefused as refusal:
        return TrailForm(initial=initial), (
            f"That trail does not fit the builder: {refusal}. Download its JSON (“Trail result (JSON)” on its page) "
            "and choose it as the file below, edited or as it is."
        )


def _form_page(
    request: HttpRequest,
    form: TrailForm,
    *,
    status: int = 200,
    refusal: str = "",
    notice: str = "",
    fragment: bool = False,
) -> HttpResponse:
    errors = ([refusal] if refusal else []) + (form.refusals() if form.is_bound and not form.adding else [])
    context = {
        "form": form,
        "builder": form.builder,
        "errors": errors,
        "notice": notice,
        "file_chosen": bool(form.is_bound and form.files.get("trail_file")),
        "problems": providers.configuration_problems(form["model"].value() or None, web_search=False),
        "max_q": MAX_Q,
        "max_nodes": settings.TRAIL_MAX_NODES,
        "max_chars": settings.TRAIL_MAX_CHARS,
    }
    template = "verification/trail_new.html#builder" if fragment else "verification/trail_new.html"
    return render(request, template, context, status=status)
