"""Template suites, described in YAML (biaseval/data/suites/*.yaml) and expanded lazily.

A template is a sentence with slots. Some slots are filled per *variant* (a gender cue and the
gold label it implies: "her" → female); the others come from an occupation list, either a column
of a lexicon (biaseval/data/lexicon/occupations.csv) or one occupation per line of a dataset file. Items are
targets × variants × occupations, in that order; item ``i`` is computed from ``i`` alone, so any
range of a million-item expansion is generated on demand, in Arrow batches, without the rest.

    name: otsc-en
    version: 1
    src_lang: en
    targets: [es, it, fr, de]
    template: "I've known {pronoun} for a long time, my friend works as {article} {occupation}."
    occupations:
      lexicon: ../lexicon/occupations.csv      # relative to this file
      slots: {occupation: en, article: en_article}
    variants:
      - {name: her, gold: female, fill: {pronoun: her}}
      - {name: him, gold: male, fill: {pronoun: him}}
    subset: "{target}/{variant}"
    scorer: otsc
    detectors: {es: otsc-friend-es, it: otsc-friend-it, fr: otsc-friend-fr, de: otsc-friend-de}

With a lexicon, each item also carries the occupation's female share and whether its variant
agrees with the occupation's stereotype (``pro``) or not (``anti``).
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_validator

from biaseval.data.datasets import get_spec, resolve
from biaseval.data.lexicons import load_lexicon, load_lexicon_header
from biaseval.data.paths import from_file
from biaseval.data.textio import read_lines
from biaseval.data.yamlio import read_yaml
from biaseval.names import Name, problem
from biaseval.suites.base import ITEM_SCHEMA, Subset, Suite, SuiteData


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Variant(_Strict):
    name: Name
    gold: Literal["male", "female", "neutral"]
    fill: dict[str, str] = Field(default_factory=dict)
    stem: Name | None = Field(default=None, description="upstream file stem of this variant's recorded outputs")


class Occupations(_Strict):
    lexicon: str | None = Field(default=None, description="a lexicon file (CSV), relative to the suite file")
    dataset: str | None = Field(default=None, description="or a registered dataset...")
    file: str | None = Field(default=None, description="...and one of its files, one occupation per line")
    slots: dict[str, str] = Field(min_length=1, description="slot -> lexicon column ('line' for a file)")

    @model_validator(mode="after")
    def _one_source(self) -> "Occupations":
        if (self.lexicon is None) == (self.dataset is None or self.file is None):
            raise ValueError("give either `lexicon`, or `dataset` and `file`")
        return self


class TemplateSpec(_Strict):
    name: Name = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    version: int = Field(ge=1)
    description: str = ""
    src_lang: Name
    targets: tuple[Name, ...] = Field(min_length=1)
    template: str = Field(min_length=1)
    occupations: Occupations
    variants: tuple[Variant, ...] = Field(min_length=1)
    subset: str = "{variant}"
    scorer: Literal["otsc", "tgbi"] = "otsc"
    detectors: dict[str, str]

    def slots(self) -> list[str]:
        return [field for _, field, _, _ in string.Formatter().parse(self.template) if field is not None]


@dataclass(frozen=True)
class SuiteSummary:
    """What a suite file says about itself, read from the YAML alone (no dataset, no lexicon)."""

    name: str
    src_lang: str
    targets: tuple[str, ...]
    subsets: int
    scorer: str
    detectors: dict[str, str]
    needs: str  # the data it reads when a run loads it
    dataset: str | None = None  # the registered dataset it reads, if any (needed to load it)


def summarize(path: str | Path) -> SuiteSummary:
    """A suite file's name, languages, subsets, scorer and detectors — without loading its data."""
    doc = read_yaml(path, "suite")
    if doc.data.get("kind") == "words":
        from biaseval.suites.wordlist import CLASSES, WordListSpec

        spec = doc.validate(WordListSpec)
        needs = "the Bolukbasi et al. word lists (dataset debiaswe)" if spec.words == "bolukbasi" else spec.words
        return SuiteSummary(spec.name, spec.src_lang, spec.targets, len(CLASSES), "embedding",
                            dict(spec.detectors), needs, "debiaswe" if spec.words == "bolukbasi" else None)
    spec = doc.validate(TemplateSpec)
    subsets = {spec.subset.format(target=t, variant=v.name) for t in spec.targets for v in spec.variants}
    occ = spec.occupations
    needs = f"dataset {occ.dataset} ({occ.file})" if occ.dataset else f"the lexicon {Path(occ.lexicon).name}"
    return SuiteSummary(spec.name, spec.src_lang, spec.targets, len(subsets), spec.scorer, dict(spec.detectors), needs,
                        occ.dataset)


