"""Domain lists as a run sees them: the server's (BLOCKED_DOMAINS, ALLOWED_DOMAINS) and the run's
own block list, stored with the run when it is created. The worker filters by what the run
stored, and the result shows it, so a shared result says what it left out even after the
server's lists change. The matching itself is pure: verification/pipeline/domains.py."""

from django import forms
from django.conf import settings

from verification.pipeline.domains import (
    MAX_RUN_BLOCKED_DOMAINS,
    DomainRules,
    InvalidDomain,
    parse_domain_list,
    split_domain_text,
)

# Keys of a run's settings.
RUN_BLOCKED = "blocked_domains"
SERVER_BLOCKED = "server_blocked_domains"
SERVER_ALLOWED = "server_allowed_domains"


class DomainListField(forms.Field):
    """Domains typed in a box (commas, spaces or new lines between them) or sent as a JSON list
    by the API; each must be a domain, at most MAX_RUN_BLOCKED_DOMAINS of them."""

    widget = forms.Textarea(attrs={"rows": 2, "placeholder": "example.com, spam.example.org"})

    def to_python(self, value) -> list[str]:
        if value in (None, ""):
            return []
        entries = [str(item) for item in value] if isinstance(value, list | tuple) else split_domain_text(str(value))
        problems = []
        for entry in entries:
            try:
                parse_domain_list([entry])
            except InvalidDomain as error:
                problems.append(str(error))
        if problems:
            raise forms.ValidationError(problems)
        domains = parse_domain_list(entries)
        if len(domains) > MAX_RUN_BLOCKED_DOMAINS:
            raise forms.ValidationError(
                f"{len(domains)} domains given; a run blocks at most {MAX_RUN_BLOCKED_DOMAINS}."
            )
        return domains

    def prepare_value(self, value) -> str:
        # A run being edited hands its stored list back to the box as text.
        return ", ".join(value) if isinstance(value, list | tuple) else (value or "")


def run_settings(blocked: list[str]) -> dict:
    """The lists a new run stores: its own block list and the server's lists of the moment."""
    return {
        RUN_BLOCKED: list(blocked),
        SERVER_BLOCKED: list(settings.BLOCKED_DOMAINS),
        SERVER_ALLOWED: list(settings.ALLOWED_DOMAINS),
    }


def rules_for(run_settings: dict) -> DomainRules:
    """What a run may read. Runs created before domain lists existed read everything."""
    return DomainRules.of(
        blocked=[*run_settings.get(RUN_BLOCKED, ()), *run_settings.get(SERVER_BLOCKED, ())],
        allowed=run_settings.get(SERVER_ALLOWED, ()),
    )
