"""Figures for the report (matplotlib, drawn off-screen to PNG files in the run directory)."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import polars as pl

from biaseval.errors import MissingExtra
from biaseval.names import under
from biaseval.report import numbers

CLASS_COLOURS = {"feminine": "#c0392b", "masculine": "#2471a3", "neutral": "#7f8c8d"}


def plain_text(draw):
    """``draw`` run with matplotlib's mathtext off: every text its figures show (system names, subsets,
    occupations, languages) is drawn as written, ``$`` and ``\\`` included, never parsed as a formula
    (``cost $\\undefined$`` would fail the whole report). Every function the reports call to draw
    figures wears it (tests/test_names.py draws each with hostile labels)."""

    @functools.wraps(draw)
    def plain(*args, **kwargs):
        try:
            import matplotlib
        except ImportError:
            return draw(*args, **kwargs)  # figure() names the extra to install
        with matplotlib.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)

    return plain


def figure(figsize: tuple[float, float]):
    """A matplotlib figure drawn off-screen by Agg, without pyplot: no figure manager to register and
    close, no GUI backend to look for, and pyplot's import not paid. Its texts are parsed as mathtext
    unless it is made and drawn under ``plain_text``."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtra("report", "report", "matplotlib") from None
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


@plain_text
def embedding_scatter(features: pl.DataFrame, folder: Path) -> list[Path]:
    """Per suite × system: cos(w, m) against cos(w, f) before (source) and after (target) translation,
    with the diagonal where both are equal; points coloured by the word's gender class."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for (suite, system, tgt), part in features.group_by("suite", "system", "tgt_lang", maintain_order=True):
        fig = figure((9, 4.2))
        axes = fig.subplots(1, 2, sharex=True, sharey=True)
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
            hidden = part.height - values.height
            note = f"; {hidden} without a vector not shown" if hidden else ""
            ax.set_title(f"{'before' if side == 'src' else 'after'} translation ({language}{note})", fontsize=10)
            ax.set_xlabel("cos(w, male word)")
        axes[0].set_ylabel("cos(w, female word)")
        axes[0].legend(loc="upper left", fontsize=8)
        fig.suptitle(f"{suite}: {system} ({src} → {tgt}); above the diagonal leans female")
        fig.tight_layout()
        path = under(folder, f"embedding-{suite}-{system}-{tgt}.png")
        tmp = path.with_name(f".{path.name}.tmp")
        fig.savefig(tmp, dpi=110, format="png")
        os.replace(tmp, path)
        paths.append(path)
    return paths


# --- Figures for report.html: metric frames in (the long shape of metrics.parquet), PNG bytes out. ---

# Colour-blind-safe first (Okabe & Ito), then Paul Tol's bright and muted sets: distinct colours for
# the slots that systems' names hash to (no grey, which draws baselines and bands, and none too pale to see on white).
SYSTEM_PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#999933", "#882255",
                  "#44AA99", "#332288", "#AA4499", "#4477AA", "#EE6677", "#228833", "#AA3377", "#117733"]
WHISKER = "#222222"
SIGNIFICANT = "#C00000"
# Units come from report/numbers.py, as in the tables: shares drawn in percent, differences of shares in
# percentage points (on a scale symmetric around 0), P and TGBI on 0–1.
PERCENT = {m for m, k in numbers.KIND.items() if k in (numbers.SHARE, numbers.POINTS)}  # drawn × 100
DIFFERENCES = {m for m, k in numbers.KIND.items() if k == numbers.POINTS}  # may be negative
UNIT = {m for m, k in numbers.KIND.items() if k == numbers.INDEX}  # on a 0–1 scale
LABELS = {"p_m": "p_m: male", "p_f": "p_f: female", "p_n": "p_n: neutral", "acc": "Acc", "delta_g": "ΔG",
          "delta_s": "ΔS", "P": "P", "tgbi": "TGBI", "neutral": "N"}


def system_colours(systems) -> dict[str, str]:
    """A colour per system derived from its name (a hash picks a palette slot), so a system has the
    same colour in every run and report. Should two names of one report hash to the same slot, the
    later of them in sorted order takes the next free slot."""
    names = list(dict.fromkeys(systems))
    slots: dict[str, int] = {}
    for name in sorted(names):
        slot = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big") % len(SYSTEM_PALETTE)
        while slot in slots.values() and len(slots) < len(SYSTEM_PALETTE):
            slot = (slot + 1) % len(SYSTEM_PALETTE)
        slots[name] = slot
    return {n: SYSTEM_PALETTE[slots[n]] for n in names}


def metric_label(metric: str) -> str:
    """A metric's name on an axis or a panel, with its unit ("Acc (%)", "ΔG (pp)")."""
    return numbers.header(LABELS.get(metric, metric), metric)


