"""Figures for the report (matplotlib, drawn off-screen to PNG files in the run directory)."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from .translators.base import MissingExtra

CLASS_COLOURS = {"feminine": "#c0392b", "masculine": "#2471a3", "neutral": "#7f8c8d"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtra("report", "report", "matplotlib") from None
    return plt


def embedding_scatter(features: pl.DataFrame, folder: Path) -> list[Path]:
    """Per suite × system: cos(w, m) against cos(w, f) before (source) and after (target) translation,
    with the diagonal where both are equal; points coloured by the word's gender class."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for (suite, system, tgt), part in features.group_by("suite", "system", "tgt_lang", maintain_order=True):
        fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), sharex=True, sharey=True)
        src = part["src_lang"][0]
        for ax, side, language in ((axes[0], "src", src), (axes[1], "tgt", tgt)):
            for cls, colour in CLASS_COLOURS.items():
                rows = part.filter(pl.col("gender_class") == cls)
                ax.scatter(rows[f"cos_{side}_m"], rows[f"cos_{side}_f"], s=9, alpha=0.6, c=colour, label=cls)
            values = part.select(pl.col(f"cos_{side}_m"), pl.col(f"cos_{side}_f")).drop_nans().drop_nulls()
            if values.height:
                lo = float(min(values.min().row(0)))
                hi = float(max(values.max().row(0)))
                ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
            ax.set_title(f"{'before' if side == 'src' else 'after'} translation ({language})")
            ax.set_xlabel("cos(w, male word)")
        axes[0].set_ylabel("cos(w, female word)")
        axes[0].legend(loc="upper left", fontsize=8)
        fig.suptitle(f"{suite}: {system} ({src} → {tgt}); above the diagonal leans female")
        fig.tight_layout()
        path = folder / f"embedding-{suite}-{system}-{tgt}.png"
        tmp = path.with_name(f".{path.name}.tmp")
        fig.savefig(tmp, dpi=110, format="png")
        plt.close(fig)
        os.replace(tmp, path)
        paths.append(path)
    return paths
