"""The drift trends of report.html: each suite's headline metrics over the monitoring runs, on fixed,
honest scales, with the baseline each run was compared with and the latest run's interval."""

from __future__ import annotations

import math
from datetime import timedelta

import polars as pl

from biaseval.report.plots import (
    DIFFERENCES,
    PERCENT,
    SIGNIFICANT,
    UNIT,
    _finite,
    _legend,
    _png,
    _scale,
    _systems,
    figure,
    metric_label,
    plain_text,
)


def fixed_limits(metric: str, values: list[float]) -> tuple[float, float] | None:
    """The honest y scale of a metric as drawn: 0–100 % for shares, 0–1 for P and TGBI, and for
    differences (ΔG, ΔS) a scale symmetric around 0 that holds every value and interval (in steps of
    5 points); None (the data's range) for anything else."""
    if metric in DIFFERENCES:
        reach = max([abs(v) for v in values if _finite(v)] + [1.0])
        half = 5.0 * math.ceil(reach * 1.1 / 5.0)
        return -half, half
    if metric in PERCENT:
        return 0.0, 100.0
    if metric in UNIT:
        return 0.0, 1.0
    return None


@plain_text
def trend_plot(history: pl.DataFrame, colours: dict[str, str], panels: list[tuple[str, str]]) -> bytes:
    """``trend_figure`` as a PNG."""
    return _png(trend_figure(history, colours, panels))


@plain_text
def trend_figure(history: pl.DataFrame, colours: dict[str, str], panels: list[tuple[str, str]]):
    """Drift over time: one panel per (subset, metric), ``value`` against ``created_at`` per system with
    its CI as whiskers, the baseline each run was compared with as a dashed line (value − change), and
    the latest run's interval as a band across the panel; runs whose change from their baseline was
    significant get a red ring. Fixed scales (``fixed_limits``): no zooming in on noise."""
    import matplotlib.dates as mdates
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    systems = _systems(history, colours)
    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    fig = figure((4.4 * columns + 0.6, 3.3 * rows + 0.6))
    axes = fig.subplots(rows, columns, squeeze=False)
    any_significant = False
    latest = history["created_at"].max()
    for k, (subset, metric) in enumerate(panels):
        ax = axes[k // columns][k % columns]
        scale = _scale(metric)
        part = history.filter((pl.col("subset") == subset) & (pl.col("metric") == metric) & pl.col("value").is_not_null())
        drawn: list[float] = []
        for system in systems:
            rows_ = part.filter(pl.col("system") == system).sort("created_at")
            if rows_.height == 0:
                continue
            when = [t.replace(tzinfo=None) if getattr(t, "tzinfo", None) else t for t in rows_["created_at"].to_list()]
            value = [v * scale for v in rows_["value"].to_list()]
            lows = [lo * scale if _finite(lo) else v for v, lo in zip(value, rows_["ci_low"].to_list())]
            highs = [hi * scale if _finite(hi) else v for v, hi in zip(value, rows_["ci_high"].to_list())]
            colour = colours.get(system, "#888888")
            ax.errorbar(when, value, yerr=[[max(v - lo, 0) for v, lo in zip(value, lows)],
                                           [max(hi - v, 0) for v, hi in zip(value, highs)]],
                        color=colour, marker="o", markersize=4, linewidth=1.4, elinewidth=0.7, capsize=2)
            drawn += value + lows + highs
            base = [(w, v - c * scale) for w, v, c in zip(when, value, rows_["change"].to_list()) if _finite(c)]
            if base:
                ax.plot([w for w, _ in base], [b for _, b in base], color=colour, linestyle="--", linewidth=1.0,
                        alpha=0.9)
                drawn += [b for _, b in base]
            if rows_["created_at"][-1] == latest:
                ax.axhspan(lows[-1], highs[-1], color=colour, alpha=0.13, linewidth=0)
            significant = rows_["significant"].fill_null(False).to_list()
            hits = [(w, v) for w, v, s in zip(when, value, significant) if s]
            if hits:
                any_significant = True
                ax.scatter([w for w, _ in hits], [v for _, v in hits], s=130, facecolors="none",
                           edgecolors=SIGNIFICANT, linewidths=1.8, zorder=5)
        limits = fixed_limits(metric, drawn)
        if limits is not None:
            ax.set_ylim(*limits)
        if metric in DIFFERENCES:
            ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{subset}: {metric_label(metric)}", fontsize=10)
        first, last = part["created_at"].min(), part["created_at"].max()
        if first is not None and first == last:  # one run: a day either side, not a zero-width axis
            ax.set_xlim(first.replace(tzinfo=None) - timedelta(days=1), last.replace(tzinfo=None) + timedelta(days=1))
        locator = mdates.AutoDateLocator(maxticks=6)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(alpha=0.3)
    for k in range(len(panels), rows * columns):
        axes[k // columns][k % columns].set_visible(False)
    extra = [Line2D([], [], color="#444444", linestyle="--", linewidth=1.0, label="baseline"),
             Patch(facecolor="#444444", alpha=0.13, label="latest run's CI")]
    if any_significant:
        extra.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="none", markeredgecolor=SIGNIFICANT,
                            markersize=9, markeredgewidth=1.8, label="significant change"))
    lines = _legend(fig, systems, colours, extra)
    fig.set_figheight(fig.get_figheight() + 0.25 * (lines - 1))
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.3 + 0.25 * lines) / fig.get_figheight()))
    return fig
