"""Any document given as a config is either a valid config or refused with exit status 2 and a message
naming the file: never a traceback, never unbounded work. Generated documents: random structures
(config-shaped and not) serialised as YAML, the example configs of conf/, and both mutated as text
(aliases, anchors, tags, deep nesting, duplicate keys, huge scalars, control characters, random
bytes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from biaseval.cli import main
from biaseval.config import RunConfig
from biaseval.data.yamlio import MAX_BYTES
from biaseval.translate import TRANSLATORS
from conftest import REPO

pytestmark = pytest.mark.property

CONFIGS = sorted((REPO / "conf").glob("*.yaml"))
REAL_TEXTS = [path.read_text(encoding="utf-8") for path in CONFIGS]

# words a config is made of, so that generated documents get past the first check now and then
FIELDS = sorted(set(RunConfig.model_fields) | {"backend", "version", "options", "files", "model", "extra_body",
                                                "path", "enabled", "store", "baselines", "run", "system", "limits",
                                                "retry", "actors", "conditions", "requests", "<<"})
NAMES = ["otsc-en", "winomt-hi", "tgbi-hi", "identity", "recorded", "openai", "google", "es", "it", "no", "yes",
         "previous", "auto", "~", "null", "1e3", "0x1", ".nan", "2026-01-01", "a.txt", "../x", "s3://b/p"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=12), st.sampled_from(NAMES + sorted(TRANSLATORS)))
keys = st.one_of(st.sampled_from(FIELDS + NAMES), st.text(max_size=8), st.integers(-3, 3))
structures = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(keys, inner, max_size=5)),
                          max_leaves=25)


@st.composite
def config_shaped(draw) -> dict:
    """A mapping with a config's top-level keys and systems with real backend names and random options."""
    doc = draw(st.dictionaries(st.sampled_from(FIELDS), structures, max_size=6))
    doc.setdefault("suites", draw(st.lists(st.sampled_from(NAMES[:3]), min_size=1, max_size=2)))
    doc["systems"] = draw(st.dictionaries(
        st.text(min_size=1, max_size=6),
        st.fixed_dictionaries({"backend": st.sampled_from(sorted(TRANSLATORS))},
                              optional={"version": scalars, "options": st.dictionaries(keys, structures, max_size=3),
                                        "actors": scalars, "limits": structures}),
        max_size=2))
    return doc


def dump(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


TAGS = ["!!str", "!!int", "!!float", "!!bool", "!!null", "!!timestamp", "!!seq", "!!map", "!!binary", "!!set",
        "!!omap", "!!pairs", "!!merge", "!!value", "!!python/object:os.system", "!!python/tuple", "!", "!x",
        "!<tag:yaml.org,2002:int>"]
FRAGMENTS = ["&a ", "*a", "&b [1, 2]", "*b", "<<: *a\n", "<<: [*a, *b]\n", "!!python/object:os.system ",
             "!!python/name:os.system ", "!!binary ", "!!set ", "!custom ", "!!str ", "!!int ", "!!map ", "? ",
             ": ", "- ", "\t", "\x00", "\x07", "\ufeff", "\r\n", "\r", "---\n", "...\n", "%YAML 1.1\n",
             "%TAG ! tag:x,2000:\n", "'", '"', "|\n", ">-\n", "#", "{", "}", "[", "]", ",", "\\", "\u2028",
             "\U0001F600", "x" * 5000, "[" * 3000, "{a: " * 500, "- " * 200, "  " * 50]


@st.composite
def mutated(draw, texts: st.SearchStrategy[str]) -> bytes:
    """A document's text, edited a few times, then encoded (and perhaps with bytes that are not UTF-8)."""
    text = draw(texts)
    for _ in range(draw(st.integers(0, 5))):
        where = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "line twice", "character", "alias bomb", "nest", "tag"]))
        if edit == "insert":
            text = text[:where] + draw(st.sampled_from(FRAGMENTS)) + text[where:]
        elif edit == "delete":
            text = text[:where] + text[where + draw(st.integers(1, 40)):]
        elif edit == "line twice":  # a key given twice, most often
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(draw(st.integers(i, len(lines))), lines[i])
            text = "\n".join(lines)
        elif edit == "character":
            text = text[:where] + draw(st.characters()) + text[where + 1:]
        elif edit == "tag":  # a tag on a value: one of plain data's (perhaps the wrong one for it), or another
            where = text.find(": ", where)
            if where >= 0:
                text = text[:where + 2] + draw(st.sampled_from(TAGS)) + " " + text[where + 2:]
        elif edit == "alias bomb":
            width, depth = draw(st.integers(2, 12)), draw(st.integers(1, 12))
            bomb = "b0: &b0 [" + ", ".join(["x"] * width) + "]\n" + "".join(
                f"b{i}: &b{i} [" + ", ".join([f"*b{i - 1}"] * width) + "]\n" for i in range(1, depth))
            text = bomb + text
        else:  # nesting, at the start of a line (inside a plain scalar, `[` is only a character)
            where = text.rfind("\n", 0, where) + 1
            opener = draw(st.sampled_from(["[", "{", "{a: ", "- ", "[{a: "]))
            text = text[:where] + "zz: " + opener * draw(st.integers(1, 60_000)) + "\n" + text[where:]
    data = text.encode("utf-8")
    if draw(st.booleans()) and draw(st.booleans()):  # one time in four: some random bytes
        where = draw(st.integers(0, len(data)))
        data = data[:where] + draw(st.binary(min_size=1, max_size=8)) + data[where:]
    return data


