"""Each source's type: from the rule table or a host's known answer at once, else asked of the
LLM once per host, the hosts of a run together, off the critical path."""

import logging
from collections import defaultdict
from collections.abc import Iterable

from verification import services
from verification.clients import llm_slots, providers
from verification.models import (
    Source,
    Verification,
)
from verification.pipeline import categorize
from verification.pipeline.types import (
    StepError,
)
from verification.worker import base, heartbeat, joins

logger = logging.getLogger(__name__)


def _fail_categorize(host, verification_id, *, reason: str, transient: bool = True) -> None:
    _fail_categorize_hosts([host], verification_id, reason=reason, transient=transient)


def _fail_categorize_hosts(hosts, verification_id, *, reason: str, transient: bool = True) -> None:
    # A type asked again on a retry whatever the failure: the fallback ("other") is a guess.
    for host in hosts:
        joins.after_hosts_typed(
            services.host_category_answer(host, source_type="other", decided_by=f"fallback: {reason}")
        )


@base.step("deciding a source's type", give_up=_fail_categorize_hosts)
def hosts_categorize(hosts: list[str], verification_id: str) -> None:
    _ask_types(hosts, verification_id)


@base.step("deciding a source's type", give_up=_fail_categorize)
def host_categorize(host: str, verification_id: str) -> None:
    """One host: what queues filled before hosts were asked together still hold."""
    _ask_types([host], verification_id)


def _ask_types(hosts: list[str], verification_id: str) -> None:
    """Asked by the first run that met the hosts, in one call; its usage counts there. Hosts
    the model's answer left out are asked once more, one by one.

    At a server that answers a few requests at a time (LLM_CONCURRENCY), the question waits
    behind every sentence's call; when its turn comes, the run's other searches have usually
    queued questions of their own: it asks theirs too, in the same call (each call pays the
    first token and the instructions), and those tasks then find their hosts answered."""
    heartbeat.hold(verification_id)  # even if cancelled: other runs wait for the answer
    model = Verification.objects.get(pk=verification_id).settings["model"]
    llm = providers.llm_client(model, priority=llm_slots.BACKGROUND)
    with llm.turn():
        hosts = _unanswered(hosts, verification_id, gather=llm.limited)
        if not hosts:
            return
        titles = dict(
            Source.objects.filter(verification_id=verification_id, host__in=hosts).values_list("host", "title")
        )
        try:
            if len(hosts) == 1:
                found = {hosts[0]: categorize.categorize_with_llm(llm, hosts[0], titles.get(hosts[0]) or "")}
            else:
                found = categorize.categorize_many_with_llm(llm, [(host, titles.get(host) or "") for host in hosts])
        except StepError as error:
            return _fail_categorize_hosts(hosts, verification_id, reason=str(error))
        finally:
            services.usage_add(verification_id, usage=llm.usage)
        # Saved before the turn is given back: a question waiting for it then finds them answered.
        for host, source_type in found.items():
            joins.after_hosts_typed(
                services.host_category_answer(host, source_type=source_type.value, decided_by="llm")
            )
    left_out = [host for host in hosts if host not in found]
    for host in left_out:
        base.send("hosts_categorize", [host], verification_id)


def _unanswered(hosts: list[str], verification_id: str, *, gather: bool) -> list[str]:
    """The hosts still without an answer (a task that gathered them may have asked them
    meanwhile) and, with `gather`, the run's other hosts whose question is in flight, up to a
    call's worth."""
    candidates = list(hosts)
    if gather:
        untyped = Source.objects.filter(verification_id=verification_id, source_type="").values_list("host", flat=True)
        candidates += sorted(set(untyped) - set(hosts))
    waiting = services.hosts_unanswered(candidates)
    return [host for host in candidates if host in waiting][: max(len(hosts), categorize.HOSTS_PER_CALL)]


def type_sources(sources: Iterable[Source], *, ask_again: bool = False) -> None:
    """Each source's type from the rule table or the per-host answer now; else the LLM, once
    per host (whoever claims the question asks; the others' sources are typed by its answer),
    the hosts of one run asked together in a task of their own, off the critical path.
    `ask_again`: the sweeper asks even if a question is in flight (its asker may have died with it)."""
    to_ask: dict[str, list[str]] = defaultdict(list)
    for source in sources:
        rule = categorize.categorize_by_rules(source.host)
        if rule:
            _type_source(source, rule.value, "rules")
            continue
        category, asking = services.host_category_claim(source.host)
        if category.source_type:
            _type_source(source, category.source_type, "cache")
        elif (asking or ask_again) and source.host not in to_ask[str(source.verification_id)]:
            to_ask[str(source.verification_id)].append(source.host)
    for verification_id, hosts in to_ask.items():
        for start in range(0, len(hosts), categorize.HOSTS_PER_CALL):
            base.send("hosts_categorize", hosts[start : start + categorize.HOSTS_PER_CALL], verification_id)


def _type_source(source: Source, source_type: str, decided_by: str) -> None:
    # The type can be the last thing the run waits for: its pages may all be read and judged
    # already (the fetch was enqueued before this), so the join is tried here too.
    if services.source_type_set(source, source_type=source_type, decided_by=decided_by):
        services.verification_finish(source.verification_id)
