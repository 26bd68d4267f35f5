"""Modules imported at their first use, one thread at a time.

Some steps' libraries take seconds to import (nltk imports all of itself), so a starting server
imports them only when a page or a text is first read. But two threads importing parts of one
package at once can meet it half-initialised (nltk's submodules import each other: "cannot
import name 'sent_tokenize' from partially initialized module"); behind this lock they never do.

nltk also imports scipy.stats and scikit-learn when they are installed (sentence-transformers
brings them): 1.8 of its 2.4 s of CPU here, paid by every process that splits sentences or stems
words (each worker and each CPU-pool process), for statistics and classifiers factsite never
calls. nltk guards each of those imports and works without them, so they are hidden from it
while it loads: for the loading thread only, and only the modules not imported yet."""

import importlib
import sys
import threading
from importlib.abc import MetaPathFinder
from types import ModuleType

_lock = threading.RLock()

# Packages nltk imports only for parts factsite does not use.
NOT_FOR_NLTK = ("scipy", "sklearn")


def load(name: str) -> ModuleType:
    with _lock:
        if name.partition(".")[0] != "nltk" or "nltk" in sys.modules:
            return importlib.import_module(name)
        hidden = _Hidden(NOT_FOR_NLTK)
        sys.meta_path.insert(0, hidden)
        try:
            return importlib.import_module(name)
        finally:
            sys.meta_path.remove(hidden)


class _Hidden(MetaPathFinder):
    """Makes `import scipy…` fail with ModuleNotFoundError in the thread that created it (other
    threads, a model loading with sentence-transformers say, import them as usual)."""

    def __init__(self, packages: tuple[str, ...]) -> None:
        self.packages = packages
        self.thread = threading.get_ident()

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.packages and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{fullname} is not loaded for nltk", name=fullname)
        return None
