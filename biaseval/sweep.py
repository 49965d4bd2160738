"""The sweep: items × systems, translated on Ray actors, one Parquet file per shard of items.

Items are never all in memory: a suite is opened (``SuiteData``) and shards are index ranges whose
items the workers generate or slice themselves; the driver plans with 8-byte keys per item.

1. ``prepare``: open the run's suites (datasets resolved and verified), check recorded outputs line
   up. Nothing is written before this succeeds.
2. ``plan_shards``: per system and suite, consecutive ranges of ``shard_size`` items. A shard's key
   covers the system and the suite's fingerprint, so a finished shard is reused only for the same work.
3. ``plan_live``: per live system (a TextTranslator), the keys of its texts; which are already in the
   translation store; and which shard sends each distinct text not yet stored (the first holding it:
   identical sources are sent once per run). The cost guard refuses a run past ``max_chars``.
4. ``execute``: each system gets ``actors`` Ray actors hosting its backend. Recorded systems write
   their shards directly. Live systems first send their texts (each shard's share, results appended to
   the store as each finishes, under a rate limit shared by the system's actors), then write every
   shard from the store.

A rerun with the same output directory skips finished shards and re-sends only texts that never
arrived or failed, so an interrupted sweep loses at most the work in flight.
"""

from __future__ import annotations

import dataclasses

import hashlib
import os
import sys
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__
from .cache import KEY, STORE_SCHEMA, TranslationCache, system_identity
from .config import RunConfig, SystemConfig, resolve_suites
from .errors import BiasevalError, RunDirError, SweepFailed
from .keys import key_hashes
from .live import LiveRunner, RetryPolicy
from .storage import StoreOptions, writing
from .store import SHARD_KEY, RunDir
from .suites import ITEM_SCHEMA, SUITES, SuiteData
from .translators import TRANSLATORS, TextTranslator, Translator

SHARD_ERRORS = b"biaseval.errors"
ITEM_COLUMNS = ["item_id", "suite", "subset", "src_lang", "tgt_lang", "source", "gold", "occupation",
                "female_share", "stereotype"]

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
        ("female_share", pa.float64()),
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
    start: int  # item range in the suite's order
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
    sends: int  # of those, to send now
    chars: int  # characters to send
    since: datetime | None = None  # stored translations older than this are not reused (the system's max_age)
    send: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # (suite, shard) -> keys it sends
    send_rows: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # ... and their rows in the shard
    keys: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # (suite, shard) -> its items' keys


@dataclass
class Prepared:
    config: RunConfig
    config_dir: Path
    suites: dict[str, SuiteData]
    coverage: dict[str, list[str]]  # system -> suites it translates
    live: dict[str, LivePlan] = field(default_factory=dict)  # filled by plan_live

    def size_of(self, system: str) -> int:
        """Items this system translates (only its target languages' items, where it names some)."""
        if self.config.systems[system].targets is None:
            return sum(self.suites[s].size for s in self.coverage[system])
        total = 0
        for suite in self.coverage[system]:
            ranges = self.suites[suite].target_ranges()
            total += sum(ranges[t][1] - ranges[t][0] for t in self.config.targets_of(system, suite) if t in ranges)
        return total


def backend_of(cfg: SystemConfig) -> type[Translator]:
    return TRANSLATORS.get(cfg.backend)


def is_live(cfg: SystemConfig) -> bool:
    return issubclass(backend_of(cfg), TextTranslator)


def build_translator(system: str, cfg: SystemConfig, config_dir: Path) -> Translator:
    backend = backend_of(cfg)
    return backend(system, backend.Options.model_validate(cfg.options), config_dir=config_dir)


def identity_of(cfg: SystemConfig) -> dict:
    """The system's translation-store identity: backend, version, and where and how texts are translated."""
    backend = backend_of(cfg)
    return system_identity(cfg.backend, cfg.version, backend.identity_options(backend.Options.model_validate(cfg.options)))


