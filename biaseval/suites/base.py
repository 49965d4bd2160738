"""What a test suite is, and what a run reads of one.

A ``Suite`` describes items: source sentences in one language, to be translated into one or more
target languages, with gold labels. ``Suite.open()`` resolves and verifies its data in the driver
and returns a ``SuiteData``: the item count and items by index range, generated or sliced on demand
(so a million-item expansion is never held in memory), picklable to the Ray workers that translate
its shards. Items come in a fixed order; shards are ranges of it.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

import polars as pl

from biaseval.data.datasets import LocalDataset, resolve
from biaseval.errors import ConfigError
from biaseval.registry import Registry

# Columns of every item table, in order. Nullable where a suite has no such label.
ITEM_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,  # "<suite>/<subset>/<line:05d>", stable for a pinned dataset or template
    "suite": pl.String,
    "subset": pl.String,
    "line": pl.Int32,  # 1-based line (upstream file, or occupation index of a template)
    "source": pl.String,
    "src_lang": pl.String,
    "tgt_lang": pl.String,
    "gold": pl.String,  # male / female / neutral, or null for gender-neutral sets
    "occupation": pl.String,
    "female_share": pl.Float64,  # the occupation's labour-statistics female share (%), where known
    "stereotype": pl.String,  # pro / anti, or null
    "reference": pl.String,  # a reference sentence where the suite ships one
    "counterfactual": pl.String,  # the reference of the item's other-gender version (MT-GenEval), or null
    "entity_index": pl.Int32,  # 0-based word (whitespace) index of the scored entity in the source (WinoMT), or null
    "prompt": pl.String,  # the dataset's own LLM prompt around the source (MiTTenS), or null: see Suite.prompts
}


@dataclass(frozen=True)
class Subset:
    name: str
    stem: str  # the upstream file stem; recorded-output patterns use it as {stem}
    source: str = ""  # where its sources come from (for messages)


class SuiteData(ABC):
    """One suite as a run reads it: ``size`` items, in a fixed order, by index range."""

    suite: "Suite"
    size: int
    fingerprint: str  # changes whenever any item would change
    commit: str | None  # the pinned dataset commit its data came from, if any

    @abstractmethod
    def slice(self, start: int, stop: int) -> pl.DataFrame:
        """Items ``start``..``stop`` (ITEM_SCHEMA, in order)."""

    def batches(self, rows: int = 65_536) -> Iterator[pl.DataFrame]:
        for start in range(0, self.size, rows):
            yield self.slice(start, min(start + rows, self.size))

    @abstractmethod
    def subset_sizes(self) -> dict[str, int]:
        """Items per subset."""

    def target_ranges(self) -> dict[str, tuple[int, int]]:
        """Per target language, the range of items translated into it (items come target by target),
        so a system that translates into some of the targets only gets those ranges."""
        targets = self.suite.targets
        if len(targets) == 1:
            return {targets[0]: (0, self.size)}
        per_target, rest = divmod(self.size, len(targets))
        if rest:
            raise ValueError(f"{self.suite.name}: {self.size} items do not split evenly over {len(targets)} targets")
        return {t: (k * per_target, (k + 1) * per_target) for k, t in enumerate(targets)}


@dataclass(frozen=True)
class Suite(ABC):
    name: str
    version: int
    src_lang: str
    targets: tuple[str, ...]
    scorer: str  # which metric family scores it: tgbi, otsc, winomt
    detectors: Mapping[str, str]  # target language -> default detector
    subsets: tuple[Subset, ...]
    dataset: str | None = None
    # Items carry the dataset's own LLM prompt (column ``prompt``) beside the bare ``source``: an LLM
    # system with ``prompt: dataset`` sends that, every other system the source (``Translator.sends``).
    prompts: bool = False
    # Source languages, for a suite whose items come from several (MiTTenS into English); empty: src_lang.
    sources: tuple[str, ...] = ()
    scorer_params: tuple[tuple[str, object], ...] = ()  # keyword arguments for the scorer
    doc: str = ""
    optional_targets: tuple[str, ...] = ()  # languages a run's ``targets:`` may add (not scored by default)
    reference_columns: tuple[str, ...] = ()  # item columns holding a reference for every item (backend `references`)

    def subset(self, name: str) -> Subset:
        for sub in self.subsets:
            if sub.name == name:
                return sub
        raise KeyError(name)

    def detector_for(self, tgt: str) -> str:
        return self.detectors[tgt]

    @abstractmethod
    def open(self) -> SuiteData:
        """Resolve and verify this suite's data (in the driver)."""

    def with_targets(self, targets: tuple[str, ...]) -> "Suite":
        """The same suite for fewer target languages (a run's ``targets:``)."""
        raise ConfigError(f"suite {self.name!r} has fixed target languages ({', '.join(self.targets)})")


SUITES: Registry[Suite] = Registry("suite")


class TableData(SuiteData):
    """A suite small enough to hold: its whole item table, loaded from a dataset once."""

    def __init__(self, suite: "Suite", table: pl.DataFrame, commit: str | None):
        self.suite = suite
        self.table = conform(table).sort("item_id")
        self.size = self.table.height
        self.commit = commit
        targets = ",".join(suite.targets)
        self.fingerprint = hashlib.sha256(f"{suite.name}@{suite.version}+{commit}>{targets}".encode()).hexdigest()[:24]

    def slice(self, start: int, stop: int) -> pl.DataFrame:
        return self.table.slice(start, stop - start)

    def subset_sizes(self) -> dict[str, int]:
        return dict(self.table.group_by("subset").len().iter_rows())

    def target_ranges(self) -> dict[str, tuple[int, int]]:
        spans = (self.table.with_row_index("_i").group_by("tgt_lang")
                 .agg(pl.col("_i").min().alias("start"), pl.col("_i").max().alias("last"), pl.len().alias("n")))
        ranges = {}
        for tgt, start, last, n in spans.iter_rows():
            if last - start + 1 != n:
                raise ValueError(f"{self.suite.name}: the items of target {tgt!r} are not contiguous")
            ranges[tgt] = (int(start), int(last) + 1)
        return dict(sorted(ranges.items(), key=lambda kv: kv[1]))


@dataclass(frozen=True)
class FileSuite(Suite):
    """A suite read from the files of a pinned dataset by a loader function."""

    loader: Callable[["FileSuite", LocalDataset], pl.DataFrame] = field(default=None, compare=False, repr=False)

    def open(self) -> SuiteData:
        data = resolve(self.dataset)
        return TableData(self, self.loader(self, data), data.spec.commit)


def item_frame(suite: Suite, subset: Subset, sources: list[str], **columns: list | None) -> pl.DataFrame:
    """Items of one subset from its source lines (one item per line) plus optional per-line columns."""
    n = len(sources)
    lines = list(range(1, n + 1))
    data = {
        "item_id": [f"{suite.name}/{subset.name}/{i:05d}" for i in lines],
        "suite": [suite.name] * n,
        "subset": [subset.name] * n,
        "line": lines,
        "source": [s.strip() for s in sources],
        "src_lang": [suite.src_lang] * n,
        "tgt_lang": [suite.targets[0]] * n,
    }
    for name, values in columns.items():
        if values is not None:
            data[name] = values
    return pl.DataFrame(data)


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in ITEM_SCHEMA.items() if c not in frame.columns]
    return frame.with_columns(missing).select([pl.col(c).cast(t) for c, t in ITEM_SCHEMA.items()])
