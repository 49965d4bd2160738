"""Metrics as pure functions: a labelled polars frame in, a tidy metrics frame out.

- TGBI and p_m/p_f/p_n: ``proportions.py``
- WinoMT acc, F1, ΔG, ΔS, N: ``winomt.py``
- bootstrap confidence intervals: ``bootstrap.py``
"""

from biaseval.metrics.proportions import gender_shares, tgbi
from biaseval.metrics.tidy import METRIC_SCHEMA
from biaseval.metrics.winomt import winomt

__all__ = ["METRIC_SCHEMA", "gender_shares", "tgbi", "winomt"]
