"""Why our WinoMT labels and mt_gender's annotators disagree: each clear annotation (male/female)
that our reading does not share, put in one class.

Mechanical classes come first, from what the labels themselves say; a hand check, kept as data in
``biaseval/data/winomt_human_checks.yaml`` (language -> the annotation's en.txt index -> class and
note), takes precedence over them and classifies what no rule can (a wrong word aligned, an
annotator's slip). ``biaseval winomt disagreements`` prints the table of classes per language.

The rules, in order, for a row whose reading (``label``/``reason``) differs from the annotator's:
1. hand-checked -> its class;
2. reason ``no-alignment`` -> ``alignment``; reason ``conflict`` -> ``self-contradictory``;
3. the pronoun-following reading (``label_pronoun``, ``reason_pronoun``: biaseval.label.pronouns)
   found a pronoun after the entity with the annotator's gender -> ``pronoun-over-noun`` when our
   reading is male or female (the noun phrase says one gender, the pronoun the other), else
   ``pronoun-unmarked`` (the noun phrase marks none: an epicene noun, an indefinite pronoun, a word
   the analyser does not know);
4. reason ``indefinite`` -> ``indefinite`` (an indefinite pronoun, read as neutral, to which the
   annotator gave a gender with no pronoun of that gender after it);
5. otherwise ``unchecked``.
"""

from __future__ import annotations

import polars as pl

from biaseval.data.yamlio import package_yaml
from biaseval.errors import DataError

CLASSES = {
    "pronoun-over-noun": "the annotator followed a later pronoun; the entity's noun phrase has the other gender "
                         "(the translation contradicts itself)",
    "pronoun-unmarked": "the annotator followed a later pronoun; the noun phrase marks no gender (epicene noun, "
                        "indefinite pronoun, a word the analyser does not know)",
    "later-agreement": "the annotator followed a later agreeing participle, adjective or verb (\"l'ha invitata\", "
                       "\"si è confusa\"); the noun phrase marks no gender or the other (hand-checked)",
    "indefinite": "the entity became an indefinite pronoun (read as neutral); the annotator gave it a gender "
                  "that no later pronoun supports",
    "alignment": "the aligner linked no word, or a wrong word, to the entity",
    "analyser": "the analyser misread the entity's words",
    "self-contradictory": "the entity's own words disagree, or the translation gives it both genders",
    "other": "none of these (an annotation that contradicts the whole translation)",
    "unchecked": "no rule applies and no one has checked it by hand",
}
CHECKS = "data/winomt_human_checks.yaml"


def hand_checks() -> dict[str, dict[int, dict]]:
    """language -> en.txt index -> {"class": ..., "note": ...} (DataError for an unknown class)."""
    checks = package_yaml(CHECKS) or {}
    for lang, entries in checks.items():
        for index, entry in entries.items():
            if entry.get("class") not in CLASSES or entry["class"] == "unchecked":
                raise DataError(f"biaseval/{CHECKS}: {lang} {index}: class {entry.get('class')!r} is not one of "
                                f"{', '.join(c for c in CLASSES if c != 'unchecked')}")
    return checks


def classify(labelled: pl.DataFrame, lang: str, checks: dict[str, dict[int, dict]] | None = None) -> pl.DataFrame:
    """The disagreements of one language (clear annotations whose ``label`` differs), with ``class``
    and ``note``. ``labelled`` needs index, human, label, reason, label_pronoun, reason_pronoun."""
    checked = (hand_checks() if checks is None else checks).get(lang, {})
    rows = labelled.filter(pl.col("human").is_in(["male", "female"]) & (pl.col("label") != pl.col("human")))
    classes, notes = [], []
    for r in rows.iter_rows(named=True):
        hand = checked.get(r["index"])
        if hand is not None:
            classes.append(hand["class"])
            notes.append(hand.get("note", ""))
            continue
        notes.append("")
        followed = r["reason_pronoun"] == "pronoun" and r["label_pronoun"] == r["human"]
        if r["reason"] == "no-alignment":
            classes.append("alignment")
        elif r["reason"] == "conflict":
            classes.append("self-contradictory")
        elif followed:
            classes.append("pronoun-over-noun" if r["label"] in ("male", "female") else "pronoun-unmarked")
        elif r["reason"] == "indefinite":
            classes.append("indefinite")
        else:
            classes.append("unchecked")
    return rows.with_columns(pl.Series("class", classes, dtype=pl.String), pl.Series("note", notes, dtype=pl.String))


def class_counts(classified: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """language -> its classified disagreements, as one row per language with a count per class."""
    rows = []
    for lang, frame in classified.items():
        counts = dict(frame.group_by("class").len().iter_rows()) if frame.height else {}
        rows.append({"language": lang, **{c: counts.get(c, 0) for c in CLASSES}, "total": frame.height})
    return pl.DataFrame(rows)
