"""lazy.load keeps nltk from importing scipy and scikit-learn (seconds of CPU per process),
without breaking what factsite uses of nltk, or those packages for anyone else."""

import subprocess
import sys
import threading

import pytest

from verification.pipeline.lazy import _Hidden

FRESH_PROCESS = """
import sys
from verification.pipeline import passages, segment
print(sorted(name for name in ("scipy", "sklearn") if name in sys.modules))
print([span.text for span in segment.split_sentences("Dr. Smith opened it in 1889. It still stands.")])
print(passages._stem("opened"), passages._stem("opening"))
import scipy.stats  # still importable afterwards
print(scipy.stats.__name__)
"""


def test_splitting_and_stemming_load_nltk_without_scipy_or_sklearn():
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[]",
        "['Dr. Smith opened it in 1889.', 'It still stands.']",
        "open open",
        "scipy.stats",
    ]


def test_the_hidden_packages_are_hidden_from_the_loading_thread_only():
    hidden = _Hidden(("scipy",))
    elsewhere = []
    other = threading.Thread(target=lambda: elsewhere.append(hidden.find_spec("scipy.stats")))
    other.start()
    other.join()

    with pytest.raises(ModuleNotFoundError):
        hidden.find_spec("scipy.stats")
    assert elsewhere == [None]
    assert hidden.find_spec("numpy") is None
