"""Events of a monitoring run besides drift: a provider that reports another model than at the
baseline (``model_change``), and a system measured again after an outage (``recovery``).

What a provider reports is on every translated row (``model``, and an LLM's ``fingerprint``: see
docs/providers/). A model change is the set of reported models differing from the baseline's — a
model swapped under the same name, a custom model that fell back to the general one — whether or
not any metric moved. The fingerprint (OpenAI's ``system_fingerprint``) changes with the serving
configuration, often and without a new model, so it is reported beside a change but raises none.
A baseline that recorded no model (a provider that reports none, such as Amazon Translate, or a run
made before rows recorded one) gives nothing to compare with, so no event.
"""

from __future__ import annotations

import polars as pl

from biaseval.run.rundir import RunDir, system_folder


def reported_models(run: RunDir, system: str) -> dict:
    """The distinct ``model`` and ``fingerprint`` values the provider reported on the system's
    translated rows of ``run`` (sorted; empty where it reported none)."""
    shards = run.shard_files(system_folder(system))
    if not shards:
        return {"model": [], "fingerprint": []}
    rows = run.read_shards(shards, columns=["model", "fingerprint", "translation"]).filter(
        pl.col("translation").is_not_null())
    return {c: sorted(rows[c].drop_nulls().unique().to_list()) for c in ("model", "fingerprint")}


def model_change(now: dict, before: dict) -> dict | None:
    """What changed between two ``reported_models``, or None when the models are the same (or the
    baseline reported none)."""
    if not before["model"] or now["model"] == before["model"]:
        return None
    return {"before": before["model"], "after": now["model"],
            "fingerprint_before": before["fingerprint"], "fingerprint_after": now["fingerprint"]}


def describe(change: dict | None, recovered: dict | None) -> str:
    """The events in a line, for a system's message (drift.md, the report, the notification's text)."""
    parts = []
    if recovered:
        parts.append(f"recovered: unavailable in the {recovered['runs']} run(s) since {recovered['since']} "
                     f"({recovered['error']})")
    if change:
        parts.append(f"model changed: {', '.join(change['before'])} -> {', '.join(change['after']) or 'none reported'}")
    return "; ".join(parts)


def recovery(status: pl.DataFrame | None, system: str) -> dict | None:
    """When the system's latest status rows (the runs before this one) say it was unavailable: since
    which run, and the error then; None when it was measured last time (or never monitored)."""
    if status is None:
        return None
    mine = status.filter(pl.col("system") == system).sort("created_at", descending=True)
    down = []
    for row in mine.iter_rows(named=True):
        if row["status"] != "unavailable":
            break
        down.append(row)
    if not down:
        return None
    return {"since": down[-1]["run_id"], "runs": len(down), "error": down[0]["message"]}
