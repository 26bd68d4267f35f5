"""A PDF search result through the whole engine: API → Celery worker on real Redis → a fake site
that serves a real PDF (under a misleading content type) → its text as evidence, titled by its
metadata."""

from dataclasses import dataclass
from datetime import datetime

import pytest

from tests.fakes import FakePage
from tests.pdfs import inflate_page, make_pdf
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


def test_a_pdf_that_takes_too_long_to_read_fails_alone_and_the_run_goes_on(client, world, celery_worker, settings):
    # 1.5 MB of drawing instructions on one page (under the page limit): seconds of CPU to read.
    settings.CPU_TIME_LIMIT = 0.5
    heavy = inflate_page(make_pdf([["Norbridge lighthouse, 1854"]]), 0, megabytes=1.5)
    report = make_pdf([["Coastal heritage report", "The Norbridge lighthouse was built in 1854 on the northern cape."]])
    world.sites[0].pages["/heavy"] = PdfPage("Norbridge lighthouse heavy", CLAIM, document=heavy)
    world.sites[0].pages["/report"] = PdfPage("Norbridge lighthouse report", CLAIM, document=report)

    result = wait_for(client, run(client, text=CLAIM, retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    sources = {s["url"].rsplit("/", 1)[1]: s for s in result["sources"]}
    assert (sources["heavy"]["status"], sources["heavy"]["error"]) == (
        "failed",
        "the PDF took too long to read (over 0.5 s)",
    )
    assert sources["report"]["status"] == "done"
    assert any(e["url"].endswith("/report") for e in all_evidence(result))
