"""The sweep: items × systems, translated on Ray actors, one Parquet file per shard of items.

1. ``prepare``: resolve and verify datasets, load the suites' items, build each backend once in the
   driver and let it check its input (recorded files must line up). Nothing is written before this.
2. ``plan_shards``: per system and suite, consecutive runs of ``shard_size`` items. A shard's key
   hashes the system's config and the shard's item ids, so a finished shard is reused only for the
   same work.
3. ``plan_live``: for each live system (a TextTranslator), the distinct (language pair, source)
   texts of the run, minus those the translation store already holds: what must be sent, and its
   size in characters (the cost guard refuses to start past a system's ``max_chars``).
4. ``execute``: each system gets ``actors`` Ray actors hosting its backend. Recorded systems turn
   item shards into files directly. Live systems translate their texts to send in chunks, each
   chunk's results (translations and failures) appended to the store as soon as it finishes, under
   a rate limit shared by all the system's actors.
5. ``materialize``: a live system's item shards are joined from the store in the driver.

A rerun with the same output directory skips finished shards and re-sends only texts that never
arrived or failed, so an interrupted sweep loses at most the work in flight.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import polars as pl
import pyarrow as pa

from . import __version__
from .cache import KEY, STORE_SCHEMA, TranslationCache, system_identity
from .config import RunConfig, SystemConfig
from .datasets import resolve
from .errors import BiasevalError, RunDirError, SweepFailed
from .live import LiveRunner, RetryPolicy
from .store import SHARD_KEY, RunDir, write_parquet_atomic
from .suites import SUITES
from .translators import TRANSLATORS, TextTranslator, Translator

SHARD_ERRORS = b"biaseval.errors"

TRANSLATION_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("subset", pa.string()),
        ("system", pa.string()),
        ("system_version", pa.string()),
        ("provider", pa.string()),
        ("model", pa.string()),  # as reported by the provider, where it reports one
        ("src_lang", pa.string()),
        ("tgt_lang", pa.string()),
        ("source", pa.string()),
        ("gold", pa.string()),  # copied from the item, so a shard scores without a join
        ("occupation", pa.string()),
        ("stereotype", pa.string()),
        ("translation", pa.string()),  # null when the text failed; never an empty stand-in
        ("error", pa.string()),
        ("attempts", pa.int32()),  # requests it took (0: replayed or cached)
        ("cached", pa.bool_()),  # translated by an earlier run, taken from the store
        ("run_id", pa.string()),
        ("translated_at", pa.timestamp("us", tz="UTC")),
    ]
)


class BudgetExceeded(BiasevalError):
    """A sweep would send more characters than a system's ``max_chars``."""


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
class LivePlan:
    """What a live system must send in this run."""

    identity: dict
    unique: int  # distinct (pair, source) texts of the run
    cached: int  # of those, already in the store
    to_send: pl.DataFrame  # KEY columns
    chars: int  # characters of to_send

    @property
    def sends(self) -> int:
        return self.to_send.height


@dataclass
class Prepared:
    config: RunConfig
    config_dir: Path
    items: dict[str, pl.DataFrame]  # suite -> item table
    coverage: dict[str, list[str]]  # system -> suites it translates
    dataset_commits: dict[str, str]  # suite -> dataset commit
    live: dict[str, LivePlan] = field(default_factory=dict)  # filled by plan_live

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

    def system_items(self, system: str) -> pl.DataFrame:
        return pl.concat([self.items[s] for s in self.coverage[system]])


def backend_of(cfg: SystemConfig) -> type[Translator]:
    return TRANSLATORS.get(cfg.backend)


def is_live(cfg: SystemConfig) -> bool:
    return issubclass(backend_of(cfg), TextTranslator)


def build_translator(system: str, cfg: SystemConfig, config_dir: Path) -> Translator:
    backend = backend_of(cfg)
    return backend(system, backend.Options.model_validate(cfg.options), config_dir=config_dir)


def identity_of(cfg: SystemConfig) -> dict:
    backend = backend_of(cfg)
    options = backend.Options.model_validate(cfg.options).model_dump(mode="json")
    return system_identity(cfg.backend, cfg.version, options, backend.OPERATIONAL)


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
        if not is_live(cfg):  # live backends are built on the workers (clients, models, credentials)
            build_translator(system, cfg, config_dir).check(pl.concat([items[s] for s in coverage[system]]))
    return Prepared(config, config_dir, items, coverage, commits)


def cache_for(config: RunConfig) -> TranslationCache:
    return TranslationCache(config.cache.path)


