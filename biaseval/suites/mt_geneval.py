"""MT-GenEval (Currey et al. 2022): gender accuracy from English into eight languages, scored against
a correct and a counterfactual reference (dataset ``mt-geneval``).

Two datasets, each with a test and a dev split:

- **counterfactual** (``data/sentences/<split>``): every English sentence in a feminine and a
  masculine version (``geneval-sentences-{feminine,masculine}-<split>.en_<lang>.{en,<lang>}``), each
  with its reference; the other version's reference is the counterfactual. Subsets
  ``<lang>/feminine`` and ``<lang>/masculine``; line *k* of one is paired with line *k* of the other.
  Targets ar de es fr hi it pt ru.
- **contextual** (``data/context``): two-sentence inputs (``...-2to1-<split>.en_<lang>.en``, the two
  joined by `` <sep> ``) where only the first sentence says the person's gender; the references
  (``original``, and ``flipped`` to the other gender) translate the second sentence only. The item's
  source is the two sentences on two lines (the ``<sep>`` mark becomes a line break), so that a
  system translating it keeps them apart, and the scorer reads the output's last line as the
  translation of the second sentence (``docs/mt-geneval.md``). One subset per language, ``<lang>``
  (one input file: recorded outputs are one file per language). The data does not say which gender
  the original has; ``gold`` is read from the English context (``context_gender``), null where the
  context has no such cue or both; the scorer reports each gender apart. Targets as above plus nl.

Every item carries ``reference`` (its correct reference) and ``counterfactual`` (the other one):
the detector ``mt-geneval-words`` (``biaseval/label/reference_words.py``) decides from them, the
scorer ``mtgeneval`` (``biaseval/metrics/mtgeneval.py``) counts the decisions.
"""

from __future__ import annotations

import dataclasses
import re

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.errors import ConfigError, DataError
from biaseval.suites.base import SUITES, FileSuite, Subset, conform

DATASET = "mt-geneval"
TARGETS = ("ar", "de", "es", "fr", "hi", "it", "pt", "ru")
CONTEXT_TARGETS = ("ar", "de", "es", "fr", "hi", "it", "nl", "pt", "ru")
GENDERS = ("feminine", "masculine")
GOLD = {"feminine": "female", "masculine": "male"}
DETECTOR = "mt-geneval-words"
SEPARATOR = "<sep>"
REFERENCE_COLUMNS = ("reference", "counterfactual")


def sentences_file(split: str, gender: str, lang: str, side: str, annotated: bool = False) -> str:
    """A counterfactual-set file: the English sources (``side`` en) or the references (``side`` lang)."""
    folder = f"data/sentences/{split}/" + ("annotated/" if annotated else "")
    return f"{folder}geneval-sentences-{gender}-{split}.en_{lang}.{side}"


def context_file(split: str, kind: str, lang: str) -> str:
    """A contextual-set file: ``kind`` 2to1 (the English inputs), original or flipped (references)."""
    side = "en" if kind == "2to1" else lang
    return f"data/context/geneval-context-wikiprofessions-{kind}-{split}.en_{lang}.{side}"


# The English cues of a person's gender in a context sentence: pronouns first; titles and person
# nouns only where no pronoun decides.
_PRONOUNS = {"female": {"she", "her", "hers", "herself"}, "male": {"he", "him", "his", "himself"}}
_NOUNS = {"female": {"mrs", "ms", "miss", "madam", "lady", "woman", "women", "female", "actress", "mother",
                     "daughter", "wife", "sister", "queen", "princess", "girl"},
          "male": {"mr", "sir", "lord", "man", "men", "male", "actor", "father", "son", "husband",
                   "brother", "king", "prince", "boy"}}
_WORD = re.compile(r"[a-z]+")


def context_gender(context: str) -> str | None:
    """``female`` or ``male`` where the English sentence cues one gender only (pronouns, else titles and
    person nouns), else None."""
    words = set(_WORD.findall(context.lower()))
    for cues in (_PRONOUNS, _NOUNS):
        found = [gender for gender, cue in cues.items() if words & cue]
        if len(found) == 1:
            return found[0]
        if found:
            return None
    return None


def _read(data: LocalDataset, rel: str) -> list[str]:
    return read_lines(data.path(rel))


def _same_length(data: LocalDataset, files: dict[str, list[str]]) -> None:
    sizes = {rel: len(lines) for rel, lines in files.items()}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{data.root / rel}: {n}" for rel, n in sizes.items())
        raise DataError(f"line counts differ between files that must be line-aligned ({shown})")


def _frame(suite: FileSuite, rows: dict[str, list]) -> pl.DataFrame:
    frame = pl.DataFrame(rows).with_columns(
        pl.lit(suite.name).alias("suite"), pl.lit(suite.src_lang).alias("src_lang"))
    return frame.with_columns((pl.lit(f"{suite.name}/") + pl.col("subset") + pl.lit("/")
                               + pl.col("line").cast(pl.String).str.zfill(5)).alias("item_id"))


