"""Web pages. Thin: parse the request, call a service or selector, render. HTMX requests get the
fragment they swap (a `{% partialdef %}` of the same template)."""

import json
import uuid

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseForbidden, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from verification import selectors, services
from verification.access import limits, ownership
from verification.clients import providers
from verification.inputs.forms import DEFAULT_SETTINGS, VerificationForm, searches_web
from verification.models import Verification
from verification.selectors.trail_result import is_trail, trail_result
from verification.selectors.viewstate import ViewState
from verification.web import reports, trail_reports, trails
from verification.web.examples import EXAMPLES, example_text
from verification.worker import resume, start


@require_http_methods(["GET", "POST"])
def home(request: HttpRequest) -> HttpResponse:
    edited_from = _edited_from(request)
    if request.method == "GET":
        return _home(request, _initial_form(edited_from, example=request.GET.get("example")), edited_from)
    form = VerificationForm(request.POST, request.FILES, inherited=_reusable_documents(request, edited_from))
    if not form.is_valid():
        return _home(request, form, edited_from, status=400)
    run_settings = form.run_settings()
    if providers.configuration_problems(run_settings["model"], web_search=searches_web(run_settings)):
        # The page names the variables to set; the pasted text stays in the form.
        return _home(request, form, edited_from, status=503)
    client = limits.request_client(request)
    token = ownership.request_token(request) or ownership.new_token()
    started = start.start_run(
        client,
        lambda: services.verification_create(
            text=form.cleaned_data["text"],
            settings=run_settings,
            edited_from=edited_from,
            client=client,
            creator=ownership.creator_key(token),
            documents=form.documents,
            segments=form.segments,
        ),
        files=request.FILES.getlist("files"),
    )
    if isinstance(started, limits.RateLimited):
        # Said above the form, the pasted text kept, as for any other refusal.
        response = _home(request, form, edited_from, status=429, limit_error=started.message())
        response["Retry-After"] = str(started.retry_after)
        return response
    verification = started
    # An edited run opens in the view its earlier run was edited from (its rule, its types left out).
    view = _carried_view(request.POST.get("view", "")) if edited_from else ""
    result = redirect(reverse("verification:result", args=[verification.pk]) + view)
    return ownership.remember(result, request, token)


def _carried_view(query: str) -> str:
    """The view an Edit link carried, re-parsed (never echoed as it came)."""
    return ViewState.from_query(QueryDict(query.lstrip("?")[:4000])).carried_to_another_run().query()


def _reusable_documents(request: HttpRequest, edited_from: Verification | None) -> list:
    """An edited run's documents, for its creator only: anyone else who holds the permalink
    could otherwise check a text of their own against them and read them back as evidence.
    The form lists them one by one: only those still ticked are kept."""
    if not ownership.is_creator(request, edited_from):
        return []
    drafts = selectors.documents_of(edited_from)
    if not request.POST.get("documents_listed"):  # a post that did not list them (the API's, a script's) keeps all
        return drafts
    kept = set(request.POST.getlist("keep_document"))
    # Both in the order the documents were given (by id).
    ids = [str(document["id"]) for document in selectors.documents_json(edited_from)]
    return [draft for draft, document_id in zip(drafts, ids, strict=True) if document_id in kept]


def _kept_documents(request: HttpRequest, documents: list[dict]) -> list[dict]:
    """The earlier run's documents as the form lists them, each ticked or not: as the reader left
    them on a form shown again; at first, every one that could be read."""
    if request.method == "POST" and request.POST.get("documents_listed"):
        kept = set(request.POST.getlist("keep_document"))
        return [{**document, "kept": str(document["id"]) in kept} for document in documents]
    return [{**document, "kept": document["status"] != "failed"} for document in documents]


def _edited_from(request: HttpRequest) -> Verification | None:
    """The run an "Edit text" link came from (`?edit=<id>`, or the form's hidden field)."""
    value = request.GET.get("edit") or request.POST.get("edited_from") or ""
    try:
        return Verification.objects.filter(pk=uuid.UUID(value)).first()
    except ValueError:  # no id, or not one: an ordinary new run
        return None


def _initial_form(edited_from: Verification | None, *, example: str | None = None) -> VerificationForm:
    if edited_from is None:
        # An example link (`?example=1`) fills the box by a plain page load: it works without JavaScript.
        text = example_text(example)
        return VerificationForm(initial={"text": text} if text else None)
    return VerificationForm(initial={"text": edited_from.text, **DEFAULT_SETTINGS, **edited_from.settings})