def _scale(metric: str) -> float:
    return numbers.scale(metric)


def _png(fig, dpi: int = 100) -> bytes:
    return _render(fig, dpi)[0]


def _render(fig, dpi: int = 100) -> tuple[bytes, bool]:
    """The figure as a PNG with ``unclutter``'s labels, and whether unclutter moved any."""
    import io

    buffer = io.BytesIO()
    fig.set_dpi(dpi)  # labels measured at the resolution they are drawn at
    moved = unclutter(fig)
    # where labels moved, the figure grows to hold them: bbox_inches="tight"'s box, measured with the
    # renderer unclutter laid the labels out with; savefig, given "tight", would first run a layout
    # pass over every artist of its own to measure the same box
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1) if moved else None
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches=bbox, pil_kwargs={"compress_level": 1})
    return buffer.getvalue(), moved


def _overlaps(boxes, horizontal: bool) -> bool:
    """Whether any two neighbouring label boxes (in axis order) overlap, with a 2-pixel gap."""
    spans = sorted((b.x0, b.x1) if horizontal else (b.y0, b.y1) for b in boxes)
    return any(a[1] + 2 > b[0] for a, b in zip(spans, spans[1:]))


def unclutter(fig) -> bool:
    """No two category labels of an axis overlap: x labels turn upright (90°) where they collide,
    and where they still do, only every k-th label is kept (the smallest k that fits); the same
    thinning for y labels. Returns whether anything moved."""
    renderer = fig.canvas.get_renderer()
    moved = False
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis, horizontal in ((ax.xaxis, True), (ax.yaxis, False)):
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            if len(labels) < 2 or not _overlaps([t.get_window_extent(renderer) for t in labels], horizontal):
                continue
            moved = True
            if horizontal:
                for label in labels:
                    label.set_rotation(90)
                    label.set_ha("center")
            step = 1
            while _overlaps([t.get_window_extent(renderer) for t in labels[::step]], horizontal):
                step += 1
            for k, label in enumerate(labels):
                label.set_visible(k % step == 0)
    return moved


def _finite(x) -> bool:
    return x is not None and x == x


def _legend(fig, systems: list[str], colours: dict[str, str], extra: list | None = None, ncol: int | None = None) -> int:
    """The systems' colours (and ``extra`` handles) above the panels, in as many columns as the
    figure's width holds; returns the number of rows."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=colours.get(s, "#888888"), label=s) for s in systems] + (extra or [])
    ncol = ncol or max(1, min(len(handles), 6, int(fig.get_figwidth() / 1.45)))
    fig.legend(handles=handles, loc="upper center", ncol=ncol, fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    return -(-len(handles) // ncol)


def _bars(ax, positions: list[float], values: list[float], thickness: float, colour: str, horizontal: bool):
    """Bars from 0 to each value, centred on their positions, as one artist: the rectangles
    ``Axes.bar`` draws (same corners, fill, no edge, snapped to pixels alike), without a patch and its
    transforms per bar. The value axis's autoscaling stops at 0, as it does for ``Axes.bar``."""
    from matplotlib.collections import PolyCollection

    lows = [p - thickness / 2 for p in positions]  # Axes.bar's arithmetic: low edge, then low + thickness
    if horizontal:
        corners = [[(0.0, a), (v, a), (v, a + thickness), (0.0, a + thickness)] for a, v in zip(lows, values)]
    else:
        corners = [[(a, 0.0), (a + thickness, 0.0), (a + thickness, v), (a, v)] for a, v in zip(lows, values)]
    bars = PolyCollection(corners, facecolors=colour, edgecolors="none", linewidths=0)
    (bars.sticky_edges.x if horizontal else bars.sticky_edges.y).append(0.0)
    ax.add_collection(bars, autolim=True)
    ax.autoscale_view()  # matplotlib < 3.11 updates only the data limits in add_collection
    return bars


def _grouped_bars(ax, frame: pl.DataFrame, groups: list[str], systems: list[str], colours: dict[str, str],
                  scale: float, horizontal: bool = False) -> dict[tuple[str, str], tuple[float, float]]:
    """Bars of ``value`` per group (column ``group``) and system, with ``ci_low``..``ci_high`` whiskers,
    on a category axis of the groups. Returns where each bar is: (group, system) -> (position, value as drawn)."""
    placed, _ = _bar_data(ax, frame, groups, systems, colours, scale, horizontal)
    _category_axis(ax, groups, horizontal)
    return placed


