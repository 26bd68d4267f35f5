"""The user's own documents, stored as a run's sources."""

import hashlib
from collections.abc import Sequence

from verification.inputs.documents import DocumentDraft
from verification.models import (
    Origin,
    Source,
    SourceType,
    Upload,
    Verification,
)


def documents_save(*, verification: Verification, drafts: Sequence[DocumentDraft]) -> list[Source]:
    """The user's documents as the run's sources, in the order given. Typed at once ("your
    document", decided by the user): they never go to the categorizer."""
    sources = []
    for draft in drafts:
        source = Source.objects.create(
            verification=verification,
            url=draft.url,
            host=draft.host,
            title=draft.name,
            origin=Origin.DOCUMENT,
            source_type=SourceType.YOUR_DOCUMENT,
            type_decided_by="user",
        )
        if draft.is_upload:
            Upload.objects.create(
                source=source,
                name=draft.name,
                content_type=draft.content_type,
                sha256=hashlib.sha256(draft.body).hexdigest(),
                body=draft.body,
            )
        sources.append(source)
    return sources
