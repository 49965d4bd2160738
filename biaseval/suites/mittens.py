"""MiTTenS (Robinson et al. 2024, "MiTTenS: A Dataset for Evaluating Gender Mistranslation"): short
passages, each about one person whose gender the passage encodes, in 26 languages, translated into
English (``mittens-2en``, 1,744 passages) and out of English (``mittens-2xx``, 1,888).

The dataset is one CSV, ``mittens_dataset_v5.csv``; each row is a passage (``example``), the
paper's LLM prompt around it (``inputs``: "Translate the following text from English to Spanish.
\\n\\nEnglish: ...\\nSpanish:"), a reference translation (``targets``), the passage language
(``lang``: the source language of a 2en row, the target language of a 2xx row), the gender the
passage encodes (``encoded_gender``: feminine or masculine) and its evaluation set
(``eval_set_key``: coref:coreference, synthbio, late_binding, ...).

Items: ``subset`` is ``<lang>/<eval_set_key>``, ``gold`` the encoded gender (female / male),
``line`` the CSV's row index + 1, ``source`` the passage, ``prompt`` the paper's prompt (an LLM
system with ``prompt: dataset`` sends it; other systems send the passage) and ``reference`` the
reference translation (backend ``references`` replays it).

A run's ``targets:`` names the passages' languages in both suites: out of English, the target
languages; into English (whose only target is English), the source languages. So
``targets: {mittens-2xx: [es], mittens-2en: [es]}`` keeps the Spanish passages of both.

2en outputs are labelled by the English pronouns they use (detector ``mittens-pronouns``), 2xx
outputs by the gender the target language marks on the words about the person
(``mittens-person-gender``); both are scored by ``biaseval.metrics.mittens`` (docs/mittens.md).
"""

from __future__ import annotations

import dataclasses
import hashlib

import polars as pl

from biaseval.data.datasets import LocalDataset, resolve
from biaseval.errors import ConfigError, DataError
from biaseval.suites.base import SUITES, FileSuite, Subset, SuiteData, TableData, conform

CSV = "mittens_dataset_v5.csv"
COLUMNS = ("", "inputs", "targets", "lang", "lang_resource_level", "encoded_gender", "eval_set_key", "example",
           "format")
GOLD = {"feminine": "female", "masculine": "male"}

# The pinned dataset's layout (checked when it is read): per direction, each evaluation set and the
# languages it has passages in.
_GENDER_SETS = ("coref:coreference", "coref:synthetic", "gender_agreement:contextual_synthetic")
_FIFTEEN = ("am", "ar", "cs", "de", "es", "fr", "hi", "it", "ja", "pl", "pt", "ru", "te", "th", "zh")
LAYOUT = {
    "2en": {**{s: _FIFTEEN for s in _GENDER_SETS}, "gender_specific_words:synthetic": _FIFTEEN,
            "late_binding": ("es",),
            "nouns_then_pronouns": ("as", "bho", "bn", "fa", "fi", "id", "lg", "ln", "mai", "om", "tr"),
            "synthbio": tuple(sorted(_FIFTEEN + ("id",)))},
    "2xx": {s: tuple(sorted(_FIFTEEN + ("bn",))) for s in (*_GENDER_SETS, "gender_agreement:news",
                                                            "gender_agreement:wiki",
                                                            "gender_specific_words:synthetic")},
}
# The dataset's own resource level of each language (its lang_resource_level column, checked on load;
# it differs from the paper's Table 1 for fi, pl, mai, om and tr).
LEVELS = {
    "high": ("ar", "de", "es", "fr", "hi", "it", "ja", "pt", "ru", "zh"),
    "mid": ("id", "te", "th", "tr"),
    "low": ("am", "bn", "cs", "fa", "fi", "pl"),
    "very low": ("as", "bho", "lg", "ln", "mai", "om"),
}
LEVEL_OF = {lang: level for level, langs in LEVELS.items() for lang in langs}


def passage_languages(direction: str) -> tuple[str, ...]:
    return tuple(sorted({lang for langs in LAYOUT[direction].values() for lang in langs}))