def load_template(path: str | Path, lexicon: str | Path | None = None) -> Suite:
    """Read, validate and compile a suite file (a template, or a word list with ``kind: words``);
    errors name the file, line and field. ``lexicon`` replaces a template's own lexicon (a run's
    ``lexicon:`` option)."""
    doc = read_yaml(path, "suite")
    if doc.data.get("kind") == "words":
        from biaseval.suites.wordlist import load_wordlist_suite

        return load_wordlist_suite(doc)
    spec = doc.validate(TemplateSpec)
    slots = spec.slots()
    if not slots:
        raise doc.fail(("template",), "has no {slot}")
    for bad in [s for s in slots if not s.isidentifier()]:
        raise doc.fail(("template",), f"slot {{{bad}}} is not a plain name")
    variant_slots = [s for s in slots if s not in spec.occupations.slots]
    for slot in spec.occupations.slots:
        if slot not in slots:
            raise doc.fail(("occupations", "slots", slot), f"unknown slot: the template has no {{{slot}}}")
    names = set()
    for i, variant in enumerate(spec.variants):
        if variant.name in names:
            raise doc.fail(("variants", i, "name"), f"variant {variant.name!r} is listed twice")
        names.add(variant.name)
        for slot in variant.fill:
            if slot not in slots:
                raise doc.fail(("variants", i, "fill", slot), f"unknown slot: the template has no {{{slot}}}")
            if slot in spec.occupations.slots:
                raise doc.fail(("variants", i, "fill", slot), "this slot is filled from the occupations")
        for slot in variant_slots:
            if slot not in variant.fill:
                raise doc.fail(("variants", i, "fill"), f"no value for slot {{{slot}}}")
    for target in spec.targets:
        if target not in spec.detectors:
            raise doc.fail(("detectors",), f"no detector for target language {target!r}")
    try:
        spec.subset.format(target="x", variant="y")
    except (KeyError, IndexError) as exc:
        raise doc.fail(("subset",), f"may use {{target}} and {{variant}} only, not {exc}") from None
    for subset in dict.fromkeys(spec.subset.format(target=t, variant=v.name) for t in spec.targets for v in spec.variants):
        bad = next((part for part in subset.split("/") if problem(part) is not None), None)
        if bad is not None:  # a subset is names joined by '/': a table cell and a chart label
            raise doc.fail(("subset",), f"makes the subset {subset!r}, whose part {bad!r} {problem(bad)}")

    occ = spec.occupations
    base = Path(path).resolve().parent
    if occ.lexicon is not None or lexicon is not None:
        lex_path = Path(lexicon) if lexicon is not None else from_file(occ.lexicon, base)
        for slot, column in occ.slots.items():
            if column == "line":
                raise doc.fail(("occupations", "slots", slot), "'line' is for occupation files, not lexicons")
        # every row needs the forms the template uses, and the forms the lexicon has for each target
        # language (a row missing a Spanish form cannot be part of a suite translated into Spanish)
        header = load_lexicon_header(lex_path)
        target_forms = tuple(c for c in header if c.split("_")[0] in spec.targets)
        lex = load_lexicon(lex_path, need=tuple(occ.slots.values()) + target_forms)
        source = OccupationList(lex.column("occupation"), {c: lex.column(c) for c in occ.slots.values()},
                                lex.shares(), [r["stereotype"] for r in lex.rows], f"lexicon {lex_path}", lex.digest,
                                None)
    else:
        get_spec(occ.dataset, doc.where(("occupations", "dataset")))  # an unknown name fails here
        data = resolve(occ.dataset)
        lines = [line.strip() for line in read_lines(data.path(occ.file))]
        for slot, column in occ.slots.items():
            if column != "line":
                raise doc.fail(("occupations", "slots", slot), "an occupation file has one column: 'line'")
        digest = data.spec.files[occ.file]
        source = OccupationList(lines, {"line": lines}, None, None, f"{occ.dataset}:{occ.file}", digest,
                                data.spec.commit)
    if not source.ids:
        raise doc.fail(("occupations",), "no occupations")
    return TemplateSuite.from_spec(spec, source, str(path))


@dataclass(frozen=True)
class OccupationList:
    ids: list[str]
    columns: dict[str, list[str]]
    shares: list[float] | None
    stereotypes: list[str] | None
    origin: str
    digest: str
    commit: str | None