def _bar_data(ax, frame: pl.DataFrame, groups: list[str], systems: list[str], colours: dict[str, str],
              scale: float, horizontal: bool) -> tuple[dict[tuple[str, str], tuple[float, float]], list]:
    """``_grouped_bars``'s bars and whiskers alone; also returns the artists drawn (to remove them)."""
    cells = {(r["group"], r["system"]): r for r in frame.iter_rows(named=True)}
    width = 0.8 / max(len(systems), 1)
    placed, artists = {}, []
    for j, system in enumerate(systems):
        pos, vals, low, high = [], [], [], []
        for i, group in enumerate(groups):
            r = cells.get((group, system))
            if r is None or not _finite(r["value"]):
                continue
            x = i - 0.4 + width * (j + 0.5)
            v = r["value"] * scale
            lo = r["ci_low"] * scale if _finite(r["ci_low"]) else v
            hi = r["ci_high"] * scale if _finite(r["ci_high"]) else v
            pos.append(x)
            vals.append(v)
            low.append(max(v - lo, 0.0))
            high.append(max(hi - v, 0.0))
            placed[(group, system)] = (x, v)
        if not pos:
            continue
        artists.append(_bars(ax, pos, vals, width * 0.92, colours.get(system, "#888888"), horizontal))
        if horizontal:
            whiskers = ax.errorbar(vals, pos, xerr=[low, high], fmt="none", ecolor=WHISKER, elinewidth=0.8, capsize=2)
        else:
            whiskers = ax.errorbar(pos, vals, yerr=[low, high], fmt="none", ecolor=WHISKER, elinewidth=0.8, capsize=2)
        artists.append(whiskers)
    return placed, artists


def _category_axis(ax, groups: list[str], horizontal: bool) -> None:
    """The groups as the category axis's labels, one per unit, and grid lines along the value axis."""
    ticks = list(range(len(groups)))
    if horizontal:
        ax.set_yticks(ticks, groups, fontsize=8)
        ax.set_ylim(len(groups) - 0.5, -0.5)
        ax.grid(axis="x", alpha=0.3)
    else:
        ax.set_xticks(ticks, groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center",
                      fontsize=9)
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _systems(frame: pl.DataFrame, colours: dict[str, str]) -> list[str]:
    present = set(frame["system"].unique().to_list())
    return [s for s in colours if s in present] + sorted(present - set(colours))


@plain_text
def proportion_bars(frame: pl.DataFrame, colours: dict[str, str], metrics: tuple[str, ...] = ("p_m", "p_f"),
                    title: str = "", limit: int = 40) -> tuple[bytes, int]:
    """One panel per metric (p_m, p_f): a group of bars per set (``subset``), one bar per system, with
    the CI as whiskers. ``frame``: metric rows of one suite, already narrowed to the sets to show. Only
    the first ``limit`` sets are drawn (a chart of a thousand sets is unreadable and takes half a
    minute); returns (PNG, sets drawn)."""
    frame = frame.filter(pl.col("metric").is_in(list(metrics))).with_columns(pl.col("subset").alias("group"))
    groups = frame["group"].unique(maintain_order=True).to_list()[:limit]
    frame = frame.filter(pl.col("group").is_in(groups))
    systems = _systems(frame, colours)
    width = min(max(5.0, 0.35 * len(groups) * max(len(systems), 2) + 1.5), 9.0)
    fig = figure((width * len(metrics) * 0.62 + 1, 4.4))
    axes = fig.subplots(1, len(metrics), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        _grouped_bars(ax, frame.filter(pl.col("metric") == metric), groups, systems, colours, _scale(metric))
        ax.set_title(metric_label(metric), fontsize=10)
        ax.set_ylim(0, 105 if metric in PERCENT else None)
    _legend(fig, systems, colours)
    if title:
        fig.suptitle(title, y=0.02, va="bottom", fontsize=9, color="#444444")
    fig.tight_layout(rect=(0, 0.04 if title else 0, 1, 0.92))
    return _png(fig), len(groups)


@plain_text
def tgbi_bars(frame: pl.DataFrame, colours: dict[str, str]) -> bytes:
    """Left: P per set (bars per system, CI whiskers); right: the TGBI index (mean P over the paper's sets)."""
    sets = frame.filter((pl.col("metric") == "P")).with_columns(pl.col("subset").alias("group"))
    index = frame.filter(pl.col("metric") == "tgbi").with_columns(pl.lit("TGBI").alias("group"))
    systems = _systems(pl.concat([sets, index]), colours)
    groups = sets["group"].unique(maintain_order=True).to_list()
    fig = figure((12, 4.6))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [max(len(groups), 1), 1.4]})
    _grouped_bars(left, sets, groups, systems, colours, 1.0)
    left.set_title("P per set (higher: more gender-neutral output)", fontsize=10)
    left.set_ylim(0, 1.05)
    _grouped_bars(right, index, ["TGBI"], systems, colours, 1.0)
    right.set_title("TGBI index", fontsize=10)
    right.set_ylim(0, 1.05)
    _legend(fig, systems, colours)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return _png(fig)


