"""What a sweep will do, decided in the driver before anything runs: the run's suites opened and
every system checked (``prepare``), each system's items cut into shards (``plan_shards``), and for each
live system which texts are already in the translation store and which shard sends each new one
(``plan_live``), under the cost guard (``check_budgets``). ``RunPlan`` rebuilds the plan of a
recorded run, enough to score it without the datasets.

Items are never all in memory: a suite is opened (``SuiteData``) and shards are index ranges whose
items the workers generate or slice themselves; the driver plans with 8-byte keys per item.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import polars as pl

from biaseval.config import RunConfig, SystemConfig, resolve_suites
from biaseval.config.paths import cache_location
from biaseval.credentials import remember, remember_url
from biaseval.errors import BiasevalError, ConfigError, RunDirError
from biaseval.run.filesystem import StoreOptions
from biaseval.run.keys import key_hashes
from biaseval.run.rundir import RunDir
from biaseval.run.translation_store import TranslationStore, system_identity
from biaseval.suites import SUITES, SuiteData
from biaseval.suites.power import expected_tests, level_per_test
from biaseval.suites.power import sample_size as power_sample_size
from biaseval.suites.sample import sample_suite
from biaseval.translate import TRANSLATORS, TextTranslator, Translator
from biaseval.translate.base import language_pairs


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


def sent_items(items: pl.DataFrame, cfg: SystemConfig) -> pl.DataFrame:
    """A live system's items as it translates them: ``source`` holds the text it sends, the item's own
    or the column its backend chooses (``Translator.sends``: an LLM's dataset prompt). The plan, the
    translation store's keys, the requests and the shards' rows all take the text from here, so what
    is sent is what is keyed and recorded. An item without that text is a ConfigError."""
    backend = backend_of(cfg)
    column = backend.sends(backend.Options.model_validate(cfg.options))
    if column == "source":
        return items
    missing = items.filter(pl.col(column).is_null())
    if missing.height:
        raise ConfigError(f"item {missing['item_id'][0]}: no {column} to send ({cfg.backend} system sends the "
                          f"items' {column}; {missing.height} items of this shard lack one)")
    return items.with_columns(pl.col(column).alias("source"))


def identity_of(cfg: SystemConfig) -> dict:
    """The system's translation-store identity: backend, version, and where and how texts are translated."""
    backend = backend_of(cfg)
    return system_identity(cfg.backend, cfg.version, backend.identity_options(backend.Options.model_validate(cfg.options)))


def prepare(config: RunConfig, config_dir: Path) -> Prepared:
    remember_config_secrets(config)
    suites = {name: SUITES.get(name).open() for name in config.suites}
    coverage = {}
    for system, cfg in config.systems.items():
        coverage[system] = config.suites_of(system)
        # every backend's own check, here in the driver; live ones check without clients or weights
        backend = backend_of(cfg)
        backend.preflight(system, backend.Options.model_validate(cfg.options), {s: suites[s] for s in coverage[system]},
                          {s: config.targets_of(system, s) for s in coverage[system]}, config_dir)
    return Prepared(config, config_dir, sampled(config, suites), coverage)


def missing_system_packages(prepared: Prepared) -> tuple[str, ...]:
    """The Debian packages this machine lacks for the systems to translate what the run gives them
    (each backend says: ``Translator.missing_system_packages``); the analysers name theirs when the
    config is loaded (``MissingPackages``)."""
    config, needed = prepared.config, []
    for system, cfg in config.systems.items():
        backend = backend_of(cfg)
        covered = prepared.coverage[system]
        pairs = language_pairs({s: prepared.suites[s] for s in covered}, {s: config.targets_of(system, s) for s in covered})
        needed += backend.missing_system_packages(backend.Options.model_validate(cfg.options), pairs)
    return tuple(dict.fromkeys(needed))


def remember_config_secrets(config: RunConfig) -> None:
    """The driver's redactor learns the secrets the config points at (the workers read them): the
    variables options name for keys (``key_env``, ``api_key_env``), whatever they are called, and the
    webhook's auth variable and path."""
    names = [value for cfg in config.systems.values() for option, value in cfg.options.items()
             if option.endswith("key_env") and isinstance(value, str)]
    notify = config.monitor.notify if config.monitor else None
    if notify is not None:
        names.append(notify.webhook_auth_env)
        remember_url(notify.webhook)
    remember(*(os.environ.get(name) for name in names if name))


def sample_size(config: RunConfig, suites: dict[str, SuiteData]) -> int | None:
    """Items per suite of the monitor's sample (``monitor.sample``), None for whole suites. With
    ``detect``, the items McNemar's exact test needs to catch that shift at the level each of the run's
    tests gets, its tests counted on the whole suites (a sample has no more groups than its suite, so
    the size errs on the large side)."""
    monitor = config.monitor
    if monitor is None or monitor.sample is None:
        return None
    if monitor.sample.size is not None:
        return monitor.sample.size
    tests = expected_tests([group_columns(data) for data in suites.values()], len(monitor.monitored(config.systems)))
    level = level_per_test(monitor.alpha, tests, monitor.correction)
    return power_sample_size(monitor.sample.detect, level, monitor.power, monitor.churn)


def group_columns(data: SuiteData) -> pl.DataFrame:
    """The columns of a suite's items that decide which groups a monitoring run tests (``item_groups``)."""
    return pl.concat([batch.select("item_id", "subset", "tgt_lang", "occupation") for batch in data.batches()])


def sampled(config: RunConfig, suites: dict[str, SuiteData]) -> dict[str, SuiteData]:
    """Each suite narrowed to the monitor's sample (after the backends checked the whole suites: a
    recorded system's files hold every item's line)."""
    size = sample_size(config, suites)
    if size is None:
        return suites
    return {name: sample_suite(data, size, config.monitor.sample.seed) for name, data in suites.items()}


def cache_for(config: RunConfig, config_dir: Path) -> TranslationStore:
    """The translation store: ``cache.path`` (an object-store URI, reached with the ``output``
    settings, or a folder relative to the config's, ``config_dir``), else the local default under
    $BIASEVAL_CACHE_DIR."""
    return TranslationStore(cache_location(config.cache, config_dir), StoreOptions.of(config))


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


def plan_live(prepared: Prepared, cache: TranslationStore, *, refresh: bool = False,
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
        keys, lengths = [], []
        for k, shard in enumerate(mine):
            items = sent_items(prepared.suites[shard.suite].slice(shard.start, shard.stop), cfg)
            keys.append(key_hashes(items))
            lengths.append(items["source"].str.len_chars().to_numpy().astype(np.int32))
        all_keys = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
        # the first row holding each distinct key owns it (arrays of 8 bytes per item, one at a time)
        order = np.argsort(all_keys, kind="stable")
        ordered = all_keys[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        del ordered
        owned = np.zeros(len(all_keys), dtype=bool)
        owned[order[first]] = True
        del order, first
        if refresh:  # only what this (resumed) run already got
            stored = cache.hashes(identity, run_id=run_id) if run_id else np.zeros(0, np.uint64)
        elif prepared.config.cache.enabled:
            stored = cache.hashes(identity, since=since)
        else:
            stored = np.zeros(0, np.uint64)
        in_store = np.isin(all_keys, stored)
        send = owned & ~in_store
        plan = LivePlan(identity, int(owned.sum()), int((owned & in_store).sum()), int(send.sum()), 0, since)
        offset = 0
        for k, shard in enumerate(mine):
            rows = np.flatnonzero(send[offset:offset + len(keys[k])]).astype(np.int32)  # rows in a shard
            if len(rows):
                plan.send[(shard.suite, shard.index)] = keys[k][rows]
                plan.send_rows[(shard.suite, shard.index)] = rows
                plan.chars += int(lengths[k][rows].sum(dtype=np.int64))
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


def shard_files(run: RunDir, shards: list[Shard]) -> list[str]:
    return [run.shard_path(s.system, s.suite, s.index) for s in shards]
