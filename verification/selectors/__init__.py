"""Reads shaped for one page or endpoint: a fixed handful of queries per call, never one per row.

Split by what they serve: `records` (rows scoring reads, the finished-run cache), `progress`
(progress and problems), `result_json` (API, CLI, download), `result_page` (the page's rows and
facts), `report` (the report to hand on, in every format), `checks` (a browser's own runs) and
`changes` (what an edit changed).
"""

from verification.selectors.changes import (
    Changes,
    changes_since_edit,
    edited_into,
)
from verification.selectors.checks import (
    CheckRow,
    check_rows,
    runs_started_by,
)
from verification.selectors.progress import (
    PROBLEM_STEPS,
    run_is_starting,
    verification_problems,
    verification_progress,
)
from verification.selectors.records import (
    ClaimRecord,
    Verdicts,
    claim_records,
    client_run_times,
    client_spending,
    evidence_noun,
    evidence_records,
    is_stale,
    once_finished,
    permalink,
    source_providers,
    verdicts,
    verification_or_404,
    verification_scores,
    with_search_provider,
)
from verification.selectors.report import (
    Report,
    report_filename,
    verification_report,
)
from verification.selectors.result_json import (
    documents_json,
    documents_of,
    domains_left_out,
    evidence_mode,
    run_settings_json,
    verification_result,
)
from verification.selectors.result_page import (
    SentenceRow,
    TypeRow,
    passage_parts,
    result_page,
    title_words,
)

__all__ = [
    "Changes",
    "changes_since_edit",
    "edited_into",
    "Report",
    "report_filename",
    "verification_report",
    "CheckRow",
    "check_rows",
    "runs_started_by",
    "permalink",
    "once_finished",
    "evidence_records",
    "evidence_noun",
    "ClaimRecord",
    "claim_records",
    "verification_scores",
    "Verdicts",
    "verdicts",
    "is_stale",
    "with_search_provider",
    "source_providers",
    "client_run_times",
    "client_spending",
    "verification_or_404",
    "run_is_starting",
    "verification_progress",
    "PROBLEM_STEPS",
    "verification_problems",
    "verification_result",
    "evidence_mode",
    "documents_json",
    "documents_of",
    "run_settings_json",
    "domains_left_out",
    "SentenceRow",
    "TypeRow",
    "result_page",
    "title_words",
    "passage_parts",
]
