"""Cyclic garbage collection held off while a report is built, then run once over what it made.

A report makes a few hundred thousand container objects (the rows of its tables, each figure's
artists, which hold each other in cycles). Each of those allocations counts towards CPython's
automatic collections, and every third or so of those is a full one that walks the whole heap,
including whatever the process held before (a sweep's objects), again and again. Held off, the
report's objects stay in the youngest generation; one collection of that generation at the end frees
the figures' cycles without walking the older heap at all.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collected_once() -> Iterator[None]:
    """Automatic collection off inside (as it was if already off), then one young-generation pass."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
