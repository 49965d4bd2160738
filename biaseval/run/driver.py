"""What the driver does for ``biaseval sweep``: open the run directory or resume it (refusing one
written for other work, redoing damaged shards), plan what is left, execute it on Ray, and say what
was done (``run_translations``).

1. ``prepare`` (``biaseval.run.plan``): open the run's suites, check every system. Nothing is written
   before this succeeds.
2. ``plan_shards`` / ``plan_live``: shards per system and suite; per live system the texts to send.
3. ``execute`` (``biaseval.run.execute``): recorded systems write their shards directly; live systems
   first send their texts (each task's results reach the store as it finishes, under a rate limit
   shared by the system's actors), then write every shard from the store.

A rerun with the same output directory skips finished shards and re-sends only texts that never
arrived or failed, so an interrupted sweep loses at most the work in flight.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from biaseval import __version__
from biaseval.config import RunConfig
from biaseval.errors import RunDirError
from biaseval.names import RUN_ID_BYTES, check
from biaseval.run import cost
from biaseval.run.cluster import ray_running, ray_session
from biaseval.run.execute import Outcome, Task, execute, start_actors
from biaseval.run.filesystem import StoreOptions, writing
from biaseval.run.plan import (
    Prepared,
    Shard,
    cache_for,
    check_budgets,
    plan_live,
    shards_of,
)
from biaseval.run.progress import ITEMS, TEXTS, open_progress
from biaseval.run.rundir import RunDir, system_folder
from biaseval.suites import ITEM_SCHEMA, SuiteData


@dataclass
class SweepResult:
    run: RunDir
    shards: int
    skipped: int
    items: int  # the run's items (item × system: a row of a shard each), reused shards' included
    translated_rows: int  # item rows written by this invocation
    sent: int  # texts sent to live systems
    failed: int  # item rows without a translation (recorded with their error; retried next run)
    seconds: float


def existing_run(out: Path | str, options: StoreOptions | None = None) -> dict | None:
    run = RunDir(out, options)
    if run.remote is not None:
        previous = run.read_run()
        if previous is None and run.exists():
            raise RunDirError(f"{run.location}: holds files but no run.json; choose a new --out location")
        return previous
    if run.root.exists() and not run.root.is_dir():
        raise RunDirError(f"{run.root}: exists and is not a directory")
    previous = run.read_run() if run.root.is_dir() else None
    if run.root.is_dir() and previous is None and any(run.root.iterdir()):
        raise RunDirError(f"{run.root}: not empty and holds no run.json; choose a new --out directory")
    return previous


def new_run_id(config: RunConfig) -> str:
    """``<config name>-<UTC time>-<6 hex digits>``: a name (biaseval/names.py), used as a folder name."""
    return check(f"{config.name}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}", "run id",
                 RUN_ID_BYTES)


def write_items(path: Path, suites: dict[str, SuiteData]) -> None:
    """items.parquet, streamed suite by suite in batches, renamed into place when complete."""
    schema = pl.DataFrame(schema=ITEM_SCHEMA).to_arrow().schema
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    with writing(path):  # a full disk or a read-only folder names items.parquet
        try:
            with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
                for data in suites.values():
                    for batch in data.batches():
                        writer.write_table(batch.to_arrow().cast(schema))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def open_run(out: Path | str, prepared: Prepared, config_path: Path, run_id: str, previous: dict | None,
             refresh: bool, options: StoreOptions | None = None) -> RunDir:
    """Create the run directory, or reopen it for a resume (which keeps the first plan's cost estimate:
    what the run set out to send)."""
    config = prepared.config
    run = RunDir(out, options)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run.root.mkdir(parents=True, exist_ok=True)
    run.remove_temporaries()
    write_items(run.items, prepared.suites)
    if run.remote is not None:
        run.remote.upload(run.items, "items.parquet")
    run.write_run({
        "run_id": run_id,
        "created_at": previous["created_at"] if previous else now,
        "updated_at": now,
        "refresh": refresh,
        "biaseval_version": __version__,
        "config_path": str(config_path),
        "config_dir": str(prepared.config_dir),
        "config_hash": config.config_hash(),
        "config": config.model_dump(mode="json"),
        "suites": {name: {"size": data.size, "population": getattr(data, "full_size", data.size), "fingerprint": data.fingerprint, "commit": data.commit,
                          "target_ranges": data.target_ranges(),
                          "dataset": data.suite.dataset, "version": data.suite.version,
                          "path": getattr(data.suite, "path", None) or None,
                          "sample": getattr(data, "profile", None)}
                   for name, data in prepared.suites.items()},
        "systems": {name: {"backend": cfg.backend, "version": cfg.version, "suites": prepared.coverage[name]}
                    for name, cfg in config.systems.items()},
        "cost": {"planned": (previous or {}).get("cost", {}).get("planned")
                 or cost.planned(prepared)},
    })
    return run


def record_cost(run: RunDir, config: RunConfig) -> None:
    """run.json's ``cost.billed``: what the rows say the providers billed (``biaseval.run.cost``)."""
    info = run.read_run()
    info["cost"] = {**info.get("cost", {}), "billed": cost.billed(run, config)}
    run.write_run(info)


