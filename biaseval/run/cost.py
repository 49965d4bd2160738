"""What a run cost: the plan's estimate when it started, and what the providers billed, from the rows
(``run.json``'s ``cost``).

The estimate (``planned``) is the cost guard's (``biaseval.run.estimate``) for the texts the run set
out to send. The actual cost (``billed``) counts each distinct text this run sent once per system
(the same sentence in two items was sent once), with the units its row records: the characters the
provider billed (``billed_chars``: DeepL's ``billed_characters``, Azure's ``sourceCharacters``, the
source's code points for Google and Amazon, and for a backend that records none the source's
characters where it answered) and the tokens of an LLM (``input_tokens`` /
``output_tokens``, including the replies that were answered but split and sent again). A request
answered with an error status (a throttle, a 5xx, a 4xx) is counted as not billed: the providers
charge for the requests they process (docs/monitoring.md, "Cost"); ``sent_chars`` counts the characters of every attempt, failed ones included,
as the bound where a provider bills a request the client gave up on (a timeout). Prices are the
system's ``price_per_million_*``; a system without one costs None.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.config import RunConfig
from biaseval.run.estimate import planned_tokens, token_cost
from biaseval.run.plan import Prepared, shards_of
from biaseval.run.rundir import RunDir, system_folder
from biaseval.run.translation_store import KEY
from biaseval.translate.base import TokenEstimate

ROW_COLUMNS = ["system", *KEY, "translation", "rejected", "cached", "attempts", "billed_chars", "input_tokens",
               "output_tokens"]


def planned(prepared: Prepared) -> dict:
    """The plan's estimate per live system (as ``biaseval plan`` computes it: characters to send at
    ``price_per_million_chars``, an LLM's expected tokens at its token prices), for run.json. Only
    what the cost needs: the request count (``plan``'s) would cost a pass over every send task."""
    systems = {}
    shards = shards_of(prepared)
    for name, plan in prepared.live.items():
        cfg = prepared.config.systems[name]
        cost = plan.chars / 1e6 * cfg.price_per_million_chars if cfg.price_per_million_chars is not None else None
        tokens = planned_tokens(prepared, plan, [s for s in shards if s.system == name])
        if tokens is not None:
            cost = token_cost(tokens, cfg.price_per_million_input_tokens, cfg.price_per_million_output_tokens, cost)
        systems[name] = {"texts": plan.sends, "chars": plan.chars, "input_tokens": tokens.input if tokens else None,
                         "output_tokens": tokens.output if tokens else None, "cost": cost}
    return {"systems": systems, "total": _total(systems)}


ROWS_AT_ONCE = 100_000  # rows read together (by shard_size): reduced to a few numbers before the next group


def billed(run: RunDir, config: RunConfig) -> dict:
    """What this run's rows say was billed, per live system, and its cost at the configured prices.
    A system's shards are read a group at a time, each row cut down to a hash of its text's key and
    its units and summed at once: what is kept between groups is the sums and the keys already
    counted (8 bytes per distinct text), so memory stays small however many items the run has."""
    systems = {}
    at_once = max(1, ROWS_AT_ONCE // config.sweep.shard_size)
    for name, cfg in config.systems.items():
        shards = run.shard_files(system_folder(name))
        tally = Tally()
        for k in range(0, len(shards), at_once):
            tally.add(_sent_texts(run.read_shards(shards[k:k + at_once], columns=ROW_COLUMNS)))
        _add(systems, name, cfg, tally)
    return {"systems": systems, "total": _total(systems)}


def billed_from_rows(rows: pl.DataFrame, config: RunConfig) -> dict:
    """``billed`` of rows in hand (any systems)."""
    systems = {}
    for name, cfg in config.systems.items():
        tally = Tally()
        tally.add(_sent_texts(rows.filter(pl.col("system") == name)))
        _add(systems, name, cfg, tally)
    return {"systems": systems, "total": _total(systems)}


class Tally:
    """Sums of the units of distinct texts, given rows in parts: a text counts once, with the units of
    its first row (in the order the parts come). Texts are told apart by a 64-bit hash of their key:
    two texts colliding would count once (odds about 3e-8 for a million texts)."""

    SUMS = ("billed_chars", "input_tokens", "output_tokens", "sent_chars", "resent_texts")

    def __init__(self) -> None:
        self.seen = np.zeros(0, np.uint64)  # keys counted so far, sorted
        self.texts = 0
        self.sums = dict.fromkeys(self.SUMS, 0)

    def add(self, sent_texts: pl.DataFrame) -> None:
        first = sent_texts.unique("key", keep="first", maintain_order=True)
        keys = first["key"].to_numpy()
        order = np.argsort(keys)
        ordered = keys[order]  # looked up in order: a sorted search walks the counted keys once
        at = np.minimum(np.searchsorted(self.seen, ordered), max(len(self.seen) - 1, 0))
        new = np.empty(len(keys), dtype=bool)
        new[order] = ordered != self.seen[at] if len(self.seen) else True
        sums = first.filter(pl.Series(new)).select(
            pl.len().alias("texts"), *[pl.col(c).sum() for c in self.SUMS[:-1]], pl.col("resent").sum().alias("resent_texts"),
        ).row(0, named=True)
        self.texts += sums["texts"]
        for name in self.SUMS:
            self.sums[name] += sums[name] or 0
        # two sorted runs: the stable sort (a merge of runs) is linear
        self.seen = np.sort(np.concatenate([self.seen, ordered[new[order]]]), kind="stable")


def _sent_texts(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows this run sent (not cached, at least one request), each reduced to its key's hash and
    its units."""
    return rows.filter(~pl.col("cached").cast(pl.Boolean) & (pl.col("attempts").cast(pl.Int64) > 0)).select(
        pl.struct(KEY).hash(seed=0).alias("key"),
        _billed_chars().alias("billed_chars"),
        pl.col("input_tokens").cast(pl.Int64),
        pl.col("output_tokens").cast(pl.Int64),
        (pl.col("attempts").cast(pl.Int64) * pl.col("source").str.len_chars()).alias("sent_chars"),
        (pl.col("attempts").cast(pl.Int64) > 1).alias("resent"),
    )


def _add(systems: dict, name: str, cfg, tally: Tally) -> None:
    """One system's entry, unless it sent nothing."""
    if not tally.texts:
        return
    sums = tally.sums
    chars, tokens = sums["billed_chars"], TokenEstimate(sums["input_tokens"], sums["output_tokens"], 0)
    price = cfg.price_per_million_chars
    cost = token_cost(tokens, cfg.price_per_million_input_tokens, cfg.price_per_million_output_tokens,
                      chars / 1e6 * price if price is not None else None)
    systems[name] = {"texts": tally.texts, "billed_chars": chars, "input_tokens": tokens.input,
                     "output_tokens": tokens.output, "sent_chars": sums["sent_chars"],
                     "resent_texts": sums["resent_texts"], "cost": cost}


def _billed_chars() -> pl.Expr:
    """A row's billed characters: as recorded, else (a backend that reports none, and no tokens either)
    its source's characters where the provider answered, 0 where the request failed."""
    answered = pl.col("translation").is_not_null() | pl.col("rejected").is_not_null()
    no_tokens = pl.col("input_tokens").is_null() & pl.col("output_tokens").is_null()
    return (pl.when(pl.col("billed_chars").is_not_null()).then(pl.col("billed_chars").cast(pl.Int64))
            .when(answered & no_tokens).then(pl.col("source").str.len_chars().cast(pl.Int64))
            .otherwise(0))


def _total(systems: dict) -> float | None:
    costs = [s["cost"] for s in systems.values() if s["cost"] is not None]
    return sum(costs) if costs else None


def cost_lines(cost: dict | None) -> list[tuple[str, str, str, str]]:
    """(system, units billed, actual cost, estimated cost) per system of run.json's ``cost``, then the total."""
    if not cost:
        return []
    actual, plan = cost.get("billed") or {"systems": {}}, cost.get("planned") or {"systems": {}}
    names = sorted(set(actual["systems"]) | set(plan["systems"]))
    if not names:  # recorded outputs only: nothing sent, nothing billed
        return []
    rows = []
    for name in names:
        a, p = actual["systems"].get(name, {}), plan["systems"].get(name, {})
        rows.append((name, units(a), money(a.get("cost")), money(p.get("cost"))))
    rows.append(("total", "", money(actual.get("total")), money(plan.get("total"))))
    return rows


def units(billed_row: dict) -> str:
    parts = []
    if billed_row.get("billed_chars"):
        parts.append(f"{billed_row['billed_chars']:,} characters")
    if billed_row.get("input_tokens") or billed_row.get("output_tokens"):
        parts.append(f"{billed_row.get('input_tokens') or 0:,} input + {billed_row.get('output_tokens') or 0:,} "
                     f"output tokens")
    if billed_row.get("resent_texts"):
        parts.append(f"{billed_row['resent_texts']:,} texts sent more than once")
    return "; ".join(parts) or "—"


def money(value: float | None) -> str:
    return "—" if value is None else f"{value:,.4f}"
