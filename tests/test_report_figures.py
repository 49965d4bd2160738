"""The report's figures drawn the cheaper way look exactly as matplotlib's plain way draws them: bars
as one collection against ``Axes.bar``'s patches, the grown figure of moved labels against savefig's
own ``bbox_inches="tight"``, and occupation charts drawn on a shared figure against a figure each,
compared pixel by pixel."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest
from PIL import Image

from biaseval.report import plots
from biaseval.report.occupation_chart import occupation_charts

# values of both signs, zero, a sliver, one far larger than the rest; positions off the integer grid
VALUES = [37.5, -12.25, 0.0, 0.004, 99.99, 250.0, -0.5, 61.0, 3.3333]
POSITIONS = [k - 0.4 + 0.8 / 3 * (k % 3 + 0.5) for k in range(len(VALUES))]


def _pixels(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


@pytest.mark.parametrize("horizontal", [False, True])
def test_bars_are_the_pixels_of_axes_bar(horizontal):
    thickness = 0.8 / 3 * 0.92
    plain, fast = plots.figure((6, 4)), plots.figure((6, 4))
    reference, ours = plain.subplots(), fast.subplots()
    if horizontal:
        reference.barh(POSITIONS, VALUES, height=thickness, color="#0072B2")
    else:
        reference.bar(POSITIONS, VALUES, width=thickness, color="#0072B2")
    plots._bars(ours, POSITIONS, VALUES, thickness, "#0072B2", horizontal)
    # autoscaled alike: the value axis stops at 0 on neither side (values of both signs) and the
    # positions' axis gets the same margins
    assert ours.get_xlim() == reference.get_xlim() and ours.get_ylim() == reference.get_ylim()
    assert np.array_equal(_pixels(fast), _pixels(plain))


def test_bars_of_positive_values_autoscale_from_zero_like_axes_bar():
    plain, fast = plots.figure((4, 3)), plots.figure((4, 3))
    reference, ours = plain.subplots(), fast.subplots()
    reference.bar([0, 1, 2], [40.0, 55.0, 47.0], width=0.5, color="#E69F00")
    plots._bars(ours, [0, 1, 2], [40.0, 55.0, 47.0], 0.5, "#E69F00", horizontal=False)
    assert ours.get_ylim() == reference.get_ylim() and ours.get_ylim()[0] == 0.0  # no margin below 0
    assert np.array_equal(_pixels(fast), _pixels(plain))


def _labelled(fig):
    """Forty long category labels on x and 120 on y: both collide as first laid out."""
    top, side = fig.subplots(2, 1)
    top.bar(range(40), range(40))
    top.set_xticks(range(40), [f"ünïcode ‘set’ №{k} — long" for k in range(40)])
    side.barh(range(120), range(120))
    side.set_yticks(range(120), [f"occupation {k}" for k in range(120)], fontsize=9)
    fig.suptitle("labels that need moving")
    return fig


def test_png_of_moved_labels_is_savefigs_tight_box():
    fig = _labelled(plots.figure((10, 8)))
    ours = Image.open(io.BytesIO(plots._png(fig)))

    plain = _labelled(plots.figure((10, 8)))
    assert plots.unclutter(plain)
    buffer = io.BytesIO()
    plain.savefig(buffer, format="png", dpi=100, bbox_inches="tight", pad_inches=0.1)
    reference = Image.open(io.BytesIO(buffer.getvalue()))

    assert ours.size == reference.size and ours.size != (1000, 800)  # grown to hold the upright labels
    assert np.array_equal(np.asarray(ours), np.asarray(reference))


def _rates(occupations: list[str], systems: list[str], seed: int) -> pl.DataFrame:
    """One language's p_f per occupation × system, with intervals (some missing, some NaN values)."""
    rng = np.random.default_rng(seed)
    rows = []
    for o in occupations:
        for s in systems:
            v = float(rng.uniform(0, 1))
            rows.append({"occupation": o, "system": s, "value": float("nan") if rng.uniform() < 0.03 else v,
                         "ci_low": None if rng.uniform() < 0.1 else max(v - 0.1, 0.0), "ci_high": min(v + 0.15, 1.0)})
    return pl.DataFrame(rows)


def test_occupation_charts_sharing_a_figure_are_the_pixels_of_a_figure_each():
    names = [f"occupation “{k}” — ünïcode" if k % 7 == 0 else f"occupation {k}" for k in range(90)]
    shares = {n: float(k % 101) for k, n in enumerate(names) if k % 11}  # some occupations without a share
    colours = plots.system_colours(["a", "b"])
    languages = [
        _rates(names, ["a", "b"], 1),
        _rates(names, ["a", "b"], 2),  # the same occupations and systems, other values: the figure is shared
        _rates(names, ["a"], 3),  # one system: a new figure
        _rates(names, ["a"], 4),
        _rates(names[:40], ["a"], 5),  # fewer occupations: all drawn, another size
        _rates(names[:40][::-1], ["a"], 6),
    ]
    together = occupation_charts(languages, colours, shares, limit=60)
    alone = [occupation_charts([frame], colours, shares, limit=60)[0] for frame in languages]
    assert [drawn for _, drawn in together] == [60, 60, 60, 60, 40, 40]
    for (png, _), (reference, _) in zip(together, alone):
        assert png.startswith(b"\x89PNG")
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(png))), np.asarray(Image.open(io.BytesIO(reference))))
    # and they are different charts: the shared figure was redrawn, not reused as it was
    assert len({png for png, _ in together}) == len(languages)