def pending_shards(run: RunDir, shards: list[Shard], suites: dict[str, SuiteData] | None = None,
                   stream=sys.stderr) -> list[Shard]:
    """Shards to (re)write: those without a finished file, those whose file holds failed rows (they
    are retried), and those that cannot be trusted (``RunDir.shard_problem``): bytes other than those
    recorded when the shard was written (its checksum record differs, or there is none), damaged (a
    page that fails its CRC, a footer that does not parse), or — with ``suites`` given — not exactly
    the shard's items; each is named, then redone. A file written for other work (another config or
    shard size) stops the sweep instead. One listing of the run's shards, then each finished shard is
    read once."""
    finished = set(run.shard_files())
    todo = []
    for shard in shards:
        path = run.shard_path(shard.system, shard.suite, shard.index)
        if path not in finished:
            todo.append(shard)
            continue
        where = run.shards.uri(path)
        try:
            data = run.read_shard(path)
            key, errors = run.shard_stamp(path, data)
        except Exception as exc:  # noqa: BLE001 - a footer that does not parse: the file is damaged
            print(f"sweep: {where}: damaged (footer unreadable: {type(exc).__name__}); writing it again",
                  file=stream, flush=True)
            todo.append(shard)
            continue
        if key != shard.key:
            raise RunDirError(
                f"{where}: written for different work (another shard_size, system config or item set); "
                f"use a new --out directory, or delete {run.shards.uri(system_folder(shard.system))} to translate "
                f"that system again"
            )
        if errors:
            todo.append(shard)
            continue
        items = suites[shard.suite].slice(shard.start, shard.stop)["item_id"].to_list() if suites else None
        problem = run.shard_problem(path, items, data)
        if problem:
            print(f"sweep: {where}: {problem}; writing it again", file=stream, flush=True)
            todo.append(shard)
    return todo


