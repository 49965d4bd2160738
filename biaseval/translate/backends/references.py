"""A suite's own references replayed as a system's outputs: the sanity run of a metric.

Scoring the references as if a system had produced them shows what the metric makes of a perfect
system (``side: reference``) and of one that gets every gender wrong (``side: counterfactual``: each
item gets its other-gender version's reference), with no file to write: the references come from
the items themselves (the columns a suite lists in ``reference_columns``; MT-GenEval ships both)::

    systems:
      references:     {backend: references, version: MT-GenEval references}
      counterfactual: {backend: references, version: MT-GenEval references, options: {side: counterfactual}}

A system covers the suites that have the chosen column; ``check`` refuses one where an item lacks it.
"""

from __future__ import annotations

from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from biaseval.errors import DataError
from biaseval.suites import SUITES
from biaseval.translate.base import TRANSLATORS, ItemTranslator


class ReferencesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    side: Literal["reference", "counterfactual"] = Field(
        default="reference", description="reference: each item's own reference; counterfactual: the reference "
                                         "of its other-gender version")


@TRANSLATORS.register("references")
class ReferencesTranslator(ItemTranslator):
    """Each item's reference (or counterfactual reference) as its output."""

    Options = ReferencesOptions
    options: ReferencesOptions

    @classmethod
    def covers(cls, options: ReferencesOptions, suite: str) -> bool:
        return options.side in SUITES.get(suite).reference_columns

    def check(self, suites, targets=None) -> None:
        column = self.options.side
        for name, data in suites.items():
            missing = sum(batch[column].null_count() for batch in data.batches())
            if missing:
                raise DataError(f"system {self.system!r}: {missing} items of suite {name} have no {column} "
                                f"(backend references needs one for every item)")

    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        return items[self.options.side].to_list()
