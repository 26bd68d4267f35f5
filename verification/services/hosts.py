"""Source types per host: the shared cache of what the categorizer decided, and one question per host at a time."""

from datetime import timedelta

from django.utils import timezone

from verification.models import (
    HostCategory,
    Source,
    Status,
)

STALE_QUESTION = timedelta(minutes=10)


def source_type_set(source: Source, *, source_type: str, decided_by: str) -> bool:
    """True when this call typed the source (the caller then tries to finish its run: the
    type may be the last thing the run was waiting for)."""
    return (
        Source.objects.filter(pk=source.pk, source_type="").update(source_type=source_type, type_decided_by=decided_by)
        == 1
    )


def host_category_claim(host: str) -> tuple[HostCategory, bool]:
    """The host's known type, or the right to ask the LLM (True: this caller asks)."""
    category, created = HostCategory.objects.get_or_create(host=host)
    if not created and not category.source_type and category.requested_at < timezone.now() - STALE_QUESTION:
        # Asked long ago and never answered (a worker died): ask again.
        created = (
            HostCategory.objects.filter(pk=category.pk, requested_at=category.requested_at).update(
                requested_at=timezone.now()
            )
            == 1
        )
    return category, created


def hosts_unanswered(hosts: list[str]) -> set[str]:
    """Of the hosts, those whose question is in flight: asked of the LLM, not answered yet."""
    return set(HostCategory.objects.filter(host__in=hosts, source_type="").values_list("host", flat=True))


def host_category_answer(host: str, *, source_type: str, decided_by: str) -> list:
    """Type every waiting source of the host; returns the runs they belong to."""
    if decided_by == "llm":
        HostCategory.objects.filter(host=host).update(source_type=source_type)
    else:
        HostCategory.objects.filter(host=host, source_type="").delete()  # let a later run ask again
    Source.objects.filter(host=host, source_type="").update(source_type=source_type, type_decided_by=decided_by)
    # Listed after the update, not before: a run whose source of this host was saved in
    # between is typed by the update too, and must be told (it may have nothing else left).
    return list(
        Source.objects.filter(host=host, verification__status=Status.RUNNING)
        .values_list("verification_id", flat=True)
        .distinct()
    )


def host_category_get(host: str) -> str | None:
    return HostCategory.objects.filter(host=host).exclude(source_type="").values_list("source_type", flat=True).first()


def host_category_save(*, host: str, source_type: str) -> None:
    HostCategory.objects.update_or_create(host=host, defaults={"source_type": source_type})
