"""Checks that a recorded system's files are the outputs of the items they are read for, run in the
driver before anything is written (``biaseval validate`` and ``biaseval sweep`` alike).

Every item the system translates is mapped to its file; then, per file:

1. it serves one target language: a translation is in one language, so a pattern that gives, say,
   the Spanish and the Italian items of a template suite the same file is refused (use ``{target}``);
2. ``lines`` files: no line is read for two different source sentences (two subsets, or two suites,
   whose items differ sharing one file), and the file has exactly as many lines as those sources;
3. ``pairs`` and ``csv`` files: the file has a line for the source of nearly every item it serves (at most
   ``MAX_MISSING`` of them absent — sources edited after recording — which are logged, and become
   rows with an error); more absent means a file for other items;
4. its text is not clearly in another language than its target (``language.reads_as``): an Italian
   file given for Spanish, or the untranslated sources.

Each refusal is a RecordedOutputError naming the file, what it serves and the config field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np
import polars as pl

from biaseval.errors import RecordedOutputError
from biaseval.suites import SUITES
from biaseval.translate.backends.language_guess import reads_as, sample

if TYPE_CHECKING:
    from biaseval.suites.base import SuiteData
    from biaseval.translate.base import (
        ItemTranslator,  # a RecordedTranslator (not imported: it imports this module)
    )

log = logging.getLogger(__name__)
BATCH = 65_536
MAX_MISSING = 0.01  # share of a pairs file's items whose source it may lack


@dataclass
class FileUse:
    """What one recorded file is read for."""

    path: Path  # as the pattern gave it (files are told apart by their resolved path)
    readers: list[tuple[str, str, str]] = field(default_factory=list)  # (suite, subset, target), first read order
    lines: list[np.ndarray] = field(default_factory=list)  # lines format: the line each item reads...
    sources: list[np.ndarray] = field(default_factory=list)  # ...and a hash of its source
    reader_of: list[np.ndarray] = field(default_factory=list)  # ...and the index of its reader
    items: int = 0
    missing: int = 0  # pairs format: items whose source the file lacks

    def targets(self) -> list[str]:
        return list(dict.fromkeys(t for _, _, t in self.readers))

    def names(self, limit: int = 4) -> str:
        names = [f"{suite}/{subset}" for suite, subset, _ in self.readers]
        more = f" and {len(names) - limit} more" if len(names) > limit else ""
        return ", ".join(names[:limit]) + more


def check_recorded(translator: "ItemTranslator", suites: Mapping[str, "SuiteData"],
                   targets: Mapping[str, tuple[str, ...]] | None = None) -> None:
    uses = file_uses(translator, suites, targets)
    missing: dict[str, int] = {}
    for use in uses.values():
        one_target(translator, use)
        if translator.options.format in ("pairs", "csv"):
            pairs_cover(translator, use)
            if use.missing:
                missing[use.targets()[0]] = missing.get(use.targets()[0], 0) + use.missing
        else:
            lines_agree(translator, use)
        in_its_language(translator, use)
    if missing:
        where = ", ".join(f"{tgt}: {n}" for tgt, n in missing.items())
        log.warning("%s: %d items have no recorded translation (their source is not in the file: edited after "
                    "recording?) — %s; they are kept as rows with an error", translator.system,
                    sum(missing.values()), where)


def file_uses(translator: "ItemTranslator", suites: Mapping[str, "SuiteData"],
              targets: Mapping[str, tuple[str, ...]] | None) -> dict[Path, FileUse]:
    """Each file the system reads, with the items it is read for (every suite and target language
    the system translates; files that do not exist fail here, naming the config field)."""
    pairs = translator.options.format in ("pairs", "csv")
    uses: dict[Path, FileUse] = {}
    for suite, data in suites.items():
        if not translator.covers(translator.options, suite):
            continue
        wanted = (targets or {}).get(suite)
        for tgt, (start, stop) in data.target_ranges().items():
            if wanted is not None and tgt not in wanted:
                continue
            for first in range(start, stop, BATCH):
                items = data.slice(first, min(first + BATCH, stop))
                for (subset,), group in items.group_by(["subset"], maintain_order=True):
                    path = translator.path_for(suite, subset, tgt)
                    use = uses.setdefault(path.resolve(), FileUse(path))
                    reader = (suite, subset, tgt)
                    if reader not in use.readers:
                        use.readers.append(reader)
                    use.items += group.height
                    if pairs:
                        table = translator.pairs(path)
                        use.missing += sum(translator.normal(s) not in table for s in group["source"].to_list())
                    else:
                        use.lines.append(group["line"].to_numpy())
                        use.sources.append(group["source"].hash(seed=0).to_numpy())
                        use.reader_of.append(np.full(group.height, use.readers.index(reader), dtype=np.int32))
    return uses


def one_target(translator: "ItemTranslator", use: FileUse) -> None:
    path = use.path
    langs = use.targets()
    if len(langs) > 1:
        suites = sorted({suite for suite, _, _ in use.readers})
        raise RecordedOutputError(
            f"{path}: one file for several target languages ({', '.join(langs)}: {use.names()}); a translation is "
            f"in one language — put {{target}} in {' and '.join(translator.field(s) for s in suites)} "
            f"(system {translator.system!r})")


def lines_agree(translator: "ItemTranslator", use: FileUse) -> None:
    """No line of the file serves two different sources; it has as many lines as its sources."""
    path = use.path
    frame = pl.DataFrame({"line": np.concatenate(use.lines), "h": np.concatenate(use.sources),
                          "reader": np.concatenate(use.reader_of)})
    distinct = frame.unique(["line", "h"], keep="first", maintain_order=True)
    clash = distinct.filter(pl.col("line").is_duplicated()).sort("line", maintain_order=True)
    if clash.height:
        line = clash["line"][0]
        a, b = (use.readers[i] for i in clash.filter(pl.col("line") == line)["reader"][:2])
        suites = sorted({a[0], b[0]})
        raise RecordedOutputError(
            f"{path}: read for {a[0]}/{a[1]} and {b[0]}/{b[1]}, whose sources differ (line {line} first); each "
            f"needs its own file — give {' and '.join(translator.field(s) for s in suites)} patterns that differ "
            f"per subset ({{stem}}) (system {translator.system!r})")
    need = int(frame["line"].max())
    got = len(translator.lines(path))
    if got != need:
        suite, subset, _ = use.readers[0]
        source = SUITES.get(suite).subset(subset).source
        raise RecordedOutputError(f"{path}: {got} lines, but its source {source!r} ({use.names()}) has {need} "
                                  f"(system {translator.system!r})")


def pairs_cover(translator: "ItemTranslator", use: FileUse) -> None:
    path = use.path
    if use.missing > MAX_MISSING * use.items:
        raise RecordedOutputError(
            f"{path}: no line for the sources of {use.missing:,} of the {use.items:,} items it is read for "
            f"({use.names()}); at most {MAX_MISSING:.0%} may be absent (sources edited after recording) — is it the "
            f"file of other items? (system {translator.system!r})")


def in_its_language(translator: "ItemTranslator", use: FileUse) -> None:
    path = use.path
    target = use.targets()[0]
    verdict = reads_as(sample(translator.translations(path)), target)
    if verdict is not None:
        lang, counts = verdict
        raise RecordedOutputError(
            f"{path}: reads as {lang!r}, not {target!r} ({counts[lang]} words or letters only {lang!r} uses, "
            f"{counts[target]} only {target!r} uses), but it is read for the {target!r} items {use.names()} — the "
            f"file of another language? (system {translator.system!r}, {translator.field(use.readers[0][0])})")

