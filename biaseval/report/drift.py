"""A monitoring run's own drift, for report.html (pure functions over what the monitor wrote in the
run directory: drift.json and drift/flips.parquet): the verdict per system, the paired test and the
detectable change per suite, the significant changes with their intervals and raw and adjusted p,
and the flipped items with both translations."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from biaseval.report import numbers
from biaseval.report.tables import metric_name, p_text, value_cell, when

CORRECTIONS = {"bh": "Benjamini–Hochberg (false discovery rate)", "holm": "Holm (family-wise error)",
               "none": "no correction"}
FLIPS_SHOWN = 20


def read_drift(run_root: Path) -> tuple[dict, pl.DataFrame | None] | None:
    """drift.json and the flips of a monitoring run; None for a run the monitor did not make."""
    path = run_root / "drift.json"
    if not path.is_file():
        return None
    flips = run_root / "drift" / "flips.parquet"
    return json.loads(path.read_text(encoding="utf-8")), pl.read_parquet(flips) if flips.is_file() else None


def verdict(summary: dict) -> dict:
    systems = [{"system": s["system"], "status": s["status"], "message": s.get("message") or "",
                "baseline": s.get("baseline") or "", "changes": len(s.get("significant_changes") or [])}
               for s in summary["systems"]]
    stats = summary.get("statistics") or {}
    return {"alarm": summary["alarm"], "created_at": when(summary["created_at"]), "systems": systems,
            "tests": stats.get("tests"), "correction": CORRECTIONS.get(stats.get("correction"), "—"),
            "alpha": stats.get("alpha"), "power": stats.get("power")}


def suite_rows(summary: dict, suites: dict | None = None) -> list[dict]:
    """Per system and suite: the items compared (and the suite's size where the run took a sample:
    ``suites`` is run.json's), flips, McNemar's raw and adjusted p, and the detectable change."""
    rows = []
    for s in summary["systems"]:
        for i in s.get("suites") or []:
            detectable = i.get("detectable_change")
            info = (suites or {}).get(i["suite"], {})
            whole = info.get("population", info.get("size"))
            items = f"{i['items']:,}" + (f" (sample of {whole:,})" if whole and whole > info.get("size", whole) else "")
            rows.append({"system": s["system"], "suite": i["suite"], "n_items": items,
                         "flipped": f"{i['flipped']:,} ({numbers.share_text(i['flipped_share'])})",
                         "better_worse": f"{i['better']} / {i['worse']}", "p": p_text(i["mcnemar_p"]),
                         "p_adjusted": p_text(i.get("mcnemar_p_adjusted")),
                         "detectable": "—" if detectable is None or detectable != detectable
                         else numbers.points_text(detectable).lstrip("+"),
                         "significant": bool(i.get("significant"))})
    return rows


def change_rows(summary: dict) -> list[dict]:
    """Every significant change of the run, largest first, at its metric's scale."""
    rows = []
    for s in summary["systems"]:
        for c in s.get("significant_changes") or []:
            rows.append({"system": s["system"], "suite": c["suite"], "subset": c["subset"],
                         "metric": metric_name(c["metric"]),
                         "baseline": value_cell(c["baseline_value"], None, None, c["metric"]),
                         "now": value_cell(c["value"], None, None, c["metric"]),
                         "change": numbers.change(c["change"], c["metric"]),
                         "interval": numbers.change_interval(c.get("change_low"), c.get("change_high"), c["metric"]), "test": c.get("test") or "", "p": p_text(c.get("p")),
                         "p_adjusted": p_text(c.get("p_adjusted")), "size": abs(c["change"])})
    return sorted(rows, key=lambda r: -r["size"])



def flip_rows(flips: pl.DataFrame | None, limit: int = FLIPS_SHOWN) -> tuple[list[dict], int]:
    """The first ``limit`` flipped items (system, suite, item order) with both labels and texts."""
    if flips is None or flips.height == 0:
        return [], 0
    ordered = flips.sort("system", "suite", "item_id")
    rows = [{"system": r["system"], "suite": r["suite"], "item_id": r["item_id"], "source": r["source"],
             "label_base": r["label_base"] or "—", "label": r["label"] or "—",
             "before": r["translation_base"] or "", "after": r["translation"] or ""}
            for r in ordered.head(limit).iter_rows(named=True)]
    return rows, flips.height
