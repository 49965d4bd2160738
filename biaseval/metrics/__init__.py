"""Metrics: from labels to numbers. The metrics themselves are pure functions — a labelled polars
frame in, a tidy frame (one row per system × suite × subset × metric) out:

- TGBI and p_m/p_f/p_n: ``proportions.py``; per occupation: ``occupations.py``
- WinoMT acc, F1, ΔG, ΔS, N: ``winomt.py``
- bootstrap confidence intervals: ``bootstrap.py``; McNemar between systems: ``paired.py``
- embedding bias (intensity, direction, bins, shift): ``embedding.py``
- gender control (does a system use the gender it is asked for): ``control.py``

Around them, with I/O: ``scoring.py`` reads a run's shards, labels them and writes labels and
metrics; ``embedding_study.py`` and ``word_vectors.py`` run the embedding-bias study. Imports
``label``, ``run`` (to read a run), ``config``, ``suites``, ``data``; never ``report``.
"""

from biaseval.metrics.proportions import gender_shares, tgbi
from biaseval.metrics.tidy import METRIC_SCHEMA
from biaseval.metrics.winomt import winomt

__all__ = ["METRIC_SCHEMA", "gender_shares", "tgbi", "winomt"]