def prepare(config: RunConfig, config_dir: Path) -> Prepared:
    suites = {name: SUITES.get(name).open() for name in config.suites}
    coverage = {}
    for system, cfg in config.systems.items():
        coverage[system] = config.suites_of(system)
        # every backend's own check, here in the driver; live ones check without clients or weights
        backend = backend_of(cfg)
        backend.preflight(system, backend.Options.model_validate(cfg.options), {s: suites[s] for s in coverage[system]},
                          {s: config.targets_of(system, s) for s in coverage[system]}, config_dir)
    return Prepared(config, config_dir, suites, coverage)


def cache_for(config: RunConfig) -> TranslationCache:
    """The translation store: ``cache.path`` (a path or an object-store URI, reached with the
    ``output`` settings), else the local default under $BIASEVAL_CACHE_DIR."""
    return TranslationCache(config.cache.path, config.store_options())


def system_key(cfg: SystemConfig) -> str:
    return hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()


def plan_shards(config: RunConfig, coverage: dict[str, list[str]], sizes: dict[str, int],
                fingerprints: dict[str, str], ranges: dict[str, dict[str, tuple[int, int]]] | None = None) -> list[Shard]:
    """Each system's suites cut into shards of ``shard_size`` items. A system limited to some target
    languages (``targets:``) gets shards of those languages' item ranges only (``ranges``: per suite,
    target -> (start, stop))."""
    size = config.sweep.shard_size
    shards = []
    for system, suites in coverage.items():
        cfg = config.systems[system]
        # A shard's key covers what determines its rows: for a live system its identity (stored
        # translations are reusable across operational changes), for others the whole config.
        base = repr(sorted(identity_of(cfg).items())) if is_live(cfg) else system_key(cfg)
        for suite in suites:
            spans = [(0, sizes[suite])]
            if cfg.targets is not None and ranges and suite in ranges:
                spans = [tuple(ranges[suite][t]) for t in config.targets_of(system, suite) if t in ranges[suite]]
            index = 0
            for first, end in spans:
                for start in range(first, end, size):
                    stop = min(start + size, end)
                    key = hashlib.sha256(f"{base}|{suite}|{fingerprints[suite]}|{start}|{stop}".encode())
                    shards.append(Shard(system, suite, index, start, stop, key.hexdigest()[:24]))
                    index += 1
    return shards


def shards_of(prepared: Prepared) -> list[Shard]:
    sizes = {name: data.size for name, data in prepared.suites.items()}
    fingerprints = {name: data.fingerprint for name, data in prepared.suites.items()}
    ranges = {name: data.target_ranges() for name, data in prepared.suites.items()}
    return plan_shards(prepared.config, prepared.coverage, sizes, fingerprints, ranges)


def plan_live(prepared: Prepared, cache: TranslationCache, *, refresh: bool = False,
              run_id: str | None = None) -> dict[str, LivePlan]:
    """Per live system: its texts' keys, which the store holds, and which shard sends each new one.

    With ``refresh`` only translations made by ``run_id`` count (a refreshed run resumes without
    re-sending what it already got, but takes nothing from earlier runs)."""
    plans = {}
    shards = shards_of(prepared)
    for system, cfg in prepared.config.systems.items():
        if not is_live(cfg):
            continue
        identity = identity_of(cfg)
        since = datetime.now(timezone.utc) - timedelta(seconds=cfg.max_age_s) if cfg.max_age_s else None
        mine = [s for s in shards if s.system == system]
        keys, lengths, owner = [], [], []
        for k, shard in enumerate(mine):
            items = prepared.suites[shard.suite].slice(shard.start, shard.stop)
            keys.append(key_hashes(items))
            lengths.append(items["source"].str.len_chars().to_numpy())
            owner.append(np.full(items.height, k, dtype=np.int32))
        all_keys = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
        all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        all_owner = np.concatenate(owner) if owner else np.zeros(0, np.int32)
        # the first row holding each distinct key owns it
        order = np.argsort(all_keys, kind="stable")
        first = np.ones(len(order), dtype=bool)
        first[1:] = all_keys[order][1:] != all_keys[order][:-1]
        owned = np.zeros(len(all_keys), dtype=bool)
        owned[order[first]] = True
        if refresh:  # only what this (resumed) run already got
            stored = cache.hashes(identity, run_id=run_id) if run_id else np.zeros(0, np.uint64)
        elif prepared.config.cache.enabled:
            stored = cache.hashes(identity, since=since)
        else:
            stored = np.zeros(0, np.uint64)
        in_store = np.isin(all_keys, stored)
        send = owned & ~in_store
        plan = LivePlan(identity, int(owned.sum()), int((owned & in_store).sum()), int(send.sum()),
                        int(all_lengths[send].sum()), since)
        offset = 0
        for k, shard in enumerate(mine):
            rows = np.flatnonzero(send[offset:offset + len(keys[k])])
            if len(rows):
                plan.send[(shard.suite, shard.index)] = keys[k][rows]
                plan.send_rows[(shard.suite, shard.index)] = rows
            plan.keys[(shard.suite, shard.index)] = keys[k]
            offset += len(keys[k])
        plans[system] = plan
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


