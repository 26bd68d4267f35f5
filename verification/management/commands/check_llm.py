"""`python manage.py check_llm [--model NAME]`: for each configured model (LLM_MODELS), one small
request per capability, and a table of what its server takes. What a refusal taught is kept
(the cache, per server and model) and the runs then use it. Exits 1 when a model cannot be used,
naming why (a bad key, address or model name)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from verification.clients import llm_check, providers


class Command(BaseCommand):
    help = "Check what each configured model's server takes (LLM_MODELS), and keep it for the runs."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", help="check only this model of LLM_MODELS")

    def handle(self, *args, model: str | None = None, **options) -> None:
        names = providers.model_names()
        if not names:
            raise CommandError("No language model is configured: set LLM_MODELS (e.g. gpt-5-mini).")
        if model and model not in names:
            raise CommandError(f"{model} is not in LLM_MODELS ({', '.join(names)}).")
        unusable = []
        for name in [model] if model else names:
            report = llm_check.check_model(providers.llm_client(name), api_key=settings.OPENAI_API_KEY)
            providers.model_check_keep(name, report.problem)
            self.stdout.write(llm_check.table(report) + "\n")
            if not report.ok:
                unusable.append(name)
        if unusable:
            raise CommandError(f"Not usable: {', '.join(unusable)} (above).")
