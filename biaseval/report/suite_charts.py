"""The charts of MT-GenEval and MiTTenS in report.html (matplotlib's Agg, one figure each, drawn from
metric rows: their cost follows the languages and systems, never the items)."""

from __future__ import annotations

import polars as pl

from biaseval.report.plots import (
    CLASS_COLOURS,
    _category_axis,
    _grouped_bars,
    _legend,
    _png,
    _systems,
    figure,
    metric_label,
    plain_text,
)

MAX_PANELS = 6  # MT-GenEval: a panel per system


@plain_text
def mtgeneval_bars(frame: pl.DataFrame, colours: dict[str, str]) -> bytes:
    """MT-GenEval: a panel per system (the first MAX_PANELS), a pair of bars per target language,
    accuracy on the feminine and on the masculine items, with their intervals as whiskers. ``frame``:
    the suite's ``acc`` rows of subsets ``<lang>/feminine`` and ``<lang>/masculine``."""
    rows = frame.filter(pl.col("subset").str.contains(r"/(feminine|masculine)$") & (pl.col("metric") == "acc"))
    rows = rows.with_columns(pl.col("subset").str.split("/").list.first().alias("group"),
                             pl.col("subset").str.split("/").list.last().alias("gender"))
    systems = _systems(rows, colours)[:MAX_PANELS]
    languages = sorted(rows["group"].unique().to_list())
    columns = min(len(systems), 2) or 1
    lines = -(-len(systems) // columns) or 1
    fig = figure((max(6.0, 0.55 * len(languages) + 1.5) * columns, 3.2 * lines + 0.6))
    axes = fig.subplots(lines, columns, squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        if k >= len(systems):
            ax.set_visible(False)
            continue
        mine = rows.filter(pl.col("system") == systems[k]).with_columns(pl.col("gender").alias("system"))
        _grouped_bars(ax, mine, languages, ["feminine", "masculine"], CLASS_COLOURS, 100.0)
        ax.set_ylim(0, 105)
        ax.set_title(systems[k], fontsize=10)
        ax.set_ylabel(metric_label("acc"), fontsize=9)
    _legend(fig, ["feminine", "masculine"], CLASS_COLOURS)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return _png(fig)


@plain_text
def mittens_bars(frame: pl.DataFrame, colours: dict[str, str]) -> bytes:
    """MiTTenS: accuracy by language (above) and by evaluation set (below), a bar per system with its
    interval. ``frame``: the suite's ``acc`` rows of subsets ``lang/<code>`` and ``set/<name>``."""
    acc = frame.filter(pl.col("metric") == "acc")
    by_language = acc.filter(pl.col("subset").str.starts_with("lang/")).with_columns(
        pl.col("subset").str.slice(5).alias("group"))
    by_set = acc.filter(pl.col("subset").str.starts_with("set/")).with_columns(pl.col("subset").str.slice(4).alias("group"))
    systems = _systems(acc, colours)
    languages = sorted(by_language["group"].unique().to_list())
    sets = sorted(by_set["group"].unique().to_list())
    upper = 2.6
    lower = max(1.6, 0.2 * len(sets) * max(len(systems), 1) + 0.6)
    fig = figure((max(8.0, min(14.0, 0.3 * len(languages) * max(len(systems), 1) + 2.0)), upper + lower + 1.0))
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": [upper, lower]})
    _grouped_bars(top, by_language, languages, systems, colours, 100.0)
    top.set_ylim(0, 105)
    top.set_title(f"by language: {metric_label('acc')}", fontsize=10)
    _grouped_bars(bottom, by_set, sets, systems, colours, 100.0, horizontal=True)
    bottom.set_xlim(0, 105)
    bottom.set_title(f"by evaluation set: {metric_label('acc')}", fontsize=10)
    _category_axis(bottom, sets, horizontal=True)
    _legend(fig, systems, colours)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return _png(fig)