def _home(request, form, edited_from, status=200, limit_error="") -> HttpResponse:
    documents = selectors.documents_json(edited_from) if edited_from else []
    view = request.POST.get("view", "") if request.method == "POST" else request.GET.urlencode()
    if form.is_bound:
        form.describe_errors()
    context = {
        "edit_view": _carried_view(view) if edited_from else "",
        "form": form,
        "error_summary": form.error_summary() if form.is_bound else [],
        "edited_from": edited_from,
        "limit_error": limit_error,
        "problems": providers.configuration_problems(form["model"].value() or None),
        "max_chars": settings.MAX_TEXT_CHARS,
        "kept_documents": _kept_documents(request, documents) if ownership.is_creator(request, edited_from) else [],
        "withheld_documents": bool(documents) and not ownership.is_creator(request, edited_from),
        "max_documents": settings.MAX_DOCUMENTS,
        "max_upload_mb": settings.MAX_UPLOAD_BYTES / 2**20,
        "examples": EXAMPLES,
    }
    return render(request, "verification/home.html", context, status=status)


@require_GET
def favicon(request: HttpRequest) -> FileResponse:
    """Browsers ask /favicon.ico whatever the page links; a 404 there fills every log."""
    response = FileResponse((settings.BASE_DIR / "static" / "favicon.ico").open("rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_GET
def about(request: HttpRequest) -> HttpResponse:
    context = {
        "defaults": DEFAULT_SETTINGS,
        "max_chars": settings.MAX_TEXT_CHARS,
        "max_claims": settings.MAX_CLAIMS_PER_RUN,
        "runs_per_hour": settings.RUNS_PER_HOUR,
    }
    return render(request, "verification/about.html", context)


@require_GET
@vary_on_headers("HX-Request")
def result(request: HttpRequest, verification_id) -> HttpResponse:
    verification = _verification(verification_id)
    if trails.is_trail(verification):  # a trail run has a page of its own (web/trails.py)
        return trails.trail_page(request, verification)
    context = selectors.result_page(verification, ViewState.from_query(request.GET))
    context["is_creator"] = ownership.is_creator(request, verification)
    # A retry changes the run: its creator's. Anyone else may start a run of their own from its text.
    context["check_again"] = context["can_retry"] and not context["is_creator"]
    context["can_retry"] = context["can_retry"] and context["is_creator"]
    context["changes"] = selectors.changes_since_edit(verification, context["state"])
    context["edited_into"] = selectors.edited_into(verification)
    context["edit_view"] = context["state"].carried_to_another_run().query()
    context["report"] = _printed_report(request, verification, context)
    # htmx restoring history it did not cache wants the whole page, not the fragment.
    fragment = request.htmx and not request.htmx.history_restore_request
    # A viewer's own change (a checkbox, the score rule) is announced; a progress poll is not.
    context["announce"] = bool(fragment and request.htmx.trigger and request.htmx.trigger != "result-body")
    template = "verification/result.html#result-body" if fragment else "verification/result.html"
    return render(request, template, context)


def _printed_report(request: HttpRequest, verification: Verification, context: dict):
    """What the page prints: every sentence and its evidence, as the report has them. Only once
    the run is finished: while it goes on, each poll would read every claim and evidence item again."""
    if not context["finished"]:
        return None
    return selectors.verification_report(verification, context["state"])


@require_POST
def retry(request: HttpRequest, verification_id) -> HttpResponse:
    """Re-queue the failed parts of a finished run in place; back to its page either way."""
    verification = _verification(verification_id)
    if not ownership.is_creator(request, verification):
        return HttpResponseForbidden(ownership.RETRY_REFUSED, content_type="text/plain; charset=utf-8")
    resume.retry_failed(verification.pk)
    # The viewer's selection survives, re-parsed: the form field is never echoed as it came.
    state = ViewState.from_query(QueryDict(request.POST.get("query", "").lstrip("?")[:4000]))
    return redirect(reverse("verification:result", args=[verification.pk]) + state.query())


@require_GET
def result_json(request: HttpRequest, verification_id) -> HttpResponse:
    verification = _verification(verification_id)
    data = selectors.verification_result(verification, ViewState.from_query(request.GET))
    response = HttpResponse(json.dumps(data, indent=2, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="factsite-{verification.pk}.json"'
    return response


# --- the report to hand on (selectors/report.py builds it, reports.py writes each format)


@require_GET
def report_markdown(request: HttpRequest, verification_id) -> HttpResponse:
    if (trail := _trail_download(request, verification_id, "md")) is not None:
        return trail
    report, address = _report(request, verification_id)
    body = reports.report_markdown(report, address=address)
    return _attachment(body, "text/markdown; charset=utf-8", selectors.report_filename(report, "report.md"))


@require_GET
def report_html(request: HttpRequest, verification_id) -> HttpResponse:
    if (trail := _trail_download(request, verification_id, "html")) is not None:
        return trail
    report, address = _report(request, verification_id)
    body = reports.report_html(report, address=address)
    return _attachment(body, "text/html; charset=utf-8", selectors.report_filename(report, "report.html"))


@require_GET
def evidence_csv(request: HttpRequest, verification_id) -> HttpResponse:
    if (trail := _trail_download(request, verification_id, "csv")) is not None:
        return trail
    report, _ = _report(request, verification_id)
    body = reports.evidence_csv(report)
    return _attachment(body, "text/csv; charset=utf-8", selectors.report_filename(report, "evidence.csv"))


def _report(request: HttpRequest, verification_id) -> tuple[selectors.Report, str]:
    """The report of the view the query string describes, and that view's address."""
    verification = _verification(verification_id)
    state = ViewState.from_query(request.GET)
    address = request.build_absolute_uri(reverse("verification:result", args=[verification.pk]) + state.query())
    return selectors.verification_report(verification, state), address


# A trail run's downloads, by the extension each of the report URLs above serves.
_TRAIL_DOWNLOADS = {
    "md": ("text/markdown; charset=utf-8", trail_reports.trail_report_markdown),
    "html": ("text/html; charset=utf-8", trail_reports.trail_report_html),
    # One row per node a claim's rounds read: no place for the text or the address.
    "csv": ("text/csv; charset=utf-8", lambda result, text, address: trail_reports.trail_csv(result)),
}


def _trail_download(request: HttpRequest, verification_id, kind: str) -> HttpResponse | None:
    """A trail run's report in the format `kind`; None for any other run (its own report)."""
    verification = _verification(verification_id)
    if not is_trail(verification):
        return None
    content_type, write = _TRAIL_DOWNLOADS[kind]
    address = request.build_absolute_uri(reverse("verification:result", args=[verification.pk]))
    result = trail_result(verification, with_texts=ownership.may_read_trail_texts(request, verification))
    body = write(result, verification.text, address=address)
    return _attachment(body, content_type, f"factsite-trail-{verification.pk}.{kind}")


def _attachment(body: str, content_type: str, filename: str) -> HttpResponse:
    # An attachment is saved, not shown: the HTML report's own <style> never meets this site's
    # Content-Security-Policy, and nothing in a report runs in our origin.
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _verification(verification_id) -> Verification:
    verification = selectors.verification_or_404(verification_id)
    return services.verification_expire_if_stale(verification, timeout_s=settings.RUN_TIMEOUT)


# --- My checks: the runs this browser started (ownership.py), and what only their creator may do


CHECKS_PER_PAGE = 25


@require_GET
def checks(request: HttpRequest) -> HttpResponse:
    token = ownership.request_token(request)
    runs = selectors.runs_started_by(ownership.creator_key(token) if token else "")
    page = Paginator(runs, CHECKS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"page": page, "rows": selectors.check_rows(page.object_list), "done": request.GET.get("done", "")}
    return render(request, "verification/checks.html", context)


@require_http_methods(["GET", "POST"])
def delete(request: HttpRequest, verification_id) -> HttpResponse:
    """GET asks to confirm; POST deletes the run and everything stored for it."""
    verification = _own_verification(request, verification_id)
    if request.method == "GET":
        context = {"verification": verification, "title": selectors.title_words(verification.text)}
        return render(request, "verification/delete.html", context)
    services.verification_delete(verification.pk)
    return redirect(reverse("verification:checks") + "?done=deleted")


@require_POST
def cancel(request: HttpRequest, verification_id) -> HttpResponse:
    verification = _own_verification(request, verification_id)
    services.verification_cancel(verification.pk)
    return redirect("verification:result", verification_id=verification.pk)


@require_POST
def forget_checks(request: HttpRequest) -> HttpResponse:
    """Clears this browser's list: a new token from now on. The runs stay at their permalinks,
    but nobody can list them any more, nor reuse their documents."""
    response = redirect(reverse("verification:checks") + "?done=forgotten")
    response.delete_cookie(ownership.COOKIE, samesite="Lax")
    return response


def _own_verification(request: HttpRequest, verification_id) -> Verification:
    verification = _verification(verification_id)
    if not ownership.is_creator(request, verification):
        raise PermissionDenied(ownership.NOT_CREATOR)
    return verification
