"""Numbers as the reports show them: one unit per kind of number, the same decimals everywhere (tables
of report.md and report.html, chart axes, the command line).

- a share of items (Acc, p_f, misgendered, ...), a score on the same scale (F1) and a mean of shares
  (GEST's f_m): percent, one decimal, unit ``%``;
- a difference of two shares (ΔG, ΔS, GEST's f_s, a paired difference, a change): percentage points, one
  decimal, signed, unit ``pp``;
- a count: an integer, with thousands separators;
- an index on 0–1 that is not a share (P, TGBI): three decimals;
- a correlation: two decimals;
- a p-value: three decimals, ``< 0.001`` below that;
- anything else (the embedding study's means): three decimals, or three significant digits when smaller.

``number`` gives a value without its unit (for a column whose header names it: ``header``), ``text``
with it; ``interval`` gives ``[low, high]`` in the same unit. None is a dash; NaN is "NaN".
"""

from __future__ import annotations

import math

SHARE, POINTS, COUNT, INDEX, CORRELATION, PVALUE, PLAIN = "share", "points", "count", "index", "correlation", "p", "plain"
SHARE_DECIMALS = POINT_DECIMALS = 1
UNITS = {SHARE: "%", POINTS: "pp"}

KIND = {m: SHARE for m in (
    "p_m", "p_f", "p_n", "acc", "neutral", "unknown", "f1_male", "f1_female", "macro_f1", "control_acc",
    "control_unknown", "control_unasked", "misgendered", "ambiguous", "read", "mixed", "no_reader", "worst_gender",
    "worst_language", "worst_set", "worst_level", "worst_case", "undecided", "share_rose_f", "share_rose_m",
    "to_masculine", "to_feminine", "to_both", "to_unknown", "masculine_rate", "unread", "f_m", "f_m_ac")}
KIND |= {"delta_g": POINTS, "delta_s": POINTS, "diff_correct": POINTS, "f_s": POINTS, "f_s_ac": POINTS, "worst_case_cells": COUNT, "P": INDEX,
         "tgbi": INDEX, "r_female_share": CORRELATION, "rho_female_share": CORRELATION, "mcnemar_p": PVALUE}
# shares and differences of shares are stored as fractions: shown ×100
SCALE = {SHARE: 100.0, POINTS: 100.0}


def kind(metric: str) -> str:
    return KIND.get(metric, PLAIN)


def unit(metric: str) -> str:
    """The unit a metric is shown in: "%", "pp" or "" (a number without one)."""
    return UNITS.get(kind(metric), "")


def scale(metric: str) -> float:
    """What a stored value is multiplied by to be shown (100 for shares and points)."""
    return SCALE.get(kind(metric), 1.0)


def _missing(value) -> bool:
    return value is None


def _nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def number(value, metric: str) -> str:
    """``value`` at its metric's scale and precision, without the unit."""
    if _missing(value):
        return "—"
    if _nan(value):
        return "NaN"
    k = kind(metric)
    if k == SHARE:
        return share(value)
    if k == POINTS:
        return points(value)
    if k == COUNT:
        return count(value)
    if k == INDEX:
        return f"{value:.3f}"
    if k == CORRELATION:
        return f"{value:.2f}"
    if k == PVALUE:
        return p_value(value)
    return plain(value)


def text(value, metric: str) -> str:
    """``number`` with its unit: "56.7%", "+3.2 pp", "0.742", "12"."""
    k = kind(metric)
    return _with_unit(number(value, metric), "%" if k == SHARE else " pp" if k == POINTS else "")


def interval(low, high, metric: str) -> str | None:
    """``[low, high]`` at the metric's scale, without the unit; None where neither bound is known."""
    if (_missing(low) or _nan(low)) and (_missing(high) or _nan(high)):
        return None
    return f"[{number(low, metric)}, {number(high, metric)}]"


def header(label: str, metric: str) -> str:
    """A column's or an axis's name with its unit: "Acc (%)", "ΔG (pp)", "TGBI"."""
    u = unit(metric)
    return f"{label} ({u})" if u else label


def _scaled(value, spec: str) -> str:
    """A fraction × 100 in the format ``spec``; a dash for none, "NaN" for NaN."""
    if _missing(value):
        return "—"
    return "NaN" if _nan(value) else format(100 * value, spec)


def _with_unit(shown: str, unit_: str) -> str:
    return shown if shown in ("—", "NaN") else shown + unit_


_SHARE = f".{SHARE_DECIMALS}f"
_POINTS = f"+.{POINT_DECIMALS}f"


def share(value) -> str:
    """A fraction as percent, one decimal, no unit ("56.7")."""
    return _scaled(value, _SHARE)


def share_text(value) -> str:
    """A fraction as percent with its unit ("56.7%")."""
    return _with_unit(share(value), "%")


def points(value) -> str:
    """A difference of two fractions in percentage points, signed, one decimal, no unit ("+3.2")."""
    return _scaled(value, _POINTS)


def points_text(value) -> str:
    """A difference of two fractions with its unit ("+3.2 pp")."""
    return _with_unit(points(value), " pp")


def count(value) -> str:
    """A count as an integer with thousands separators ("1,234")."""
    if _missing(value):
        return "—"
    return "NaN" if _nan(value) else f"{int(round(value)):,}"


def p_value(p) -> str:
    if _missing(p) or _nan(p):
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def plain(value) -> str:
    """A number with no unit of its own: three decimals, or three significant digits when smaller."""
    if _missing(value):
        return "—"
    if _nan(value):
        return "NaN"
    return f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2e}"


def _signed(x, metric: str) -> str:
    if _missing(x) or _nan(x):
        return "—"
    return points(x) if kind(metric) in (SHARE, POINTS) else f"{x:+.3f}"


def _change_unit(metric: str) -> str:
    return " pp" if kind(metric) in (SHARE, POINTS) else ""


def change(value, metric: str, low=None, high=None) -> str:
    """A change of a metric (from a baseline, between two systems), signed, with its interval where
    given, and its unit: a change of a share or of a difference of shares in percentage points
    ("+3.2 [+1.0, +5.4] pp"), of any other value in its own terms ("-0.012")."""
    if _missing(value) or _nan(value):
        return "—"
    shown = _signed(value, metric)
    if not (_missing(low) or _missing(high)):
        shown += f" [{_signed(low, metric)}, {_signed(high, metric)}]"
    return shown + _change_unit(metric)


def change_interval(low, high, metric: str) -> str:
    """The interval of a change alone, with its unit ("[+1.0, +5.4] pp")."""
    if _missing(low) and _missing(high):
        return "—"
    return f"[{_signed(low, metric)}, {_signed(high, metric)}]{_change_unit(metric)}"


def at_precision(value, scale_: float, decimals: int) -> str:
    """A value at a published table's own scale and precision (to set it beside the printed one)."""
    if _missing(value):
        return "—"
    return f"{value * scale_:.{decimals}f}"
