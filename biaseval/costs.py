"""The cost guard: what a sweep would send to each system, after the translation store, and its price."""

from __future__ import annotations

from dataclasses import dataclass

from .sweep import Prepared, cache_for, plan_live


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

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.chars > self.budget


def estimate(prepared: Prepared, *, refresh: bool = False) -> list[SystemEstimate]:
    config = prepared.config
    live = plan_live(prepared, cache_for(config), refresh=refresh, run_id=None)
    out = []
    for system, cfg in config.systems.items():
        items = prepared.size_of(system)
        plan = live.get(system)
        chars = plan.chars if plan else 0
        price = cfg.price_per_million_chars
        out.append(SystemEstimate(
            system, cfg.backend, items,
            plan.unique if plan else None, plan.cached if plan else None, plan.sends if plan else None,
            chars, chars / 1e6 * price if price is not None else None, cfg.max_chars,
        ))
    return out


def format_estimates(estimates: list[SystemEstimate]) -> str:
    head = ("system", "backend", "items", "distinct texts", "in store", "to send", "characters", "est. cost", "budget")
    rows = []
    for e in estimates:
        def n(v):
            return "—" if v is None else f"{v:,}"
        budget = "—" if e.budget is None else (f"{e.budget:,} OVER" if e.over_budget else f"{e.budget:,} ok")
        rows.append((e.system, e.backend, n(e.items), n(e.unique), n(e.cached), n(e.to_send), f"{e.chars:,}",
                     "—" if e.cost is None else f"{e.cost:,.2f}", budget))
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows]]
    total = sum(e.cost or 0 for e in estimates)
    lines.append(f"items × systems: {sum(e.items for e in estimates):,} rows; characters to send: "
                 f"{sum(e.chars for e in estimates):,}")
    lines.append(f"total estimated cost: {total:,.2f} (systems without price_per_million_chars count 0)")
    return "\n".join(lines)