@dataclass(frozen=True)
class TemplateSuite(Suite):
    spec: TemplateSpec | None = None
    occupations: OccupationList | None = None
    path: str = ""

    @classmethod
    def from_spec(cls, spec: TemplateSpec, occupations: OccupationList, path: str) -> "TemplateSuite":
        subsets = tuple(
            Subset(spec.subset.format(target=t, variant=v.name), v.stem or v.name, f"template {path}")
            for t in spec.targets for v in spec.variants
        )
        params = (("per_occupation", True),) if occupations.shares is not None else ()
        return cls(
            name=spec.name, version=spec.version, src_lang=spec.src_lang, targets=spec.targets,
            scorer=spec.scorer, detectors=dict(spec.detectors), subsets=subsets,
            dataset=spec.occupations.dataset, scorer_params=params, doc=spec.description,
            spec=spec, occupations=occupations, path=path,
        )

    def open(self) -> SuiteData:
        return TemplateData(self)

    def with_targets(self, targets: tuple[str, ...]) -> "TemplateSuite":
        spec = self.spec.model_copy(update={"targets": targets})
        return TemplateSuite.from_spec(spec, self.occupations, self.path)


class TemplateData(SuiteData):
    def __init__(self, suite: TemplateSuite):
        spec, occ = suite.spec, suite.occupations
        self.suite = suite
        self.commit = occ.commit
        self.targets, self.variants = list(spec.targets), list(spec.variants)
        self.n_occ = len(occ.ids)
        self.size = len(self.targets) * len(self.variants) * self.n_occ
        blob = json.dumps({"spec": spec.model_dump(mode="json"), "occupations": occ.digest}, sort_keys=True)
        self.fingerprint = hashlib.sha256(blob.encode()).hexdigest()[:24]
        self._parts = list(string.Formatter().parse(spec.template))
        self._occ_columns = {slot: np.array(occ.columns[col], dtype=object) for slot, col in spec.occupations.slots.items()}
        self._ids = np.array(occ.ids, dtype=object)
        self._shares = np.array(occ.shares, dtype=float) if occ.shares is not None else None
        self._stereo = np.array(occ.stereotypes, dtype=object) if occ.stereotypes is not None else None
        self._fills = {slot: np.array([v.fill.get(slot, "") for v in self.variants], dtype=object)
                       for v0 in self.variants[:1] for slot in v0.fill}
        self._gold = np.array([v.gold for v in self.variants], dtype=object)
        self._subset = np.array([[spec.subset.format(target=t, variant=v.name) for v in self.variants]
                                 for t in self.targets], dtype=object)

    def subset_sizes(self) -> dict[str, int]:
        return {name: self.n_occ for name in self._subset.ravel()}

    def slice(self, start: int, stop: int) -> pl.DataFrame:
        idx = np.arange(max(start, 0), min(stop, self.size), dtype=np.int64)
        per_target = len(self.variants) * self.n_occ
        t, v, o = idx // per_target, (idx // self.n_occ) % len(self.variants), idx % self.n_occ
        slots = {slot: values[o] for slot, values in self._occ_columns.items()}
        slots.update({slot: values[v] for slot, values in self._fills.items()})
        frame = pl.DataFrame({f"_{k}": pl.Series(vals, dtype=pl.String) for k, vals in slots.items()})
        pieces = []
        for literal, field, _, _ in self._parts:
            if literal:
                pieces.append(pl.lit(literal))
            if field is not None:
                pieces.append(pl.col(f"_{field}"))
        source = frame.select(pl.concat_str(pieces).alias("source"))["source"] if len(frame.columns) else None
        subset = self._subset[t, v]
        line = (o + 1).astype(np.int32)
        gold = self._gold[v]
        data = {
            "item_id": None,  # below, from subset and line
            "suite": [self.suite.name] * len(idx),
            "subset": subset,
            "line": line,
            "source": source,
            "src_lang": [self.suite.src_lang] * len(idx),
            "tgt_lang": np.array(self.targets, dtype=object)[t],
            "gold": gold,
            "occupation": self._ids[o],
            "female_share": self._shares[o] if self._shares is not None else None,
            "stereotype": (np.where(self._stereo[o] == gold, "pro", np.where(self._stereo[o] == "neutral", None, "anti"))
                           if self._stereo is not None else None),
            "reference": None,
            "counterfactual": None,
            "entity_index": None,
            "prompt": None,
        }
        frame = pl.DataFrame({c: pl.Series(c, data[c], dtype=ITEM_SCHEMA[c]) if data[c] is not None
                              else pl.Series(c, [None] * len(idx), dtype=ITEM_SCHEMA[c]) for c in ITEM_SCHEMA})
        return frame.with_columns(pl.concat_str([
            pl.lit(f"{self.suite.name}/"), pl.col("subset"), pl.lit("/"), pl.col("line").cast(pl.String).str.zfill(5),
        ]).alias("item_id"))

