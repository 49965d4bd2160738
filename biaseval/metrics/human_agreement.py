"""WinoMT labels against people: mt_gender's hand annotations (about 100 translated sentences per
language: was the entity found, and its gender M/F/N) beside what an entity-alignment detector reads
from the same translations.

The aligner is trained on the annotated pairs together with every recorded system's pairs of the
language (``translations/*/en-<lang>.txt``), as a run would train it. Agreement is measured on the
clear annotations: the annotator found the entity and gave it a male or female gender.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.errors import DataError
from biaseval.suites.winomt_en import AGGREGATE, parse_rows

# language -> the annotation file of data/human_annotations/ that is scored (mt_gender has several
# copies for some languages; these are the ones its paper reports)
ANNOTATIONS = {
    "es": "es.in - es.in.csv",
    "fr": "fr.in - fr.in.csv",
    "it": "google.it.in.2 - it.in.csv",
    "ru": "ru.google - ru.in.csv",
    "uk": "uk.google.gold - uk.in.csv",
    "de": "aws.de.in - de.in.csv",
    "he": "he.in.csv - he.in.csv",
    "ar": "aws.ar.in - ar.in.csv",
}
GENDER = {"M": "male", "F": "female", "N": "neutral"}
HUMAN_DIR = "data/human_annotations"


def read_annotations(path: Path) -> list[dict]:
    """Rows of one annotation file: index (0-based line of en.txt), entity, translation, found,
    gender, comment. DataError names the file and line of a row that does not parse."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        next(reader)
        for number, record in enumerate(reader, 2):
            # (the Ukrainian file's header says "Index,,Entity", but its columns are in the same order)
            if len(record) < 5 or not record[0].strip().isdigit():
                raise DataError(f"{path}:{number}: expected 'index,entity,sentence,found,gender,...', got {record[:5]}")
            index, entity, sentence, found, gender = record[:5]
            rows.append({"index": int(index), "entity": entity.strip(), "translation": sentence.strip(),
                         "found": found.strip().upper(), "gender": gender.strip().upper(),
                         "comment": " ".join(c.strip() for c in record[5:] if c.strip())})
    return rows


def annotated(data: LocalDataset, lang: str) -> pl.DataFrame:
    """The annotations of ``lang`` (``data``: the mt-gender dataset) joined to their WinoMT items: row, index, source, translation,
    entity_index, occupation, annotated_entity (as the file names it), gold, human (male/female/neutral,
    null where the entity was not found or the gender left out), comment."""
    sources = parse_rows(data.path(AGGREGATE), read_lines(data.path(AGGREGATE)))
    rows = []
    for a in read_annotations(data.path(f"{HUMAN_DIR}/{ANNOTATIONS[lang]}")):
        gold, index, sentence, entity = sources[a["index"]]
        rows.append({"row": len(rows), "index": a["index"], "source": sentence, "translation": a["translation"],
                     "entity_index": index, "occupation": entity, "annotated_entity": a["entity"], "gold": gold,
                     "human": GENDER.get(a["gender"]) if a["found"] == "Y" else None, "comment": a["comment"]})
    return pl.DataFrame(rows, schema_overrides={"entity_index": pl.Int32, "human": pl.String})


def recorded_pairs(data: LocalDataset, lang: str) -> pl.DataFrame:
    """(source, translation) of every recorded system's outputs in ``lang``: the aligner's other data."""
    pairs = []
    files = sorted(rel for rel in data.spec.files if re.fullmatch(rf"translations/[^/]+/en-{lang}\.txt", rel))
    for rel in files:
        for line in read_lines(data.path(rel)):
            source, sep, translation = line.partition(" ||| ")
            if sep:
                pairs.append((source.strip(), translation.strip()))
    return pl.DataFrame(pairs, schema=["source", "translation"], orient="row")


def label_annotated(data: LocalDataset, lang: str, detectors: dict[str, object]) -> pl.DataFrame:
    """``annotated(data, lang)`` with, per detector (name -> an entity-alignment detector), the columns
    ``label``, ``reason``, ``evidence`` suffixed with ``_<name>`` (no suffix for the name "")."""
    rows = annotated(data, lang)
    training = recorded_pairs(data, lang).with_columns(pl.lit(0, dtype=pl.Int32).alias("entity_index"),
                                                      pl.lit("").alias("occupation"))
    frame = pl.concat([rows.select("source", "translation", "entity_index", "occupation"), training],
                      how="vertical_relaxed").with_columns(pl.lit(lang).alias("tgt_lang"))
    for name, detector in detectors.items():
        labelled = detector.label_frame(frame).head(rows.height)
        suffix = f"_{name}" if name else ""
        rows = rows.with_columns(labelled.select(pl.col(c).alias(c + suffix) for c in ("label", "reason", "evidence")))
    return rows


def agreement(labelled: pl.DataFrame, column: str = "label") -> tuple[float, int]:
    """Share of the clear annotations (male/female) whose gender ``column`` equals, and their number."""
    clear = labelled.filter(pl.col("human").is_in(["male", "female"]))
    return float((clear[column] == clear["human"]).mean()), clear.height
