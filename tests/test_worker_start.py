"""What a worker process imports before it takes its first task: every module it loads there is
CPU paid at each cold start, on the critical path of the runs submitted while it starts."""

import subprocess
import sys

from tests.processes import ROOT

WORKER_IMPORTS = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")
import django
django.setup()
import factsite.celery
import verification.tasks
print(sorted(name for name in ("numpy", "nltk", "rank_bm25", "verification.pipeline.passages") if name in sys.modules))
"""


def test_a_worker_imports_its_tasks_without_the_passage_ranker():
    # The ranker (numpy, nltk, rank_bm25: ~0.4 s of CPU) runs in the CPU pool's processes, which
    # import it themselves; the worker's search step needs only the stopwords.
    done = subprocess.run([sys.executable, "-c", WORKER_IMPORTS], capture_output=True, text=True, timeout=120, cwd=ROOT)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
