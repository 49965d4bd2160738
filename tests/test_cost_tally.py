"""The billed cost summed part by part (``Tally``, as ``billed`` reads a run's shards a group at a
time) equals counting every distinct text once with its first row's units, computed here row by row
in Python over rows with repeats across parts, Unicode, failures and missing units."""

from __future__ import annotations

import random

import polars as pl

from biaseval.run.cost import Tally, _sent_texts


def rows(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    sources = ["abcd", "héllo", "名前です", "", "x" * 500, "a, b.", "ß"] + [f"text {k}" for k in range(40)]
    out = []
    for _ in range(n):
        failed = rng.random() < 0.1
        out.append({
            "system": "mt", "src_lang": "en", "tgt_lang": rng.choice(["es", "de", "fr"]),
            "source": rng.choice(sources), "translation": None if failed else "t",
            "rejected": "refusal" if failed and rng.random() < 0.5 else None,
            "cached": rng.random() < 0.2, "attempts": rng.choice([0, 1, 1, 2, 3]),
            "billed_chars": rng.choice([None, rng.randrange(100)]),
            "input_tokens": rng.choice([None, rng.randrange(1000)]),
            "output_tokens": rng.choice([None, rng.randrange(300)]),
        })
    return pl.DataFrame(out, schema={"system": pl.String, "src_lang": pl.String, "tgt_lang": pl.String,
                                     "source": pl.String, "translation": pl.String, "rejected": pl.String,
                                     "cached": pl.Boolean, "attempts": pl.Int32, "billed_chars": pl.Int32,
                                     "input_tokens": pl.Int32, "output_tokens": pl.Int32})


def by_hand(frame: pl.DataFrame) -> dict:
    """The first row of each sent (src, tgt, source), its units, in plain Python."""
    first = {}
    for row in frame.iter_rows(named=True):
        if row["cached"] or row["attempts"] <= 0:
            continue
        key = (row["src_lang"], row["tgt_lang"], row["source"])
        if key in first:
            continue
        answered = row["translation"] is not None or row["rejected"] is not None
        if row["billed_chars"] is not None:
            chars = row["billed_chars"]
        elif answered and row["input_tokens"] is None and row["output_tokens"] is None:
            chars = len(row["source"])
        else:
            chars = 0
        first[key] = (chars, row["input_tokens"] or 0, row["output_tokens"] or 0,
                      row["attempts"] * len(row["source"]), int(row["attempts"] > 1))
    sums = [sum(v[k] for v in first.values()) for k in range(5)]
    return {"texts": len(first), **dict(zip(Tally.SUMS, sums))}


def test_tally_over_parts_counts_each_text_once_with_its_first_row():
    frame = rows(3000, seed=1)
    for cuts in ([], [1], [5, 6, 1000], list(range(100, 3000, 100)), [2999]):
        tally = Tally()
        edges = [0, *cuts, frame.height]
        for lo, hi in zip(edges, edges[1:]):
            tally.add(_sent_texts(frame.slice(lo, hi - lo)))
        assert {"texts": tally.texts, **tally.sums} == by_hand(frame), cuts
    empty = Tally()
    empty.add(_sent_texts(frame.head(0)))
    assert empty.texts == 0 and len(empty.seen) == 0
