"""Helpers shared by the per-language gender-analyser tests (test_gender_*.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from biaseval.label.analysers.base import Reading
from biaseval.label.tokens import tokenize

M, F, N, U = "male", "female", "neutral", "unknown"


def read(analyser, text: str, span: list[int], lang: str | None = None) -> Reading:
    """The analyser's reading of one sentence (tokenized for ``lang``, default the analyser's) and span."""
    return analyser.analyse([tokenize(text, lang or analyser.lang)], [span])[0]


def label_reason(reading: Reading) -> tuple[str, str]:
    return reading.label, reading.reason


def ids(rows) -> list[str]:
    return [f"{n}-{row[-2]}-{row[-1]}" for n, row in enumerate(rows)]


def mt_gender(*parts: str) -> Path:
    """A file of the mirrored mt_gender data set (a failure, never a skip, when it is not there)."""
    root = Path(os.environ.get("BIASEVAL_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "datasets")
    path = root.joinpath("mt_gender", *parts)
    if not path.is_file():
        pytest.fail(f"{path} is absent (the mirrored mt_gender data set; set BIASEVAL_DATA_DIR)", pytrace=False)
    return path