def _load_counterfactual(suite: "MTGenEvalSuite", data: LocalDataset) -> pl.DataFrame:
    frames = []
    for tgt in suite.targets:
        refs = {g: _read(data, sentences_file(suite.split, g, tgt, tgt)) for g in GENDERS}
        srcs = {g: _read(data, sentences_file(suite.split, g, tgt, "en")) for g in GENDERS}
        _same_length(data, {sentences_file(suite.split, g, tgt, side): (refs if side == tgt else srcs)[g]
                            for g in GENDERS for side in ("en", tgt)})
        for gender in GENDERS:
            other = GENDERS[1 - GENDERS.index(gender)]
            n = len(srcs[gender])
            frames.append(_frame(suite, {
                "subset": [f"{tgt}/{gender}"] * n, "line": list(range(1, n + 1)),
                "source": [s.strip() for s in srcs[gender]], "tgt_lang": [tgt] * n,
                "gold": [GOLD[gender]] * n, "reference": [r.strip() for r in refs[gender]],
                "counterfactual": [r.strip() for r in refs[other]]}))
    return conform(pl.concat(frames))


def _load_contextual(suite: "MTGenEvalSuite", data: LocalDataset) -> pl.DataFrame:
    frames = []
    for tgt in suite.targets:
        files = {kind: context_file(suite.split, kind, tgt) for kind in ("2to1", "original", "flipped")}
        lines = {kind: _read(data, rel) for kind, rel in files.items()}
        _same_length(data, {files[k]: lines[k] for k in files})
        sources, golds = [], []
        for number, line in enumerate(lines["2to1"], 1):
            parts = line.split(SEPARATOR)
            if len(parts) != 2:
                raise DataError(f"{data.root / files['2to1']}:{number}: expected two sentences joined by "
                                f"{SEPARATOR!r}, found {len(parts) - 1} separators")
            context, sentence = (" ".join(p.split()) for p in parts)
            sources.append(f"{context}\n{sentence}" if context else sentence)  # a few have no context
            golds.append(context_gender(context))
        n = len(sources)
        frames.append(_frame(suite, {
            "subset": [tgt] * n,
            "line": list(range(1, n + 1)), "source": sources, "tgt_lang": [tgt] * n, "gold": golds,
            "reference": [r.strip() for r in lines["original"]],
            "counterfactual": [r.strip() for r in lines["flipped"]]}))
    return conform(pl.concat(frames))


@dataclasses.dataclass(frozen=True)
class MTGenEvalSuite(FileSuite):
    """An MT-GenEval suite for any subset of its target languages (a run's ``targets:``)."""

    split: str = "test"
    all_targets: tuple[str, ...] = ()
    kind: str = "counterfactual"

    def with_targets(self, targets: tuple[str, ...]) -> "MTGenEvalSuite":
        unknown = [t for t in targets if t not in self.all_targets]
        if unknown:
            raise ConfigError(f"suite {self.name!r} has target languages {', '.join(self.all_targets)}; "
                              f"not {', '.join(unknown)}")
        return dataclasses.replace(self, targets=tuple(targets), subsets=_subsets(self.kind, self.split, targets),
                                   detectors={t: DETECTOR for t in targets})


def _subsets(kind: str, split: str, targets) -> tuple[Subset, ...]:
    if kind == "counterfactual":
        return tuple(Subset(f"{t}/{g}", f"geneval-sentences-{g}-{split}.en_{t}", sentences_file(split, g, t, "en"))
                     for t in targets for g in GENDERS)
    return tuple(Subset(t, f"geneval-context-wikiprofessions-2to1-{split}.en_{t}", context_file(split, "2to1", t))
                 for t in targets)


def _suite(name: str, kind: str, split: str) -> MTGenEvalSuite:
    targets = TARGETS if kind == "counterfactual" else CONTEXT_TARGETS
    params = (("paired", kind == "counterfactual"),) + ((("hypothesis", "last-line"),) if kind == "contextual" else ())
    return SUITES.register(name)(MTGenEvalSuite(
        name=name, version=1, dataset=DATASET, src_lang="en", targets=targets, scorer="mtgeneval",
        detectors={t: DETECTOR for t in targets}, subsets=_subsets(kind, split, targets),
        loader=_load_counterfactual if kind == "counterfactual" else _load_contextual,
        scorer_params=params, doc=__doc__, reference_columns=REFERENCE_COLUMNS,
        split=split, all_targets=targets, kind=kind))


COUNTERFACTUAL = _suite("mt-geneval-counterfactual", "counterfactual", "test")
COUNTERFACTUAL_DEV = _suite("mt-geneval-counterfactual-dev", "counterfactual", "dev")
CONTEXTUAL = _suite("mt-geneval-contextual", "contextual", "test")
CONTEXTUAL_DEV = _suite("mt-geneval-contextual-dev", "contextual", "dev")
