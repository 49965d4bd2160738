"""Corpus labelling spread over worker processes: ``label_in_workers(jobs, workers)``.

A WinoMT corpus is labelled one target language at a time, and most of a language's time outside
the aligner's training is Python (tokens, the analysers' rules), so threads would label one language
at a time whatever the cores. Here each worker is a fresh interpreter (``python -m
biaseval.label.workers``) that is handed its share of the jobs, pickled, on its standard input and
answers with the labelled frames on its standard output. A fresh interpreter rather than
``multiprocessing``: its spawn start re-runs the caller's main script, which a script or notebook
that calls scoring at top level does not expect, and forking a process that runs polars' and
Ray's threads is unsafe.

Jobs are shared out before the start (largest first, each to the worker with the least work so
far), since their sizes are known. An exception raised by a job is raised again here; a worker
that dies is a RuntimeError with the end of its error output. What a worker writes to its error
output (warnings, logs) is passed on to this process's.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

import polars as pl

Job = tuple[Callable[[pl.DataFrame], pl.DataFrame], pl.DataFrame]  # (a picklable function, its frame)


def share_out(sizes: Sequence[int], workers: int) -> list[list[int]]:
    """Job indices per worker: largest first, each to the least loaded worker (ties: the first)."""
    shares: list[list[int]] = [[] for _ in range(max(1, workers))]
    loads = [0] * len(shares)
    for k in sorted(range(len(sizes)), key=lambda k: (-sizes[k], k)):
        least = loads.index(min(loads))
        shares[least].append(k)
        loads[least] += sizes[k]
    return [share for share in shares if share]


def label_in_workers(jobs: Sequence[Job], workers: int, sizes: Sequence[int] | None = None) -> list[pl.DataFrame]:
    """``function(frame)`` of every job, computed in ``workers`` processes; results in job order.
    ``sizes``: how much work each job is, to share them out by (default: its rows)."""
    shares = share_out([frame.height for _, frame in jobs] if sizes is None else sizes, workers)
    with ThreadPoolExecutor(len(shares)) as pool:
        answers = list(pool.map(lambda share: _run_worker([jobs[k] for k in share]), shares))
    results: dict[int, pl.DataFrame] = {}
    failures: dict[int, BaseException] = {}
    for share, answer in zip(shares, answers):
        for k, (ok, value) in zip(share, answer):
            (results if ok else failures)[k] = value
    if failures:
        raise failures[min(failures)]
    return [results[k] for k in range(len(jobs))]


def _run_worker(jobs: list[Job]) -> list[tuple[bool, object]]:
    package_parent = str(Path(__file__).resolve().parents[2])  # the biaseval this process runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "biaseval.label.workers"], input=pickle.dumps(jobs),
                          capture_output=True, env=env, check=False)
    if done.stderr:
        sys.stderr.write(done.stderr.decode("utf-8", "replace"))
    if done.returncode != 0:
        raise RuntimeError(f"a corpus labelling worker exited with {done.returncode}: "
                           f"{done.stderr.decode('utf-8', 'replace').strip()[-2000:]}")
    return pickle.loads(done.stdout)


def _serve() -> None:
    """The worker: jobs from stdin, ``(ok, frame or exception)`` per job to stdout (anything else
    that would be printed goes to stderr)."""
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    out = []
    for function, frame in pickle.loads(sys.stdin.buffer.read()):
        try:
            out.append((True, function(frame)))
        except Exception as exc:  # noqa: BLE001 -- any error of a job is raised again in the caller
            out.append((False, exc))
    answer.write(pickle.dumps(out))
    answer.close()


if __name__ == "__main__":
    _serve()
