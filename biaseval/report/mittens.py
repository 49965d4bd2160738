"""MiTTenS in the reports: a table shaped like the paper's Table 3 (overall accuracy, accuracy on "he"
and "she" passages, the weakest language, evaluation set and resource level, and the worst case over
gender × language × evaluation set, each with its n), accuracy per language, the weakest cells, and,
out of English, the share the reader read and the languages it cannot read. Pure functions of the
metrics frame (``biaseval.metrics.mittens`` wrote it); ``section`` renders report.md's part, and
report.html lays out the same rows (templates/mittens.html)."""

from __future__ import annotations

import polars as pl

from biaseval.report import methods, numbers
from biaseval.report.escape import md

MARKER = "worst_case_cells"  # a metric only MiTTenS suites have
WORST = (("worst_language", "weakest language"), ("worst_set", "weakest evaluation set"),
         ("worst_level", "weakest resource level"), ("worst_case", "worst case (gender × language × set)"))
WEAKEST_CELLS = 10


def mittens_suites(metrics: pl.DataFrame) -> list[str]:
    return sorted(metrics.filter(pl.col("metric") == MARKER)["suite"].unique().to_list())


def without_mittens(metrics: pl.DataFrame) -> pl.DataFrame:
    """The metrics of every other suite (for the WinoMT sections, whose "acc" rows MiTTenS's would join)."""
    return metrics.filter(~pl.col("suite").is_in(pl.Series(mittens_suites(metrics), dtype=pl.String).implode()))


def _pct(value, low=None, high=None) -> str:
    """A share in percent with its interval, without the unit (the header names it)."""
    if value is None:
        return "—"
    ci = numbers.interval(low, high, "acc")
    return numbers.share(value) + (f" {ci}" if ci else "")


def _name(subset: str) -> str:
    """A group's name without its kind: lang/am -> am; cell/female/am/synthbio -> female / am / synthbio."""
    return " / ".join(subset.split("/")[1:]) or subset


def table3_rows(metrics: pl.DataFrame) -> list[dict]:
    """One row per MiTTenS suite × system: overall accuracy, he/she accuracy, the weakest groups (name,
    value, n), the number of cells of the worst case, and (out of English) the share read."""
    rows = []
    part = metrics.filter(pl.col("suite").is_in(pl.Series(mittens_suites(metrics), dtype=pl.String).implode()))
    cells = {(r["suite"], r["system"], r["subset"], r["metric"]): r for r in part.iter_rows(named=True)}
    worst = {(r["suite"], r["system"], r["metric"]): r for r in part.filter(pl.col("metric").str.starts_with("worst_"))
             .iter_rows(named=True)}
    for suite, system in sorted({(r["suite"], r["system"]) for r in part.iter_rows(named=True)}):
        def get(subset, metric):
            return cells.get((suite, system, subset, metric))

        def share(subset, metric):
            r = get(subset, metric)
            return {"text": _pct(r["value"], r["ci_low"], r["ci_high"]), "n": r["n"]} if r else None

        read = get("all", "read")
        unread = ({"text": _pct(1 - read["value"], 1 - read["ci_high"], 1 - read["ci_low"]), "n": read["n"],
                   "label": "not read"} if read else
                  {**share("all", "unknown"), "label": "no pronoun"} if get("all", "unknown") else None)
        row = {"suite": suite, "system": system, "overall": share("all", "acc"),
               "misgendered": share("all", "misgendered"), "unread": unread,
               "he": share("gender/male", "acc"), "she": share("gender/female", "acc"),
               "read": share("all", "read"), "no_reader": share("all", "no_reader"), "worst": []}
        for metric, label in WORST:
            r = worst.get((suite, system, metric))
            row["worst"].append({"label": label, "name": _name(r["subset"]) if r else "—",
                                 "text": _pct(r["value"], r["ci_low"], r["ci_high"]) if r else "—",
                                 "n": r["n"] if r else None})
        count = worst.get((suite, system, MARKER))
        row["cells"] = int(count["value"]) if count else None
        rows.append(row)
    return rows


def language_rows(metrics: pl.DataFrame, suite: str) -> list[dict]:
    """Per language of one suite and system: acc, and (out of English) the share read; a language
    without a reader has no acc and says so."""
    part = metrics.filter((pl.col("suite") == suite) & pl.col("subset").str.starts_with("lang/"))
    out = []
    for (system, subset), group in part.group_by("system", "subset", maintain_order=True):
        by = {r["metric"]: r for r in group.iter_rows(named=True)}
        acc, read, unread = by.get("acc"), by.get("read"), by.get("no_reader")
        out.append({"system": system, "language": subset[5:],
                    "acc": _pct(acc["value"], acc["ci_low"], acc["ci_high"]) if acc else "—",
                    "n": acc["n"] if acc else (unread["n"] if unread else None),
                    "read": _pct(read["value"], read["ci_low"], read["ci_high"]) if read else None,
                    "no_reader": bool(unread and unread["value"] == 1.0),
                    "misgendered": _share_of(by.get("misgendered")), "no_pronoun": _share_of(by.get("unknown"))})
    return sorted(out, key=lambda r: (r["system"], r["language"]))


