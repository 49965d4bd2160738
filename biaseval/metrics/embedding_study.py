"""The embedding-bias study of a run: the words of its word-list suites and their translations are
embedded (one model per language, each read once), and their features, bins and gender-shift table
are computed (biaseval/metrics/embedding.py) and written beside the other results:

    embedding_bias.parquet   one row per word × system × target language, every feature
    embedding_bins.parquet   intensity and direction bins per language (source side and each system)
    gender_shift.parquet     source gender class × gender of the translation, per system
    plots/embedding-*.png    cos(w, m) against cos(w, f), before and after translation

Words and tokens without a vector in their model are named on stderr here, and in the reports.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import polars as pl

from biaseval.config import RunConfig
from biaseval.data.paths import from_file
from biaseval.metrics.embedding import (
    Study,
    bin_rows,
    describe_missing,
    features,
    missing_words,
    pair_vectors,
    summarise,
    text_vectors,
    tokens,
)
from biaseval.metrics.word_vectors import load_vectors
from biaseval.suites import SUITES


def _model(config: RunConfig, config_dir: Path, language: str):
    spec = config.embedding.models[language]
    return from_file(spec.path, config_dir), spec.format, spec.dim


def study(rows: pl.DataFrame, config: RunConfig, config_dir: Path, log: TextIO = sys.stderr) -> Study:
    """``rows``: system, suite, subset (the word's gender class), source (the word), tgt_lang,
    translation, label (the translation's grammatical gender). Words without a vector are named on
    ``log`` (and in the report)."""
    emb = config.embedding
    tables, bin_tables = [], []
    for (suite, tgt), part in rows.group_by("suite", "tgt_lang", maintain_order=True):
        src = SUITES.get(suite).src_lang
        words = part["source"].unique(maintain_order=True).to_list()
        src_pair, tgt_pair = emb.pair(src), emb.pair(tgt)
        path, fmt, dim = _model(config, config_dir, src)
        src_vec = load_vectors(path, [*words, *src_pair], fmt, dim)
        needed = {t for text in part["translation"].to_list() for t in tokens(text, tgt)}
        path, fmt, dim = _model(config, config_dir, tgt)
        tgt_vec = load_vectors(path, [*sorted(needed), *tgt_pair], fmt, dim)
        sf, sm = pair_vectors(src_vec, src_pair, src)
        tf, tm = pair_vectors(tgt_vec, tgt_pair, tgt)
        word_rows = [src_vec.index[w] for w in part["source"].to_list()]
        translations = part["translation"].to_list()
        tv, tfound, tmissing = text_vectors(translations, tgt, tgt_vec)
        values = features(part["source"].to_list(), src_vec.matrix[word_rows], src_vec.found[word_rows], (sf, sm),
                          tv, tfound, (tf, tm))
        table = part.select(
            "system", "suite", "tgt_lang", pl.col("source").alias("word"), pl.col("subset").alias("gender_class"),
            "translation", pl.col("label").alias("tgt_gender"),
        ).with_columns(
            pl.Series("tgt_tokens", [" ".join(tokens(t, tgt)) for t in translations], dtype=pl.String),
            pl.Series("tgt_missing", [" ".join(m) for m in tmissing], dtype=pl.String),
            pl.lit(src).alias("src_lang"),
            *[pl.Series(name, v) for name, v in values.items()],
        )
        tables.append(table)
        source = table.unique("word", maintain_order=True)
        for side, language, frame, system in [("source", src, source, None)] + [
            ("target", tgt, sub, name) for (name,), sub in table.group_by("system", maintain_order=True)
        ]:
            key = "src" if side == "source" else "tgt"
            for b in bin_rows(frame, key, emb.bins_for(language), emb.examples, emb.bin_width):
                bin_tables.append({"suite": suite, "system": system, "side": side, "language": language, **b})
    features_table = pl.concat(tables) if tables else pl.DataFrame()
    bins_table = pl.DataFrame(bin_tables, schema={
        "suite": pl.String, "system": pl.String, "side": pl.String, "language": pl.String, "feature": pl.String,
        "bin": pl.Int64, "lo": pl.Float64, "hi": pl.Float64, "count": pl.Int64, "share": pl.Float64,
        "share_all": pl.Float64, "examples": pl.String, "binning": pl.String})
    for entry in missing_words(features_table) if features_table.height else []:
        line = describe_missing(entry)
        if line:
            print(f"embedding: {line}", file=log, flush=True)
    metrics, shift = summarise(features_table, n_boot=config.metrics.bootstrap, seed=config.metrics.seed,
                               confidence=config.metrics.confidence)
    return Study(features_table, bins_table, shift, metrics)
