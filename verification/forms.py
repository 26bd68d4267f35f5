"""The paste form and run settings, validated in one place for the web UI, the API and the CLI."""

from django import forms
from django.conf import settings

from verification import documents, domain_lists, providers
from verification.documents import EVIDENCE_MODES, DocumentDraft, looks_binary
from verification.pipeline import segment
from verification.pipeline.domains import MAX_RUN_BLOCKED_DOMAINS

DEFAULT_SETTINGS = {
    "retrieval_mode": "dense",
    "top_k_results": 5,
    "top_k_passages": 3,
    "context_size": 1,
    "evidence": "web",
}
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
        # Split as the run will split it: what is refused here is exactly what the run would
        # have found no sentence in (it would start, then fail).
        sentences = len(segment.segment(text))
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
        return _drafts(self.cleaned_data["files"], documents.uploaded_document)

    def clean(self) -> dict:
        cleaned = super().clean()
        if "sources" not in cleaned or "files" not in cleaned:
            return cleaned  # their own errors are said already
        given = [*cleaned["sources"], *cleaned["files"]]
        mode = cleaned.get("evidence") or DEFAULT_SETTINGS["evidence"]
        if mode == "web":
            if given:
                self.add_error(
                    "evidence",
                    "You gave documents, but the evidence mode is “web”: choose “documents” or “both” to read them.",
                )
            return cleaned
        try:
            self.documents = documents.checked([*self.inherited, *given], mode)
        except forms.ValidationError as error:
            self.add_error("sources", error)
        return cleaned

    def clean_model(self) -> str:
        return self.cleaned_data["model"] or self.fields["model"].initial

    def run_settings(self) -> dict:
        """The validated settings, defaults filled in, as stored with the run."""
        chosen = {name: self.cleaned_data.get(name) for name in DEFAULT_SETTINGS}
        return {
            "model": self.cleaned_data["model"],
            **DEFAULT_SETTINGS,
            **{name: value for name, value in chosen.items() if value not in (None, "")},
            **domain_lists.run_settings(self.cleaned_data.get("blocked_domains") or []),
        }


def _drafts(given, read) -> list[DocumentDraft]:
    """Each given document read by `read`; every one that cannot be is named in one error, so
    a person fixes them all at once."""
    drafts, problems = [], []
    for item in given:
        try:
            drafts.append(read(item))
        except forms.ValidationError as error:
            problems.append(error)
    if problems:
        raise forms.ValidationError(problems)
    return drafts
