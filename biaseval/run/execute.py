"""Running a sweep's tasks on Ray actors (``execute``): each system's actors get tasks as they
start and finish them; a system's shards are written from the store only after all its texts were
sent; a lost actor is replaced and its tasks rerun (``sweep.task_retries``); any other failure stops
that system, keeping finished work, and the sweep ends with the resume message. A backend that says
its system cannot go on (``SystemStopped``: a spent quota) stops that system the same way, and the
message names the system and the provider's reason first.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass

import numpy as np

from biaseval.credentials import describe, redact
from biaseval.errors import SweepFailed
from biaseval.run.cluster import actor_bundle, actors_for, check_placement, unplaceable
from biaseval.run.plan import Prepared, Shard
from biaseval.run.polling import SentPolls
from biaseval.run.progress import ITEMS, TEXTS, LiveProgress, PlainProgress
from biaseval.run.rundir import RunDir
from biaseval.run.translation_store import TranslationStore
from biaseval.run.worker import ShardWorker
from biaseval.suites import SUITES
from biaseval.translate import TRANSLATORS
from biaseval.translate.base import SystemStopped


@dataclass(frozen=True)
class Task:
    """One unit of actor work on a shard: ``items`` (recorded), ``send`` or ``write`` (live)."""

    kind: str
    shard: Shard
    units: int
    keys: np.ndarray | None = None
    part: int = 0  # a shard's texts go in several send tasks of at most sweep.texts_per_task each
    rows: tuple[int, int] | None = None  # a send task's rows within the shard (it reads only those items)

    @property
    def system(self) -> str:
        return self.shard.system

    @property
    def unit(self) -> str:
        """What its units count (biaseval.run.progress): texts sent, or items written."""
        return TEXTS if self.kind == "send" else ITEMS

    @property
    def name(self) -> str:
        return f"{self.shard.name} ({self.kind}{f' {self.part + 1}' if self.kind == 'send' else ''})"


@dataclass
class Outcome:
    rows: int = 0  # item rows written
    sent: int = 0  # texts sent
    failed: int = 0  # item rows written without a translation


def limiter_prefix(system: str) -> str:
    """How the name of a live system's limiter actor (``RateLimiter``: its limits and the server's
    pauses, shared by its actors) begins; a unique suffix follows, so a sweep's name never meets the
    one of an earlier sweep whose actor Ray has not removed yet."""
    return f"biaseval-limiter:{system}:"


def _actor_options(cfg) -> dict:
    options = {"num_cpus": cfg.num_cpus, "num_gpus": cfg.num_gpus, "max_restarts": 0, "max_concurrency": 1}
    if cfg.resources:
        options["resources"] = dict(cfg.resources)
    return options


def _build_actor(prepared: Prepared, system: str):
    """A new ShardWorker actor for ``system``: it builds the system's backend (not joined to a run yet).
    Its ``progress`` calls have a thread of their own (the ``progress`` group), so they are answered
    while a task runs."""
    import ray

    cfg = prepared.config.systems[system]
    return ray.remote(concurrency_groups={"progress": 1})(ShardWorker).options(**_actor_options(cfg)).remote(
        system, cfg.model_dump_json(), str(prepared.config_dir),
        {s: SUITES.get(s) for s in prepared.coverage[system]})


def start_actors(prepared: Prepared) -> dict[str, list]:
    """Each system's actors (as many as ``execute`` would start), building their backends — imports, a
    model — while the driver plans the run; handed to ``execute``, which joins them to the run and
    kills those it has no tasks for. Systems that no live node can host now are left to ``execute``."""
    import ray

    config = prepared.config
    cluster, nodes = ray.cluster_resources(), ray.nodes()
    return {system: [_build_actor(prepared, system) for _ in range(actors_for(config.systems[system], cluster))]
            for system in prepared.coverage if unplaceable(actor_bundle(config.systems[system]), nodes) is None}


def execute(prepared: Prepared, run: RunDir, run_id: str, tasks: list[Task], *, cache: TranslationStore,
            refresh: bool = False, die_after: int | None = None, progress: PlainProgress | LiveProgress | None = None,
            marker: str | None = None, prestarted: dict[str, list] | None = None) -> Outcome:
    """Run ``tasks`` on Ray actors, a system's ``write`` tasks only after all its ``send`` tasks;
    raise SweepFailed (keeping finished work) if any fails. ``prestarted``: actors from ``start_actors``
    (those it needs are used, the rest killed first; every actor it used is killed when it ends).

    Before anything is submitted, every system's actor must fit on some live node (``check_placement``),
    and an actor gets tasks only once it has started (built its backend and, for a live system, found
    the driver's ``marker`` in the translation store). An actor that dies (its process or its node
    lost) is replaced and its tasks run again, each task at most ``sweep.task_retries`` more times; a
    replacement that no live node can host is given up after ``sweep.placement_wait_s``. Other
    failures (a backend that cannot start, an error in a task) stop that system's work at once.

    ``progress`` (``biaseval.run.progress``) is told each task's units as it ends, and at least once
    a second the texts sent so far within running tasks (``SentPolls``)."""
    import ray
    from ray.exceptions import RayActorError

    from biaseval.translate.ratelimit import RateLimiter

    config = prepared.config
    check_placement(config, list({t.system for t in tasks}), stream=progress.stream if progress else sys.stderr)
    say = progress.note if progress else (lambda text: print(text, file=sys.stderr, flush=True))
    polls = SentPolls()
    ready: dict[str, deque[Task]] = {}
    later: dict[str, deque[Task]] = {}
    for task in tasks:
        (later if task.kind == "write" else ready).setdefault(task.system, deque()).append(task)
        ready.setdefault(task.system, deque())
        later.setdefault(task.system, deque())
    refs = {name: ray.put(data) for name, data in prepared.suites.items()}
    cluster = ray.cluster_resources()  # for systems with actors: auto
    limiter_cls = ray.remote(RateLimiter)
    in_flight: dict[ray.ObjectRef, tuple[Task, object]] = {}
    running: dict[object, int] = {}
    parts: dict[str, list[str]] = {}  # shard -> store parts its send tasks wrote
    sending: dict[str, int] = {system: 0 for system in ready}
    retries: dict[str, int] = {}  # task name -> times it was run again after its actor died
    starting: dict[ray.ObjectRef, tuple[str, object]] = {}  # an actor's ready() call -> (system, actor)
    unplaced: dict[object, float] = {}  # starting actor -> since when no live node can host it
    lost: dict[str, int] = {}  # system -> actors lost before they started
    stopped: dict[str, str] = {}  # system -> why its work stopped
    halted: dict[str, str] = {}  # system -> why its provider said it cannot go on (SystemStopped)
    limiters: dict[str, object] = {}
    actors: dict[str, list] = {}
    outcome = Outcome()
    failures: list[str] = []

    def store_for(system: str) -> dict | None:
        live = prepared.live.get(system)
        if live is None:
            return None
        return {"root": cache.root, "options": dataclasses.asdict(cache.options), "marker": marker,
                "identity": live.identity, "since": live.since}

    def new_actor(system: str, actor=None):
        """``actor`` (one already built) or a new one, joined to the run."""
        actor = actor or _build_actor(prepared, system)
        running[actor] = 0
        starting[actor.join.remote(run.location, run_id, store_for(system), limiters.get(system), die_after,
                                   dataclasses.asdict(run.options))] = (system, actor)
        return actor

    def submit(actor, task: Task) -> None:
        data = refs[task.shard.suite]
        if task.kind == "items":
            ref = actor.run_shard.remote(task.shard, data)
        elif task.kind == "send":  # only the rows holding its texts are generated on the worker
            lo, hi = task.rows
            rows = dataclasses.replace(task.shard, start=task.shard.start + lo, stop=task.shard.start + hi)
            ref = actor.send_shard.remote(rows, data, item_keys(task)[lo:hi], task.keys)
            sending[task.system] += 1
        else:
            ref = actor.write_shard.remote(task.shard, data, item_keys(task), refresh, parts.get(task.shard.name, []))
        in_flight[ref] = (task, actor)
        running[actor] += 1

    def item_keys(task: Task) -> np.ndarray:
        return prepared.live[task.system].keys[(task.shard.suite, task.shard.index)]

    def next_task(system: str) -> Task | None:
        if not ready[system] and sending[system] == 0 and later[system]:
            ready[system], later[system] = later[system], deque()
        return ready[system].popleft() if ready[system] else None

    def fill(system: str) -> None:
        if system in stopped:
            return
        waiting = {actor for _, actor in starting.values()}
        for actor in actors[system]:
            if actor in waiting:
                continue
            while running[actor] < config.sweep.in_flight and (task := next_task(system)) is not None:
                submit(actor, task)

    def stop(system: str, why: str, *, kill: bool = False) -> None:
        """No more work for this system (tasks in flight still finish, unless ``kill``); its finished
        shards and stored translations stay."""
        if system not in stopped:
            stopped[system] = why
            failures.append(why)
        ready[system].clear()
        later[system].clear()
        for ref in [ref for ref, (s, _) in starting.items() if s == system]:
            del starting[ref]
        if kill:
            for handle in actors[system]:
                ray.kill(handle)

    def replace(system: str, dead) -> None:
        if dead in actors[system]:
            actors[system].remove(dead)
            actors[system].append(new_actor(system))
            say(f"sweep: {system}: an actor was lost; a new one takes over its tasks")

    def started(ref) -> None:
        system, actor = starting.pop(ref)
        unplaced.pop(actor, None)
        try:
            ray.get(ref)
        except RayActorError as exc:
            if exc.actor_init_failed or lost.get(system, 0) >= config.sweep.task_retries:
                stop(system, f"{system}: its worker could not start: {_describe(exc)}")
                return
            lost[system] = lost.get(system, 0) + 1
            replace(system, actor)
            return
        except Exception as exc:  # noqa: BLE001 - reported with the system named
            stop(system, f"{system}: its worker could not start: {_describe(exc)}")
            return
        fill(system)

    def watch_placement() -> None:
        """Actors not started yet whose resources no live node has: given up after placement_wait_s."""
        if not starting:
            return
        nodes = ray.nodes()
        for ref, (system, actor) in list(starting.items()):
            if ref not in starting:
                continue  # its system was stopped meanwhile
            missing = unplaceable(actor_bundle(config.systems[system]), nodes)
            if missing is None:
                unplaced.pop(actor, None)
            elif actor not in unplaced:
                unplaced[actor] = time.monotonic()
            elif time.monotonic() - unplaced[actor] >= config.sweep.placement_wait_s:
                stop(system, f"{system}: no live node can host its actor any more ({missing}); waited "
                             f"{config.sweep.placement_wait_s:g} s (sweep.placement_wait_s)", kill=True)

    wanted = {system: min(actors_for(config.systems[system], cluster), len(ready[system]) + len(later[system]))
              for system in ready}
    # prestarted actors this run does not need are killed first, freeing what they hold (a GPU)
    kept: dict[str, list] = {}
    for system, built in (prestarted or {}).items():
        kept[system] = built[:wanted.get(system, 0)]
        for actor in built[len(kept[system]):]:
            ray.kill(actor)
    for system in ready:
        cfg = config.systems[system]
        limited = any(v is not None for v in (cfg.limits.requests_per_s, cfg.limits.chars_per_min,
                                               cfg.limits.tokens_per_min))
        if system in prepared.live and (limited or TRANSLATORS.get(cfg.backend).REMOTE):
            # limits or not, a server's Retry-After pauses all the system's actors through it
            name = f"{limiter_prefix(system)}{uuid.uuid4().hex[:12]}"
            limiters[system] = limiter_cls.options(num_cpus=0, name=name).remote(
                cfg.limits.requests_per_s, cfg.limits.chars_per_min, cfg.limits.burst_s, cfg.limits.tokens_per_min)
        actors[system] = [new_actor(system, actor) for actor in kept.get(system, [])]
        actors[system] += [new_actor(system) for _ in range(wanted[system] - len(actors[system]))]

    def show_progress() -> None:
        live = [s for s in actors if sending.get(s)]
        waiting = {actor for _, actor in starting.values()}
        polls.poll([actor for s in live for actor in actors[s] if actor not in waiting])
        for system in actors:
            progress.board.running(system, polls.running(actors[system]) if system in live else 0)
        progress.tick()

    while in_flight or starting:
        if progress:
            show_progress()
        done, _ = ray.wait([*in_flight, *starting], num_returns=1, timeout=1.0)
        if not done:
            watch_placement()
            continue
        if done[0] in starting:
            started(done[0])
            continue
        task, actor = in_flight.pop(done[0])
        running[actor] -= 1
        if task.kind == "send":
            sending[task.system] -= 1
        try:
            units, failed, *written = ray.get(done[0])
        except RayActorError as exc:  # the actor's process or node is gone; its work may run again
            tries = retries.get(task.name, 0)
            if task.system in stopped or exc.actor_init_failed or tries >= config.sweep.task_retries:
                stop(task.system, f"{task.name}: {_describe(exc)}" + (
                    f" (after {tries} retries: sweep.task_retries)" if tries and not exc.actor_init_failed else ""))
                continue
            retries[task.name] = tries + 1
            replace(task.system, actor)
            (later if task.kind == "write" else ready)[task.system].appendleft(task)
            fill(task.system)
            continue
        except Exception as exc:  # noqa: BLE001 - reported below with the task named
            cause = getattr(exc, "cause", None) or exc
            if isinstance(cause, SystemStopped):  # no more requests: tasks in flight end at their next one
                halted.setdefault(task.system, redact(cause.reason))
                stop(task.system, f"{task.system}: stopped: {halted[task.system]}")
            else:
                stop(task.system, f"{task.name}: {_describe(exc)}")
            continue
        if task.kind == "send":
            outcome.sent += units
            polls.finished(actor, units)
            if written and written[0]:
                parts.setdefault(task.shard.name, []).append(written[0])
        else:
            outcome.rows += units
            outcome.failed += failed
        if progress:
            progress.board.finished(task.system, task.unit, units)
        fill(task.system)
    for handle in [a for system_actors in actors.values() for a in system_actors] + list(limiters.values()):
        ray.kill(handle)
    if failures:
        kept = (f"finished shards and translations are kept ({run.shards.location}, {cache.root}) and a rerun of "
                f"the same command resumes from them")
        if not halted:
            raise SweepFailed(f"{len(failures)} task(s) failed; {kept}. First failure: {failures[0]}")
        others = [why for why in failures if why not in {stopped[s] for s in halted}]
        raise SweepFailed("; ".join([f"system {s!r} stopped: {why}" for s, why in halted.items()] + (
            [f"{len(others)} other task(s) failed, first: {others[0]}"] if others else [])) + f". The {kept}.")
    return outcome


def _describe(exc: BaseException) -> str:
    """A task's failure as the sweep reports it: the Ray error's cause (the worker's exception), or its
    last line, through the redactor."""
    cause = getattr(exc, "cause", None)
    if cause is not None and cause is not exc:
        return describe(cause)
    text = redact(str(exc)).strip().splitlines()  # redacted before it is cut
    return f"{type(exc).__name__}: {text[-1] if text else ''}"
