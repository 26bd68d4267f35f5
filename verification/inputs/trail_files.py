"""The trail form's file, in any format `manage.py trail_import` reads, told apart by its content:
factsite's trail JSON, a trail result's JSON, a LangChain map-reduce run, or GraphRAG output (a zip
of the output folder, or its parquet tables chosen together). Each is read by the CLI's importer
(pipeline/trail_import); this module only gets the files where it can read them.

GraphRAG output needs the answer to check, which the CLI takes as --answer: here a file named
answer.txt (or .md) in the zip or among the files, else the builder's final text. What it was
written from is what its "[Data: Reports (…); Sources (…); Entities (…)]" markers cite, as the CLI
reads them without --report (every report when it cites none, or cuts its Reports short with
"+more")."""

import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from verification.inputs.trails import TrailRefused, trail_from_json
from verification.pipeline.trail_import import FORMATS, TrailImportError, graphrag_trail, json_trail

ZIP_MAGIC, PARQUET_MAGIC = b"PK\x03\x04", b"PAR1"
# The tables graphrag_trail reads (GraphRAG 1.x/2.x names, then older versions'; entities and
# relationships only for an answer that cites them); a zip's other files (embeddings, graphs,
# logs) are never unpacked.
TABLES = frozenset(
    f"{prefix}{name}.parquet"
    for prefix in ("", "create_final_")
    for name in ("text_units", "communities", "community_reports", "entities", "relationships")
)
ANSWER_NAMES = frozenset({"answer.txt", "answer.md"})
# Parquet compresses text several times over: a zip may unpack to this many times the upload limit, no more.
UNPACKED_FACTOR = 8
GRAPHRAG_NEEDS = (
    "GraphRAG output needs the answer to check: paste it as the final text above, or add answer.txt to the zip"
)


def trail_from_files(uploads: list[UploadedFile], *, answer: str = "") -> object:
    """The trail the chosen files hold, as decoded JSON for inputs/trails.trail_submission.
    `answer`: the builder's final text, GraphRAG's answer when no file holds one."""
    heads = [_head(upload) for upload in uploads]
    if len(uploads) == 1 and not heads[0].startswith((ZIP_MAGIC, PARQUET_MAGIC)):
        return _json_file(uploads[0])
    if not any(head.startswith((ZIP_MAGIC, PARQUET_MAGIC)) for head in heads):
        raise TrailRefused(f"Choose one file, or GraphRAG's parquet tables together: {FORMATS}.")
    with tempfile.TemporaryDirectory(prefix="factsite-graphrag-") as folder:
        given = _unpack(uploads, heads, Path(folder))
        return _graphrag(Path(folder), given or answer)


def _head(upload: UploadedFile) -> bytes:
    upload.seek(0)
    head = upload.read(4)
    upload.seek(0)
    return head


def _json_file(upload: UploadedFile) -> object:
    data = trail_from_json(upload.read())
    try:
        return json_trail(data)
    except TrailImportError as error:
        raise TrailRefused(f"The file could not be read as a trail: {error}.") from None


def _unpack(uploads: list[UploadedFile], heads: list[bytes], folder: Path) -> str:
    """GraphRAG's tables written into `folder`; the answer a file held ("" without one)."""
    answer = ""
    for upload, head in zip(uploads, heads, strict=True):
        name = PurePosixPath(upload.name or "").name
        if head.startswith(ZIP_MAGIC):
            answer = _unzip(upload, folder) or answer
        elif name in TABLES:
            (folder / name).write_bytes(upload.read())
        elif name in ANSWER_NAMES:
            answer = _answer(upload.read(), name)
        else:
            raise TrailRefused(
                f"“{name}” is none of GraphRAG's tables ({', '.join(sorted(TABLES)[:3])}) and no answer.txt: "
                "choose the output folder's tables, or a zip of the folder."
            )
    return answer


def _unzip(upload: UploadedFile, folder: Path) -> str:
    budget = UNPACKED_FACTOR * settings.MAX_UPLOAD_BYTES
    answer = ""
    try:
        with zipfile.ZipFile(upload) as archive:
            for member in archive.infolist():
                name = PurePosixPath(member.filename).name
                if member.is_dir() or name not in TABLES | ANSWER_NAMES:
                    continue
                with archive.open(member) as stream:
                    # A member's size in the zip's directory may lie: read no more than the budget left.
                    content = stream.read(budget + 1)
                budget -= len(content)
                if budget < 0:
                    raise TrailRefused(
                        f"The zip unpacks to more than {UNPACKED_FACTOR} times the upload limit "
                        f"({settings.MAX_UPLOAD_BYTES / 2**20:g} MB, MAX_UPLOAD_BYTES)."
                    )
                if name in ANSWER_NAMES:
                    answer = _answer(content, name)
                else:
                    (folder / name).write_bytes(content)
    except (zipfile.BadZipFile, EOFError) as error:
        raise TrailRefused(f"The zip could not be read: {error}.") from None
    return answer


def _answer(content: bytes, name: str) -> str:
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TrailRefused(f"{name} is not UTF-8 text.") from None


def _graphrag(folder: Path, answer: str) -> dict:
    if not answer.strip():
        raise TrailRefused(f"{GRAPHRAG_NEEDS}.")
    try:
        return graphrag_trail(folder, answer, max_text_units=settings.TRAIL_MAX_NODES)
    except TrailImportError as error:
        # The importer names the folder: here a temporary one, of no use to the reader.
        said = str(error).replace(f"{folder}: ", "").replace(str(folder), "the output")
        raise TrailRefused(f"The GraphRAG output could not be read as a trail: {said}.") from None
    except (OSError, ValueError) as error:  # pyarrow's own errors about a damaged table
        raise TrailRefused(f"The GraphRAG output could not be read: {error}.") from None
