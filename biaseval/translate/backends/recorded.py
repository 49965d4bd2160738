"""Replay of recorded outputs: translations a system produced earlier, one line per source line.

Configured per system with one file pattern per suite. ``{stem}`` is replaced by the upstream file
stem of each subset (see the suite's ``Subset.stem``), ``{target}`` by the target language of its
items; a suite translated into several languages needs ``{target}`` (or stems that differ per
language) so each language has its own file::

    backend: recorded
    options:
      dataset: gender-bias-hi-en-eval        # patterns are paths inside this dataset...
      files:
        otsc-hi: "TGBI and Simple Context Evaluation/corpus/amazontranslate/en.{stem}.txt"
        otsc-en: "outputs/otsc-en/{target}/{stem}.txt"

Without ``dataset``, patterns are file paths (relative ones to the config file's folder).

``format: pairs`` reads files of ``source ||| translation`` lines (mt_gender's layout) and joins
them to the items on the source sentence, not the line number — a source edited after the outputs
were recorded then shows up as an item without a translation (its ``error`` says so, and the run
logs how many), never as a shifted, wrong pairing. A line without the separator is an error naming
the file and line.

``format: csv`` reads a CSV file with a header, its source and translation in the columns named by
``columns`` (default ``[from, to]``: the ``translations.csv`` files of GEST, ``data/translations/<system>/
<lang>/translations.csv``), joined on the source like ``pairs``; rows for other sources (a file may hold
the translations of more sentences than a suite asks for) are not read. A missing column is an error
naming the file.

Before anything runs, ``check`` (see ``checks.py``) refuses a file that cannot be the outputs of
the items it would be read for.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from biaseval.data.datasets import registry, resolve
from biaseval.data.paths import from_file
from biaseval.data.textio import read_lines
from biaseval.errors import DataError, RecordedOutputError
from biaseval.suites import SUITES
from biaseval.translate.base import TRANSLATORS, ItemTranslator

PLACEHOLDERS = ("stem", "target")


class RecordedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    dataset: str | None = None
    files: dict[str, str] = Field(min_length=1)
    format: Literal["lines", "pairs", "csv"] = Field(
        default="lines", description="lines: one translation per source line; pairs: 'source ||| translation' "
        "lines, joined on the source; csv: a CSV with a source and a translation column (GEST's translations.csv: "
        "from, to), joined on the source")
    columns: tuple[str, str] = Field(default=("from", "to"), description="csv: the source and translation columns")
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
            try:
                used = {name for _, name, _, _ in string.Formatter().parse(pattern) if name is not None}
            except ValueError as exc:
                raise ValueError(f"{suite}: pattern {pattern!r}: {exc} (write {{{{ and }}}} for a literal brace)") from None
            unknown = sorted(used - set(PLACEHOLDERS))
            if unknown:
                raise ValueError(f"{suite}: pattern {pattern!r} uses {{{unknown[0]}}}; "
                                 f"it may use {{stem}} and {{target}} only")
            if not used:
                raise ValueError(f"{suite}: pattern {pattern!r} has no {{stem}} or {{target}} (one file per subset "
                                 f"and target language)")
        return files


@TRANSLATORS.register("recorded")
class RecordedTranslator(ItemTranslator):
    """Replays outputs recorded earlier, one line per source line."""

    @staticmethod
    def normal(text: str) -> str:
        """A source as pairs files are matched on: runs of white space as one space, trimmed."""
        return normal(text)

    Options = RecordedOptions
    options: RecordedOptions

    def __init__(self, system, options, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        self._lines: dict[Path, list[str]] = {}
        self._pairs: dict[Path, dict[str, str]] = {}
        self._paths: dict[tuple[str, str, str], Path] = {}

    @classmethod
    def covers(cls, options: RecordedOptions, suite: str) -> bool:
        return suite in options.files

    def field(self, suite: str) -> str:
        """The config field that names this suite's files."""
        return f"systems.{self.system}.options.files.{suite}"

    def path_for(self, suite: str, subset: str, target: str) -> Path:
        """The recorded file of a subset's items in one target language (resolved, checksum verified
        and checked to exist, once)."""
        key = (suite, subset, target)
        if key not in self._paths:
            self._paths[key] = self._resolve(suite, subset, target)
        return self._paths[key]

    def _resolve(self, suite: str, subset: str, target: str) -> Path:
        pattern = self.options.files[suite]
        rel = pattern.format(stem=SUITES.get(suite).subset(subset).stem, target=target)
        if self.options.dataset:
            try:
                return resolve(self.options.dataset).path(rel)
            except DataError as exc:
                raise DataError(f"{exc} (recorded outputs of {suite}/{subset}, from {self.field(suite)}: "
                                f"{pattern!r})") from None
        path = from_file(rel, self.config_dir)
        if not path.is_file():
            why = "is a directory" if path.is_dir() else "no such file"
            raise RecordedOutputError(f"{path}: {why} — the recorded outputs of {suite}/{subset}, from "
                                      f"{self.field(suite)}: {pattern!r} (system {self.system!r})")
        return path

    def lines(self, path: Path) -> list[str]:
        """A recorded file's lines (read once)."""
        if path not in self._lines:
            try:
                self._lines[path] = read_lines(path)
            except OSError as exc:
                raise RecordedOutputError(f"{path}: cannot read recorded outputs ({exc.strerror}; "
                                          f"system {self.system!r})") from None
        return self._lines[path]

    def pairs(self, path: Path) -> dict[str, str]:
        """Source -> translation from a pairs or csv file (the first line wins for a repeated source)."""
        if path not in self._pairs and self.options.format == "csv":
            self._pairs[path] = self._csv_pairs(path)
        if path not in self._pairs:
            table: dict[str, str] = {}
            for number, line in enumerate(self.lines(path), 1):
                if not line.strip():
                    continue
                source, sep, translation = line.partition(self.options.separator)
                if not sep:
                    raise RecordedOutputError(f"{path}:{number}: no {self.options.separator.strip()!r} between "
                                              f"source and translation (system {self.system!r})")
                table.setdefault(normal(source), translation.strip())
            self._pairs[path] = table
        return self._pairs[path]

    def _csv_pairs(self, path: Path) -> dict[str, str]:
        source, target = self.options.columns
        try:
            frame = pl.read_csv(path, infer_schema_length=0)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise RecordedOutputError(f"{path}: not a readable CSV ({exc}; system {self.system!r})") from None
        missing = [c for c in (source, target) if c not in frame.columns]
        if missing:
            raise RecordedOutputError(f"{path}: no column {missing[0]!r} (it has {', '.join(frame.columns)}; "
                                      f"system {self.system!r}, options.columns)")
        table: dict[str, str] = {}
        for src, translation in frame.select(source, target).iter_rows():
            if src is not None:
                table.setdefault(normal(src), (translation or "").strip())
        return table

    def translations(self, path: Path) -> list[str]:
        """The translations a file holds, in file order (for the language check)."""
        if self.options.format in ("pairs", "csv"):
            return list(self.pairs(path).values())
        return self.lines(path)

    def check(self, suites, targets=None) -> None:
        from biaseval.translate.backends.recorded_checks import check_recorded

        check_recorded(self, suites, targets)

    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        return self.translate_items_with_errors(items)[0]

    def translate_items_with_errors(self, items: pl.DataFrame) -> tuple[list[str | None], list[str | None]]:
        joined = self.options.format in ("pairs", "csv")
        rows = items.select("suite", "subset", "tgt_lang", "source" if joined else "line")
        if joined:
            out, errors = [], []
            for suite, subset, target, source in rows.iter_rows():
                path = self.path_for(suite, subset, target)
                found = self.pairs(path).get(normal(source))
                out.append(found)
                errors.append(None if found is not None else f"not recorded: source not in {path.name}")
            return out, errors
        out = []
        for suite, subset, target, line in rows.iter_rows():
            path = self.path_for(suite, subset, target)
            recorded = self.lines(path)
            if not 1 <= line <= len(recorded):
                raise RecordedOutputError(f"{path}: no line {line} (file has {len(recorded)} lines)")
            out.append(recorded[line - 1].strip())
        return out, [None] * len(out)


_SPACE = re.compile(r"\s+")


def normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip()