def plan_live(prepared: Prepared, cache: TranslationCache, *, refresh: bool = False,
              run_id: str | None = None) -> dict[str, LivePlan]:
    """Per live system: the run's distinct texts and which of them the store does not hold yet.

    With ``refresh`` only translations made by ``run_id`` count (a refreshed run resumes without
    re-sending what it already got, but takes nothing from earlier runs)."""
    plans = {}
    use_cache = prepared.config.cache.enabled
    for system, cfg in prepared.config.systems.items():
        if not is_live(cfg):
            continue
        identity = identity_of(cfg)
        wanted = prepared.system_items(system).select(KEY).unique(maintain_order=True)
        if use_cache or refresh:
            hits = cache.lookup(identity, wanted, run_id=run_id if refresh else None)
            if refresh and run_id is None:
                hits = hits.clear()
        else:
            hits = wanted.clear()
        to_send = wanted.join(hits.select(KEY), on=KEY, how="anti").sort(KEY)
        chars = int(to_send["source"].str.len_chars().sum() or 0)
        plans[system] = LivePlan(identity, wanted.height, hits.height, to_send, chars)
    prepared.live = plans
    return plans


def check_budgets(prepared: Prepared) -> None:
    for system, live in prepared.live.items():
        budget = prepared.config.systems[system].max_chars
        if budget is not None and live.chars > budget:
            raise BudgetExceeded(
                f"systems.{system}: this sweep would send {live.chars:,} characters ({live.sends:,} texts not in "
                f"the translation store), over its max_chars budget of {budget:,}; nothing was sent. Raise "
                f"max_chars, narrow the suites or systems, or check `biaseval plan`"
            )


def system_key(cfg: SystemConfig) -> str:
    return hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()


def plan_shards(prepared: Prepared) -> list[Shard]:
    size = prepared.config.sweep.shard_size
    shards = []
    for system, suites in prepared.coverage.items():
        cfg = prepared.config.systems[system]
        # A shard's key covers what determines its rows: for a live system its identity (cached
        # translations are reusable across operational changes), for others the whole config.
        base = repr(sorted(identity_of(cfg).items())) if is_live(cfg) else system_key(cfg)
        for suite in suites:
            ids = prepared.items[suite]["item_id"]
            for index, start in enumerate(range(0, len(ids), size)):
                stop = min(start + size, len(ids))
                digest = hashlib.sha256(base.encode())
                digest.update(suite.encode())
                digest.update("\n".join(ids[start:stop].to_list()).encode())
                shards.append(Shard(system, suite, index, start, stop, digest.hexdigest()[:24]))
    return shards


def _timestamp(value: datetime) -> pl.Expr:
    return pl.lit(value).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC"))


def translation_table(items: pl.DataFrame, translations: list[str | None], system: str, version: str,
                      run_id: str, *, provider: str = "recorded") -> pa.Table:
    """Rows of an item-keyed (recorded) system: replayed, so no attempts, no provider model."""
    frame = items.select("item_id", "suite", "subset", "src_lang", "tgt_lang", "source", "gold", "occupation",
                         "stereotype").with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.lit(provider).alias("provider"),
        pl.lit(None, dtype=pl.String).alias("model"),
        pl.Series("translation", translations, dtype=pl.String),
        pl.lit(None, dtype=pl.String).alias("error"),
        pl.lit(0, dtype=pl.Int32).alias("attempts"),
        pl.lit(False).alias("cached"),
        pl.lit(run_id).alias("run_id"),
        _timestamp(datetime.now(timezone.utc)).alias("translated_at"),
    )
    return frame.to_arrow().select(TRANSLATION_SCHEMA.names).cast(TRANSLATION_SCHEMA)


def live_table(items: pl.DataFrame, found: pl.DataFrame, failed: pl.DataFrame, system: str, version: str,
               run_id: str) -> pa.Table:
    """Rows of a live system's items from the store: the translation where there is one, else the
    latest recorded failure."""
    base = items.select("item_id", "suite", "subset", "src_lang", "tgt_lang", "source", "gold", "occupation",
                        "stereotype")
    ok = base.join(found, on=KEY, how="inner")
    bad = base.join(found.select(KEY), on=KEY, how="anti").join(failed, on=KEY, how="left")
    frame = pl.concat([ok, bad], how="diagonal_relaxed").with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.col("error").fill_null(pl.when(pl.col("translation").is_null()).then(pl.lit("not translated"))),
        pl.col("attempts").fill_null(0).cast(pl.Int32),
        (pl.col("run_id").is_not_null() & (pl.col("run_id") != run_id)).alias("cached"),
        pl.lit(run_id).alias("run_id"),
    ).sort("item_id")
    return frame.select(TRANSLATION_SCHEMA.names).to_arrow().cast(TRANSLATION_SCHEMA)


