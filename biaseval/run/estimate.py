"""The cost guard: what a sweep would send to each system, after the translation store, its price
(per character, or per token for LLMs), and how long the system's quota (requests/s, characters/min,
tokens/min) makes it take — for sizing a cluster
before paying."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from biaseval.run.plan import (
    LivePlan,
    Prepared,
    Shard,
    backend_of,
    cache_for,
    plan_live,
    sent_items,
    shards_of,
)
from biaseval.run.translation_store import KEY
from biaseval.translate.base import TokenEstimate


@dataclass(frozen=True)
class SystemEstimate:
    system: str
    backend: str
    items: int
    unique: int | None  # distinct texts (live systems)
    cached: int | None
    to_send: int | None
    chars: int
    cost: float | None  # in the currency of price_per_million_chars
    budget: int | None
    requests: int | None = None  # provider requests the sweep makes when none fails (retries add to it)
    quota_s: float | None = None  # the time its rate limits imply, at best
    bound_by: str | None = None  # which limit sets that time: "requests/s", "chars/min" or "tokens/min"
    tokens: TokenEstimate | None = None  # LLMs: prompt tokens, expected reply tokens, and the max_tokens bound

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.chars > self.budget


def estimate(prepared: Prepared, *, refresh: bool = False) -> list[SystemEstimate]:
    config = prepared.config
    live = plan_live(prepared, cache_for(config, prepared.config_dir), refresh=refresh, run_id=None)
    shards = shards_of(prepared)
    out = []
    for system, cfg in config.systems.items():
        items = prepared.size_of(system)
        plan = live.get(system)
        chars = plan.chars if plan else 0
        price = cfg.price_per_million_chars
        requests = quota = bound = tokens = None
        if plan:
            mine = [s for s in shards if s.system == system]
            requests = planned_requests(prepared, plan, mine)
            tokens = planned_tokens(prepared, plan, mine)
            quota, bound = quota_time(requests, chars, cfg.limits.requests_per_s, cfg.limits.chars_per_min,
                                      tokens.quota if tokens else 0, cfg.limits.tokens_per_min)
        cost = chars / 1e6 * price if price is not None else None
        if tokens is not None:
            cost = token_cost(tokens, cfg.price_per_million_input_tokens, cfg.price_per_million_output_tokens, cost)
        out.append(SystemEstimate(
            system, cfg.backend, items,
            plan.unique if plan else None, plan.cached if plan else None, plan.sends if plan else None,
            chars, cost, cfg.max_chars, requests, quota, bound, tokens,
        ))
    return out


def send_tasks(prepared: Prepared, plan: LivePlan, shards: list[Shard]):
    """The texts of each send task a live system's sweep runs, as the sweep cuts them: each shard's
    texts to send in tasks of at most ``sweep.texts_per_task`` (in the order of their keys)."""
    per_task = prepared.config.sweep.texts_per_task
    for shard in shards:
        keys = plan.send.get((shard.suite, shard.index))
        if keys is None:
            continue
        items = sent_items(prepared.suites[shard.suite].slice(shard.start, shard.stop),
                           prepared.config.systems[shard.system])
        for start in range(0, len(keys), per_task):
            yield task_texts(items, plan.keys[(shard.suite, shard.index)], keys[start:start + per_task])


def planned_requests(prepared: Prepared, plan: LivePlan, shards: list[Shard]) -> int:
    """The requests a live system's sweep sends when none fails, counted the way it sends them: per
    send task (``send_tasks``), its texts packed per language pair (``TextTranslator.requests_for_task``)."""
    if not shards:
        return 0
    cfg = prepared.config.systems[shards[0].system]
    backend = backend_of(cfg)
    options = backend.Options.model_validate(cfg.options)
    return sum(backend.requests_for_task(options, texts) for texts in send_tasks(prepared, plan, shards))


def planned_tokens(prepared: Prepared, plan: LivePlan, shards: list[Shard]) -> TokenEstimate | None:
    """The tokens a system billed in tokens (an LLM) is expected to use, its requests counted as
    ``planned_requests`` counts them (``TextTranslator.tokens_for_task``); None for other backends."""
    if not shards:
        return None
    cfg = prepared.config.systems[shards[0].system]
    backend = backend_of(cfg)
    options = backend.Options.model_validate(cfg.options)
    if backend.tokens_per_batch(options, ["x"], "en", "en") is None:
        return None
    total = TokenEstimate(0, 0, 0)
    for texts in send_tasks(prepared, plan, shards):
        total = total + (backend.tokens_for_task(options, texts) or TokenEstimate(0, 0, 0))
    return total


def token_cost(tokens: TokenEstimate, input_price: float | None, output_price: float | None,
               other: float | None = None) -> float | None:
    """The cost of ``tokens`` (prompt tokens, and the replies' expected tokens) at prices per million,
    added to ``other`` (a price per character); None when no price is set."""
    parts = [tokens.input / 1e6 * input_price if input_price is not None else None,
             tokens.output / 1e6 * output_price if output_price is not None else None, other]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def task_texts(items: pl.DataFrame, item_keys: np.ndarray, keys: np.ndarray) -> pl.DataFrame:
    """The texts one send task translates, as the worker picks them: the shard's items whose key it
    sends, each distinct text once, in item order."""
    texts = items.select(KEY).with_columns(pl.Series("key_hash", item_keys))
    return texts.filter(pl.col("key_hash").is_in(pl.Series(keys).implode())).unique("key_hash", maintain_order=True)


def quota_time(requests: int, chars: int, requests_per_s: float | None,
               chars_per_min: float | None, tokens: int = 0,
               tokens_per_min: float | None = None) -> tuple[float | None, str | None]:
    """Seconds the rate limits imply for this work, and which limit binds (None: no limit set)."""
    times = {}
    if requests_per_s:
        # the limiter never lets more than the limit into any 1-second window: a fractional rate above
        # 1 is rounded down (2.5/s sends 2 in each second), so the time is planned at that rate
        rate = math.floor(requests_per_s) if requests_per_s > 1 else requests_per_s
        times["requests/s"] = requests / rate
    if chars_per_min:
        times["chars/min"] = chars / chars_per_min * 60
    if tokens_per_min:  # the tokens the limiter counts: prompt and max_tokens
        times["tokens/min"] = tokens / tokens_per_min * 60
    if not times:
        return None, None
    bound = max(times, key=times.get)
    return times[bound], bound


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "no quota set"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def format_estimates(estimates: list[SystemEstimate]) -> str:
    head = ("system", "backend", "items", "distinct texts", "in store", "texts to send", "requests", "characters",
            "est. cost", "quota time", "budget")
    rows = []
    for e in estimates:
        def n(v):
            return "—" if v is None else f"{v:,}"
        budget = "—" if e.budget is None else (f"{e.budget:,} OVER" if e.over_budget else f"{e.budget:,} ok")
        quota = "—" if e.requests is None else duration(e.quota_s) + (f" ({e.bound_by})" if e.bound_by else "")
        rows.append((e.system, e.backend, n(e.items), n(e.unique), n(e.cached), n(e.to_send),
                     "—" if e.requests is None else f"≥{e.requests:,}", f"{e.chars:,}",
                     "—" if e.cost is None else f"{e.cost:,.2f}", quota, budget))
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows]]
    total = sum(e.cost or 0 for e in estimates)
    lines.append(f"total: {sum(e.items for e in estimates):,} items; {sum(e.to_send or 0 for e in estimates):,} texts "
                 f"to send; {sum(e.chars for e in estimates):,} characters to send")
    lines.append(f"total estimated cost: {total:,.2f} (systems without price_per_million_chars, or per million "
                 f"input/output tokens, count 0)")
    for e in estimates:
        if e.tokens is not None:
            lines.append(f"{e.system}: tokens {e.tokens.input:,} in, about {e.tokens.output:,} out (replies as long as "
                         f"their sources; at most {e.tokens.limit:,} by max_tokens), estimated as UTF-8 bytes / 3")
    slowest = max((e for e in estimates if e.quota_s is not None), key=lambda e: e.quota_s, default=None)
    if slowest is not None:
        lines.append(f"quota time: systems run in parallel, so the sweep takes at least {duration(slowest.quota_s)} "
                     f"({slowest.system}, bound by its {slowest.bound_by}); more actors do not beat a quota")
    return "\n".join(lines)


def stratum_name(tgt: str, subset: str) -> str:
    """A target × subset stratum as people read it: the subset alone where its name starts with the
    target (``es/her``), else both (``hi pro``)."""
    return subset if subset.startswith(f"{tgt}/") or subset == tgt else f"{tgt} {subset}"


def format_samples(prepared: Prepared) -> str:
    """The monitor's sample of each suite (``monitor.sample``), for ``biaseval plan``: its size beside
    the suite's and the change it detects; its items per target and subset beside the suite's; the
    occupations it covers, their mean female share and its share of pro-stereotypical items (of
    those marked pro or anti), each beside the suite's (``suites.sample.profile``)."""
    from biaseval.run.plan import group_columns
    from biaseval.suites.power import detectable_shift, expected_tests, level_per_test

    m = prepared.config.monitor
    tests = expected_tests([group_columns(data) for data in prepared.suites.values()],
                           len(m.monitored(prepared.config.systems)))
    level = level_per_test(m.alpha, tests, m.correction)
    lines = []
    for name, data in prepared.suites.items():
        full = getattr(data, "full_size", data.size)
        shift = detectable_shift(data.size, level, m.power, m.churn)
        mdc = max(shift, m.threshold) if shift == shift else shift
        lines.append(f"monitor sample: {name}: {data.size:,} of {full:,} items (seed {m.sample.seed}); detects a "
                     f"change of {100 * mdc:.1f} points (McNemar's exact test at {level:.3g}: alpha {m.alpha:g} over "
                     f"at most {tests:,} tests; power {m.power:g}, churn {m.churn:g}; never below the threshold "
                     f"{m.threshold:g}; drift.md gives the run's own)")
        profile = getattr(data, "profile", None)
        if profile is None:
            continue
        strata = ", ".join(f"{stratum_name(s['tgt_lang'], s['subset'])} {s['items']:,} of {s['population']:,}"
                           for s in profile["strata"])
        lines.append(f"  strata (target, subset: sample of suite): {strata}")
        sample, whole = profile["sample"], profile["population"]
        parts = [f"occupations: {sample['occupations']:,} of {whole['occupations']:,}"] if whole["occupations"] else []
        if whole["female_share"] is not None:
            parts.append(f"mean female share {sample['female_share']:.1f}% (suite {whole['female_share']:.1f}%)")
        if whole["pro"] is not None:
            parts.append(f"pro-stereotypical {100 * sample['pro']:.1f}% (suite {100 * whole['pro']:.1f}%)")
        if parts:
            lines.append("  " + "; ".join(parts))
    return "\n".join(lines)