documents = st.one_of(
    mutated(st.sampled_from(REAL_TEXTS)),
    mutated(st.one_of(structures, config_shaped()).map(dump)),
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8")),
)


def _kind(output: str, path: Path) -> str:
    """What became of a document, for ``--hypothesis-show-statistics``: valid, or the kind of refusal."""
    if ": ok" in output:
        return "valid"
    words = output.removeprefix("error: ").replace(str(path), "").split(":")
    return next((w.strip().split(" (")[0][:40] for w in words if w.strip() and not w.strip().isdigit()), "?")


def validate(path: Path, *extra: str):
    return CliRunner().invoke(main, ["validate", "--no-data", *extra, "--config", str(path)])


# The worst document within the loader's limits is read in about a second on an idle machine and a
# few on a loaded 2-core one; a document the limits miss (an alias bomb, deep nesting) takes minutes.
# 30 s tells the two apart with a wide margin for a busy machine.
BOUND_S = 30


@given(documents)
# the --data check's error for a model not on this machine named no file (found by this test in a full run)
@example((REPO / "conf" / "cluster-sweep.yaml").read_bytes())
@example(b"name: dup\nsuites: [otsc-en]\nsystems:\n  a: {backend: identity}\n  a: {backend: identity}\n")
@example(("l0: &l0 [" + ", ".join(["lol"] * 9) + "]\n" + "".join(
    f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))).encode())
@example(b"systems: " + b"[" * 100_000)
@example(b"a: &a [*a]\n")
@example(b"a: !!int abc\n")
@example(b"!!int")
@example(b"a: " + b"1" * 5000 + b"\n")
@example(b"a: !!python/object/apply:os.system [echo]\n")
@example(b"x: " + b"y" * (MAX_BYTES + 1))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
def test_any_document_is_a_config_or_exit_2(tmp_path, data):
    path = tmp_path / "config.yaml"
    path.write_bytes(data)
    start = time.monotonic()
    result = validate(path)
    if result.exit_code == 0:  # names and fields are right: now with the datasets, recorded files, models
        result = validate(path, "--data")
    elapsed = time.monotonic() - start
    assert result.exception is None or isinstance(result.exception, SystemExit), (data[:300], result.exception)
    assert result.exit_code in (0, 2), (data[:300], result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert str(path) in result.output, result.output  # the message names the file
    event(_kind(result.output, path))
    # timing: BOUND_S (above) is minutes below what an unbounded document takes and seconds above the worst seen
    assert elapsed < BOUND_S, (data[:300], elapsed)


@given(mutated(st.sampled_from(REAL_TEXTS)))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
def test_every_refusal_names_a_line_when_the_document_is_text(tmp_path, data):
    """A refusal of a document that is UTF-8 text names where: file:line (or the whole file's size)."""
    path = tmp_path / "config.yaml"
    path.write_bytes(data)
    result = validate(path)
    if result.exit_code == 2:
        first = result.output.removeprefix("error: ").splitlines()[0]
        located = first.startswith(f"{path}:") or "YAML too large" in first or "expected a mapping" in first \
            or "Field required" in result.output
        assert located, result.output
