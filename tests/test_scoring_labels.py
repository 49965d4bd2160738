"""label_and_count against a per-row Python count: shard files of texts nobody wrote the detectors
for (rule words beside letters, digits and punctuation of several scripts, nulls, failed rows), a
suite per kind of view (per subset; per target language and stereotype; per occupation over four
target languages). The counts and labels.parquet must be exactly what label_text gives row by row."""

from __future__ import annotations

import random
from collections import Counter

import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml

from biaseval.config import load_config
from biaseval.label.rules import label_text
from biaseval.metrics.labelling import LABEL_COLUMNS, count_keys, label_and_count
from biaseval.suites import SUITES

SUITE_NAMES = ["tgbi-hi", "winomt-hi", "otsc-en"]
WORDS = ["she", "He", "HER", "him", "his", "woman", "guy", "amigo", "Amiga", "amica", "l'amie", "ami",
         "Freundin", "freund", "mein", "mia", "el", "la", "the", "other", "hero", "shell"]
NEIGHBOURS = ["", " ", " ", "é", "ß", "λ", "ж", "中", "1", "٣", "_", "\u00a0", "'", "-", ".", ",", "😀"]


def _text(rnd: random.Random) -> str | None:
    if rnd.random() < 0.03:
        return None
    return "".join(rnd.choice(NEIGHBOURS) + rnd.choice(WORDS) + rnd.choice(NEIGHBOURS)
                   for _ in range(rnd.randint(0, 6)))


def _shards(tmp_path, rnd: random.Random) -> dict[str, list]:
    files: dict[str, list] = {}
    for suite in SUITE_NAMES:
        targets = SUITES.get(suite).targets
        for k in range(3):  # three shards per suite, rows of two systems mixed
            n = 700
            texts = [_text(rnd) for _ in range(n)]
            frame = pl.DataFrame({
                "system": [rnd.choice(["a", "b"]) for _ in range(n)],
                "suite": suite,
                "subset": [rnd.choice(["s1", "s2", "her", "anti"]) for _ in range(n)],
                "item_id": [f"{suite}-{k}-{i}" for i in range(n)],
                "tgt_lang": [rnd.choice(targets) for _ in range(n)],
                "translation": texts,
                "error": ["timeout" if t is None else None for t in texts],
                "gold": [rnd.choice(["male", "female", "neutral"]) for _ in range(n)],
                "occupation": [rnd.choice(["nurse", "pilot", "baker"]) for _ in range(n)],
                "female_share": [rnd.choice([0.9, 0.1, 0.5]) for _ in range(n)],
                "stereotype": [rnd.choice(["pro", "anti", None]) for _ in range(n)],
                "source": "x",
            }, schema_overrides={"error": pl.String, "stereotype": pl.String})
            path = tmp_path / f"{suite}-{k}.parquet"
            frame.write_parquet(path)
            files.setdefault(suite, []).append(path)
    return files


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scoring")
    (tmp / "run.yaml").write_text(yaml.safe_dump({
        "name": "labels", "suites": SUITE_NAMES,
        "systems": {"a": {"backend": "identity"}, "b": {"backend": "identity"}}}))
    config = load_config(tmp / "run.yaml")
    files = _shards(tmp, random.Random(5))
    counts, rows = label_and_count(files, config, tmp / "labels.parquet")
    shards = pl.concat([pl.read_parquet(p) for paths in files.values() for p in paths])
    return config, shards, counts, rows, tmp / "labels.parquet"


def _expected(config, shards: pl.DataFrame) -> pl.DataFrame:
    """Each row labelled in plain Python with its suite's detector for its target language."""
    labels = [label_text(config.detector_for(row["suite"], row["tgt_lang"]), row["translation"])
              for row in shards.iter_rows(named=True)]
    return shards.with_columns(pl.Series("label", labels, dtype=pl.String))


def test_labels_parquet_holds_each_row_with_its_python_label(scored):
    config, shards, _, rows, path = scored
    expected = _expected(config, shards)
    got = pq.read_table(path).to_pylist()  # read without polars: plain Parquet strings
    assert rows == len(got) == shards.height
    assert list(got[0]) == LABEL_COLUMNS
    want = {(r["system"], r["suite"], r["item_id"]): (r["label"], r["error"]) for r in expected.iter_rows(named=True)}
    assert {(r["system"], r["suite"], r["item_id"]): (r["label"], r["error"]) for r in got} == want
    assert all(r["reason"] is None and r["evidence"] is None for r in got)
    assert {v[0] for v in want.values()} >= {"male", "female", "neutral", "ambiguous", "unknown", None}


def test_counts_per_view_match_a_count_of_the_rows(scored):
    config, shards, counts, _, _ = scored
    expected = _expected(config, shards)
    for view in ("sets", "occupations"):
        want: Counter = Counter()
        for suite in SUITE_NAMES:
            keys = count_keys(suite).get(view)
            if keys is None:
                continue
            for row in expected.filter(pl.col("suite") == suite).iter_rows(named=True):
                want[tuple((k, row[k]) for k in keys)] += 1
        got = Counter()
        for row in counts[view].iter_rows(named=True):
            keys = count_keys(row["suite"])[view]
            got[tuple((k, row[k]) for k in keys)] += row["count"]
        assert got == want, view
