"""The embedding model's ONNX export, as scripts/setup.sh runs it on every fresh setup, says
what it built and nothing of onnxruntime's advice to pre-process the model first."""

import logging
import os
import subprocess
import sys

from tests.conftest import ROOT
from verification.clients import embeddings

ADVICE = "Please consider to run pre-processing before quantization"


def test_the_export_at_setup_does_not_print_the_quantisers_advice(tmp_path):
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "EMBEDDING_CACHE_DIR": str(tmp_path / "models"),
        "HF_HUB_OFFLINE": "1",  # the packaged model: nothing is downloaded
    }

    done = subprocess.run(
        [sys.executable, "-m", "verification.clients.embeddings"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    assert ADVICE not in done.stdout + done.stderr
    assert "backend onnx-int8" in done.stderr  # its own line, naming what it built
    assert list((tmp_path / "models").glob("*/model.int8.onnx"))


def test_only_that_advice_is_left_out(caplog):
    # onnxruntime's quantiser logs it on the root logger, where other code's warnings go too.
    with caplog.at_level(logging.WARNING), embeddings._without_preprocessing_advice():
        logging.warning(ADVICE + ". Refer to example: https://github.com/microsoft/onnxruntime-inference-examples")
        logging.warning("a warning of another library")
    logging.warning(ADVICE + " (outside the export)")

    assert [record.getMessage() for record in caplog.records] == [
        "a warning of another library",
        ADVICE + " (outside the export)",
    ]
