"""A PDF search result through the whole engine: API → Celery worker on real Redis → a fake site
that serves a real PDF (under a misleading content type) → its text as evidence, titled by its
metadata."""

from dataclasses import dataclass
from datetime import datetime

import pytest

from tests.fakes import FakePage
from tests.pdfs import make_pdf
from tests.test_engine import all_evidence, run, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM = "The Norbridge lighthouse was built in 1854."


@dataclass
class PdfPage(FakePage):
    """Served as bytes: `body` stays what the fake search engine indexes."""

    document: bytes = b""

    def html(self) -> bytes:
        return self.document


def test_a_pdf_search_result_is_read_as_evidence(client, world, celery_worker):
    report = make_pdf(
        [["Coastal heritage report", "The Norbridge lighthouse was built in 1854 on the northern cape."]],
        title="Norbridge coastal heritage report",
        created=datetime(2012, 5, 1),
    )
    world.sites[0].pages["/report"] = PdfPage(
        "Norbridge lighthouse report", CLAIM, content_type="application/octet-stream", document=report
    )

    result = wait_for(client, run(client, text=CLAIM, retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    source = next(s for s in result["sources"] if s["url"].endswith("/report"))
    assert source["status"] == "done", source["error"]
    assert source["title"] == "Norbridge coastal heritage report"
    evidence = next(e for e in all_evidence(result) if e["url"].endswith("/report"))
    assert "built in 1854 on the northern cape" in evidence["passage"]
