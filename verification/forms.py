"""The paste form and run settings, validated in one place for the web UI, the API and the CLI."""

import unicodedata

from django import forms
from django.conf import settings

from verification import providers
from verification.pipeline import segment

DEFAULT_SETTINGS = {
    "retrieval_mode": "dense",
    "top_k_results": 5,
    "top_k_passages": 3,
    "context_size": 1,
}
RETRIEVAL_MODES = [
    ("dense", "Dense: sentence embeddings (re-scoring BM25's shortlist)"),
    ("sparse", "Sparse: BM25 keyword match"),
]


def looks_binary(text: str) -> bool:
    """NUL bytes or lone surrogates (which no encoding can store), or more than 5% control or
    undecodable characters: not text a person wrote."""
    if "\x00" in text or any("\ud800" <= ch <= "\udfff" for ch in text):
        return True
    odd = sum(
        1 for ch in text if ch == "\ufffd" or (unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\t\n\r")
    )
    return odd > 0.05 * len(text)


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

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        names = providers.model_names()
        self.fields["model"].choices = [(name, name) for name in names]
        self.fields["model"].initial = names[0] if names else None
        for name, value in DEFAULT_SETTINGS.items():
            self.fields[name].initial = value

    @property
    def advanced_fields(self) -> list:
        return [self[name] for name in ("top_k_results", "top_k_passages", "context_size")]

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
        self._check_budget(text)
        return text

    def _check_budget(self, text: str) -> None:
        """Every sentence costs at least one claim, so a text with more sentences than a run's
        claim budget cannot be checked whole: refused before it starts, sentences counted as the
        run will split them."""
        budget = settings.MAX_CLAIMS_PER_RUN
        if budget <= 0:
            return
        sentences = len(segment.segment(text))
        if sentences > budget:
            raise forms.ValidationError(
                f"This text has {sentences:,} sentences; a run checks at most {budget:,} claims "
                "(MAX_CLAIMS_PER_RUN). Shorten it or split it into several runs.",
                code="budget",
            )

    def clean_model(self) -> str:
        return self.cleaned_data["model"] or self.fields["model"].initial

    def run_settings(self) -> dict:
        """The validated settings, defaults filled in, as stored with the run."""
        chosen = {name: self.cleaned_data.get(name) for name in DEFAULT_SETTINGS}
        return {
            "model": self.cleaned_data["model"],
            **DEFAULT_SETTINGS,
            **{name: value for name, value in chosen.items() if value not in (None, "")},
        }
