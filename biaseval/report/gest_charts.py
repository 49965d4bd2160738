"""GEST's two charts (matplotlib's Agg, drawn from metric rows: their cost follows the systems and
languages, never the items):

- ``stereotype_heatmap``: the masculine rate p_i of every stereotype (rows, 1-7 about women above the
  line, 8-16 about men below it) per target language (columns), a panel per system, each cell coloured
  from red (read feminine) through white (half and half) to blue (read masculine) and labelled with its
  percentage. A system that follows the stereotypes is redder above the line than below it.
- ``rates_scatter``: f_m (x, %) against f_s (y, pp), a point per system × language, labelled with the
  language: where each system sits between even (50 %) and all masculine, and how far it follows the
  stereotypes. The paper's values are in the table beside it (they are Agresti-Coull centred: set
  beside our f_m they would show an offset of a point that is no difference of the systems).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.data.gest_stereotypes import FEMALE_STEREOTYPES, SHORT_NAMES
from biaseval.report.plots import _legend, _png, _systems, figure, plain_text

STEREOTYPES = tuple(range(1, 17))
MAX_PANELS = 8  # systems drawn; the metrics table has them all


def rate_matrix(part: pl.DataFrame, system: str) -> tuple[list[str], np.ndarray]:
    """One system's languages and its p_i as a 16 × languages matrix (NaN where nothing was read).
    ``part``: ``masculine_rate`` rows of one suite (subsets ``<lang>/<NN>``)."""
    mine = part.filter(pl.col("system") == system).with_columns(
        pl.col("subset").str.split("/").list.get(0).alias("lang"),
        pl.col("subset").str.split("/").list.get(1).cast(pl.Int32).alias("stereotype"))
    languages = sorted(mine["lang"].unique().to_list())
    matrix = np.full((len(STEREOTYPES), len(languages)), np.nan)
    for lang, stereotype, value in mine.select("lang", "stereotype", "value").iter_rows():
        if value is not None and 1 <= stereotype <= len(STEREOTYPES):
            matrix[stereotype - 1, languages.index(lang)] = value
    return languages, matrix


# the heatmap's layout, in inches: a column per language, a row per stereotype; panels two to a row
CELL_W, CELL_H, LABELS, GAP, BAR, PER_ROW = 0.42, 0.27, 1.3, 0.3, 1.0, 2
TOP, BOTTOM = 0.3, 0.35  # language names above a panel, the system's name below it


@plain_text
def stereotype_heatmap(part: pl.DataFrame, colours: dict[str, str]) -> bytes:
    """The masculine rate per stereotype, language and system (module docstring), as PNG."""
    from matplotlib.colors import LinearSegmentedColormap

    rates = part.filter(pl.col("metric") == "masculine_rate")
    systems = _systems(rates, colours)[:MAX_PANELS]
    panels = [(system, *rate_matrix(rates, system)) for system in systems]
    per_row = min(PER_ROW, len(panels)) or 1
    # a panel is at least three cells wide: room for the system's name beneath it
    widths = [max([len(p[1]) for p in panels[c::per_row]] + [3]) * CELL_W for c in range(per_row)]
    lines = -(-len(panels) // per_row) or 1
    panel_h = len(STEREOTYPES) * CELL_H
    width = LABELS + sum(widths) + GAP * (per_row - 1) + BAR
    height = lines * (TOP + panel_h + BOTTOM) + 0.1
    fig = figure((width, height))
    cmap = LinearSegmentedColormap.from_list("gest", ["#b2182b", "#f7f7f7", "#2166ac"]).with_extremes(bad="#d9d9d9")
    image = None
    for k, (system, languages, matrix) in enumerate(panels):
        line, column = divmod(k, per_row)
        left = LABELS + sum(widths[:column]) + GAP * column
        bottom = height - (line + 1) * (TOP + panel_h + BOTTOM) + BOTTOM
        ax = fig.add_axes((left / width, bottom / height, max(len(languages), 3) * CELL_W / width, panel_h / height))
        image = ax.imshow(matrix, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        for (i, j), value in np.ndenumerate(matrix):
            if not np.isnan(value):
                ax.text(j, i, f"{100 * value:.0f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(value - 0.5) > 0.32 else "black")
        ax.axhline(len(FEMALE_STEREOTYPES) - 0.5, color="black", linewidth=1.2)
        ax.set_xticks(range(len(languages)), languages, fontsize=8)
        ax.xaxis.tick_top()
        ax.tick_params(length=0)
        labels = [f"{i} {SHORT_NAMES[i]}" for i in STEREOTYPES] if column == 0 else []
        ax.set_yticks(range(len(STEREOTYPES)), labels, fontsize=8)
        ax.set_xlabel(system, fontsize=9, color=colours.get(system, "black"), fontweight="bold")
        for side in ax.spines.values():
            side.set_visible(False)
    if image is not None:
        bar = fig.colorbar(image, cax=fig.add_axes(((width - BAR + 0.2) / width, 0.5 / height, 0.12 / width,
                                                    1 - 0.8 / height)))
        bar.set_label("masculine rate p_i (%): read masculine among outputs read", fontsize=8)
        bar.set_ticks([0, 0.25, 0.5, 0.75, 1.0], labels=["0", "25", "50", "75", "100"], fontsize=7)
    return _png(fig)


@plain_text
def rates_scatter(table: list[dict], colours: dict[str, str]) -> bytes:
    """f_m against f_s per system × language (``report.gest.rows``), as PNG."""
    fig = figure((7.5, 4.6))
    ax = fig.subplots()
    systems = _systems(pl.DataFrame({"system": [r["system"] for r in table]}, schema={"system": pl.String}), colours)
    xs = [100 * r["f_m"]["value"] for r in table]
    for r, x in zip(table, xs):
        y = 100 * r["f_s"]["value"]
        ax.scatter([x], [y], s=24, color=colours.get(r["system"], "#888888"))
        ax.annotate(r["lang"], (x, y), xytext=(3, 2), textcoords="offset points", fontsize=7)
    ax.axhline(0, color="#999999", linewidth=0.8)
    ax.axvline(50, color="#999999", linewidth=0.8)
    finite = [x for x in xs if np.isfinite(x)]
    ax.set_xlim(max(0.0, min([50.0, *finite]) - 5), 100)
    ax.set_xlabel("f_m, masculine rate (%): 50 is even", fontsize=9)
    ax.set_ylabel("f_s, stereotype rate (pp): 0 follows none", fontsize=9)
    ax.grid(alpha=0.3)
    rows = _legend(fig, systems, colours)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 * rows / fig.get_figheight()))
    return _png(fig)
