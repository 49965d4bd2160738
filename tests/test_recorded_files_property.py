"""Any content of a recorded-output file (the `recorded` backend: one translation a line, or
``source ||| translation`` pairs) is either accepted — and then every item reads a text or a stated
error — or refused with exit status 2 naming the file: never a traceback. Generated contents: the
right outputs, then lines dropped, doubled or added, NULs and control characters, CR, LF and CRLF
mixed, byte-order marks, Unicode line separators, long lines, invalid UTF-8, random bytes."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from biaseval.cli import main
from biaseval.errors import BiasevalError
from biaseval.pipeline import load
from biaseval.run.plan import build_translator
from conftest import REPO

pytestmark = pytest.mark.property

LEXICON = list(csv.DictReader((REPO / "biaseval" / "data" / "lexicon" / "occupations.csv").open(encoding="utf-8")))
VARIANTS = ("her", "him")
SOURCE = {"her": "I've known her for a long time, my friend works as {en_article} {en}.",
          "him": "I've known him for a long time, my friend works as {en_article} {en}."}
OUTPUT = {"her": "La conozco desde hace mucho tiempo, mi amiga trabaja como {es_f}.",
          "him": "Lo conozco desde hace mucho tiempo, mi amigo trabaja como {es_m}."}


def right_lines(variant: str, fmt: str) -> list[str]:
    """What a Spanish system might have answered, in the file's format."""
    outputs = [OUTPUT[variant].format(**row) for row in LEXICON]
    if fmt == "lines":
        return outputs
    return [f"{SOURCE[variant].format(**row)} ||| {out}" for row, out in zip(LEXICON, outputs)]


ODD = ["\x00", "\x07", "\t", "\r", "\r\n", "\n", "\ufeff", "\u2028", "\x85", " ||| ", "|||", "\\", "é", "\U0001F600",
       "x" * 3000, " ", ""]
NEWLINES = ["\n", "\r\n", "\r"]


@st.composite
def contents(draw, variant: str, fmt: str) -> bytes:
    lines = right_lines(variant, fmt)
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(lines)))
        # mostly characters within a line, which keep the counts right: files that are then accepted
        edit = draw(st.sampled_from(["drop", "double", "add", "odd", "odd", "odd", "odd", "empty all"]))
        if edit == "drop" and lines:
            del lines[min(i, len(lines) - 1)]
        elif edit == "double" and lines:
            lines.insert(i, lines[min(i, len(lines) - 1)])
        elif edit == "add":
            lines.insert(i, draw(st.text(max_size=30)))
        elif edit == "odd" and lines:
            j = min(i, len(lines) - 1)
            at = draw(st.integers(0, len(lines[j])))
            lines[j] = lines[j][:at] + draw(st.sampled_from(ODD)) + lines[j][at:]
        elif edit == "empty all":
            lines = []
    # the line ends: one kind, or each line its own
    ends = [draw(st.sampled_from(NEWLINES))] * len(lines) if draw(st.booleans()) else \
        [draw(st.sampled_from(NEWLINES)) for _ in lines]
    data = "".join(line + end for line, end in zip(lines, ends)).encode("utf-8")
    if draw(st.integers(0, 3)) == 0:  # one time in four: bytes that are not UTF-8, or none of the text
        where = draw(st.integers(0, len(data)))
        data = data[:where] + draw(st.binary(min_size=1, max_size=6)) + data[where:]
    if draw(st.integers(0, 15)) == 0:
        data = draw(st.binary(max_size=200))
    return data


@st.composite
def recorded_case(draw) -> tuple[str, bytes, bytes]:
    fmt = draw(st.sampled_from(["lines", "pairs"]))
    return fmt, draw(contents("her", fmt)), draw(contents("him", fmt))


def setup(tmp_path: Path, fmt: str, her: bytes, him: bytes) -> Path:
    for variant, data in (("her", her), ("him", him)):
        path = tmp_path / "out" / "es" / f"{variant}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    options = {"files": {"otsc-en": "out/{target}/{stem}.txt"}}
    if fmt == "pairs":
        options["format"] = "pairs"
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "name": "rec", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
        "systems": {"mine": {"backend": "recorded", "version": "test", "options": options}},
    }), encoding="utf-8")
    return config


def _right(variant: str, fmt: str) -> bytes:
    return ("\n".join(right_lines(variant, fmt)) + "\n").encode("utf-8")


@given(recorded_case())
@example(("lines", _right("her", "lines"), _right("him", "lines")))  # accepted
@example(("pairs", _right("her", "pairs"), _right("him", "pairs")))
@example(("lines", b"\xff\xfe" + _right("her", "lines"), _right("him", "lines")))  # UTF-16's mark, or Latin-1
@example(("lines", _right("her", "lines").replace(b"\n", b"\r", 7), _right("him", "lines")))  # CR inside: more lines
@example(("lines", _right("her", "lines").replace(b"\n", b"\x00\n"), _right("him", "lines")))
@example(("pairs", _right("her", "pairs").replace(b" ||| ", b" | ", 1), _right("him", "pairs")))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
def test_any_recorded_file_is_read_or_refused_naming_it(tmp_path, case):
    fmt, her, him = case
    config = setup(tmp_path, fmt, her, him)
    files = [str(tmp_path / "out" / "es" / f"{v}.txt") for v in VARIANTS]
    result = CliRunner().invoke(main, ["validate", "--config", str(config)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert any(f in result.output for f in files), result.output
        event("refused: " + result.output.split(": ", 2)[-1].split("(")[0].split(",")[0][:40])
        return
    # accepted: every item reads its translation, or an error saying why (a pairs file may lack a few)
    _, prepared = load(config)
    translator = build_translator("mine", prepared.config.systems["mine"], prepared.config_dir)
    items = prepared.suites["otsc-en"].slice(0, prepared.suites["otsc-en"].size)
    try:
        texts, errors = translator.translate_items_with_errors(items)
    except BiasevalError as exc:
        assert any(f in str(exc) for f in files), exc
        return
    event(f"accepted ({fmt})")
    assert len(texts) == len(errors) == items.height
    for text, error in zip(texts, errors):
        assert (isinstance(text, str) and error is None) or (text is None and isinstance(error, str))