def _timestamp(value: datetime) -> pl.Expr:
    return pl.lit(value).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC"))


def translation_table(items: pl.DataFrame, translations: list[str | None], system: str, version: str,
                      run_id: str, *, provider: str = "recorded", errors: list[str | None] | None = None) -> pa.Table:
    """Rows of an item-keyed (recorded) system: replayed, so no attempts, no provider model. A row
    without a translation carries its ``errors`` entry (a recorded system has nothing to retry, so
    such rows do not make the shard pending)."""
    frame = items.select(ITEM_COLUMNS).with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.lit(provider).alias("provider"),
        pl.lit(None, dtype=pl.String).alias("model"),
        pl.Series("translation", translations, dtype=pl.String),
        pl.Series("error", errors if errors is not None else [None] * items.height, dtype=pl.String),
        pl.lit(0, dtype=pl.Int32).alias("attempts"),
        pl.lit(False).alias("cached"),
        pl.lit(run_id).alias("run_id"),
        _timestamp(datetime.now(timezone.utc)).alias("translated_at"),
    )
    return frame.to_arrow().select(TRANSLATION_SCHEMA.names).cast(TRANSLATION_SCHEMA)


def live_table(items: pl.DataFrame, keys: np.ndarray, found: pl.DataFrame, failed: pl.DataFrame, system: str,
               version: str, run_id: str) -> pa.Table:
    """Rows of a live system's items from the store: the translation where there is one, else the
    latest recorded failure. Joined on the 64-bit key, then checked text by text (a key collision
    could never hand one text another's translation)."""
    base = items.select(ITEM_COLUMNS).with_columns(pl.Series("key_hash", keys)).with_row_index("_order")
    same = [pl.col(c) == pl.col(f"{c}_store") for c in KEY]
    stored = [c for c in STORE_SCHEMA.names if c not in ("key_hash", *KEY)]

    def attach(rows: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
        joined = base.join(rows.select("key_hash", *[pl.col(c).alias(f"{c}_store") for c in KEY], *columns),
                           on="key_hash", how="inner")
        return joined.filter(pl.all_horizontal(same)).drop([f"{c}_store" for c in KEY])

    ok = attach(found, [c for c in stored if c != "error"])
    bad = base.join(ok.select("_order"), on="_order", how="anti")
    bad = bad.join(attach(failed, [c for c in stored if c != "translation"]).select("_order", *[c for c in stored if c != "translation"]),
                   on="_order", how="left")
    frame = pl.concat([ok, bad], how="diagonal_relaxed").sort("_order").with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.col("error").fill_null(pl.when(pl.col("translation").is_null()).then(pl.lit("not translated"))),
        pl.col("attempts").fill_null(0).cast(pl.Int32),
        (pl.col("run_id").is_not_null() & (pl.col("run_id") != run_id)).alias("cached"),
        pl.lit(run_id).alias("run_id"),
    )
    return frame.select(TRANSLATION_SCHEMA.names).to_arrow().cast(TRANSLATION_SCHEMA)