class ShardWorker:
    """Hosts one system's backend inside a Ray actor.

    Recorded systems: ``run_shard`` turns a shard of items into a Parquet file. Live systems:
    ``translate_texts`` sends a chunk of texts (retries, shared rate limit) and appends the results
    to the translation store. ``die_after`` (testing only) makes the process exit after that many
    tasks, as a crashed worker would, to show that a rerun resumes cleanly.
    """

    def __init__(self, system: str, cfg_json: str, config_dir: str, run_root: str, run_id: str,
                 cache_root: str | None = None, limiter=None, die_after: int | None = None):
        self.system = system
        self.cfg = SystemConfig.model_validate_json(cfg_json)
        self.translator = build_translator(system, self.cfg, Path(config_dir))
        if isinstance(self.translator, TextTranslator):
            self.translator.load()
        self.run = RunDir(run_root)
        self.run_id = run_id
        self.cache = TranslationCache(cache_root) if cache_root else None
        self.identity = identity_of(self.cfg)
        self.limiter = limiter
        self.die_after = die_after
        self.done = 0

    def _finished(self) -> None:
        self.done += 1
        if self.die_after is not None and self.done >= self.die_after:
            os._exit(1)

    def run_shard(self, shard: Shard, items: pa.Table) -> int:
        frame = pl.from_arrow(items)
        translations = self.translator.translate_items(frame)
        table = translation_table(frame, translations, self.system, self.cfg.version, self.run_id)
        path = self.run.shard_path(shard.system, shard.suite, shard.index)
        write_parquet_atomic(table, path, {SHARD_KEY: shard.key.encode(), SHARD_ERRORS: b"0"})
        self._finished()
        return table.num_rows

    def translate_texts(self, texts: pa.Table) -> int:
        import ray

        limiter = self.limiter
        reserve = (lambda requests, chars: ray.get(limiter.reserve.remote(requests, chars))) if limiter else None
        pause = (lambda seconds: limiter.pause.remote(seconds)) if limiter else None
        retry = self.cfg.retry
        runner = LiveRunner(
            self.translator,
            RetryPolicy(retry.max_attempts, retry.backoff_s, retry.max_backoff_s, retry.timeout_s),
            reserve=reserve, pause=pause, concurrency=self.cfg.concurrency,
        )
        frame = pl.from_arrow(texts)
        parts = []
        for (src, tgt), group in frame.group_by(["src_lang", "tgt_lang"], maintain_order=True):
            sources = group["source"].to_list()
            results = runner.translate(sources, src, tgt)
            parts.append(pa.table({
                "src_lang": [src] * len(sources), "tgt_lang": [tgt] * len(sources), "source": sources,
                "translation": [r.translation for r in results], "error": [r.error for r in results],
                "attempts": pa.array([r.attempts for r in results], pa.int32()),
                "model": [r.model for r in results],
                "provider": [self.translator.provider] * len(sources),
                "system_version": [self.cfg.version] * len(sources),
                "run_id": [self.run_id] * len(sources),
                "translated_at": pa.array([r.translated_at for r in results], pa.timestamp("us", tz="UTC")),
            }, schema=STORE_SCHEMA))
        if parts:
            self.cache.append(self.identity, pa.concat_tables(parts))
        self._finished()
        return frame.height


