"""The paste form and run settings, validated in one place for the web UI, the API and the CLI."""

from django import forms
from django.conf import settings

from verification.clients import providers
from verification.inputs import documents, domain_lists
from verification.inputs.documents import EVIDENCE_MODES, EVIDENCE_SWITCHED_FROM, DocumentDraft, looks_binary
from verification.pipeline import cited_segments, languages
from verification.pipeline.citations import read_citations
from verification.pipeline.domains import MAX_RUN_BLOCKED_DOMAINS
from verification.pipeline.types import SegmentedSentence

DEFAULT_SETTINGS = {
    "retrieval_mode": "dense",
    "top_k_results": 5,
    "top_k_passages": 3,
    "context_size": 1,
    "evidence": "web",
    "quick": False,
    "citations": "also_search",
}
# In a run's settings: SECOND_SEARCH_BELOW as it was when the run was created (worker/joins.py).
SECOND_SEARCH_BELOW = "second_search_below"
# In a run's settings: WRITE_SEARCH_QUERIES as it was when the run was created (worker/decompose.py).
WRITE_SEARCH_QUERIES = "write_search_queries"
# In a quick run's settings: QUICK_MIN_PROBABILITY as it was when the run was created.
QUICK_MIN_PROBABILITY = "quick_min_probability"
QUICK_REFUSED = (
    "Quick mode takes some answers from the model's own knowledge, and that must never be mixed with "
    "your documents: untick quick mode, or check against the web alone."
)


def quick_mode(run_settings: dict) -> bool:
    """Whether a run labels its claims from the model's own knowledge and skips the searches of
    those it is sure of: asked for, and only ever with web evidence (documents and trails are
    checked against what they were given, never against the model's memory)."""
    return bool(run_settings.get("quick")) and run_settings.get("evidence", "web") == "web"


# What a run does with the text's own citations (issue 34): it always reads what each sentence cites,
# and searches the web as well, or not at all.
CITATION_MODES = [
    ("also_search", "Read what the text cites, and search the web as well"),
    ("only", "Cited sources only: read what the text cites, no web search"),
]


def unsupported_script_message(script: str) -> str:
    """Why a text mostly in a script factsite cannot read is refused, in a person's words."""
    return (
        f"This text is written in the {script} script, which factsite cannot yet split into sentences "
        "nor search the web in: its claims would not really be checked, so it is not run. Texts in "
        "Latin, Cyrillic, Greek, Arabic, Hebrew, Indian, Thai, Chinese, Japanese or Korean scripts can be checked."
    )


def cited_only(run_settings: dict) -> bool:
    """Whether a run reads only what its text cites, and searches nothing."""
    return run_settings.get("citations") == "only"


def searches_web(run_settings: dict) -> bool:
    """Whether a run needs a search provider: not with documents only, nor with cited sources only."""
    return run_settings.get("evidence", "web") != "documents" and not cited_only(run_settings)


RETRIEVAL_MODES = [
    ("dense", "Dense: sentence embeddings (re-scoring BM25's shortlist)"),
    ("sparse", "Sparse: BM25 keyword match"),
]


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented recipe): a list, empty when none."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None) -> list:
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(item, initial) for item in data]
        return [super().clean(data, initial)] if data else []