class ShardWorker:
    """Hosts one system's backend inside a Ray actor.

    ``run_shard`` (recorded systems) turns a shard of items into a Parquet file. For live systems,
    ``send_shard`` sends the texts a shard owns (retries, shared rate limit) and appends the results
    to the translation store; ``write_shard`` then writes the shard's rows from the store.
    ``die_after`` (testing only) makes the process exit after that many tasks, as a crashed worker
    would, to show that a rerun resumes cleanly.
    """

    def __init__(self, system: str, cfg_json: str, config_dir: str, run_root: str, run_id: str,
                 suites: dict, store: dict | None = None, limiter=None, die_after: int | None = None,
                 run_options: dict | None = None):
        """``store`` (live systems): the translation store's ``root`` and ``options``, the system's
        ``identity`` and ``since`` (as the driver computed them) and the ``marker`` the driver left in
        the store, checked before anything else so that a store this node cannot see fails here."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        for suite in suites.values():  # template suites live in the driver's registry only
            SUITES.put(suite.name, suite)
        self.system = system
        self.cfg = SystemConfig.model_validate_json(cfg_json)
        self.cache = self.identity = self.since = None
        if store is not None:
            self.cache = TranslationCache(store["root"], StoreOptions(**store["options"]))
            self.cache.check_reachable(store["marker"], f"node {node}")
            self.identity, self.since = store["identity"], store["since"]
        self.translator = build_translator(system, self.cfg, Path(config_dir))
        if isinstance(self.translator, TextTranslator):
            self.translator.load()
        self.run = RunDir(run_root, StoreOptions(**(run_options or {})))
        self.run_id = run_id
        self.limiter = limiter
        self.die_after = die_after
        self.done = 0
        # one line in this worker's log: which system it hosts, on which node (placement is checkable)
        print(f"biaseval: ShardWorker {system} on node {node} pid {os.getpid()}", flush=True)

    def ready(self) -> str:
        """Answers once the backend is built and loaded (the driver watches actors that never start)."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def _finished(self) -> None:
        self.done += 1
        if self.die_after is not None and self.done >= self.die_after:
            os._exit(1)

    def _write(self, shard: Shard, table: pa.Table, errors: int) -> None:
        self.run.write_shard(self.run.shard_path(shard.system, shard.suite, shard.index), table,
                             {SHARD_KEY: shard.key.encode(), SHARD_ERRORS: str(errors).encode()})

    def run_shard(self, shard: Shard, data: SuiteData) -> tuple[int, int]:
        items = data.slice(shard.start, shard.stop)
        translations, errors = self.translator.translate_items_with_errors(items)
        table = translation_table(items, translations, self.system, self.cfg.version, self.run_id, errors=errors)
        self._write(shard, table, 0)
        self._finished()
        return table.num_rows, 0

    def send_shard(self, shard: Shard, data: SuiteData, item_keys: np.ndarray, keys: np.ndarray) -> tuple[int, int]:
        """``item_keys``: the keys of the shard's items, in order (the driver has them already);
        ``keys``: those this shard sends."""
        import ray

        items = data.slice(shard.start, shard.stop)
        texts = items.select(KEY).with_columns(pl.Series("key_hash", item_keys))
        texts = texts.filter(pl.col("key_hash").is_in(pl.Series(keys).implode())).unique("key_hash", maintain_order=True)
        limiter = self.limiter
        # the limiter answers when a request may go (it decides and records the start then)
        acquire = (lambda requests, chars: ray.get(limiter.acquire.remote(requests, chars))) if limiter else None
        pause = (lambda seconds: limiter.pause.remote(seconds)) if limiter else None
        retry = self.cfg.retry
        runner = LiveRunner(self.translator,
                            RetryPolicy(retry.max_attempts, retry.backoff_s, retry.max_backoff_s, retry.timeout_s),
                            acquire=acquire, pause=pause, concurrency=self.cfg.concurrency)
        parts, failed = [], 0
        for (src, tgt), group in texts.group_by(["src_lang", "tgt_lang"], maintain_order=True):
            sources = group["source"].to_list()
            results = runner.translate(sources, src, tgt)
            failed += sum(r.translation is None for r in results)
            parts.append(pa.table({
                "key_hash": group["key_hash"].to_arrow(),
                "src_lang": [src] * len(sources), "tgt_lang": [tgt] * len(sources), "source": sources,
                "translation": [r.translation for r in results], "error": [r.error for r in results],
                "attempts": pa.array([r.attempts for r in results], pa.int32()),
                "model": [r.model for r in results],
                "provider": [self.translator.provider] * len(sources),
                "system_version": [self.cfg.version] * len(sources),
                "run_id": [self.run_id] * len(sources),
                "translated_at": pa.array([r.translated_at for r in results], pa.timestamp("us", tz="UTC")),
            }, schema=STORE_SCHEMA))
        part = self.cache.append(self.identity, pa.concat_tables(parts)) if parts else None
        self._finished()
        return texts.height, failed, str(part) if part else None

    def write_shard(self, shard: Shard, data: SuiteData, item_keys: np.ndarray, refresh: bool,
                    first: list[str]) -> tuple[int, int]:
        items = data.slice(shard.start, shard.stop)
        found, failed = self.cache.latest(self.identity, items, item_keys, run_id=self.run_id if refresh else None,
                                          first=first, since=self.since)
        table = live_table(items, item_keys, found, failed, self.system, self.cfg.version, self.run_id)
        errors = table.num_rows - len(table.column("translation").drop_null())
        self._write(shard, table, errors)
        self._finished()
        return table.num_rows, errors


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