class Progress:
    def __init__(self, total_tasks: int, total_units: int, stream=sys.stderr, every: float = 1.0):
        self.total_tasks, self.total_units = total_tasks, total_units
        self.tasks = self.units = 0
        self.stream, self.every = stream, every
        self.start = self.last = time.monotonic()

    def advance(self, units: int) -> None:
        self.tasks += 1
        self.units += units
        now = time.monotonic()
        if now - self.last >= self.every or self.tasks == self.total_tasks:
            self.last = now
            elapsed = now - self.start
            rate = self.units / elapsed if elapsed > 0 else 0.0
            print(
                f"sweep: {self.tasks}/{self.total_tasks} tasks, {self.units:,}/{self.total_units:,} rows and texts, "
                f"{elapsed:.1f} s ({rate:,.0f}/s)",
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


@dataclass(frozen=True)
class Task:
    """One unit of actor work: an item shard of a recorded system, or a chunk of a live system's texts."""

    system: str
    name: str
    units: int
    shard: Shard | None = None
    texts: pl.DataFrame | None = None


def live_tasks(prepared: Prepared) -> list[Task]:
    size = prepared.config.sweep.texts_per_task
    tasks = []
    for system, live in prepared.live.items():
        for index, start in enumerate(range(0, live.sends, size)):
            chunk = live.to_send.slice(start, size)
            tasks.append(Task(system, f"{system}/texts/{index:05d}", chunk.height, texts=chunk))
    return tasks


def execute(prepared: Prepared, run: RunDir, run_id: str, tasks: list[Task], *, cache: TranslationCache,
            die_after: int | None = None, progress: Progress | None = None) -> None:
    """Run ``tasks`` on Ray actors; raise SweepFailed (keeping finished work) if any fails."""
    import ray

    from .live import RateLimiter

    config = prepared.config
    queues: dict[str, list[Task]] = {}
    for task in tasks:
        queues.setdefault(task.system, []).append(task)
    worker_cls = ray.remote(ShardWorker)
    limiter_cls = ray.remote(RateLimiter)
    in_flight: dict[ray.ObjectRef, tuple[Task, object]] = {}

    def submit(actor, task: Task) -> None:
        if task.shard is not None:
            s = task.shard
            ref = actor.run_shard.remote(s, prepared.items[s.suite].slice(s.start, s.size).to_arrow())
        else:
            ref = actor.translate_texts.remote(task.texts.to_arrow())
        in_flight[ref] = (task, actor)

    actors, limiters = {}, []
    for system, queue in queues.items():
        cfg = config.systems[system]
        limiter = None
        if cfg.limits.requests_per_s or cfg.limits.chars_per_min:
            limiter = limiter_cls.options(num_cpus=0).remote(
                cfg.limits.requests_per_s, cfg.limits.chars_per_min, cfg.limits.burst_s)
            limiters.append(limiter)
        count = min(cfg.actors, len(queue))
        options = {"num_cpus": cfg.num_cpus, "num_gpus": cfg.num_gpus, "max_restarts": 0,
                   "max_concurrency": 1}
        if cfg.resources:
            options["resources"] = dict(cfg.resources)
        actors[system] = [
            worker_cls.options(**options).remote(
                system, cfg.model_dump_json(), str(prepared.config_dir), str(run.root), run_id,
                str(cache.root), limiter, die_after,
            )
            for _ in range(count)
        ]
        queue.reverse()  # pop() from the end hands tasks out in order
        for _ in range(config.sweep.in_flight):
            for actor in actors[system]:
                if queue:
                    submit(actor, queue.pop())

    failures: list[str] = []
    while in_flight:
        ready, _ = ray.wait(list(in_flight), num_returns=1)
        task, actor = in_flight.pop(ready[0])
        try:
            units = ray.get(ready[0])
        except Exception as exc:  # noqa: BLE001 - reported below with the task named
            failures.append(f"{task.name}: {_describe(exc)}")
            queues[task.system].clear()
            continue
        if progress:
            progress.advance(units)
        if queues[task.system] and not failures:
            submit(actor, queues[task.system].pop())
    for handle in [a for system_actors in actors.values() for a in system_actors] + limiters:
        ray.kill(handle)
    if failures:
        raise SweepFailed(
            f"{len(failures)} task(s) failed; finished shards and translations are kept ({run.translations}, "
            f"{cache.root}) and a rerun of the same command resumes from them. First failure: {failures[0]}"
        )


def _describe(exc: BaseException) -> str:
    from .secrets import redact

    cause = getattr(exc, "cause", None)
    if cause is not None and cause is not exc:
        return redact(f"{type(cause).__name__}: {cause}")
    text = str(exc).strip().splitlines()
    return redact(f"{type(exc).__name__}: {text[-1] if text else ''}")


def materialize(prepared: Prepared, run: RunDir, run_id: str, shards: list[Shard], cache: TranslationCache,
                *, refresh: bool) -> int:
    """Write a live system's pending item shards from the store; returns the rows that failed."""
    failed_rows = 0
    by_system: dict[str, list[Shard]] = {}
    for shard in shards:
        by_system.setdefault(shard.system, []).append(shard)
    for system, system_shards in by_system.items():
        cfg = prepared.config.systems[system]
        live = prepared.live[system]
        wanted = prepared.system_items(system).select(KEY).unique()
        found = cache.lookup(live.identity, wanted, run_id=run_id if refresh else None)
        missing = wanted.join(found.select(KEY), on=KEY, how="anti")
        failed = cache.failures(live.identity, missing, run_id=run_id).drop("translation")
        found = found.drop("error")
        for shard in system_shards:
            items = prepared.items[shard.suite].slice(shard.start, shard.size)
            table = live_table(items, found, failed, system, cfg.version, run_id)
            errors = table.num_rows - table.column("translation").drop_null().__len__()
            failed_rows += errors
            write_parquet_atomic(table, run.shard_path(shard.system, shard.suite, shard.index),
                                 {SHARD_KEY: shard.key.encode(), SHARD_ERRORS: str(errors).encode()})
    return failed_rows


@dataclass
class SweepResult:
    run: RunDir
    shards: int
    skipped: int
    translated_rows: int  # item rows written by this invocation
    sent: int  # texts sent to live systems
    failed: int  # item rows without a translation (recorded with their error; retried next run)
    seconds: float


def existing_run(out: Path) -> dict | None:
    run = RunDir(out)
    if run.root.exists() and not run.root.is_dir():
        raise RunDirError(f"{run.root}: exists and is not a directory")
    previous = run.read_run() if run.root.is_dir() else None
    if run.root.is_dir() and previous is None and any(run.root.iterdir()):
        raise RunDirError(f"{run.root}: not empty and holds no run.json; choose a new --out directory")
    return previous


def new_run_id(config: RunConfig) -> str:
    return f"{config.name}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"


def open_run(out: Path, prepared: Prepared, config_path: Path, run_id: str, previous: dict | None,
             refresh: bool) -> RunDir:
    """Create the run directory, or reopen it for a resume."""
    config = prepared.config
    run = RunDir(out)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run.root.mkdir(parents=True, exist_ok=True)
    run.remove_temporaries()
    items = pl.concat([prepared.items[s] for s in config.suites])
    write_parquet_atomic(items.to_arrow(), run.items)
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
        "datasets": {s: {"dataset": SUITES.get(s).dataset, "commit": c} for s, c in prepared.dataset_commits.items()},
        "systems": {name: {"backend": cfg.backend, "version": cfg.version, "suites": prepared.coverage[name]}
                    for name, cfg in config.systems.items()},
    })
    return run