def _system_bars(ax, frame: pl.DataFrame, systems: list[str], colours: dict[str, str],
                 scale: float) -> dict[str, tuple[float, float]]:
    """One bar per system (``frame``: one row per system) with ``ci_low``..``ci_high`` whiskers."""
    cells = {r["system"]: r for r in frame.iter_rows(named=True)}
    placed = {}
    for i, system in enumerate(systems):
        r = cells.get(system)
        if r is None or not _finite(r["value"]):
            continue
        v = r["value"] * scale
        lo = r["ci_low"] * scale if _finite(r["ci_low"]) else v
        hi = r["ci_high"] * scale if _finite(r["ci_high"]) else v
        _bars(ax, [i], [v], 0.62, colours.get(system, "#888888"), horizontal=False)
        ax.errorbar([i], [v], yerr=[[max(v - lo, 0.0)], [max(hi - v, 0.0)]], fmt="none", ecolor=WHISKER,
                    elinewidth=0.8, capsize=3)
        placed[system] = (i, max(v, hi))
    ax.set_xticks(range(len(systems)), systems, rotation=30 if len(systems) > 3 else 0,
                  ha="right" if len(systems) > 3 else "center", fontsize=9)
    ax.set_xlim(-0.6, len(systems) - 0.4)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return placed


@plain_text
def winomt_bars(frame: pl.DataFrame, colours: dict[str, str], marks: dict[str, str] | None = None,
                metrics: tuple[str, ...] = ("acc", "delta_g", "delta_s")) -> bytes:
    """One panel per metric (Acc, ΔG, ΔS on subset ``all``), a bar per system with CI whiskers. ``marks``
    (system -> "best" or "worst") labels the Acc bars of systems significantly better (worse) than
    every other system."""
    marks = marks or {}
    frame = frame.filter(pl.col("metric").is_in(list(metrics)))
    systems = _systems(frame, colours)
    fig = figure((max(9.0, 0.75 * len(systems) * len(metrics) + 2), 4.2))
    axes = fig.subplots(1, len(metrics), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        placed = _system_bars(ax, frame.filter(pl.col("metric") == metric), systems, colours, _scale(metric))
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(metric_label(metric), fontsize=10)
        if metric == "acc":
            ax.set_ylim(0, 115)
            for system, (x, top) in placed.items():
                if system in marks:
                    ax.annotate("▲ best" if marks[system] == "best" else "▼ worst", (x, top), xytext=(0, 4),
                                textcoords="offset points", ha="center", va="bottom", fontsize=9, fontweight="bold",
                                color=SIGNIFICANT)
        else:
            lo, hi = ax.get_ylim()
            pad = 0.05 * (hi - lo)
            ax.set_ylim(min(lo, 0) - (pad if lo < 0 else 0), max(hi, 0) + pad)
    _legend(fig, systems, colours)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return _png(fig)


@plain_text
def winomt_language_bars(frame: pl.DataFrame, colours: dict[str, str],
                         metrics: tuple[str, ...] = ("acc", "delta_g", "delta_s")) -> bytes:
    """WinoMT per target language: one panel per metric, a group of bars per language (``subset``),
    one bar per system, CI whiskers."""
    frame = frame.filter(pl.col("metric").is_in(list(metrics))).with_columns(pl.col("subset").alias("group"))
    systems = _systems(frame, colours)
    languages = sorted(frame["group"].unique().to_list())
    fig = figure((max(8.0, 0.35 * len(languages) * len(systems) + 2), 2.8 * len(metrics)))
    axes = fig.subplots(len(metrics), 1, squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        _grouped_bars(ax, frame.filter(pl.col("metric") == metric), languages, systems, colours, _scale(metric))
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(metric_label(metric), fontsize=10)
        if metric == "acc":
            ax.set_ylim(0, 100)
    _legend(fig, systems, colours)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return _png(fig)
