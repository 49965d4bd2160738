"""Run at the start of every Python process the test suite starts (tests/conftest.py puts this folder
first on PYTHONPATH): the loopback guard (tests/loopback_guard.py), recording in the folder its
environment names; then the ``sitecustomize`` this file hides, if any, as it would have run."""

import importlib.machinery
import importlib.util
import os
import sys


def _guard() -> None:
    folder = os.environ.get("BIASEVAL_LOOPBACK_GUARD_LOG")
    if not folder:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    # loaded from its file, not imported: tests/ on this process's sys.path would shadow its own modules
    spec = importlib.util.spec_from_file_location("_loopback_guard", os.path.join(os.path.dirname(here),
                                                                                  "loopback_guard.py"))
    guard = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = guard  # dataclasses and pickling look a module up by name
    spec.loader.exec_module(guard)
    guard.install(folder)


def _run_the_sitecustomize_hidden_here() -> None:
    """Python runs only the first ``sitecustomize`` on sys.path: run the next one, as if this folder
    were not there (each folder once, so two files doing the same cannot loop)."""
    ran = sys.__dict__.setdefault("_sitecustomize_folders_run", set())
    ran.add(os.path.dirname(os.path.abspath(__file__)))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) not in ran]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin:
        ran.add(os.path.dirname(os.path.abspath(spec.origin)))
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


_guard()
_run_the_sitecustomize_hidden_here()
