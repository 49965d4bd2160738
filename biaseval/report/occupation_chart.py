"""report.html's per-occupation charts: p_f per occupation and system against the occupation's female
share, one chart per target language.

A suite's languages often draw the same occupations for the same systems (those at both ends of
the female-share order), so consecutive charts that do share one figure: its axes, its category
labels, legend and margins (measured from the widest label) are made once, and each language
replaces only what differs: the order of the labels, the bars, whiskers and diamonds. A language
that draws another set of occupations or systems, or whose labels had to be moved to fit
(``plots.unclutter``), starts a fresh figure. Each PNG is the one a
figure of its own would give, pixel for pixel (tests/test_report_figures.py).
"""

from __future__ import annotations

import polars as pl

from biaseval.report.plots import (
    _bar_data,
    _category_axis,
    _finite,
    _legend,
    _render,
    _systems,
    figure,
    plain_text,
)


@plain_text
def occupation_charts(per_language: list[pl.DataFrame], colours: dict[str, str],
                      shares: dict[str, float] | None = None, metric_name: str = "p_f",
                      limit: int = 60) -> list[tuple[bytes, int]]:
    """For each frame (one language's rows with occupation, system, value, ci_low, ci_high): horizontal
    bars of p_f per occupation (one bar per system, CI whiskers), occupations sorted by their female
    share (a black diamond, same % axis) where ``shares`` gives it (in percent), else by mean p_f. With
    more than ``limit`` occupations only the ``limit`` at both ends of the order are drawn. Returns
    (PNG, occupations drawn) per frame."""
    charts: list[tuple[bytes, int]] = []
    reusable = None  # ((occupations as a set, systems), figure, axes, the last language's artists)
    for frame in per_language:
        frame = frame.with_columns(pl.col("occupation").alias("group"))
        systems = _systems(frame, colours)
        groups = _order(frame, shares, limit)
        key = (frozenset(groups), tuple(systems))
        if reusable is not None and reusable[0] == key:
            _, fig, ax, drawn = reusable
            for artist in drawn:
                artist.remove()
        else:
            fig, ax = _figure(groups, systems, colours, shares, metric_name)
        drawn = _data(ax, frame.filter(pl.col("group").is_in(groups)), groups, systems, colours, shares)
        png, moved = _render(fig)
        reusable = None if moved else (key, fig, ax, drawn)
        charts.append((png, len(groups)))
    return charts


def _order(frame: pl.DataFrame, shares: dict[str, float] | None, limit: int) -> list[str]:
    """The occupations to draw, top to bottom: by female share (then mean p_f, then name), or by mean p_f."""
    mean = frame.group_by("group").agg(pl.col("value").mean().alias("mean"))
    order = mean.with_columns(pl.col("group").replace_strict(shares or {}, default=None, return_dtype=pl.Float64)
                              .alias("share"))
    order = order.sort(["share", "mean", "group"] if shares else ["mean", "group"], nulls_last=True)
    groups = order["group"].to_list()
    if len(groups) > limit:
        groups = groups[: limit // 2] + groups[-(limit - limit // 2):]
    return groups


def _figure(groups: list[str], systems: list[str], colours: dict[str, str], shares: dict[str, float] | None,
            metric_name: str):
    """The figure without data: size, category axis, % axis, legend, and margins that fit the labels."""
    from matplotlib.lines import Line2D

    per_row = 0.2 * max(1.0, 0.6 * len(systems))
    fig = figure((9, min(1.6 + per_row * len(groups), 60)))
    ax = fig.subplots()
    _category_axis(ax, groups, horizontal=True)
    extra = []
    if shares:
        extra = [Line2D([], [], marker="D", linestyle="none", color="black", markersize=5,
                        label="female share of the occupation (%)")]
    ax.set_xlim(0, 100)
    ax.set_xlabel(f"{metric_name}: outputs with a female form (%)")
    _legend(fig, systems, colours, extra)
    _margins(fig, ax, top_inches=0.5)
    return fig, ax


def _data(ax, frame: pl.DataFrame, groups: list[str], systems: list[str], colours: dict[str, str],
          shares: dict[str, float] | None) -> list:
    """One language on the figure: the labels in its order, bars, whiskers and the share diamonds;
    returns the artists added."""
    ax.set_yticks(range(len(groups)), groups, fontsize=8)
    _, drawn = _bar_data(ax, frame, groups, systems, colours, 100.0, horizontal=True)
    if shares:
        ys = [i for i, g in enumerate(groups) if g in shares and _finite(shares[g])]
        drawn.append(ax.scatter([shares[groups[i]] for i in ys], ys, marker="D", s=16, color="black", zorder=5))
    return drawn


def _margins(fig, ax, top_inches: float) -> None:
    """tight_layout's margins for one axes with labels on the left and an x label below, from the
    widest y tick label (measured, not drawn): tight_layout draws the whole figure to find them,
    as long again as drawing it for the PNG (about 0.2 s of a 60-row chart)."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.get_size_inches() * fig.dpi
    pad = 1.08 * 10 * fig.dpi / 72  # tight_layout's pad: 1.08 font sizes
    labels = max((t.get_window_extent(renderer).width for t in ax.get_yticklabels()), default=0.0)
    below = ax.xaxis.label.get_window_extent(renderer).height + 1.6 * 10 * fig.dpi / 72  # x label + tick labels
    fig.subplots_adjust(left=(labels + pad + 6) / width, right=1 - (pad + 12) / width, bottom=(below + pad) / height,
                        top=1 - top_inches / fig.get_figheight() - pad / height)
