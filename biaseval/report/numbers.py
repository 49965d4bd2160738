"""Numbers as the reports show them: fractions in percent where a metric is a share, a dash for none."""

from __future__ import annotations

PERCENT_METRICS = {"p_m", "p_f", "p_n", "acc", "delta_g", "delta_s", "neutral", "unknown", "f1_male", "f1_female",
                   "macro_f1", "control_acc", "control_unknown", "control_unasked"}
PERCENT_METRICS |= {"misgendered", "ambiguous", "read", "mixed", "no_reader", "worst_gender", "worst_language",
                    "worst_set", "worst_level", "worst_case"}  # MiTTenS (report/mittens.py)


def fmt_value(value: float | None, scale: float, decimals: int) -> str:
    """A metric value at a table's scale and precision; "—" when there is none."""
    if value is None:
        return "—"
    return f"{value * scale:.{decimals}f}"


def metric_format(metric: str) -> tuple[float, int, str]:
    """(scale, decimals, unit) a metric is shown with: fractions in percent, other values as they are."""
    return (100, 2, " %") if metric in PERCENT_METRICS else (1, 4, "")


def percent(value: float | None) -> str:
    """A share in percent with one decimal; a dash for none (or NaN)."""
    return "—" if value is None or value != value else f"{100 * value:.1f}%"