def _share_of(row: dict | None) -> str:
    return _pct(row["value"], row["ci_low"], row["ci_high"]) if row else "—"


def weakest_cells(metrics: pl.DataFrame, suite: str, limit: int = WEAKEST_CELLS) -> list[dict]:
    """Per system the ``limit`` cells with the lowest accuracy (ties: more passages first), leaving out
    cells at 100 %: nothing went wrong there."""
    part = (metrics.filter((pl.col("suite") == suite) & pl.col("subset").str.starts_with("cell/")
                           & (pl.col("metric") == "acc") & (pl.col("value") < 1.0))
            .sort(["system", "value", "n", "subset"], descending=[False, False, True, False])
            .group_by("system", maintain_order=True).head(limit))
    return [{"system": r["system"], "cell": _name(r["subset"]), "acc": _pct(r["value"], r["ci_low"], r["ci_high"]),
             "n": r["n"]} for r in part.iter_rows(named=True)]


NOTE = ("Accuracy: passages whose translation gives the person the gender the source encodes, in percent; "
        "n: passages. Misgendered: passages given the other gender; beside them what is not scored as either: "
        "into English, outputs with no pronoun of the person (counted wrong, as in the paper), out of English, "
        "passages the reader could not read (left out of the accuracy). The worst case is the lowest accuracy over the cells gender × language "
        "× evaluation set, as in the paper's Table 3; over many cells of a few passages each the lowest observed "
        "value is biased low, so read it with its n and the number of cells. Into English a translation is "
        "right when it uses only the person's pronouns (he/him/his/himself or she/her/hers/herself); out of "
        "English, when the words about the person carry its gender (read for de, es, fr, it, pt and ru), and only "
        "passages the reader could read are scored (docs/mittens.md).")


def shown_rows(metrics: pl.DataFrame) -> pl.DataFrame:
    """The MiTTenS rows the section shows (for its caption's methods)."""
    part = metrics.filter(pl.col("suite").is_in(pl.Series(mittens_suites(metrics), dtype=pl.String).implode()))
    return part.filter(~pl.col("subset").str.starts_with("vs/"))


def note(metrics: pl.DataFrame, confidence: str = "95%") -> str:
    return NOTE + " " + methods.describe(shown_rows(metrics), confidence)


def section(metrics: pl.DataFrame, confidence: str = "95%") -> list[str]:
    """report.md's MiTTenS part (empty without a MiTTenS suite)."""
    rows = table3_rows(metrics)
    if not rows:
        return []
    lines = ["## MiTTenS (Robinson et al. 2024, Table 3)", "", note(metrics, confidence), "",
             "| suite | system | overall (%) | misgendered (%) | no pronoun / not read (%) | he (%) | she (%) | "
             + " | ".join(f"{label} (%)" for _, label in WORST) + " | cells |",
             "|---|---|---|---|---|---|---|" + "---|" * len(WORST) + "---|"]
    for r in rows:
        def cell(c):
            return f"{c['text']}, n = {numbers.count(c['n'])}" if c else "—"
        unread = f"{r['unread']['label']}: {cell(r['unread'])}" if r["unread"] else "—"
        worst = " | ".join(f"{w['name']}: {w['text']}, n = {numbers.count(w['n'])}" for w in r["worst"])
        lines.append(f"| {md(r['suite'])} | {md(r['system'])} | {cell(r['overall'])} | {cell(r['misgendered'])} | "
                     f"{unread} | {cell(r['he'])} | {cell(r['she'])} | {md(worst)} | "
                     f"{numbers.count(r['cells'])} |")
    lines.append("")
    for suite in sorted({r["suite"] for r in rows}):
        langs = language_rows(metrics, suite)
        out_of_english = any(r["read"] is not None or r["no_reader"] for r in langs)
        lines += [f"### {suite}: per language", "",
                  "| system | language | acc (%) | misgendered (%) | "
                  + ("read (%) | " if out_of_english else "no pronoun (%) | ") + "n |", "|---|---|---|---|---|---|"]
        for r in langs:
            read = ("no reader" if r["no_reader"] else r["read"] or "—") if out_of_english else r["no_pronoun"]
            lines.append(f"| {md(r['system'])} | {md(r['language'])} | {r['acc']} | {r['misgendered']} | {read} | "
                         f"{numbers.count(r['n'])} |")
        unread = sorted({r["language"] for r in langs if r["no_reader"]})
        if unread:
            lines += ["", f"Not read (no reader for the language; its passages are not scored): {', '.join(unread)}."]
        cells = weakest_cells(metrics, suite)
        lines += ["", f"Weakest cells of {suite} (gender / language / evaluation set; cells at 100 % left out)"
                  + (":" if cells else ": none, every cell is at 100 %."), ""]
        if cells:
            lines += ["| system | cell | acc (%) | n |", "|---|---|---|---|"]
            lines += [f"| {md(c['system'])} | {md(c['cell'])} | {c['acc']} | {numbers.count(c['n'])} |" for c in cells]
            lines.append("")
    return lines