def run_translations(prepared: Prepared, out: Path | str, config_path: Path, *, address: str | None = None,
                     refresh: bool = False, die_after: int | None = None, stream=sys.stderr,
                     run_id: str | None = None, verbose: bool = False) -> SweepResult:
    """``run_id``: the id a new run gets (default: a fresh one; the monitor passes its own). A resumed
    run keeps the id it has, and refuses another. Progress goes to ``stream`` (``open_progress``);
    Ray's own warnings and its workers' output only with ``verbose``."""
    start = time.monotonic()
    options = StoreOptions.of(prepared.config)
    previous = existing_run(out, options)
    if refresh and previous is not None and not previous.get("refresh"):
        raise RunDirError(f"{out}: --refresh needs a new --out directory (this one holds a run that used the cache)")
    refresh = refresh or bool(previous and previous.get("refresh"))
    dropped = sorted(set(previous["systems"]) - set(prepared.config.systems)) if previous else []
    if dropped:  # scoring covers the systems of run.json: narrowing it would drop finished systems from the run
        raise RunDirError(
            f"{out}: holds a run of {', '.join(sorted(previous['systems']))}; this sweep leaves out {', '.join(dropped)} "
            f"(--systems or an edited config) and would drop them from the run's results. Rerun with all of them, "
            f"or choose a new --out")
    if previous and run_id and previous["run_id"] != run_id:
        raise RunDirError(f"{out}: holds run {previous['run_id']}, not {run_id}; choose a new --out directory")
    run_id = previous["run_id"] if previous else run_id or new_run_id(prepared.config)
    with ExitStack() as session:
        started = None
        if ray_running(address):  # the actors build their backends while this driver plans the run
            session.enter_context(ray_session(address, verbose=verbose))
            started = start_actors(prepared)
            session.callback(_kill_all, started)  # whatever happens (killing one execute ended is harmless)
        tasks, run, shards, skipped, cache = _plan(prepared, out, config_path, run_id, previous, refresh, options, stream)
        outcome = Outcome()
        if tasks:
            live_tasks = any(t.system in prepared.live for t in tasks)
            if live_tasks and cache.store.remote is False and run.remote is not None:
                print(f"sweep: note: the translation store is on this machine's disk ({cache.root}); workers on other "
                      f"nodes cannot reach it (set cache.path to an object-store URI or a shared path)", file=stream)
            marker = cache.mark(run_id) if live_tasks else None  # each live worker checks it sees this store
            try:
                with ray_session(address, verbose=verbose), open_progress(_totals(tasks), stream) as progress:
                    outcome = execute(prepared, run, run_id, tasks, cache=cache, refresh=refresh, die_after=die_after,
                                      progress=progress, marker=marker, prestarted=started)
            finally:
                if marker:
                    cache.unmark(marker)
                run.remove_temporaries()  # left by workers killed mid-write (this driver holds the run's lock)
    for system in {t.system for t in tasks if t.kind == "send"}:
        cache.compact(prepared.live[system].identity)
    record_cost(run, prepared.config)
    return SweepResult(run, len(shards), skipped, sum(s.size for s in shards), outcome.rows, outcome.sent,
                       outcome.failed, time.monotonic() - start)


def _totals(tasks: list[Task]) -> dict[tuple[str, str], int]:
    """What the progress display counts: per system (in the order of its tasks), its texts to send,
    then its items to write."""
    totals: dict[tuple[str, str], int] = {}
    for task in tasks:
        totals[task.system, task.unit] = totals.get((task.system, task.unit), 0) + task.units
    systems = list(dict.fromkeys(t.system for t in tasks))
    return {(system, unit): totals[system, unit] for system in systems for unit in (TEXTS, ITEMS)
            if (system, unit) in totals}


def _plan(prepared: Prepared, out: Path | str, config_path: Path, run_id: str, previous: dict | None, refresh: bool,
          options: StoreOptions, stream) -> tuple[list[Task], RunDir, list[Shard], int, object]:
    """What is left to do: the live systems' texts to send (``plan_live``), the run directory opened,
    the tasks for every unfinished shard; (tasks, run, shards, shards skipped, translation store)."""
    cache = cache_for(prepared.config, prepared.config_dir)
    plan_live(prepared, cache, refresh=refresh, run_id=run_id)
    check_budgets(prepared)

    run = open_run(out, prepared, config_path, run_id, previous, refresh, options)
    shards = shards_of(prepared)
    todo = {s.name for s in pending_shards(run, shards, prepared.suites, stream)}
    skipped = len(shards) - len(todo)
    if skipped:
        print(f"sweep: resuming {run.location}: {skipped} of {len(shards)} shards already finished", file=stream)
    tasks = []
    for shard in shards:
        live = prepared.live.get(shard.system)
        if live is None:
            if shard.name in todo:
                tasks.append(Task("items", shard, shard.size))
            continue
        keys = live.send.get((shard.suite, shard.index))
        if keys is not None:  # results reach the store as each task ends: a crash loses only tasks in flight
            per_task = prepared.config.sweep.texts_per_task
            rows = live.send_rows[(shard.suite, shard.index)]
            for part, first in enumerate(range(0, len(keys), per_task)):
                chunk = keys[first:first + per_task]
                span = (int(rows[first]), int(rows[first + len(chunk) - 1]) + 1)
                tasks.append(Task("send", shard, len(chunk), chunk, part, span))
        if shard.name in todo:
            tasks.append(Task("write", shard, shard.size))
    for system, live in prepared.live.items():
        print(f"sweep: {system}: {live.unique:,} distinct texts, {live.cached:,} in the translation store, "
              f"{live.sends:,} texts to send ({live.chars:,} characters)", file=stream)
    return tasks, run, shards, skipped, cache


def _kill_all(actors: dict[str, list]) -> None:
    import ray

    for handles in actors.values():
        for handle in handles:
            ray.kill(handle)