def read_table(data: LocalDataset) -> pl.DataFrame:
    """The CSV's rows as strings, checked: the columns biaseval reads, each gender and direction known,
    each language's level as ``LEVELS`` says; DataError names the file, row and field at fault."""
    path = data.path(CSV)
    try:
        frame = pl.read_csv(path, infer_schema_length=0)
    except pl.exceptions.PolarsError as exc:
        raise DataError(f"{path}: not a readable CSV ({exc})") from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: no column {missing[0]!r} (MiTTenS v5 has {', '.join(repr(c) for c in COLUMNS)})")
    frame = frame.select(COLUMNS).rename({"": "index"})
    checks = {
        "encoded_gender": pl.col("encoded_gender").is_in(list(GOLD)),
        "format": pl.col("format").is_in(list(LAYOUT)),
        "index": pl.col("index").str.contains(r"^\d+$"),
        "lang_resource_level": pl.col("lang_resource_level") == pl.col("lang").replace_strict(
            LEVEL_OF, default=None),
        "example": pl.col("example").str.strip_chars() != "",
    }
    for column, ok in checks.items():
        bad = frame.with_row_index("_row").filter(~ok.fill_null(False))
        if bad.height:
            row = bad.row(0, named=True)
            raise DataError(f"{path}: row {row['_row'] + 1} (index {row['index']}): unexpected {column} "
                            f"{row[column]!r}")
    for direction, sets in LAYOUT.items():
        found = {(k, lang) for k, lang in frame.filter(pl.col("format") == direction)
                 .select("eval_set_key", "lang").unique().iter_rows()}
        expected = {(k, lang) for k, langs in sets.items() for lang in langs}
        if found != expected:
            odd = sorted(found ^ expected)[0]
            raise DataError(f"{path}: {direction} passages of set {odd[0]!r} in language {odd[1]!r} "
                            f"{'unexpected' if odd in found else 'missing'} (not the pinned MiTTenS v5 layout)")
    return frame


def _load(suite: "MittensSuite", data: LocalDataset) -> pl.DataFrame:
    rows = read_table(data).filter((pl.col("format") == suite.direction)
                                   & pl.col("lang").is_in(list(suite.languages)))
    into_english = suite.direction == "2en"
    frame = rows.select(
        pl.lit(suite.name).alias("suite"),
        (pl.col("lang") + "/" + pl.col("eval_set_key")).alias("subset"),
        (pl.col("index").cast(pl.Int32) + 1).alias("line"),
        pl.col("example").str.strip_chars().alias("source"),
        (pl.col("lang") if into_english else pl.lit("en")).alias("src_lang"),
        (pl.lit("en") if into_english else pl.col("lang")).alias("tgt_lang"),
        pl.col("encoded_gender").replace_strict(GOLD).alias("gold"),
        pl.col("targets").alias("reference"),
        pl.col("inputs").alias("prompt"),
    )
    frame = frame.with_columns((pl.lit(f"{suite.name}/") + pl.col("subset") + "/"
                                + pl.col("line").cast(pl.String).str.zfill(5)).alias("item_id"))
    return conform(frame)


@dataclasses.dataclass(frozen=True)
class MittensSuite(FileSuite):
    """One direction of MiTTenS, for some of its passage languages (``languages``)."""

    direction: str = "2xx"
    languages: tuple[str, ...] = ()

    def open(self) -> SuiteData:
        data = resolve(self.dataset)
        return _Data(self, self.loader(self, data), data.spec.commit)

    def with_targets(self, targets: tuple[str, ...]) -> "MittensSuite":
        """The same suite for the passages in ``targets`` (a run's ``targets:``; see the module docstring)."""
        every = passage_languages(self.direction)
        unknown = [t for t in targets if t not in every]
        if unknown or not targets:
            raise ConfigError(f"suite {self.name!r} has passages in {', '.join(every)}; not {', '.join(unknown)}")
        return _suite(self.name, self.direction, tuple(sorted(set(targets))))


class _Data(TableData):
    """The items, with a fingerprint that also names the passage languages (into English the target
    is always English, so the targets alone would not tell two narrowings apart)."""

    def __init__(self, suite: MittensSuite, table: pl.DataFrame, commit: str | None):
        super().__init__(suite, table, commit)
        blob = f"{self.fingerprint}|{suite.direction}|{','.join(suite.languages)}"
        self.fingerprint = hashlib.sha256(blob.encode()).hexdigest()[:24]


def _subsets(direction: str, langs: tuple[str, ...]) -> tuple[Subset, ...]:
    return tuple(Subset(f"{lang}/{key}", lang, CSV) for lang in langs
                 for key in sorted(LAYOUT[direction]) if lang in LAYOUT[direction][key])


def _suite(name: str, direction: str, langs: tuple[str, ...]) -> MittensSuite:
    into_english = direction == "2en"
    every = passage_languages(direction)
    targets = ("en",) if into_english else langs
    return MittensSuite(
        name=name, version=1, dataset="mittens",
        src_lang=(langs[0] if len(langs) == 1 else "mul") if into_english else "en",
        sources=langs if into_english else (),
        targets=targets,
        # into English, a run's targets: names source languages (with_targets), so they are offered here
        optional_targets=every if into_english else (),
        scorer="mittens",
        detectors={t: "mittens-pronouns" if into_english else "mittens-person-gender" for t in targets},
        subsets=_subsets(direction, langs),
        loader=_load,
        scorer_params=(("direction", direction), ("levels", tuple(sorted(LEVEL_OF.items())))),
        doc=__doc__,
        reference_columns=("reference",),
        prompts=True,
        direction=direction,
        languages=langs,
    )


MITTENS_2EN = SUITES.register("mittens-2en")(_suite("mittens-2en", "2en", passage_languages("2en")))
MITTENS_2XX = SUITES.register("mittens-2xx")(_suite("mittens-2xx", "2xx", passage_languages("2xx")))