# CPUs left to Ray's own tasks when actors are sized to the cluster ("auto"): an actor pool that takes
# every CPU starves the pipeline's read/write tasks.
RESERVED_CPUS = 1


def actors_for(cfg: SystemConfig, cluster: dict[str, float]) -> int:
    """How many actors host a system: its ``actors``, or for ``auto`` as many as the cluster's totals
    (``ray.cluster_resources()``) fit with the resources each actor asks for (GPUs, custom
    resources, CPUs less RESERVED_CPUS). An actor that asks for nothing (an API client) gets 1: its
    throughput is set by its quota and ``concurrency``, not by the cluster."""
    if cfg.actors != "auto":
        return cfg.actors
    wants = {"GPU": cfg.num_gpus, "CPU": cfg.num_cpus, **cfg.resources}
    fits = []
    for name, amount in wants.items():
        if amount and amount > 0:
            total = cluster.get(name, 0.0) - (RESERVED_CPUS if name == "CPU" else 0)
            fits.append(int(total // amount))
    return max(1, min(fits)) if fits else 1


def _job_env_vars() -> dict:
    """The env_vars of the runtime_env this process was submitted with (``ray job submit``), if any."""
    import json

    try:
        job = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}")
    except ValueError:
        return {}
    return (job.get("runtime_env") or {}).get("env_vars") or {}


@contextmanager
def ray_session(address: str | None = None) -> Iterator[None]:
    """Use a running Ray, connect to ``address``/``RAY_ADDRESS``, or start a private local one (and
    stop it after). Without an address a Ray started earlier with ``ray start`` on this host is not
    joined: a sweep joins a cluster only when told to."""
    import ray

    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    # The workers get the driver's BIASEVAL_* settings (data folder, offline, cache) — except those a
    # submitted job's runtime_env already sets: Ray refuses to merge the same variable twice.
    env = {k: v for k, v in os.environ.items() if k.startswith("BIASEVAL_") and k not in _job_env_vars()}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env} if env else None, logging_level="WARNING")
    else:
        # address="local": always a new cluster of our own (plain ray.init() would connect to one that
        # `ray start` left running here, and refuse num_cpus)
        ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False, logging_level="WARNING",
                 configure_logging=True, log_to_driver=True)
    try:
        yield
    finally:
        ray.shutdown()


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
    def name(self) -> str:
        return f"{self.shard.name} ({self.kind}{f' {self.part + 1}' if self.kind == 'send' else ''})"


@dataclass
class Outcome:
    rows: int = 0  # item rows written
    sent: int = 0  # texts sent
    failed: int = 0  # item rows written without a translation


