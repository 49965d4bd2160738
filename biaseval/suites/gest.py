"""GEST (Pikuliak et al. 2024, "Women Are Beautiful, Men Are Leaders", arXiv 2311.18711): 3,565 English
first-person sentences, each written for one of 16 gender stereotypes (1-7 about women, 8-16 about men),
translated into nine Slavic languages. The English says nothing of the speaker's gender; the target
language must choose one ("I cried" -> Slovak "plakal som" or "plakala som"), and the question is whether
the choice follows the stereotype.

Suites: ``gest`` reads ``data/gest.csv``, the version whose translations the dataset's repository
recorded (Amazon Translate, DeepL, Google Translate, NLLB-3.3B); ``gest-1.1`` reads ``data/gest_1.1.csv``,
the same rows with 244 sentences corrected (typos, grammar), for systems translating afresh. Each is one
item per sentence and target language: ``subset`` is ``<lang>/<NN>`` (``sk/07``: Slovak, stereotype 7),
``line`` the sentence's row in the CSV (1 = the first row after the header), ``gold`` empty (the speaker
has no gender: the metric counts which one the system gave). A run's ``targets:`` narrows the languages.

Outputs are read by ``gest-speaker`` (``biaseval/label/speaker_gender.py``) and scored by
``biaseval.metrics.gest`` (docs/gest.md).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.gest_stereotypes import FEMALE_STEREOTYPES, SHORT_NAMES, STEREOTYPE_NAMES  # noqa: F401 (used by others)
from biaseval.errors import ConfigError, DataError
from biaseval.suites.base import SUITES, FileSuite, Subset, conform

LANGUAGES = ("be", "cs", "hr", "pl", "ru", "sk", "sl", "sr", "uk")
STEREOTYPES = tuple(range(1, 17))
DETECTOR = "gest-speaker"
VERSIONS = {"gest": "data/gest.csv", "gest-1.1": "data/gest_1.1.csv"}


def read_sentences(data: LocalDataset, path: str) -> pl.DataFrame:
    """The CSV's rows (sentence, stereotype as an integer, line), checked; DataError names file and line."""
    file = data.path(path)
    try:
        frame = pl.read_csv(file, infer_schema_length=0)
    except pl.exceptions.PolarsError as exc:
        raise DataError(f"{file}: not a readable CSV ({exc})") from None
    missing = [c for c in ("sentence", "stereotype") if c not in frame.columns]
    if missing:
        raise DataError(f"{file}: no column {missing[0]!r} (GEST has 'sentence' and 'stereotype')")
    frame = frame.select("sentence", "stereotype").with_row_index("line", offset=2)  # line 1 is the header
    bad = frame.filter(~pl.col("stereotype").is_in([str(s) for s in STEREOTYPES]).fill_null(True)
                       | (pl.col("sentence").str.strip_chars().fill_null("") == ""))
    if bad.height:
        row = bad.row(0, named=True)
        raise DataError(f"{file}:{row['line']}: expected a sentence and a stereotype 1-16, not "
                        f"{row['sentence']!r}, {row['stereotype']!r}")
    return frame.with_columns(pl.col("stereotype").cast(pl.Int32), (pl.col("line") - 1).cast(pl.Int32))


def _load(suite: "GestSuite", data: LocalDataset) -> pl.DataFrame:
    rows = read_sentences(data, suite.file)
    frames = []
    for lang in suite.targets:
        subset = pl.lit(f"{lang}/") + pl.col("stereotype").cast(pl.String).str.zfill(2)
        frames.append(rows.select(
            pl.lit(suite.name).alias("suite"), subset.alias("subset"), pl.col("line"),
            pl.col("sentence").str.strip_chars().alias("source"), pl.lit("en").alias("src_lang"),
            pl.lit(lang).alias("tgt_lang"),
        ))
    frame = pl.concat(frames)
    frame = frame.with_columns((pl.lit(f"{suite.name}/") + pl.col("subset") + "/"
                                + pl.col("line").cast(pl.String).str.zfill(5)).alias("item_id"))
    return conform(frame)


@dataclasses.dataclass(frozen=True)
class GestSuite(FileSuite):
    """GEST from one of its CSV versions (``file``), into some of its nine languages."""

    file: str = VERSIONS["gest"]

    def with_targets(self, targets: tuple[str, ...]) -> "GestSuite":
        unknown = [t for t in targets if t not in LANGUAGES]
        if unknown or not targets:
            raise ConfigError(f"suite {self.name!r} has target languages {', '.join(LANGUAGES)}; "
                              f"not {', '.join(unknown) or 'none'}")
        return _suite(self.name, tuple(t for t in LANGUAGES if t in targets))


def subset_name(lang: str, stereotype: int) -> str:
    return f"{lang}/{stereotype:02d}"


def _suite(name: str, targets: tuple[str, ...]) -> GestSuite:
    file = VERSIONS[name]
    stem = file.rsplit("/", 1)[-1].removesuffix(".csv")
    return GestSuite(
        name=name, version=1, dataset="gest", src_lang="en", targets=targets, scorer="gest",
        detectors={t: DETECTOR for t in targets},
        subsets=tuple(Subset(subset_name(t, s), stem, file) for t in targets for s in STEREOTYPES),
        loader=_load, doc=__doc__, file=file,
    )


GEST = SUITES.register("gest")(_suite("gest", LANGUAGES))
GEST_11 = SUITES.register("gest-1.1")(_suite("gest-1.1", LANGUAGES))
