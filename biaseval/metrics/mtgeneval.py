"""MT-GenEval scores (Currey et al. 2022) from the decisions of ``mt-geneval-words``.

An output is right unless it has a word only the counterfactual reference has (the reasons of
``biaseval.label.reference_words``). Per system × target language:

- ``<lang>/feminine``, ``<lang>/masculine`` (and, for the contextual set, ``<lang>/unmarked``: items
  whose English context cues no single gender): ``acc``, the share of outputs that are right, and
  ``undecided``, the share right only because the output has neither reference's unique words (or
  the references have none): what the metric cannot see, reported beside it.
- ``<lang>``, counterfactual set (``paired``): over the sentences whose two versions both have an
  output, ``acc`` = the share where both are right (what the paper's script prints), and
  ``delta_g`` = Acc(masculine) − Acc(feminine) on those sentences. The two versions of a sentence are
  one sampling unit: the gap's interval is Newcombe's for paired shares, from the four counts of
  (feminine right?, masculine right?), so it accounts for the correlation between a sentence's
  versions.
- ``<lang>``, contextual set: ``acc`` over every output (what the script prints), and ``delta_g`` =
  Acc(masculine) − Acc(feminine) between two different sets of sentences (Newcombe's interval for
  independent shares; unmarked items count in ``acc`` only).

Rows without an output are not scored. Intervals (``biaseval/metrics/wilson.py``): Wilson's for the
shares (``acc``, ``undecided``), Newcombe's for the gaps: never a point at 0/n or n/n.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.label.reference_words import WRONG_REASONS
from biaseval.metrics.bootstrap import CONFIDENCE
from biaseval.metrics.tidy import MetricRows, count_cells

GENDER_SUBSETS = {"female": "feminine", "male": "masculine", None: "unmarked"}
UNDECIDED = ("no-unique-word", "counterfactual-contained", "references-same")


def right_expr(reason: pl.Expr) -> pl.Expr:
    """The paper's decision from a row's reason (null where the row has no output)."""
    return pl.when(reason.is_null()).then(None).otherwise(~reason.is_in(WRONG_REASONS))


def _tables(labelled: pl.DataFrame) -> dict:
    """Per (system, suite, tgt_lang): per gold, counts [right, wrong, undecided]; and the 2×2 pair
    table [feminine right][masculine right] from the feminine rows whose partner has an output."""
    out: dict = {}
    keys = ["system", "suite", "tgt_lang", "gold", "reason", "partner"]
    for system, suite, tgt, gold, reason, partner, count in count_cells(labelled, keys):
        if reason is None:  # no output: not scored
            continue
        entry = out.setdefault((system, suite, tgt), {"sets": {}, "pairs": np.zeros((2, 2), dtype=np.int64)})
        cells = entry["sets"].setdefault(gold, np.zeros(3, dtype=np.int64))
        right = reason not in WRONG_REASONS
        cells[0 if right else 1] += count
        cells[2] += count if reason in UNDECIDED else 0
        if gold == "female" and partner is not None:
            entry["pairs"][int(right), int(partner)] += count
    return out


def _share(rows: MetricRows, key: tuple, metric: str, hits: int, n: int) -> None:
    """A plain share: Wilson's interval (never a point at 0/n or n/n, as a bootstrap's would be)."""
    rows.add_share(*key, metric, hits / n if n else float("nan"), n)


def mtgeneval(labelled: pl.DataFrame, *, paired: bool = True, hypothesis: str = "whole", n_boot: int = 1000,
              seed: int = 0, confidence: float = CONFIDENCE) -> pl.DataFrame:
    """MT-GenEval metrics per system × suite × target language (module docstring). ``labelled``: label
    counts with system, suite, tgt_lang, gold, reason, partner (and count). ``hypothesis`` is the
    labeller's (which part of an output was read); the scorer does not need it. ``n_boot`` and ``seed``
    are taken as every scorer's are (metrics/scoring.py passes them to all); no interval here is
    bootstrapped (Wilson's and Newcombe's are closed-form), so they change nothing."""
    rows = MetricRows()
    for (system, suite, tgt), entry in sorted(_tables(labelled).items(), key=lambda kv: tuple(k or "" for k in kv[0])):
        strata = []
        for gold, cells in sorted(entry["sets"].items(), key=lambda kv: kv[0] or "~"):
            n = int(cells[0] + cells[1])
            key = (system, suite, f"{tgt}/{GENDER_SUBSETS[gold]}")
            _share(rows, key, "acc", int(cells[0]), n)
            _share(rows, key, "undecided", int(cells[2]), n)
            strata.append((gold, cells))
        if paired:
            _paired(rows, system, suite, tgt, entry["pairs"])
        else:
            _unpaired(rows, system, suite, tgt, strata)
    return rows.frame(confidence)


def _paired(rows: MetricRows, system: str, suite: str, tgt: str, pairs: np.ndarray) -> None:
    """``<lang>``: both versions right, and the gap over the same sentences (a paired interval)."""
    n = int(pairs.sum())
    both = pairs[1, 1]
    # Acc(masculine) − Acc(feminine) = (feminine wrong, masculine right − feminine right, masculine wrong) / n
    gap = (pairs[0, 1] - pairs[1, 0]) / n if n else float("nan")
    _share(rows, (system, suite, tgt), "acc", int(both), n)
    # masculine right and feminine right; masculine alone; feminine alone; neither
    rows.add_paired_difference(system, suite, tgt, "delta_g", gap, n,
                               (int(pairs[1, 1]), int(pairs[0, 1]), int(pairs[1, 0]), int(pairs[0, 0])))


def _unpaired(rows: MetricRows, system: str, suite: str, tgt: str, strata: list) -> None:
    """``<lang>``: accuracy over all outputs; the gap between the masculine and feminine sets."""
    right = sum(int(cells[0]) for _, cells in strata)
    n = sum(int(cells[0] + cells[1]) for _, cells in strata)
    _share(rows, (system, suite, tgt), "acc", right, n)
    by_gold = dict(strata)
    if "female" in by_gold and "male" in by_gold:
        fc, mc = by_gold["female"], by_gold["male"]
        nf, nm = int(fc[0] + fc[1]), int(mc[0] + mc[1])
        if nf and nm:
            rows.add_difference(system, suite, tgt, "delta_g", mc[0] / nm - fc[0] / nf, nf + nm,
                                (int(mc[0]), nm), (int(fc[0]), nf))


def undecidable(items: pl.DataFrame, split: str) -> pl.DataFrame:
    """The sentences of a counterfactual suite's items (its item table) whose references leave one
    version, or both, unable to be wrong: the feminine reference's words all in the masculine one
    (``f``), the reverse (``m``), or the same words (``=``). Swapped references score these right.
    Columns split, language, line, kind (none for a language without such a line), of (the language's
    sentences)."""
    from biaseval.label.reference_words import unique_words

    feminine = items.filter(pl.col("gold") == "female").sort("tgt_lang", "line")
    rows = []
    for lang, line, ref, ctf in feminine.select("tgt_lang", "line", "reference", "counterfactual").rows():
        f_only, m_only = unique_words(ref, ctf)
        if not f_only or not m_only:
            rows.append((split, lang, line, "=" if not f_only and not m_only else ("f" if not f_only else "m")))
    frame = pl.DataFrame(rows, schema={"split": pl.String, "language": pl.String, "line": pl.Int64, "kind": pl.String},
                         orient="row")
    sizes = feminine.group_by("tgt_lang").len().rename({"tgt_lang": "language", "len": "of"})
    frame = sizes.join(frame, on="language", how="left").with_columns(pl.lit(split).alias("split"))
    return frame.select("split", "language", "line", "kind", "of").sort("language", "line", nulls_last=True)