def execute(prepared: Prepared, run: RunDir, run_id: str, tasks: list[Task], *, cache: TranslationCache,
            refresh: bool = False, die_after: int | None = None, progress: Progress | None = None,
            marker: str | None = None) -> Outcome:
    """Run ``tasks`` on Ray actors, a system's ``write`` tasks only after all its ``send`` tasks;
    raise SweepFailed (keeping finished work) if any fails.

    Before anything is submitted, every system's actor must fit on some live node (``check_placement``),
    and an actor gets tasks only once it has started (built its backend and, for a live system, found
    the driver's ``marker`` in the translation store). An actor that dies (its process or its node
    lost) is replaced and its tasks run again, each task at most ``sweep.task_retries`` more times; a
    replacement that no live node can host is given up after ``sweep.placement_wait_s``. Other
    failures (a backend that cannot start, an error in a task) stop that system's work at once."""
    import ray
    from ray.exceptions import RayActorError

    from .live import RateLimiter

    config = prepared.config
    check_placement(config, list({t.system for t in tasks}), stream=progress.stream if progress else sys.stderr)
    ready: dict[str, deque[Task]] = {}
    later: dict[str, deque[Task]] = {}
    for task in tasks:
        (later if task.kind == "write" else ready).setdefault(task.system, deque()).append(task)
        ready.setdefault(task.system, deque())
        later.setdefault(task.system, deque())
    refs = {name: ray.put(data) for name, data in prepared.suites.items()}
    cluster = ray.cluster_resources()  # for systems with actors: auto
    worker_cls = ray.remote(ShardWorker)
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
    suites = {name: SUITES.get(name) for name in prepared.suites}
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

    def new_actor(system: str):
        cfg = config.systems[system]
        options = {"num_cpus": cfg.num_cpus, "num_gpus": cfg.num_gpus, "max_restarts": 0, "max_concurrency": 1}
        if cfg.resources:
            options["resources"] = dict(cfg.resources)
        actor = worker_cls.options(**options).remote(
            system, cfg.model_dump_json(), str(prepared.config_dir), run.location, run_id,
            {s: suites[s] for s in prepared.coverage[system]}, store_for(system), limiters.get(system), die_after,
            dataclasses.asdict(run.options))
        running[actor] = 0
        starting[actor.ready.remote()] = (system, actor)
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
            print(f"sweep: {system}: an actor was lost; a new one takes over its tasks", file=sys.stderr, flush=True)

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

    for system in ready:
        cfg = config.systems[system]
        if cfg.limits.requests_per_s or cfg.limits.chars_per_min:
            limiters[system] = limiter_cls.options(num_cpus=0).remote(
                cfg.limits.requests_per_s, cfg.limits.chars_per_min, cfg.limits.burst_s)
        count = min(actors_for(cfg, cluster), len(ready[system]) + len(later[system]))
        actors[system] = [new_actor(system) for _ in range(count)]

    while in_flight or starting:
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
            stop(task.system, f"{task.name}: {_describe(exc)}")
            continue
        if task.kind == "send":
            outcome.sent += units
            if written and written[0]:
                parts.setdefault(task.shard.name, []).append(written[0])
        else:
            outcome.rows += units
            outcome.failed += failed
        if progress:
            progress.advance(units)
        fill(task.system)
    for handle in [a for system_actors in actors.values() for a in system_actors] + list(limiters.values()):
        ray.kill(handle)
    if failures:
        raise SweepFailed(
            f"{len(failures)} task(s) failed; finished shards and translations are kept ({run.shards.location}, "
            f"{cache.root}) and a rerun of the same command resumes from them. First failure: {failures[0]}"
        )
    return outcome


class PlacementError(BiasevalError):
    """A system asks for resources that no live node of the Ray cluster has."""


def actor_bundle(cfg: SystemConfig) -> dict[str, float]:
    """What one actor of the system asks Ray for (CPUs, GPUs, custom resources); zeros left out."""
    bundle = {"CPU": cfg.num_cpus, "GPU": cfg.num_gpus, **cfg.resources}
    return {name: amount for name, amount in bundle.items() if amount}


