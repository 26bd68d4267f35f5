"""Modules imported at their first use, one thread at a time.

Some steps' libraries take seconds to import (nltk imports all of itself, and scipy and
scikit-learn with it), so a starting server imports them only when a page or a text is first
read. But two threads importing parts of one package at once can meet it half-initialised
(nltk's submodules import each other: "cannot import name 'sent_tokenize' from partially
initialized module"); behind this lock they never do."""

import importlib
import threading
from types import ModuleType

_lock = threading.RLock()


def load(name: str) -> ModuleType:
    with _lock:
        return importlib.import_module(name)
