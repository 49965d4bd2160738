"""Replay of recorded outputs: translations a system produced earlier, one line per source line.

Configured per system with one file pattern per suite; ``{stem}`` is replaced by the upstream
file stem of each subset (see the suite's ``Subset.stem``)::

    backend: recorded
    options:
      dataset: gender-bias-hi-en-eval        # patterns are paths inside this dataset...
      files:
        otsc-hi: "TGBI and Simple Context Evaluation/corpus/amazontranslate/en.{stem}.txt"

Without ``dataset``, patterns are file paths (relative ones to the config file's folder).
A recorded file must have as many lines as its source (trailing empty lines and CRLF are fine);
otherwise the run stops before it starts, naming the file and both counts.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..datasets import registry, resolve
from ..errors import RecordedOutputError
from ..suites import SUITES
from ..textio import read_lines
from .base import TRANSLATORS, ItemTranslator


class RecordedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    dataset: str | None = None
    files: dict[str, str] = Field(min_length=1)

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, name: str | None) -> str | None:
        if name is not None and name not in registry():
            raise ValueError(registry().unknown_message(name))
        return name

    @field_validator("files")
    @classmethod
    def _known_suites(cls, files: dict[str, str]) -> dict[str, str]:
        for suite, pattern in files.items():
            if suite not in SUITES:
                raise ValueError(SUITES.unknown_message(suite))
            if "{stem}" not in pattern:
                raise ValueError(f"{suite}: pattern {pattern!r} has no {{stem}} (one file per subset)")
        return files


@TRANSLATORS.register("recorded")
class RecordedTranslator(ItemTranslator):
    """Replays outputs recorded earlier, one line per source line."""

    Options = RecordedOptions
    options: RecordedOptions

    def __init__(self, system, options, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        self._lines: dict[tuple[str, str], list[str]] = {}

    @classmethod
    def covers(cls, options: RecordedOptions, suite: str) -> bool:
        return suite in options.files

    def path_for(self, suite: str, subset: str) -> Path:
        pattern = self.options.files[suite]
        rel = pattern.format(stem=SUITES.get(suite).subset(subset).stem)
        if self.options.dataset:
            return resolve(self.options.dataset).path(rel)
        path = Path(rel)
        return path if path.is_absolute() else self.config_dir / path

    def lines(self, suite: str, subset: str) -> list[str]:
        key = (suite, subset)
        if key not in self._lines:
            self._lines[key] = read_lines(self.path_for(suite, subset))
        return self._lines[key]

    def check(self, suites) -> None:
        for suite, data in suites.items():
            if not self.covers(self.options, suite):
                continue
            for subset, n in sorted(data.subset_sizes().items()):
                got = len(self.lines(suite, subset))
                if got != n:
                    source = SUITES.get(suite).subset(subset).source
                    raise RecordedOutputError(
                        f"{self.path_for(suite, subset)}: {got} lines, but its source {source!r} "
                        f"({suite}/{subset}) has {n} (system {self.system!r})"
                    )

    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        out = []
        for suite, subset, line in items.select("suite", "subset", "line").iter_rows():
            recorded = self.lines(suite, subset)
            if not 1 <= line <= len(recorded):
                raise RecordedOutputError(
                    f"{self.path_for(suite, subset)}: no line {line} (file has {len(recorded)} lines)"
                )
            out.append(recorded[line - 1].strip())
        return out