def pending_shards(run: RunDir, shards: list[Shard]) -> list[Shard]:
    """Shards without a finished file, or whose file holds failed rows (they are retried)."""
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
        elif run.shard_errors(path):
            todo.append(shard)
    return todo


def run_translations(prepared: Prepared, out: Path, config_path: Path, *, address: str | None = None,
                     refresh: bool = False, die_after: int | None = None, stream=sys.stderr) -> SweepResult:
    start = time.monotonic()
    previous = existing_run(out)
    if refresh and previous is not None and not previous.get("refresh"):
        raise RunDirError(f"{out}: --refresh needs a new --out directory (this one holds a run that used the cache)")
    refresh = refresh or bool(previous and previous.get("refresh"))
    run_id = previous["run_id"] if previous else new_run_id(prepared.config)
    cache = cache_for(prepared.config)
    plan_live(prepared, cache, refresh=refresh, run_id=run_id)
    check_budgets(prepared)

    run = open_run(out, prepared, config_path, run_id, previous, refresh)
    shards = plan_shards(prepared)
    todo = pending_shards(run, shards)
    skipped = len(shards) - len(todo)
    if skipped:
        print(f"sweep: resuming {run.root}: {skipped} of {len(shards)} shards already finished", file=stream)
    live_systems = set(prepared.live)
    tasks = [Task(s.system, s.name, s.size, shard=s) for s in todo if s.system not in live_systems]
    live_todo = [s for s in todo if s.system in live_systems]
    pending_live = {s.system for s in live_todo}
    tasks += [t for t in live_tasks(prepared) if t.system in pending_live]
    for system, live in prepared.live.items():
        if system in pending_live:
            print(f"sweep: {system}: {live.unique:,} distinct texts, {live.cached:,} from the store, "
                  f"{live.sends:,} to send ({live.chars:,} characters)", file=stream)
    if tasks:
        with ray_session(address):
            execute(prepared, run, run_id, tasks, cache=cache, die_after=die_after,
                    progress=Progress(len(tasks), sum(t.units for t in tasks), stream=stream))
    failed = materialize(prepared, run, run_id, live_todo, cache, refresh=refresh)
    for system in pending_live:
        cache.compact(prepared.live[system].identity)
    rows = sum(s.size for s in todo)
    sent = sum(t.units for t in tasks if t.texts is not None)
    return SweepResult(run, len(shards), skipped, rows, sent, failed, time.monotonic() - start)


def shard_files(run: RunDir, shards: list[Shard]) -> list[Path]:
    return [run.shard_path(s.system, s.suite, s.index) for s in shards]
