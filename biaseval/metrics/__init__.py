"""Metrics as pure functions: a labelled polars frame in, a tidy metrics frame out.

- TGBI and p_m/p_f/p_n: ``proportions.py``
- WinoMT acc, F1, ΔG, ΔS, N: ``winomt.py``
- bootstrap confidence intervals: ``bootstrap.py``
"""

from .proportions import gender_shares, tgbi
from .tidy import METRIC_SCHEMA
from .winomt import winomt

__all__ = ["METRIC_SCHEMA", "gender_shares", "tgbi", "winomt"]
