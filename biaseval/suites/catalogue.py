"""The suites biaseval ships, as ``biaseval list suites`` shows them: items, languages, scorer and
where the items come from (the paper and the pinned dataset, or the file shipped with biaseval).
Items are counted only where the data is on this machine already: listing never downloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from biaseval.data.datasets import registry, resolve
from biaseval.errors import BiasevalError
from biaseval.suites.base import Suite


@dataclass(frozen=True)
class Entry:
    name: str
    items: int | None  # None: its dataset is not on this machine (``why`` says so)
    sources: tuple[str, ...]  # source languages
    targets: tuple[str, ...]
    optional: tuple[str, ...]  # targets a run may add (``targets:``)
    scorer: str
    detectors: tuple[str, ...]  # distinct, in target order
    source: str  # the paper and dataset, or the file shipped with biaseval
    why: str = ""


def cited(dataset: str) -> str:
    """``Stanovsky et al. (2019); dataset mt-gender (gabrielStanovsky/mt_gender@c0a3b45)``."""
    spec = registry().get(dataset)
    paper = spec.cite.split(",")[0] if spec.cite else ""
    return "; ".join(x for x in (paper, f"dataset {dataset} ({spec.short})") if x)


def here(dataset: str | None) -> str:
    """Empty when ``dataset`` (if any) is on this machine, else what to do about it."""
    if dataset:
        try:
            resolve(dataset, download=False)
        except BiasevalError:
            return f"dataset not here: biaseval data fetch {dataset}"
    return ""


def entry(suite: Suite, source: str) -> Entry:
    why = here(suite.dataset)
    return Entry(suite.name, None if why else suite.open().size, suite.sources or (suite.src_lang,), suite.targets,
                 suite.optional_targets, suite.scorer, tuple(dict.fromkeys(suite.detectors[t] for t in suite.targets)),
                 source, why)


def catalogue() -> list[Entry]:
    """Every built-in suite and every suite file shipped with biaseval, by name."""
    from biaseval.suites import BUILTIN, BUILTIN_SUITES, load_template
    from biaseval.suites.template import summarize

    entries = [entry(suite, cited(suite.dataset) if suite.dataset else "") for suite in BUILTIN.values()]
    for path in BUILTIN_SUITES.glob("*.yaml"):
        s = summarize(path)
        source = cited(s.dataset) if s.dataset else s.needs
        if why := here(s.dataset):  # loading the file reads its data: say what it is without it
            entries.append(Entry(s.name, None, (s.src_lang,), tuple(s.targets), (), s.scorer,
                                 tuple(dict.fromkeys(s.detectors.values())), source, why))
        else:
            entries.append(entry(load_template(path), source))
    return sorted(entries, key=lambda e: e.name)


def languages(e: Entry) -> str:
    """``en→de,es,fr`` (with ``(+ar,nl,pt on request)`` for the targets a run may add); many source
    languages are counted rather than listed (a run names those it wants in ``targets:``)."""
    if len(e.sources) > 3:
        return f"{len(e.sources)} languages→{','.join(e.targets)}"
    extra = f" (+{','.join(e.optional)} on request)" if e.optional else ""
    return f"{','.join(e.sources)}→{','.join(e.targets)}{extra}"
