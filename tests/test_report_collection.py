"""Garbage collection held off while a report is built: no automatic pass inside, the cycles made
inside freed by the one pass at the end, and the collector left as it was found."""

from __future__ import annotations

import gc
import weakref

from biaseval.report.collection import collected_once


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_no_automatic_pass_inside_and_the_cycles_freed_after():
    passes = []

    def count(phase, info):
        if phase == "start":
            passes.append(info["generation"])

    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        with collected_once():
            assert not gc.isenabled()
            cycles = [Node() for _ in range(50_000)]  # enough allocations for several automatic passes
            alive = [weakref.ref(c) for c in cycles[::1000]]
            del cycles
            assert passes == [] and all(r() is not None for r in alive)
        assert passes == [0]  # one pass, of the youngest generation only
        assert all(r() is None for r in alive)
    finally:
        gc.callbacks.remove(count)
    assert gc.isenabled()


def test_an_error_inside_still_turns_collection_back_on():
    try:
        with collected_once():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()


def test_collection_already_off_stays_off():
    gc.disable()
    try:
        with collected_once():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