def unplaceable(bundle: dict[str, float], nodes: list[dict]) -> str | None:
    """None when some live node's total resources hold ``bundle`` (``ray.nodes()`` rows), else what
    is missing, in words."""
    alive = [node.get("Resources") or {} for node in nodes if node.get("Alive")]
    if any(all(total.get(k, 0.0) >= v for k, v in bundle.items()) for total in alive):
        return None
    short = [f"{k!r} ({v:g} per actor; most on one live node: {max((t.get(k, 0.0) for t in alive), default=0):g})"
             for k, v in bundle.items() if not any(t.get(k, 0.0) >= v for t in alive)]
    if short:
        return "resource " + ", ".join(short)
    return f"no single live node holds all of {bundle}"


def check_placement(config: RunConfig, systems: list[str], *, stream=sys.stderr) -> None:
    """Before anything is submitted: every system's actor fits on some live node, or the sweep stops
    here naming the resource (a Ray actor that fits nowhere waits forever). With
    ``sweep.placement_wait_s`` the actors are created anyway — their demand is what makes an
    autoscaler add a node — and ``execute`` gives such a system up after that long."""
    import ray

    nodes = ray.nodes()
    for system in systems:
        missing = unplaceable(actor_bundle(config.systems[system]), nodes)
        if missing is None:
            continue
        if not config.sweep.placement_wait_s:
            raise PlacementError(
                f"systems.{system}: no live node of the Ray cluster has {missing}; nothing was sent. Start a "
                f"node with it (ray start --resources=...), change systems.{system}.resources/num_gpus/num_cpus, "
                f"or set sweep.placement_wait_s to wait for an autoscaler to add one")
        print(f"sweep: {system}: no live node has {missing} yet; waiting up to "
              f"{config.sweep.placement_wait_s:g} s for one (sweep.placement_wait_s)", file=stream, flush=True)


def _describe(exc: BaseException) -> str:
    from .secrets import redact

    cause = getattr(exc, "cause", None)
    if cause is not None and cause is not exc:
        return redact(f"{type(cause).__name__}: {cause}")
    text = str(exc).strip().splitlines()
    return redact(f"{type(exc).__name__}: {text[-1] if text else ''}")


@dataclass
class SweepResult:
    run: RunDir
    shards: int
    skipped: int
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
    return f"{config.name}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"


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
    """Create the run directory, or reopen it for a resume."""
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
        "suites": {name: {"size": data.size, "fingerprint": data.fingerprint, "commit": data.commit,
                          "target_ranges": data.target_ranges(),
                          "dataset": data.suite.dataset, "version": data.suite.version,
                          "path": getattr(data.suite, "path", None) or None}
                   for name, data in prepared.suites.items()},
        "systems": {name: {"backend": cfg.backend, "version": cfg.version, "suites": prepared.coverage[name]}
                    for name, cfg in config.systems.items()},
    })
    return run


@dataclass
class RunPlan:
    """A finished or interrupted run as recorded: enough to score it without the datasets."""

    config: RunConfig
    coverage: dict[str, list[str]]
    shards: list[Shard]

    @classmethod
    def of(cls, run: RunDir) -> "RunPlan":
        info = run.read_run()
        if info is None:
            raise RunDirError(f"{run.root}: no run.json; not a biaseval run directory")
        config = RunConfig.model_validate(info["config"])
        # template suites are found again where the run found them
        paths = tuple(info["suites"][name].get("path") or name for name in config.suites)
        config = resolve_suites(config.model_copy(update={"suites": paths}), Path(info["config_dir"]))
        coverage = {name: s["suites"] for name, s in info["systems"].items()}
        sizes = {name: s["size"] for name, s in info["suites"].items()}
        fingerprints = {name: s["fingerprint"] for name, s in info["suites"].items()}
        ranges = {name: s.get("target_ranges") or {} for name, s in info["suites"].items()}
        return cls(config, coverage, plan_shards(config, coverage, sizes, fingerprints, ranges))


