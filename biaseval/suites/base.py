"""What a test suite is: named subsets of source sentences with gold labels, loaded into a polars item table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import polars as pl

from ..datasets import LocalDataset
from ..registry import Registry

# Columns of every item table, in order. Nullable where a suite has no such label.
ITEM_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,  # "<suite>/<subset>/<line:05d>", stable for a pinned dataset
    "suite": pl.String,
    "subset": pl.String,
    "line": pl.Int32,  # 1-based line in the upstream source file
    "source": pl.String,
    "src_lang": pl.String,
    "tgt_lang": pl.String,
    "gold": pl.String,  # male / female / neutral, or null for gender-neutral sets
    "occupation": pl.String,
    "stereotype": pl.String,  # pro / anti, or null
    "reference": pl.String,  # a reference sentence where the suite ships one
}


@dataclass(frozen=True)
class Subset:
    name: str
    stem: str  # the upstream file stem; recorded-output patterns use it as {stem}
    source: str  # path of the source file inside the dataset


@dataclass(frozen=True)
class Suite:
    name: str
    version: int
    dataset: str
    src_lang: str
    tgt_lang: str
    scorer: str  # which metric family scores it: tgbi, otsc, winomt
    default_detector: str
    subsets: tuple[Subset, ...]
    loader: Callable[["Suite", LocalDataset], pl.DataFrame]
    scorer_params: tuple[tuple[str, object], ...] = ()  # keyword arguments for the scorer
    doc: str = ""

    def subset(self, name: str) -> Subset:
        for sub in self.subsets:
            if sub.name == name:
                return sub
        raise KeyError(name)

    def load(self, data: LocalDataset) -> pl.DataFrame:
        """The item table, sorted by item_id, with exactly ITEM_SCHEMA's columns."""
        frame = self.loader(self, data)
        return conform(frame).sort("item_id")


SUITES: Registry[Suite] = Registry("suite")


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
        "tgt_lang": [suite.tgt_lang] * n,
    }
    for name, values in columns.items():
        if values is not None:
            data[name] = values
    return pl.DataFrame(data)


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in ITEM_SCHEMA.items() if c not in frame.columns]
    return frame.with_columns(missing).select([pl.col(c).cast(t) for c, t in ITEM_SCHEMA.items()])