class VerificationForm(forms.Form):
    text = forms.CharField(
        label="Paste the text to verify",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 12, "placeholder": "Paste the text to verify"}),
        error_messages={"required": "Paste some text to verify."},
    )
    model = forms.ChoiceField(required=False, label="Language model")
    retrieval_mode = forms.ChoiceField(choices=RETRIEVAL_MODES, required=False, widget=forms.RadioSelect)
    top_k_results = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=10,
        label="Web results per claim",
        help_text="How many search results to read for each claim (1–10).",
    )
    top_k_passages = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=10,
        label="Passages per page",
        help_text="How many best-matching sentences to keep from each page (1–10).",
    )
    context_size = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=5,
        label="Context sentences",
        help_text="Sentences kept before and after each match, so the judge sees context (0–5).",
    )
    blocked_domains = domain_lists.DomainListField(
        required=False,
        label="Blocked domains",
        help_text=f"Results on these sites (and their subdomains) are never read nor counted; commas or new lines "
        f"between them, at most {MAX_RUN_BLOCKED_DOMAINS}.",
    )
    evidence = forms.ChoiceField(choices=EVIDENCE_MODES, required=False, widget=forms.RadioSelect, label="Evidence")
    quick = forms.BooleanField(
        required=False,
        label="Quick mode: skip the search for claims the model is sure of",
        help_text="The model also says whether it knows each claim to be true or false; a claim it is sure of "
        "(as its server reports the probability) is not searched, and is shown as from the model's own "
        "knowledge, not checked against any source, left out of the score unless you count it in. "
        "Web evidence only.",
    )
    citations = forms.ChoiceField(
        choices=CITATION_MODES, required=False, widget=forms.RadioSelect, label="The text's own citations"
    )
    sources = forms.CharField(
        required=False,
        label="Your documents: web addresses",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "https://example.org/report.html"}),
        help_text="One URL per line.",
    )
    files = MultipleFileField(
        required=False,
        label="Your documents: files",
        help_text="PDF, HTML, Markdown or plain text.",
    )

    def __init__(self, *args, inherited: list[DocumentDraft] | None = None, **kwargs) -> None:
        """`inherited`: the documents of the run being edited, kept unless the mode is web."""
        super().__init__(*args, **kwargs)
        self.inherited = list(inherited or [])
        self.documents: list[DocumentDraft] = []
        self.segments: list[SegmentedSentence] | None = None  # the text split, once it is valid
        # Files read fine, by name: a form shown again has lost them (no browser refills a file
        # input), so it names them to be chosen again.
        self.files_read: list[str] = []
        # "web" when documents came with the web mode: the run reads the web and them ("both").
        self.evidence_switched_from = ""
        names = providers.model_names()
        self.fields["model"].choices = [(name, name) for name in names]
        self.fields["model"].initial = names[0] if names else None
        for name, value in DEFAULT_SETTINGS.items():
            self.fields[name].initial = value

    @property
    def advanced_fields(self) -> list:
        return [self[name] for name in ("top_k_results", "top_k_passages", "context_size", "blocked_domains")]

    def clean_text(self) -> str:
        # Browsers send textarea lines as CRLF; sentence offsets index the text as stored.
        text = self.cleaned_data["text"].replace("\r\n", "\n").replace("\r", "\n")
        if not text.strip():
            raise forms.ValidationError("The text is empty: paste some text to verify.")
        if len(text) > settings.MAX_TEXT_CHARS:
            raise forms.ValidationError(
                f"The text is {len(text):,} characters long; the limit is {settings.MAX_TEXT_CHARS:,}. "
                "Verify it in parts."
            )
        if looks_binary(text):
            raise forms.ValidationError("This does not look like text (it contains binary or control characters).")
        if script := languages.unsupported_script(text):
            # Refused, not run: its claims could be neither split out nor searched, and a run would
            # show verdicts it cannot back (issue 36).
            raise forms.ValidationError(unsupported_script_message(script), code="unsupported_script")
        # Split as the run will split it: what is refused here is exactly what the run would
        # have found no sentence in (it would start, then fail).
        # Kept for the run (services.verification_create), so the text is split once.
        # Split without the text's own citation markers and reference lists (issue 34).
        # In its language (issue 36), as services.verification_create detects it too.
        cited = read_citations(text)
        self.segments = cited_segments.segment_cited(cited, languages.detect_language(cited.text) or "en")
        sentences = len(self.segments)
        if not sentences:
            raise forms.ValidationError(
                "There is no sentence to check in this text: it has no words, only symbols, emoji or punctuation.",
                code="no_sentence",
            )
        self._check_budget(sentences)
        return text

    def _check_budget(self, sentences: int) -> None:
        """Every sentence costs at least one claim, so a text with more sentences than a run's
        claim budget cannot be checked whole: refused before it starts."""
        budget = settings.MAX_CLAIMS_PER_RUN
        if budget > 0 and sentences > budget:
            raise forms.ValidationError(
                f"This text has {sentences:,} sentences; a run checks at most {budget:,} claims "
                "(MAX_CLAIMS_PER_RUN). Shorten it or split it into several runs.",
                code="budget",
            )

    def clean_sources(self) -> list[DocumentDraft]:
        return _drafts(documents.url_lines(self.cleaned_data["sources"]), documents.url_document)

    def clean_files(self) -> list[DocumentDraft]:
        return _drafts(self.cleaned_data["files"], documents.uploaded_document, read_names=self.files_read)

    def clean(self) -> dict:
        cleaned = super().clean()
        if "sources" not in cleaned or "files" not in cleaned:
            return cleaned  # their own errors are said already
        given = [*cleaned["sources"], *cleaned["files"]]
        mode = cleaned.get("evidence") or DEFAULT_SETTINGS["evidence"]
        if mode == "web" and given:
            # Documents given are meant to be read: the run reads them as well as the web, and
            # says so, rather than refusing a form whose intent is plain.
            self.evidence_switched_from, mode = mode, "both"
            cleaned["evidence"] = mode
        if mode == "web":
            return cleaned
        if cleaned.get("quick"):
            self.add_error("quick", QUICK_REFUSED)
        try:
            self.documents = documents.checked([*self.inherited, *given], mode)
        except forms.ValidationError as error:
            self.add_error("sources", error)
        return cleaned

    def clean_model(self) -> str:
        return self.cleaned_data["model"] or self.fields["model"].initial

    def refusal(self) -> str:
        """Why the input was refused, field by field on one line: the API's 400 `detail`, and an MCP tool's error."""
        return " ".join(f"{field}: {' '.join(messages)}" for field, messages in self.errors.items())

    def run_settings(self) -> dict:
        """The validated settings, defaults filled in, as stored with the run."""
        chosen = {name: self.cleaned_data.get(name) for name in DEFAULT_SETTINGS}
        switched = {EVIDENCE_SWITCHED_FROM: self.evidence_switched_from} if self.evidence_switched_from else {}
        return {
            "model": self.cleaned_data["model"],
            **DEFAULT_SETTINGS,
            **{name: value for name, value in chosen.items() if value not in (None, "")},
            **domain_lists.run_settings(self.cleaned_data.get("blocked_domains") or []),
            SECOND_SEARCH_BELOW: settings.SECOND_SEARCH_BELOW,
            # Quick mode's threshold as it was when the run was created: a resumed run trusts as it began.
            **({QUICK_MIN_PROBABILITY: settings.QUICK_MIN_PROBABILITY} if self.cleaned_data.get("quick") else {}),
            WRITE_SEARCH_QUERIES: settings.WRITE_SEARCH_QUERIES,
            **switched,
        }

    def error_summary(self) -> list[dict]:
        """Every error of a refused form, in the order of the page, each with the id of the
        control it is about (for the summary's links; "" for the form as a whole)."""
        found = [{"id": "", "label": "", "message": message} for message in self.non_field_errors()]
        for bound in self:
            for message in bound.errors:
                # Radio buttons have no one id (their legend is the label): the first button's.
                control = bound.id_for_label or f"{bound.auto_id}_0"
                found.append({"id": control, "label": bound.label or "", "message": message})
        return found

    def describe_errors(self) -> None:
        """Ties each control with an error to its message (shown next to it, id "<control>-error")
        for assistive technology."""
        for bound in self:
            if bound.errors:
                attrs = bound.field.widget.attrs
                attrs["aria-invalid"] = "true"
                attrs["aria-describedby"] = error_id(bound)


def error_id(bound) -> str:
    """The id of the message shown next to a field's control (home.html)."""
    return f"{bound.name}-error"


def _drafts(given, read, *, read_names: list[str] | None = None) -> list[DocumentDraft]:
    """Each given document read by `read`; every one that cannot be is named in one error, so
    a person fixes them all at once. `read_names` collects the names of those read fine."""
    drafts, problems = [], []
    for item in given:
        try:
            drafts.append(read(item))
        except forms.ValidationError as error:
            problems.append(error)
        else:
            if read_names is not None:
                read_names.append(drafts[-1].name)
    if problems:
        raise forms.ValidationError(problems)
    return drafts
