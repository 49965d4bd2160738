"""The GEST speaker reader (``gest-speaker``) measured against gold, per language (docs/gest.md; printed by
``biaseval gest reader-table``, kept equal to the docs by tests/test_gest.py).

Two kinds of gold, neither made by the reader:

- **speaker named** (Slovak only): the dataset's Slovak files also translate each sentence as
  ``The man said: "..."`` and ``The woman said: "..."`` (Amazon Translate and Google Translate nearly every
  sentence, DeepL 100 of them); the gold is the gender the English names. A system may still translate
  the quote in the other gender ("Žena povedala: „Nikdy som nemal rád ...“"), so a share of the
  disagreements are the system's, not the reader's: that accuracy is a lower bound.
- **phrase rule** (every language): the outputs of the four systems for the ``gest.csv`` sentences that
  hold a listed phrase of one gender and none of the other (``data/speaker_gender/gold.yaml``: "я была",
  "bila sam", "byłam"); the gold is that gender. An easy subset: its accuracy is an upper bound, and its
  coverage (how many of them the reader reads at all) should be near 100 %.

Per language and gold: items, read (``male``/``female``: coverage), right of read (accuracy), and
``mixed`` (read with cues of both genders, counted as not read).
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.yamlio import package_yaml
from biaseval.label.speaker_gender import read_texts
from biaseval.suites.gest import LANGUAGES, VERSIONS, read_sentences

SYSTEMS = ("amazon_translate", "deepl", "google_translate", "nllb_3b")
FILE = "data/translations/{system}/{lang}/translations.csv"
_SAID = re.compile(r'^The (man|woman) said: "(.*)"\s*$', re.S)


def system_languages(data: LocalDataset) -> list[tuple[str, str]]:
    """(system, language) of every recorded file of the dataset's registry entry."""
    return [(s, lang) for s in SYSTEMS for lang in LANGUAGES if FILE.format(system=s, lang=lang) in data.spec.files]


def recorded(data: LocalDataset, system: str, lang: str) -> pl.DataFrame:
    """A recorded translations.csv (columns from, to)."""
    return pl.read_csv(data.path(FILE.format(system=system, lang=lang)), infer_schema_length=0).select("from", "to")


@cache
def _phrases(lang: str) -> dict[str, re.Pattern]:
    raw = package_yaml("data/speaker_gender/gold.yaml")[lang]
    return {gender: re.compile(r"(?<!\w)(?:" + "|".join(re.escape(p) for p in raw[gender]) + r")(?!\w)", re.I)
            for gender in ("male", "female")}


def phrase_gold(lang: str, texts: list[str]) -> list[str | None]:
    """The phrase rule's gold of each text (module docstring), or None where it does not apply."""
    found = _phrases(lang)
    out = []
    for text in texts:
        male, female = bool(found["male"].search(text)), bool(found["female"].search(text))
        out.append("male" if male and not female else "female" if female and not male else None)
    return out


def speaker_named(data: LocalDataset) -> pl.DataFrame:
    """The Slovak "The man said:" / "The woman said:" translations of gest.csv sentences (system, gold, to)."""
    sentences = set(read_sentences(data, VERSIONS["gest"])["sentence"].to_list())
    frames = []
    for system, lang in system_languages(data):
        if lang != "sk":
            continue
        rows = recorded(data, system, lang)
        said = rows["from"].str.extract_groups(_SAID.pattern).struct.rename_fields(["who", "quote"])
        part = rows.with_columns(said.alias("_s")).unnest("_s").filter(pl.col("who").is_not_null())
        frames.append(part.select(pl.lit(system).alias("system"),
                                  pl.col("who").replace_strict({"man": "male", "woman": "female"}).alias("gold"),
                                  "quote", "to"))
    table = pl.concat(frames)
    # the quoted sentences are GEST's, some with typographic apostrophes: keep those of gest.csv
    straight = table["quote"].str.replace_all("’", "'")
    return table.filter(straight.is_in(list(sentences)) | table["quote"].is_in(list(sentences)))


def _row(lang: str, gold_name: str, gold: list[str], texts: list[str]) -> dict:
    labels = [label for label, _, _ in read_texts(lang, texts)]
    read = [(g, label) for g, label in zip(gold, labels) if label in ("male", "female")]
    right = sum(g == label for g, label in read)
    return {"language": lang, "gold": gold_name, "items": len(gold), "read": len(read), "right": right,
            "mixed": sum(label == "ambiguous" for label in labels),
            "coverage": len(read) / len(gold) if gold else None,
            "accuracy": right / len(read) if read else None}


def table(data: LocalDataset) -> list[dict]:
    """One row per language and gold (module docstring), languages in order, Slovak's named gold first."""
    sentences = read_sentences(data, VERSIONS["gest"])["sentence"].to_list()
    rows = []
    named = speaker_named(data)
    rows.append(_row("sk", "speaker named", named["gold"].to_list(), named["to"].to_list()))
    for lang in LANGUAGES:
        texts: list[str] = []
        for system, file_lang in system_languages(data):
            if file_lang == lang:
                by_source = dict(recorded(data, system, lang).iter_rows())
                texts += [by_source[s] for s in sentences if s in by_source]
        gold = phrase_gold(lang, texts)
        kept = [(g, t) for g, t in zip(gold, texts) if g is not None]
        rows.append(_row(lang, "phrase rule", [g for g, _ in kept], [t for _, t in kept]))
    return rows