def pending_shards(run: RunDir, shards: list[Shard], suites: dict[str, SuiteData] | None = None,
                   stream=sys.stderr) -> list[Shard]:
    """Shards to (re)write: those without a finished file, those whose file holds failed rows (they
    are retried), and — with ``suites`` given — those whose file is damaged: unreadable, a page that
    fails its checksum, or not exactly the shard's items (each reported by path, then redone). A file
    written for other work (another config or shard size) stops the sweep instead. One listing of the
    run's shards, then each finished shard is read once."""
    finished = set(run.shard_files())
    todo = []
    for shard in shards:
        path = run.shard_path(shard.system, shard.suite, shard.index)
        if path not in finished:
            todo.append(shard)
            continue
        where = run.shards.uri(path)
        try:
            key, errors = run.shard_stamp(path)
        except Exception as exc:  # noqa: BLE001 - a footer that does not parse: the file is damaged
            print(f"sweep: {where}: damaged (footer unreadable: {type(exc).__name__}); writing it again",
                  file=stream, flush=True)
            todo.append(shard)
            continue
        if key != shard.key:
            raise RunDirError(
                f"{where}: written for different work (another shard_size, system config or item set); "
                f"use a new --out directory, or delete {run.shards.uri(f'system={shard.system}')} to translate "
                f"that system again"
            )
        if errors:
            todo.append(shard)
            continue
        if suites is not None:
            damage = run.shard_damage(path, suites[shard.suite].slice(shard.start, shard.stop)["item_id"].to_list())
            if damage:
                print(f"sweep: {where}: damaged ({damage}); writing it again", file=stream, flush=True)
                todo.append(shard)
    return todo


def run_translations(prepared: Prepared, out: Path | str, config_path: Path, *, address: str | None = None,
                     refresh: bool = False, die_after: int | None = None, stream=sys.stderr,
                     run_id: str | None = None) -> SweepResult:
    """``run_id``: the id a new run gets (default: a fresh one; the monitor passes its own). A resumed
    run keeps the id it has, and refuses another."""
    start = time.monotonic()
    options = prepared.config.store_options()
    previous = existing_run(out, options)
    if refresh and previous is not None and not previous.get("refresh"):
        raise RunDirError(f"{out}: --refresh needs a new --out directory (this one holds a run that used the cache)")
    refresh = refresh or bool(previous and previous.get("refresh"))
    if previous and run_id and previous["run_id"] != run_id:
        raise RunDirError(f"{out}: holds run {previous['run_id']}, not {run_id}; choose a new --out directory")
    run_id = previous["run_id"] if previous else run_id or new_run_id(prepared.config)
    cache = cache_for(prepared.config)
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
        print(f"sweep: {system}: {live.unique:,} distinct texts, {live.cached:,} in the store, "
              f"{live.sends:,} to send ({live.chars:,} characters)", file=stream)
    outcome = Outcome()
    if tasks:
        live_tasks = any(t.system in prepared.live for t in tasks)
        if live_tasks and cache.store.remote is False and run.remote is not None:
            print(f"sweep: note: the translation store is on this machine's disk ({cache.root}); workers on other "
                  f"nodes cannot reach it (set cache.path to an object-store URI or a shared path)", file=stream)
        marker = cache.mark(run_id) if live_tasks else None  # each live worker checks it sees this store
        try:
            with ray_session(address):
                outcome = execute(prepared, run, run_id, tasks, cache=cache, refresh=refresh, die_after=die_after,
                                  progress=Progress(len(tasks), sum(t.units for t in tasks), stream=stream),
                                  marker=marker)
        finally:
            if marker:
                cache.unmark(marker)
            run.remove_temporaries()  # left by workers killed mid-write (this driver holds the run's lock)
    for system in {t.system for t in tasks if t.kind == "send"}:
        cache.compact(prepared.live[system].identity)
    return SweepResult(run, len(shards), skipped, outcome.rows, outcome.sent, outcome.failed, time.monotonic() - start)


def shard_files(run: RunDir, shards: list[Shard]) -> list[str]:
    return [run.shard_path(s.system, s.suite, s.index) for s in shards]
