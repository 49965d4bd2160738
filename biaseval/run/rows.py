"""The rows of a shard file: one per item × system, with the item's columns, the translation (or
the error), and where it came from (``TRANSLATION_SCHEMA``). Recorded systems' rows are built from
their replayed outputs (``translation_table``), live systems' rows from the translation store
(``live_table``).
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import polars as pl
import pyarrow as pa

from biaseval.run.translation_store import KEY, STORE_SCHEMA
from biaseval.translate.base import DETAIL_COLUMNS

SHARD_ERRORS = b"biaseval.errors"

ITEM_COLUMNS = ["item_id", "suite", "subset", "src_lang", "tgt_lang", "source", "gold", "occupation",
                "female_share", "stereotype"]

TRANSLATION_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("subset", pa.string()),
        ("system", pa.string()),
        ("system_version", pa.string()),
        ("provider", pa.string()),
        ("model", pa.string()),  # as reported by the provider, where it reports one
        ("src_lang", pa.string()),
        ("tgt_lang", pa.string()),
        ("source", pa.string()),
        ("gold", pa.string()),  # copied from the item, so a shard scores without a join
        ("occupation", pa.string()),
        ("female_share", pa.float64()),
        ("stereotype", pa.string()),
        ("translation", pa.string()),  # null when the text failed; never an empty stand-in
        ("error", pa.string()),
        ("attempts", pa.int32()),  # requests it took (0: replayed or cached)
        ("cached", pa.bool_()),  # translated by an earlier run, taken from the store
        ("run_id", pa.string()),
        ("translated_at", pa.timestamp("us", tz="UTC")),
        *[STORE_SCHEMA.field(name) for name in DETAIL_COLUMNS],  # what the provider said about the text
    ]
)


def unfinished(table: pa.Table) -> int:
    """Rows to try again: no translation and no reply that is final (a rejected one, such as a refusal)."""
    frame = pl.from_arrow(table.select(["translation", "rejected"]))
    return frame.filter(pl.col("translation").is_null() & pl.col("rejected").is_null()).height


def _timestamp(value: datetime) -> pl.Expr:
    return pl.lit(value).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC"))


def translation_table(items: pl.DataFrame, translations: list[str | None], system: str, version: str,
                      run_id: str, *, provider: str = "recorded", errors: list[str | None] | None = None) -> pa.Table:
    """Rows of an item-keyed (recorded) system: replayed, so no attempts, no provider model. A row
    without a translation carries its ``errors`` entry (a recorded system has nothing to retry, so
    such rows do not make the shard pending)."""
    frame = items.select(ITEM_COLUMNS).with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.lit(provider).alias("provider"),
        pl.lit(None, dtype=pl.String).alias("model"),
        pl.Series("translation", translations, dtype=pl.String),
        pl.Series("error", errors if errors is not None else [None] * items.height, dtype=pl.String),
        pl.lit(0, dtype=pl.Int32).alias("attempts"),
        pl.lit(False).alias("cached"),
        pl.lit(run_id).alias("run_id"),
        _timestamp(datetime.now(timezone.utc)).alias("translated_at"),
        *[pl.lit(None).alias(name) for name in DETAIL_COLUMNS],
    )
    return frame.to_arrow().select(TRANSLATION_SCHEMA.names).cast(TRANSLATION_SCHEMA)


def live_table(items: pl.DataFrame, keys: np.ndarray, found: pl.DataFrame, failed: pl.DataFrame, system: str,
               version: str, run_id: str) -> pa.Table:
    """Rows of a live system's items from the store: the translation (or the reply that is final
    without being one) where there is one, else the latest recorded failure. Joined on the 64-bit key, then checked text by text (a key collision
    could never hand one text another's translation)."""
    base = items.select(ITEM_COLUMNS).with_columns(pl.Series("key_hash", keys)).with_row_index("_order")
    same = [pl.col(c) == pl.col(f"{c}_store") for c in KEY]
    stored = [c for c in STORE_SCHEMA.names if c not in ("key_hash", *KEY)]

    def attach(rows: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
        joined = base.join(rows.select("key_hash", *[pl.col(c).alias(f"{c}_store") for c in KEY], *columns),
                           on="key_hash", how="inner")
        return joined.filter(pl.all_horizontal(same)).drop([f"{c}_store" for c in KEY])

    ok = attach(found, stored)
    bad = base.join(ok.select("_order"), on="_order", how="anti")
    bad = bad.join(attach(failed, [c for c in stored if c != "translation"]).select("_order", *[c for c in stored if c != "translation"]),
                   on="_order", how="left")
    frame = pl.concat([ok, bad], how="diagonal_relaxed").sort("_order").with_columns(
        pl.lit(system).alias("system"),
        pl.lit(version).alias("system_version"),
        pl.col("error").fill_null(pl.when(pl.col("translation").is_null()).then(pl.lit("not translated"))),
        pl.col("attempts").fill_null(0).cast(pl.Int32),
        (pl.col("run_id").is_not_null() & (pl.col("run_id") != run_id)).alias("cached"),
        pl.lit(run_id).alias("run_id"),
    )
    return frame.select(TRANSLATION_SCHEMA.names).to_arrow().cast(TRANSLATION_SCHEMA)
