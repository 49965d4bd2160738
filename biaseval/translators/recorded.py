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

``format: pairs`` reads files of ``source ||| translation`` lines (mt_gender's layout) and joins
them to the items on the source sentence, not the line number — a source edited after the outputs
were recorded then shows up as an item without a translation (its ``error`` says so, and the run
logs how many), never as a shifted, wrong pairing. A line without the separator is an error naming
the file and line.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Literal

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
    format: Literal["lines", "pairs"] = Field(default="lines", description="lines: one translation per source "
                                              "line; pairs: 'source ||| translation' lines, joined on the source")
    separator: str = Field(default=" ||| ", min_length=1, description="between source and translation (pairs)")

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
        self._pairs: dict[Path, dict[str, str]] = {}
        self._paths: dict[tuple[str, str], Path] = {}

    @classmethod
    def covers(cls, options: RecordedOptions, suite: str) -> bool:
        return suite in options.files

    def path_for(self, suite: str, subset: str) -> Path:
        """The recorded file of a subset (resolved, and its checksum verified, once)."""
        key = (suite, subset)
        if key not in self._paths:
            self._paths[key] = self._resolve(suite, subset)
        return self._paths[key]

    def _resolve(self, suite: str, subset: str) -> Path:
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

    def pairs(self, suite: str, subset: str) -> dict[str, str]:
        """Source -> translation from a pairs file (the first line wins for a repeated source)."""
        path = self.path_for(suite, subset)
        if path not in self._pairs:
            table: dict[str, str] = {}
            for number, line in enumerate(read_lines(path), 1):
                if not line.strip():
                    continue
                source, sep, translation = line.partition(self.options.separator)
                if not sep:
                    raise RecordedOutputError(f"{path}:{number}: no {self.options.separator.strip()!r} between "
                                              f"source and translation (system {self.system!r})")
                table.setdefault(_normal(source), translation.strip())
            self._pairs[path] = table
        return self._pairs[path]

    def check(self, suites, targets=None) -> None:
        for suite, data in suites.items():
            if not self.covers(self.options, suite):
                continue
            wanted = (targets or {}).get(suite)
            if self.options.format == "pairs":
                self._check_pairs(suite, data, wanted)
                continue
            for subset, n in sorted(data.subset_sizes().items()):
                got = len(self.lines(suite, subset))
                if got != n:
                    source = SUITES.get(suite).subset(subset).source
                    raise RecordedOutputError(
                        f"{self.path_for(suite, subset)}: {got} lines, but its source {source!r} "
                        f"({suite}/{subset}) has {n} (system {self.system!r})"
                    )

    def _check_pairs(self, suite: str, data, wanted) -> None:
        """Every file must parse; sources it lacks are logged, once per system and suite (they become
        rows with an error)."""
        missing: dict[str, int] = {}
        for tgt, (start, stop) in data.target_ranges().items():
            if wanted is not None and tgt not in wanted:
                continue
            items = data.slice(start, stop)
            for (subset,), group in items.group_by(["subset"]):
                table = self.pairs(suite, subset)
                absent = sum(_normal(source) not in table for source in group["source"].to_list())
                if absent:
                    missing[tgt] = missing.get(tgt, 0) + absent
        if missing:
            where = ", ".join(f"{tgt}: {n}" for tgt, n in missing.items())
            log.warning("%s on %s: %d items have no recorded translation (their source is not in the file: "
                        "edited after recording?) — %s; they are kept as rows with an error",
                        self.system, suite, sum(missing.values()), where)

    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        return self.translate_items_with_errors(items)[0]

    def translate_items_with_errors(self, items: pl.DataFrame) -> tuple[list[str | None], list[str | None]]:
        if self.options.format == "pairs":
            out, errors = [], []
            for suite, subset, source in items.select("suite", "subset", "source").iter_rows():
                found = self.pairs(suite, subset).get(_normal(source))
                out.append(found)
                errors.append(None if found is not None else
                              f"not recorded: source not in {self.path_for(suite, subset).name}")
            return out, errors
        out = []
        for suite, subset, line in items.select("suite", "subset", "line").iter_rows():
            recorded = self.lines(suite, subset)
            if not 1 <= line <= len(recorded):
                raise RecordedOutputError(
                    f"{self.path_for(suite, subset)}: no line {line} (file has {len(recorded)} lines)"
                )
            out.append(recorded[line - 1].strip())
        return out, [None] * len(out)


log = logging.getLogger(__name__)
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip()
