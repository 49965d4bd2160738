"""What report.html shows, as plain data: pure functions from a run's frames (metrics, the labels'
summaries, the embedding study, the monitoring history) to rows of strings, numbers and ``Value``s.

No markup and no file is read here: the renderer (html.py) loads the run and draws the figures, the
templates (templates/) lay the rows out and escape them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from biaseval.report.adjectives import adjective_table
from biaseval.report.control import control_tables
from biaseval.report.embedding_tables import SHIFT_GENDERS, shift_table
from biaseval.report.markdown import (
    CORRELATIONS,
    LANGUAGE_SUBSET,
    PER_OCCUPATION,
    UNKNOWN_REASONS,
    WINOMT_HEADLINE,
    correlation_table,
    winomt_language_table,
)
from biaseval.metrics.paired import split_pair_subset
from biaseval.report import numbers
from biaseval.report import mittens
from biaseval.report.mittens import MARKER as MITTENS_MARKER

ALPHA = 0.05  # significance level for the paired tests' marks
PAIRWISE = pl.col("subset").str.starts_with("vs/")
PAIR_METRICS = ("mcnemar_p", "diff_correct")
MAX_WORD_ROWS = 1000
MAX_DRIFT_ROWS = 60
HISTORY_COLUMNS = {"run_id": pl.String, "created_at": pl.Datetime("us", "UTC"), "system": pl.String, "suite": pl.String,
                   "subset": pl.String, "metric": pl.String, "value": pl.Float64, "ci_low": pl.Float64,
                   "ci_high": pl.Float64, "change": pl.Float64, "change_low": pl.Float64, "change_high": pl.Float64,
                   "mcnemar_p": pl.Float64, "test": pl.String, "p": pl.Float64, "p_adjusted": pl.Float64,
                   "significant": pl.Boolean, "status": pl.String}


@dataclass(frozen=True)
class Value:
    """A metric value as shown: its text and its interval (None without one); ``nan`` when it is not a
    number (undefined, e.g. a correlation of a constant)."""

    text: str
    ci: str | None = None
    nan: bool = False


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def value_cell(value, low, high, metric: str) -> Value | None:
    """A metric value with its CI at the metric's scale, without the unit (the column's header names
    it: ``metric_name``); None where there is no value."""
    if value is None:
        return None
    if math.isnan(value):
        return Value("NaN", nan=True)
    return Value(numbers.number(value, metric), numbers.interval(low, high, metric))


def metric_name(metric: str) -> str:
    """A metric's name in a table header cell, with its unit: "acc (%)", "delta_g (pp)"."""
    return numbers.header(metric, metric)


def unit_cell(value, low, high, metric: str) -> Value | None:
    """``value_cell`` with the unit on the value, for a column holding metrics of several kinds."""
    cell = value_cell(value, low, high, metric)
    return cell if cell is None or cell.nan else Value(numbers.text(value, metric), cell.ci)


def small(x) -> str:
    """A feature value: three decimals, or three significant digits for values too small for that."""
    return numbers.plain(None if _missing(x) else x)


def p_text(p) -> str:
    if _missing(p):
        return "—"
    shown = numbers.p_value(p)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


# --- the run -----------------------------------------------------------------------------------

def system_rows(info: dict) -> list[dict]:
    return [{"name": name, "backend": s.get("backend"), "version": s.get("version") or "no version given",
             "suites": ", ".join(s.get("suites", []))} for name, s in info.get("systems", {}).items()]


def suite_rows(info: dict) -> list[dict]:
    return [{"name": name, "version": d.get("version"), "size": f"{d.get('size', 0):,}", "dataset": d.get("dataset"),
             "commit": d.get("commit"), "path": d.get("path"), "fingerprint": d.get("fingerprint")}
            for name, d in info.get("suites", {}).items()]


def signatures(metrics: pl.DataFrame) -> list[str]:
    """What the metric rows were computed from, one signature each."""
    if "signature" not in metrics.columns:
        return []
    return metrics.select("signature").drop_nulls().unique().sort("signature")["signature"].to_list()


def failure_rows(failures: pl.DataFrame | None) -> list[dict]:
    """Items without a translation per system and suite (``read_failures``), the error cut to 300 characters."""
    if failures is None:
        return []
    return [{"system": r["system"], "suite": r["suite"], "count": r["items"], "error": (r["error"] or "")[:300]}
            for r in failures.iter_rows(named=True)]


