"""The German word data of the gender analyser: the determiner paradigms, prepositions and word
lists of ``biaseval/data/entity_gender/de.yaml`` (``word_data``), and the german-nouns lexicon
(``noun_lexicon``).

german-nouns (a Wiktionary extract) gives, per lemma, its gender(s) and every inflected form by
case and number; nominalized adjectives ("Angestellte"/"Angestellter", "Vorgesetzte") are listed
as one feminine and one masculine lemma with strong, weak and mixed forms. A form is looked up in
the package's prebuilt form index and the matching rows are read from its CSV (the package's own
``Nouns()`` parses all 100,000 rows first: two seconds and 250 MB per process). A *reading* of a
form is (lemma, gender, number, case, declension).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from biaseval.data.yamlio import package_yaml
from biaseval.errors import ConfigError
from biaseval.label.analysers.base import MissingAnalyser

_CASES = {"nominativ": "nom", "genitiv": "gen", "dativ": "dat", "akkusativ": "acc"}
_NUMBERS = {"singular": "sg", "plural": "pl"}
_DECLENSIONS = frozenset({"stark", "schwach", "gemischt"})
_HINT = "pip install german-nouns"


@dataclass(frozen=True, slots=True)
class NounReading:
    """One reading of a noun form (the declension only for a nominalized adjective)."""

    lemma: str
    gender: str  # m, f, n
    number: str  # sg, pl
    case: str  # nom, acc, dat, gen
    declension: str | None  # stark/schwach/gemischt for nominalized adjectives, else None
    adjectival: bool


@dataclass(frozen=True, slots=True)
class Determiner:
    """A determiner form: its readings and the adjective declension it calls for."""

    readings: frozenset[tuple[str, str]]  # (gender m/f/n or pl, case)
    declension: str


@dataclass(frozen=True)
class WordData:
    """The word lists and paradigms of de.yaml."""

    determiners: dict[str, Determiner]
    prepositions: dict[str, frozenset[str]]
    indefinite: frozenset[str]
    generic: tuple[str, ...]
    not_persons: dict[str, frozenset[str]]
    person_nouns: frozenset[str]
    feminine_endings: tuple[str, ...]


@cache
def word_data() -> WordData:
    """de.yaml, validated (a ConfigError names the field at fault)."""
    where = "biaseval/data/entity_gender/de.yaml"
    raw = package_yaml("data/entity_gender/de.yaml")

    def fail(field: str, message: str) -> ConfigError:
        return ConfigError(f"{where}: {field}: {message}")

    def readings(field: str, values) -> frozenset[tuple[str, str]]:
        out = set()
        for value in values:
            gender, _, case = str(value).partition(".")
            if gender not in ("m", "f", "n", "pl") or case not in ("nom", "acc", "dat", "gen"):
                raise fail(field, f"bad reading {value!r} (expected GENDER.CASE, e.g. m.nom, pl.dat)")
            out.add((gender, case))
        return frozenset(out)

    determiners: dict[str, Determiner] = {}

    def add(field: str, form: str, values, declension: str) -> None:
        if declension not in _DECLENSIONS:
            raise fail(field, f"unknown declension {declension!r}")
        form = form.lower()
        if form in determiners:
            raise fail(field, f"{form!r} is listed twice")
        determiners[form] = Determiner(readings(f"{field}.{form}", values), declension)

    for n, group in enumerate(raw["determiners"]):
        for form, values in group["forms"].items():
            add(f"determiners[{n}]", form, values, group["declension"])
    for n, group in enumerate(raw["determiner_stems"]):
        for stem in group["stems"]:
            for ending, values in group["endings"].items():
                add(f"determiner_stems[{n}]", stem + (ending or ""), values, group["declension"])
    prepositions = {}
    for word, cases in raw["prepositions"].items():
        if not set(cases) <= {"nom", "acc", "dat", "gen"}:
            raise fail(f"prepositions.{word}", f"bad cases {cases!r}")
        prepositions[word.lower()] = frozenset(cases)
    not_persons = {lemma: frozenset(genders) for lemma, genders in (raw.get("not_persons") or {}).items()}
    return WordData(
        determiners=determiners,
        prepositions=prepositions,
        indefinite=frozenset(w.lower() for w in raw["indefinite"]),
        generic=tuple(w.lower() for w in raw["generic"]),
        not_persons=not_persons,
        person_nouns=frozenset(w.lower() for w in raw["person_nouns"]),
        feminine_endings=tuple(w.lower() for w in raw["feminine_endings"]),
    )


class NounLexicon:
    """german-nouns' rows, looked up by inflected form."""

    def __init__(self) -> None:
        try:
            from german_nouns.config import CSV_FILE_PATH, PACKAGE_PATH
        except ImportError:
            raise MissingAnalyser(f"the de gender analyser needs the german-nouns package: {_HINT}") from None
        csv_path = Path(CSV_FILE_PATH)
        index_path = Path(PACKAGE_PATH) / "index.txt"
        try:
            if not index_path.is_file():
                from german_nouns.lookup import (
                    Nouns,  # builds and saves the index on first use
                )

                Nouns()
            self._lines = csv_path.read_text(encoding="utf-8").split("\n")
            self._index: dict[str, str] = {}
            with index_path.open(encoding="utf-8") as handle:
                for line in handle:
                    form, _, rows = line.rstrip("\n").partition("\t")
                    self._index[form] = rows
        except OSError as exc:
            raise MissingAnalyser(f"german-nouns' data cannot be read ({exc}): reinstall it: {_HINT}") from None
        self._header = next(csv.reader([self._lines[0]]))
        self._columns: dict[int, tuple[str, str, str | None]] = {}
        for j, name in enumerate(self._header):
            words = name.replace("*", "").split()
            if len(words) >= 2 and words[0] in _CASES and words[1] in _NUMBERS:
                declension = words[2] if len(words) > 2 and words[2] in _DECLENSIONS else None
                self._columns[j] = (_CASES[words[0]], _NUMBERS[words[1]], declension)
        self._genus = [j for j, name in enumerate(self._header) if name.startswith("genus")]
        self._cache: dict[str, tuple[NounReading, ...]] = {}

    def readings(self, form: str) -> tuple[NounReading, ...]:
        found = self._cache.get(form)
        if found is None:
            found = self._cache[form] = tuple(self._lookup(form))
        return found

    def _lookup(self, form: str):
        rows = self._index.get(form.lower())
        if not rows:
            return
        folded = form.casefold()
        for number in rows.split("\t"):
            if not number:
                continue
            # the index numbers data rows; no field of the CSV spans lines, so row n is line n + 1
            row = next(csv.reader([self._lines[int(number) + 1]]))
            if len(row) < len(self._header) or "Substantiv" not in row[1].split(","):
                continue
            genders = {row[j] for j in self._genus if row[j] in ("m", "f", "n")}
            adjectival = "adjektivische Deklination" in row[1]
            for j, (case, num, declension) in self._columns.items():
                if row[j] and row[j].casefold() == folded:
                    for gender in sorted(genders):
                        yield NounReading(row[0], gender, num, case, declension, adjectival)


@cache
def noun_lexicon() -> NounLexicon:
    return NounLexicon()
