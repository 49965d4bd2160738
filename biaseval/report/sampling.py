"""The monitor's sample beside its suite, as run.json records it (``suites.<name>.sample``: the
profile ``biaseval.suites.sample.profile`` wrote): a table in report.md and report.html."""

from __future__ import annotations

from biaseval.run.estimate import stratum_name

HEAD = ("suite", "items", "seed", "occupations", "mean female share", "pro-stereotypical",
        "per target and subset (sample of suite)")


def _beside(sample: float | None, whole: float | None, scale: float) -> str:
    return "—" if whole is None else f"{scale * sample:.1f}% (suite {scale * whole:.1f}%)"


def sample_rows(info: dict) -> list[tuple[str, ...]]:
    """One row per sampled suite, in the order of ``HEAD``; none when the run took whole suites."""
    rows = []
    for name, suite in info.get("suites", {}).items():
        profile = suite.get("sample")
        if not profile:
            continue
        sample, whole = profile["sample"], profile["population"]
        strata = ", ".join(f"{stratum_name(s['tgt_lang'], s['subset'])} {s['items']:,} of {s['population']:,}"
                           for s in profile["strata"])
        rows.append((name, f"{sample['items']:,} of {whole['items']:,}", str(profile["seed"]),
                     f"{sample['occupations']:,} of {whole['occupations']:,}" if whole["occupations"] else "—",
                     _beside(sample["female_share"], whole["female_share"], 1),
                     _beside(sample["pro"], whole["pro"], 100), strata))
    return rows


NOTE = ("The monitor translated a fixed, seeded sample of each suite: stratified by target, subset and "
        "occupation, every item with the same chance to be drawn (docs/monitoring.md). Its occupations' "
        "mean female share and its share of pro-stereotypical items are shown beside the whole suite's.")


def sample_section(info: dict) -> list[str]:
    """report.md's "Sample" section (nothing when the run took whole suites)."""
    rows = sample_rows(info)
    if not rows:
        return []
    lines = ["## Sample", "", NOTE, "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]
