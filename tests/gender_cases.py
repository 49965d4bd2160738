"""Helpers shared by the per-language gender-analyser tests (test_gender_*.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from biaseval.label.analysers.base import NO_ALIGNMENT, Reading, SpanError
from biaseval.label.tokens import tokenize

M, F, N, U = "male", "female", "neutral", "unknown"


def read(analyser, text: str, span: list[int], lang: str | None = None) -> Reading:
    """The analyser's reading of one sentence (tokenized for ``lang``, default the analyser's) and span."""
    return analyser.analyse([tokenize(text, lang or analyser.lang)], [span])[0]


def check_span_contract(analyser, tokens: list[str], span: list[int]) -> None:
    """The span contract every analyser shares (biaseval/label/analysers/base.py), on one sentence and
    a span that reads as something: an empty span is no-alignment; order and repeats in a span do
    not matter; an index outside the sentence (past its end or negative) is a SpanError naming the
    row, raised before any row is read; one span per sentence, else ValueError."""
    reading = analyser.analyse([tokens], [span])[0]
    assert reading != NO_ALIGNMENT
    assert analyser.analyse([tokens, tokens], [[], span]) == [NO_ALIGNMENT, reading]
    assert analyser.analyse([tokens], [list(reversed(span)) + span]) == [reading]
    assert analyser.analyse([], []) == []
    analyser.read_aligned = _not_called  # shadows the method: no row may be read
    try:
        for outside in (len(tokens), len(tokens) + 40, -1):
            with pytest.raises(SpanError, match=r"^1 of 3 rows have an entity span outside .*: row 1: span") as caught:
                analyser.analyse([tokens] * 3, [span, span + [outside], []])
            assert caught.value.rows == [1]
    finally:
        del analyser.read_aligned
    with pytest.raises(ValueError, match="1 sentences but 0 spans"):
        analyser.analyse([tokens], [])


def _not_called(*args):
    pytest.fail("an analyser read rows before their spans were checked")


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