def control_rows(metrics: pl.DataFrame, systems: dict[str, dict]) -> list[dict]:
    """Gender control, a table per system asked for genders: a row per condition × suite × subset with
    the shares asked (control_acc), unread (control_unknown) and unasked (control_unasked)."""
    return [{"system": table.system, "rows": [
        {"system": r.system, "condition": r.condition or r.system, "requests": r.requests, "suite": r.suite,
         "subset": r.subset, "n": r.n, "cells": [
             value_cell(c.value, c.low, c.high, m) if (c := r.shares.get(m)) else None
             for m in ("control_acc", "control_unknown", "control_unasked")]}
        for r in table.rows]} for table in control_tables(metrics, systems)]


def suite_order(configured: list[str], present: list[str]) -> list[str]:
    """The suites with metrics: the config's order first, then any other in the order they come."""
    seen = set(present)
    order = [s for s in configured if s in seen]
    return order + [s for s in dict.fromkeys(present) if s not in order]


# --- a suite -----------------------------------------------------------------------------------

def metric_sets(part: pl.DataFrame) -> pl.DataFrame:
    """A suite's metric rows that are neither per occupation, gender shift nor paired comparisons."""
    return part.filter(~PER_OCCUPATION & ~PAIRWISE)


def suite_kinds(part: pl.DataFrame) -> set[str]:
    """What a suite's metrics allow to draw: "tgbi", "winomt", "winomt-languages", "proportions" (p_m/p_f
    per set), "occupations", "embedding", "mtgeneval" (its table in the paper's shape); or "mittens" or
    "gest" alone."""
    metrics = set(part["metric"].unique().to_list())
    if MITTENS_MARKER in metrics:  # MiTTenS: its own table (report/mittens.py), none of the others
        return {"mittens"}
    if "f_s" in metrics:  # GEST: its charts and table (report/gest.py), none of the others
        return {"gest"}
    sets = metric_sets(part)
    kinds = set()
    if "tgbi" in metrics:
        kinds.add("tgbi")
    if sets.filter((pl.col("subset") == "all") & (pl.col("metric") == "acc")).height:
        kinds.add("winomt")
    if "undecided" in metrics:  # MT-GenEval: its own table (report/mtgeneval.py)
        kinds.add("mtgeneval")
    elif sets.filter(LANGUAGE_SUBSET & (pl.col("metric") == "acc")).height:
        kinds.add("winomt-languages")
    if "tgbi" not in kinds and sets.filter(pl.col("metric").is_in(["p_m", "p_f"])).height:
        kinds.add("proportions")
    if part.filter(pl.col("subset").str.contains("/occupation/")).height or metrics & set(CORRELATIONS):
        kinds.add("occupations")
    if {"mean_intensity_src", "mean_intensity_tgt"} & metrics or part.filter(pl.col("subset").str.contains("/shift/")).height:
        kinds.add("embedding")
    return kinds


def mittens_rows(part: pl.DataFrame, suite: str, confidence: str = "95%") -> dict:
    """A MiTTenS suite's tables (report/mittens.py): Table 3 per system, accuracy per language, the
    weakest cells, and the note that says how to read them."""
    rows = mittens.table3_rows(part)
    unread = next((r["unread"]["label"] for r in rows if r["unread"]), "no pronoun / not read")
    return {"rows": rows, "languages": mittens.language_rows(part, suite), "unread_label": unread,
            "cells": mittens.weakest_cells(part, suite), "note": mittens.note(part, confidence), "figure": None}


def _pairs(rows: pl.DataFrame) -> dict[tuple[str, str], dict]:
    """(system, other) -> {"mcnemar_p": .., "diff_correct": .., "n": ..} from the paired comparisons over
    a whole suite (not those of its groups: ``paired.pair_subset``)."""
    pairs: dict[tuple[str, str], dict] = {}
    compared = rows.filter(PAIRWISE & pl.col("metric").is_in(PAIR_METRICS))
    systems = set(compared["system"].to_list())
    for r in compared.iter_rows(named=True):
        other, group = split_pair_subset(r["subset"], systems)
        if group is not None:
            continue
        cell = pairs.setdefault((r["system"], other), {})
        cell[r["metric"]] = r["value"]
        cell["n"] = r["n"]
    return pairs


