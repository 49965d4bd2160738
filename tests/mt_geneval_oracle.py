"""MT-GenEval's own scorer, ``accuracy_metric.py`` of the mirrored dataset, as the oracle our decisions
are checked against (tests only: biaseval never imports it, and it is never copied into the repo).

Two ways in: ``script(...)`` runs the file as the paper's authors ship it, in a subprocess with this
interpreter, and returns the accuracy it prints (its only output); ``module()`` imports it from the
mirror so that its per-line decisions (``accuracy_metric`` returns them) can be compared line by line.
Both use the copy whose SHA-256 the dataset registry pins (``resolve("mt-geneval").path``).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import polars as pl

from biaseval.data.datasets import resolve
from biaseval.label.reference_words import label_outputs
from biaseval.suites import SUITES

SCRIPT = "accuracy_metric.py"
_PRINTED = re.compile(r"MTGenEval Accuracy for the en_(\w+) (\w+) (\w+) subset is (\S+)")


def script_path() -> Path:
    return resolve("mt-geneval").path(SCRIPT)  # checksum verified


@cache
def module():
    spec = importlib.util.spec_from_file_location("mtgeneval_accuracy_metric", script_path())
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def script(lang: str, dataset: str, split: str, **hyps: Path) -> float:
    """The accuracy the script prints: ``hyp=`` for the contextual set, ``hyp_feminine=`` and
    ``hyp_masculine=`` for the counterfactual set."""
    args = [sys.executable, str(script_path()), "--target_lang", lang, "--dataset", dataset, "--data_split", split]
    for name, path in hyps.items():
        args += [f"--{name}", str(path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=script_path().parent)
    assert done.returncode == 0, done.stderr
    found = _PRINTED.search(done.stdout)
    assert found and found.group(1) == lang and found.group(2) == dataset, done.stdout
    return float(found.group(4))


def line_decisions(hyp: Path, reference: Path, counterfactual: Path) -> list[bool]:
    """The script's per-line decisions (True: Correct) for a hypothesis file."""
    _, decisions = module().accuracy_metric(str(hyp), str(reference), str(counterfactual))
    assert set(decisions) <= {"Correct", "Incorrect"}
    return [d == "Correct" for d in decisions]


def text_decision(hyp: str, reference: str, counterfactual: str) -> bool:
    """The script's decision on strings (its cleaning, then its decision), for generated texts."""
    m = module()
    return m.gender_decision(m.clean_line(hyp), m.clean_line(reference), m.clean_line(counterfactual))[0] == "Correct"


@cache
def items(suite: str) -> pl.DataFrame:
    return SUITES.get(suite).open().table


def language_items(suite: str, lang: str, gender: str | None = None) -> pl.DataFrame:
    """A language's items in file order (one gender's, for the counterfactual set)."""
    part = items(suite).filter(pl.col("tgt_lang") == lang)
    if gender is not None:
        part = part.filter(pl.col("subset") == f"{lang}/{gender}")
    return part.sort("line")


def ours(rows: pl.DataFrame, hyps: list[str | None], system: str = "s") -> pl.DataFrame:
    """Our labelling (the scoring path's ``label_outputs``) of ``hyps`` as outputs of ``rows``' items."""
    params = dict(SUITES.get(rows["suite"][0]).scorer_params)
    frame = rows.select("item_id", "tgt_lang", "gold", "line", "reference", "counterfactual").with_columns(
        pl.lit(system).alias("system"), pl.Series("translation", hyps, dtype=pl.String))
    return label_outputs(frame, paired=bool(params.get("paired")), hypothesis=params.get("hypothesis", "whole"))


def write_lines(path: Path, lines: list[str]) -> Path:
    """One hypothesis per line, as the script reads them (no line may hold a line break)."""
    assert not any(re.search(r"[\r\n]", line) for line in lines)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
