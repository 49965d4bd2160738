"""The sweep: items × systems, split into shards, translated by Ray actors, one Parquet file per shard.

1. ``prepare``: resolve and verify datasets, load the suites' items, build each backend once in the
   driver and let it check its input (recorded files must line up). Nothing is written before this
   succeeds.
2. ``plan``: per system and suite, consecutive runs of ``shard_size`` items. A shard's key hashes the
   system's config and the shard's item ids, so a finished shard is reused only for the same work.
3. ``execute``: each system gets ``actors`` Ray actors hosting its backend; shards are queued to them
   (``in_flight`` per actor); each actor writes its shard atomically. A rerun with the same output
   directory skips finished shards, so an interrupted sweep loses at most the shards in flight.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import polars as pl
import pyarrow as pa

from . import __version__
from .config import RunConfig, SystemConfig
from .datasets import resolve
from .errors import RunDirError, SweepFailed
from .store import SHARD_KEY, RunDir, write_parquet_atomic
from .suites import SUITES
from .translators import TRANSLATORS, Translator

TRANSLATION_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("subset", pa.string()),
        ("system", pa.string()),
        ("system_version", pa.string()),
        ("src_lang", pa.string()),
        ("tgt_lang", pa.string()),
        ("source", pa.string()),
        ("gold", pa.string()),  # copied from the item, so a shard scores without a join
        ("occupation", pa.string()),
        ("stereotype", pa.string()),
        ("translation", pa.string()),
        ("error", pa.string()),
        ("run_id", pa.string()),
        ("translated_at", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class Shard:
    system: str
    suite: str
    index: int
    start: int  # row range in the suite's item table
    stop: int
    key: str

    @property
    def name(self) -> str:
        return f"{self.system}/{self.suite}/{self.index:05d}"

    @property
    def size(self) -> int:
        return self.stop - self.start


@dataclass
class Prepared:
    config: RunConfig
    config_dir: Path
    items: dict[str, pl.DataFrame]  # suite -> item table
    coverage: dict[str, list[str]]  # system -> suites it translates
    dataset_commits: dict[str, str]  # suite -> dataset commit

    @classmethod
    def from_run(cls, run: RunDir) -> "Prepared":
        """The prepared state a finished run recorded (no dataset access needed)."""
        info = run.read_run()
        if info is None:
            raise RunDirError(f"{run.root}: no run.json; not a biaseval run directory")
        config = RunConfig.model_validate(info["config"])
        items = pl.read_parquet(run.items)
        by_suite = {s: items.filter(pl.col("suite") == s).sort("item_id") for s in config.suites}
        coverage = {name: sys_info["suites"] for name, sys_info in info["systems"].items()}
        commits = {s: d["commit"] for s, d in info["datasets"].items()}
        return cls(config, Path(info["config_dir"]), by_suite, coverage, commits)


def build_translator(system: str, cfg: SystemConfig, config_dir: Path) -> Translator:
    backend = TRANSLATORS.get(cfg.backend)
    return backend(system, backend.Options.model_validate(cfg.options), config_dir=config_dir)


def prepare(config: RunConfig, config_dir: Path) -> Prepared:
    items, commits = {}, {}
    for name in config.suites:
        suite = SUITES.get(name)
        data = resolve(suite.dataset)
        items[name] = suite.load(data)
        commits[name] = data.spec.commit
    coverage = {}
    for system, cfg in config.systems.items():
        coverage[system] = config.suites_of(system)
        translator = build_translator(system, cfg, config_dir)
        translator.check(pl.concat([items[s] for s in coverage[system]]))
    return Prepared(config, config_dir, items, coverage, commits)


def system_key(cfg: SystemConfig) -> str:
    return hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()


def plan(prepared: Prepared) -> list[Shard]:
    size = prepared.config.sweep.shard_size
    shards = []
    for system, suites in prepared.coverage.items():
        base = system_key(prepared.config.systems[system])
        for suite in suites:
            ids = prepared.items[suite]["item_id"]
            for index, start in enumerate(range(0, len(ids), size)):
                stop = min(start + size, len(ids))
                digest = hashlib.sha256(base.encode())
                digest.update(suite.encode())
                digest.update("\n".join(ids[start:stop].to_list()).encode())
                shards.append(Shard(system, suite, index, start, stop, digest.hexdigest()[:24]))
    return shards


def translation_table(items: pl.DataFrame, translations: list[str | None], errors: list[str | None] | None,
                      system: str, version: str, run_id: str) -> pa.Table:
    n = items.height
    now = datetime.now(timezone.utc)
    frame = items.select("item_id", "suite", "subset", "src_lang", "tgt_lang", "source", "gold", "occupation",
                         "stereotype").with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.Series("translation", translations, dtype=pl.String),
        pl.Series("error", errors if errors is not None else [None] * n, dtype=pl.String),
        pl.lit(run_id).alias("run_id"),
        pl.lit(now).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC")).alias("translated_at"),
    )
    return frame.to_arrow().select(TRANSLATION_SCHEMA.names).cast(TRANSLATION_SCHEMA)


class ShardWorker:
    """Hosts one system's backend inside a Ray actor and turns shards into Parquet files.

    ``die_after`` (testing only) makes the process exit after that many shards, as a crashed
    worker would, to show that a rerun resumes cleanly.
    """

    def __init__(self, system: str, cfg_json: str, config_dir: str, run_root: str, run_id: str,
                 die_after: int | None = None):
        self.system = system
        self.cfg = SystemConfig.model_validate_json(cfg_json)
        self.translator = build_translator(system, self.cfg, Path(config_dir))
        self.run = RunDir(run_root)
        self.run_id = run_id
        self.die_after = die_after
        self.done = 0

    def run_shard(self, shard: Shard, items: pa.Table) -> int:
        frame = pl.from_arrow(items)
        translations = self.translator.translate_items(frame)
        table = translation_table(frame, translations, None, self.system, self.cfg.version, self.run_id)
        path = self.run.shard_path(shard.system, shard.suite, shard.index)
        write_parquet_atomic(table, path, {SHARD_KEY: shard.key.encode()})
        self.done += 1
        if self.die_after is not None and self.done >= self.die_after:
            os._exit(1)
        return table.num_rows


class Progress:
    def __init__(self, total_shards: int, total_rows: int, stream=sys.stderr, every: float = 1.0):
        self.total_shards, self.total_rows = total_shards, total_rows
        self.shards = self.rows = 0
        self.stream, self.every = stream, every
        self.start = self.last = time.monotonic()

    def advance(self, rows: int) -> None:
        self.shards += 1
        self.rows += rows
        now = time.monotonic()
        if now - self.last >= self.every or self.shards == self.total_shards:
            self.last = now
            elapsed = now - self.start
            rate = self.rows / elapsed if elapsed > 0 else 0.0
            print(
                f"sweep: {self.shards}/{self.total_shards} shards, {self.rows:,}/{self.total_rows:,} rows, "
                f"{elapsed:.1f} s ({rate:,.0f} rows/s)",
                file=self.stream, flush=True,
            )


@contextmanager
def ray_session(address: str | None = None) -> Iterator[None]:
    """Use a running Ray, connect to ``address``/``RAY_ADDRESS``, or start a local one (and stop it after)."""
    import ray

    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    env = {k: v for k, v in os.environ.items() if k.startswith("BIASEVAL_")}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env} if env else None, logging_level="WARNING")
    else:
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, logging_level="WARNING",
                 configure_logging=True, log_to_driver=True)
    try:
        yield
    finally:
        ray.shutdown()


def execute(prepared: Prepared, run: RunDir, run_id: str, shards: list[Shard], *,
            die_after: int | None = None, progress: Progress | None = None) -> None:
    """Translate ``shards`` on Ray actors; raise SweepFailed (keeping finished shards) if any fails."""
    import ray

    config = prepared.config
    queues: dict[str, list[Shard]] = {}
    for shard in shards:
        queues.setdefault(shard.system, []).append(shard)
    worker_cls = ray.remote(ShardWorker)
    in_flight: dict[ray.ObjectRef, tuple[Shard, object]] = {}

    def submit(actor, shard: Shard) -> None:
        items = prepared.items[shard.suite].slice(shard.start, shard.size).to_arrow()
        ref = actor.run_shard.remote(shard, items)
        in_flight[ref] = (shard, actor)

    actors = {}
    for system, queue in queues.items():
        cfg = config.systems[system]
        count = min(cfg.actors, len(queue))
        actors[system] = [
            worker_cls.options(num_cpus=cfg.num_cpus, num_gpus=cfg.num_gpus, max_restarts=0).remote(
                system, cfg.model_dump_json(), str(prepared.config_dir), str(run.root), run_id, die_after
            )
            for _ in range(count)
        ]
        queue.reverse()  # pop() from the end hands shards out in plan order
        for _ in range(config.sweep.in_flight):
            for actor in actors[system]:
                if queue:
                    submit(actor, queue.pop())

    failures: list[str] = []
    while in_flight:
        ready, _ = ray.wait(list(in_flight), num_returns=1)
        shard, actor = in_flight.pop(ready[0])
        try:
            rows = ray.get(ready[0])
        except Exception as exc:  # noqa: BLE001 - reported below with the shard named
            failures.append(f"{shard.name}: {_describe(exc)}")
            queues[shard.system].clear()
            continue
        if progress:
            progress.advance(rows)
        if queues[shard.system] and not failures:
            submit(actor, queues[shard.system].pop())
    for system_actors in actors.values():
        for actor in system_actors:
            ray.kill(actor)
    if failures:
        raise SweepFailed(
            f"{len(failures)} shard(s) failed; finished shards are kept in {run.translations} and a rerun "
            f"of the same command resumes from them. First failure: {failures[0]}"
        )


def _describe(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    if cause is not None and cause is not exc:
        return f"{type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"


@dataclass
class SweepResult:
    run: RunDir
    shards: int
    skipped: int
    translated_rows: int
    seconds: float


def open_run(out: Path, prepared: Prepared, config_path: Path) -> tuple[RunDir, str]:
    """Create the run directory, or reopen it for a resume; returns it with the run id."""
    config = prepared.config
    run = RunDir(out)
    if run.root.exists() and not run.root.is_dir():
        raise RunDirError(f"{run.root}: exists and is not a directory")
    previous = run.read_run() if run.root.is_dir() else None
    if run.root.is_dir() and previous is None and any(run.root.iterdir()):
        raise RunDirError(f"{run.root}: not empty and holds no run.json; choose a new --out directory")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run_id = previous["run_id"] if previous else f"{config.name}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"
    run.root.mkdir(parents=True, exist_ok=True)
    run.remove_temporaries()
    items = pl.concat([prepared.items[s] for s in config.suites])
    write_parquet_atomic(items.to_arrow(), run.items)
    run.write_run({
        "run_id": run_id,
        "created_at": previous["created_at"] if previous else now,
        "updated_at": now,
        "biaseval_version": __version__,
        "config_path": str(config_path),
        "config_dir": str(prepared.config_dir),
        "config_hash": config.config_hash(),
        "config": config.model_dump(mode="json"),
        "datasets": {s: {"dataset": SUITES.get(s).dataset, "commit": c} for s, c in prepared.dataset_commits.items()},
        "systems": {name: {"backend": cfg.backend, "version": cfg.version, "suites": prepared.coverage[name]}
                    for name, cfg in config.systems.items()},
    })
    return run, run_id


def pending_shards(run: RunDir, shards: list[Shard]) -> list[Shard]:
    todo = []
    for shard in shards:
        path = run.shard_path(shard.system, shard.suite, shard.index)
        key = run.shard_key(path)
        if key is None:
            todo.append(shard)
        elif key != shard.key:
            raise RunDirError(
                f"{path}: written for different work (another shard_size, system config or item set); "
                f"use a new --out directory, or delete {path.parent.parent} to translate that system again"
            )
    return todo


def run_translations(prepared: Prepared, out: Path, config_path: Path, *, address: str | None = None,
                     die_after: int | None = None, stream=sys.stderr) -> SweepResult:
    start = time.monotonic()
    run, run_id = open_run(out, prepared, config_path)
    shards = plan(prepared)
    todo = pending_shards(run, shards)
    skipped = len(shards) - len(todo)
    if skipped:
        print(f"sweep: resuming {run.root}: {skipped} of {len(shards)} shards already finished", file=stream)
    rows = sum(s.size for s in todo)
    if todo:
        with ray_session(address):
            execute(prepared, run, run_id, todo, die_after=die_after,
                    progress=Progress(len(todo), rows, stream=stream))
    return SweepResult(run, len(shards), skipped, rows, time.monotonic() - start)


def shard_files(run: RunDir, shards: list[Shard]) -> list[Path]:
    return [run.shard_path(s.system, s.suite, s.index) for s in shards]