def significance(metrics: pl.DataFrame, suite: str, alpha: float = ALPHA) -> dict[str, str]:
    """Systems of ``suite`` whose paired comparisons (rows system=A, subset="vs/B", metrics mcnemar_p
    and diff_correct) show them better ("best") or worse ("worst") than every other system at p < alpha."""
    pairs = _pairs(metrics.filter(pl.col("suite") == suite))
    systems = {a for a, _ in pairs} | {b for _, b in pairs}
    marks = {}
    for a in sorted(systems):
        others = [pairs.get((a, b)) for b in systems if b != a]
        if not others or any(o is None or "mcnemar_p" not in o or "diff_correct" not in o for o in others):
            continue
        significant = all(o["mcnemar_p"] is not None and o["mcnemar_p"] < alpha for o in others)
        if significant and all(o["diff_correct"] > 0 for o in others):
            marks[a] = "best"
        elif significant and all(o["diff_correct"] < 0 for o in others):
            marks[a] = "worst"
    return marks


def metric_rows(part: pl.DataFrame, systems: list[str]) -> list[dict]:
    """Wide: a row per subset × metric with n (a range where systems differ) and a value per system."""
    sets = metric_sets(part)
    cells = {(r["subset"], r["metric"], r["system"]): r for r in sets.iter_rows(named=True)}
    rows = []
    for subset, metric in sets.select("subset", "metric").unique(maintain_order=True).iter_rows():
        ns = {cells[(subset, metric, s)]["n"] for s in systems if (subset, metric, s) in cells}
        n = (numbers.count(next(iter(ns))) if len(ns) == 1 else f"{numbers.count(min(ns))}–{numbers.count(max(ns))}"
             if ns else "—")
        values = [value_cell(r["value"], r["ci_low"], r["ci_high"], metric) if (r := cells.get((subset, metric, s)))
                  else None for s in systems]
        rows.append({"subset": subset, "metric": metric_name(metric), "n": n, "cells": values})
    return rows


def pairwise_grid(part: pl.DataFrame, systems: list[str], alpha: float = ALPHA) -> dict | None:
    """Paired comparisons as a grid: ``names`` (rows and columns) and per row system a cell per column
    system (None on the diagonal and where the two were not compared); None without comparisons."""
    pairs = _pairs(part)
    if not pairs:
        return None
    names = [s for s in systems if any(a == s for a, _ in pairs)] + sorted({a for a, _ in pairs} - set(systems))
    rows = []
    for a in names:
        cells = []
        for b in names:
            c = pairs.get((a, b)) if a != b else None
            if c is None:
                cells.append(None)
                continue
            diff, p = c.get("diff_correct"), c.get("mcnemar_p")
            significant = not _missing(p) and p < alpha
            kind = ("sig-better" if diff > 0 else "sig-worse") if significant and diff else ""
            cells.append({"text": numbers.points_text(diff) if not _missing(diff) else "—", "p": p_text(p),
                          "n": c.get("n"), "significant": significant, "kind": kind})
        rows.append({"system": a, "cells": cells})
    return {"names": names, "rows": rows}


def language_rows(part: pl.DataFrame) -> list[dict]:
    """WinoMT per target language: Acc, ΔG, ΔS and the unknown share per language × system, and n."""
    return [{"language": r["language"], "system": r["system"], "n": r.get("n_acc"),
             "cells": [value_cell(r.get(f"value_{m}"), r.get(f"ci_low_{m}"), r.get(f"ci_high_{m}"), m)
                        for m in WINOMT_HEADLINE]}
            for r in winomt_language_table(part).iter_rows(named=True)]


def unknown_rows(reasons: pl.DataFrame, suite: str) -> list[dict]:
    """Outputs labelled unknown per target language × system, counted by reason (``read_reasons``)."""
    if reasons.height == 0:
        return []
    counts: dict[tuple[str, str], dict[str, int]] = {}
    unknown = (pl.col("suite") == suite) & (pl.col("label") == "unknown") & pl.col("reason").is_in(UNKNOWN_REASONS)
    for r in reasons.filter(unknown).iter_rows(named=True):
        counts.setdefault((r["tgt_lang"], r["system"]), {})[r["reason"]] = r["count"]
    return [{"language": lang, "system": system, "counts": [c.get(k, 0) for k in UNKNOWN_REASONS]}
            for (lang, system), c in sorted(counts.items())]


# --- occupations -------------------------------------------------------------------------------

def correlation_rows(part: pl.DataFrame) -> list[dict]:
    """Pearson r and Spearman ρ of p_f with the female share, per system × language."""
    def cell(r, m):
        return value_cell(r[f"value_{m}"], r[f"ci_low_{m}"], r[f"ci_high_{m}"], m) if f"value_{m}" in r else None
    return [{"system": r["system"], "language": r["subset"], "r": cell(r, "r_female_share"),
             "rho": cell(r, "rho_female_share"), "n": r.get("n_r_female_share", r.get("n_rho_female_share"))}
            for r in correlation_table(part).iter_rows(named=True)]


def female_shares(items: pl.LazyFrame | None, suite: str) -> dict[str, float]:
    """Occupation -> female share (percent, as in the lexicon) from the items, where they have them."""
    if items is None or not {"occupation", "female_share"} <= set(items.collect_schema().names()):
        return {}
    shares = (items.filter((pl.col("suite") == suite) & pl.col("occupation").is_not_null())
              .group_by("occupation").agg(pl.col("female_share").first()).collect())
    return {o: s for o, s in shares.iter_rows() if s is not None}


def occupation_rows(rates: pl.DataFrame, shares: dict[str, float], systems: list[str]) -> list[dict]:
    """One language's p_f per occupation (``occupation_rates``), a column per system, with the
    occupation's female share; ``systems`` are those present."""
    wide = rates.pivot(on="system", index="occupation", values="value", aggregate_function="first").sort("occupation")
    return [{"occupation": r["occupation"],
             "share": f"{shares[r['occupation']]:.1f}" if r["occupation"] in shares else "—",
             "cells": [numbers.share(r.get(s)) for s in systems]} for r in wide.iter_rows(named=True)]


# --- the embedding study -----------------------------------------------------------------------

def bin_tables(bins: pl.DataFrame) -> list[dict]:
    """embedding_bins.parquet of one suite: a table per side × language × system, each bin's range,
    words, share (with a bar's width in pixels) and examples."""
    tables = []
    for (side, language, system), rows in bins.group_by("side", "language", "system", maintain_order=True):
        lines = []
        for r in rows.iter_rows(named=True):
            share = 0.0 if _missing(r["share"]) else r["share"]
            lines.append({"feature": r["feature"], "bin": r["bin"], "range": f"[{small(r['lo'])}, {small(r['hi'])}]",
                          "count": r["count"], "bar": f"{max(0.0, min(share, 1.0)) * 80:.0f}",
                          "share": numbers.share_text(share), "share_all": numbers.share(r.get("share_all")),
                          "examples": r["examples"]})
        tables.append({"who": "source words" if side == "source" else f"translations by {system}",
                       "language": language,
                       "binning": f", {rows['binning'][0]} bins" if "binning" in rows.columns else "", "rows": lines})
    return tables


def shift_rows(shift: pl.DataFrame) -> list[dict]:
    """gender_shift.parquet of one suite: per system × language × source class, the share of its words
    translated to each grammatical gender."""
    return [{"system": r["system"], "language": r["tgt_lang"], "gender_class": r["gender_class"], "words": r["words"],
             "shares": [numbers.share(r.get(f"share_{g}")) for g in SHIFT_GENDERS]}
            for r in shift_table(shift).iter_rows(named=True)]


def word_rows(words: pl.DataFrame, limit: int = MAX_WORD_ROWS) -> list[dict]:
    """Each word, its translation and its direction before and after (the first ``limit``)."""
    def num(x):
        return f"{x:+.4f}" if not _missing(x) else "—"
    return [{"word": r.get("word"), "gender_class": r.get("gender_class"), "system": r.get("system"),
             "translation": r.get("translation"), "gender": r.get("tgt_gender"),
             "before": num(r.get("direction_src")), "after": num(r.get("direction_tgt"))}
            for r in words.head(limit).iter_rows(named=True)]


def sanity_rows(words: pl.DataFrame) -> list[dict]:
    """The embedding study's sanity figures per system and language pair."""
    from biaseval.metrics.embedding import sanity

    return [{"system": r["system"], "languages": f"{r['src_lang']} → {r['tgt_lang']}",
             "cos_src": f"{r['cos_src_fm']:.3f}", "cos_tgt": f"{r['cos_tgt_fm']:.3f}", "words": r["words"],
             "rose_f": numbers.share(r["share_rose_f"]), "rose_m": numbers.share(r["share_rose_m"])}
            for r in sanity(words).iter_rows(named=True)]


def missing_vectors(words: pl.DataFrame) -> list[str]:
    """A note per word or translation without a vector in its embedding model."""
    from biaseval.metrics.embedding import describe_missing, missing_words

    return [n for n in map(describe_missing, missing_words(words)) if n]


# --- drift over earlier runs -------------------------------------------------------------------

def history_frame(history: pl.DataFrame) -> pl.DataFrame:
    """The monitoring history with every column of HISTORY_COLUMNS (absent ones null, ``significant``
    false where unknown); an error when it lacks one of the columns it cannot do without."""
    missing = [c for c in ("run_id", "created_at", "system", "suite", "subset", "metric", "value") if c not in history.columns]
    if missing:
        raise ValueError(f"history: missing columns {', '.join(missing)}")
    extra = [pl.lit(None, dtype=t).alias(c) for c, t in HISTORY_COLUMNS.items() if c not in history.columns]
    frame = history.with_columns(extra) if extra else history
    return frame.with_columns(pl.col("significant").cast(pl.Boolean).fill_null(False))


def headline_panels(frame: pl.DataFrame) -> list[tuple[str, str]]:
    """The (subset, metric) pairs that sum a suite up, for trends: the TGBI index; WinoMT's Acc, ΔG and
    ΔS; p_f per set of OTSC-like suites; the embedding study's mean intensity and direction after
    translation."""
    pairs = list(frame.select("subset", "metric").unique(maintain_order=True).iter_rows())
    have = set(pairs)
    if any(m == "tgbi" for _, m in pairs):
        return [(s, m) for s, m in pairs if m == "tgbi"]
    if ("all", "acc") in have:
        return [p for p in (("all", "acc"), ("all", "delta_g"), ("all", "delta_s")) if p in have]
    by_language = sorted({s for s, m in pairs if m == "acc" and "/" not in s and s != "all"})
    if by_language:  # WinoMT per target language
        return [(s, m) for s in by_language for m in ("acc", "delta_g", "delta_s") if (s, m) in have][:24]
    ordinary = [(s, m) for s, m in pairs if "/occupation/" not in s and "/shift/" not in s and not s.startswith("vs/")]
    sets = [(s, m) for s, m in ordinary if m == "p_f"]
    if sets:
        return sets[:12]
    return [(s, m) for s, m in ordinary if m in ("mean_intensity_tgt", "mean_direction_tgt")][:12]


def when(value) -> str:
    """A timestamp (a datetime or ISO text) to the second, marked UTC when it carries a zone."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if value.utcoffset() is not None else "")


def significant_changes(history: pl.DataFrame, limit: int = MAX_DRIFT_ROWS) -> tuple[list[dict], int]:
    """The latest ``limit`` changes the monitor judged significant (of a ``history_frame``), with their
    value and change from the baseline at the metric's scale; and how many there are in all."""
    significant = history.filter(pl.col("significant")).sort("created_at", "system", "suite", "subset", "metric",
                                                             descending=[True, False, False, False, False])
    rows = []
    for r in significant.head(limit).iter_rows(named=True):
        change = numbers.change(r["change"], r["metric"], r["change_low"], r["change_high"])
        rows.append({"created_at": when(r["created_at"]), "run_id": r["run_id"], "system": r["system"], "suite": r["suite"],
                     "subset": r["subset"], "metric": metric_name(r["metric"]),
                     "value": value_cell(r["value"], r["ci_low"], r["ci_high"], r["metric"]), "change": change,
                     "p": p_text(r["p"] if r["p"] is not None else r["mcnemar_p"]),
                     "p_adjusted": p_text(r["p_adjusted"]), "status": r["status"] or ""})
    return rows, significant.height


def adjective_rows(metrics: pl.DataFrame) -> list[dict]:
    """WinoMT's adjective experiment (``adjectives.adjective_table``): language, system, the paired Acc
    cells of the anti sentences and Δ, the paper's whole-set Acc without and with the adjective and
    Δ (points), and the n of each side."""
    return [{"language": r["language"], "system": r["system"],
             "without": value_cell(r["acc_without"], r["without_low"], r["without_high"], "acc"),
             "with": value_cell(r["acc_with"], r["with_low"], r["with_high"], "acc"), "delta": numbers.points(r["delta"]),
             "all": value_cell(r["acc_all"], r["all_low"], r["all_high"], "acc"),
             "replaced": value_cell(r["acc_replaced"], r["replaced_low"], r["replaced_high"], "acc"), "delta_replaced": numbers.points(r["delta_replaced"]),
             "n_without": r["n_without"], "n_with": r["n_with"]}
            for r in adjective_table(metrics).iter_rows(named=True)]
