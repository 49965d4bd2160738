"""The names rule (biaseval/names.py), stated once and checked on generated inputs: any string is
either refused with a ConfigError, or accepted, and then every path the code builds from it stays
under its root, it shows as itself in a Markdown table cell and it draws as text in a chart."""

from __future__ import annotations

import html
import os
import re
import warnings
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from biaseval import names
from biaseval.config import RunConfig, SystemConfig
from biaseval.errors import ConfigError
from biaseval.monitor.history import run_folder
from biaseval.report import plots
from biaseval.report.escape import code, md, row
from biaseval.run.driver import new_run_id
from biaseval.run.rundir import RunDir, system_folder
from biaseval.translate.conditions import conditioned_name
from conftest import REPO

# every string hypothesis makes (control characters included, surrogates left out: YAML cannot hold
# them and str.encode refuses them), long ones, and ones built from the parts of paths
PATH_PARTS = st.sampled_from(["/", "\\", "..", ".", "\0", "~", "$", "|", "<", ">", "`", " ", "\n", "a", "Z", "9",
                              "-", "_", "=", "+", "é", "ह", "ि", "\u202e", "\u200d", "\ufeff", "/tmp", "C:"])
ANY_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",))),
    st.text(st.characters(exclude_categories=("Cs",)), min_size=60, max_size=400),
    st.lists(PATH_PARTS, max_size=12).map("".join),
)
NAMES_IN_USE = ["google-nmt", "indictrans2", "gpt-4o-mini", "opus-mt", "otsc-hi", "winomt-en", "gender=female",
                "prompt.fem", "nllb-600m_v1.2", "aws-2023", "singh2023", "गूगल", "Übersetzer", "翻訳"]


@pytest.mark.parametrize("name", NAMES_IN_USE)
def test_names_in_use_are_names(name):
    assert names.problem(name) is None


@pytest.mark.parametrize("name, reason", [
    ("", "is empty"), ("a/b", "holds '/'"), ("a\\b", "holds '\\\\'"), ("..", "starts with '.'"), ("a..b", "holds '..'"),
    (".env", "starts with '.'"), ("a.", "ends with '.'"), ("a\0b", "holds U+0000"), ("a b", "holds ' '"),
    ("a|b", "holds '|'"), ("$x$", "holds '$'"), ("a<b", "holds '<'"), ("a\u200db", "U+200D ZERO WIDTH JOINER"),
    ("x" * 49, "is 49 bytes long in UTF-8; at most 48"), ("ह" * 17, "is 51 bytes long"),
    ("Cafe\u0301", "is not in Unicode normal form NFC (write it as 'Café')"), ("ि", "starts with"),
])
def test_what_is_not_a_name_and_why(name, reason):
    assert reason in names.problem(name)
    with pytest.raises(ConfigError, match=re.escape(reason)):
        names.check(name, "system name")


def _inside(root: Path, path: Path | str) -> bool:
    root, path = os.path.realpath(root), os.path.realpath(path)
    return os.path.commonpath([root, path]) == root and path != root


def _config(name: str) -> RunConfig:
    return RunConfig.model_construct(name=name, suites=("otsc-en",), systems={"a": SystemConfig(backend="identity")})


@pytest.mark.property
@given(ANY_TEXT)
@example("x/../../../escaped")
@example("../../escaped")
@example("/tmp/escaped")
@example("s" * 300)
@example("")
@example("a\0b")
@example("a|b|c")
@example("cost $\\undefinedcmd$ x")
@example("m" * 48)
@example("ह" * 16)
def test_any_name_is_refused_or_stays_under_its_root(tmp_path_factory, text):
    try:
        names.check(text)
    except ConfigError:
        return
    root = tmp_path_factory.getbasetemp() / "root"
    run = RunDir(root / "run")
    for system in (text, conditioned_name(text, text), conditioned_name("azure", text)):
        shard = run.shard_path(system, text, 0)
        assert _inside(run.translations, run.translations / shard)
        assert shard.startswith(f"{system_folder(system)}/suite={text}/") and shard.count("/") == 2
    run_id = new_run_id(_config(text))
    assert run_id.startswith(f"{text}-") and _inside(root / "runs", run_folder(root / "runs", run_id))
    plot = names.under(root, f"embedding-{text}-{conditioned_name(text, text)}-{text}.png")  # four names
    assert _inside(root, plot)
    for made in (f"compact-{run_id}.parquet", system_folder(conditioned_name(text, text)), plot.name):
        assert len(f".{made}.tmp".encode()) <= 220  # far below 255 bytes, with a temporary name's suffix
    assert md(text) == text  # a name needs no escaping: it is plain text in Markdown


@pytest.mark.property
@given(ANY_TEXT)
@example("../..")
@example("a/b")
@example("s" * 300)
def test_a_path_component_is_one_folder_or_refused(tmp_path_factory, text):
    root = tmp_path_factory.getbasetemp() / "root"
    try:
        path = names.under(root, text)
    except ConfigError:
        return
    assert os.path.dirname(os.path.realpath(path)) == os.path.realpath(root)


def _cells(line: str) -> list[str]:
    """A GitHub-flavoured Markdown table row's cells, as a reader sees them: split at each | that no
    backslash escapes, trimmed, backslash escapes and character references undone."""
    assert line.startswith("| ") and line.endswith(" |")
    cells, cell, k = [], "", 1
    while k < len(line) - 1:
        if line[k] == "\\" and k + 1 < len(line) - 1:
            cell, k = cell + line[k:k + 2], k + 2
            continue
        if line[k] == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += line[k]
        k += 1
    cells.append(cell)
    return [_references(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", c.strip())) for c in cells]


def _references(text: str) -> str:
    """Character references undone as CommonMark does: only those that end with ';'."""
    return re.sub(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});", lambda m: html.unescape(m.group()), text)


def _as_shown(text: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", text).strip()


@pytest.mark.property
@given(ANY_TEXT)
@example("a|b|c")
@example("trailing \\")
@example("\\|")
@example("<img src=x onerror=alert(1)>")
@example("&lt;img&gt;")
@example("R&D -> &copy &#169; &amp")
@example("cost $\\undefinedcmd$ x")
@example("`code | span`")
def test_any_text_stays_in_its_markdown_cell(text):
    line = row("first", text, "last")
    assert "\n" not in line and "<" not in line
    assert _cells(line) == ["first", _as_shown(text), "last"]


@pytest.mark.property
@given(ANY_TEXT)
@example("`")
@example("a``b")
def test_any_text_is_one_code_span(text):
    span = code(text)
    fence = re.match(r"`+", span).group()
    assert span.endswith(fence) and "\n" not in span
    inner = span[len(fence):-len(fence)]
    assert fence not in inner  # no run of backticks as long as the fence closes it early
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
        inner = inner[1:-1]
    assert inner == re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", text)


@pytest.fixture(scope="module")
def label():
    """One chart text on a small figure, made as the report's charts make theirs (under plain_text)."""
    @plots.plain_text
    def make():
        fig = plots.figure((2, 1))
        return fig, fig.add_subplot().set_title("x")

    return make()


@pytest.mark.property
@given(ANY_TEXT)
@example("cost $\\undefinedcmd$ x")
@example("$x^$")
@example("$\\frac{1}{$")
def test_any_text_draws_as_a_chart_label(label, text):
    fig, title = label
    title.set_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs missing from the font: drawn as boxes, which is fine
        title.get_window_extent(fig.canvas.get_renderer())  # laid out: where mathtext would be parsed


def _yaml_names(data) -> list[tuple[str, str]]:
    """(where, name) of a config's name, systems, their conditions, and its suites."""
    if not isinstance(data, dict):
        return []
    found = [("name", data["name"])] if isinstance(data.get("name"), str) and "suites" in data else []
    for system, spec in (data.get("systems") or {}).items():
        found.append(("system", system))
        found += [("condition", c) for c in ((spec or {}).get("conditions") or {})]
    found += [("suite", s) for s in data.get("suites") or [] if isinstance(s, str) and not s.endswith(".yaml")]
    return found


def test_every_name_in_the_configs_and_docs_is_a_name():
    """The rule was chosen to hold every name the project's configs, recipes and docs use."""
    found = []
    for path in sorted((REPO / "conf").glob("*.yaml")):
        found += [(path, *n) for n in _yaml_names(yaml.safe_load(path.read_text(encoding="utf-8")))]
    for path in sorted([*(REPO / "docs").glob("*.md"), REPO / "README.md"]):
        for block in re.findall(r"```yaml\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:
                continue  # a fragment with an ellipsis
            found += [(path, *n) for n in _yaml_names(data)]
    assert len(found) > 60
    bad = [(str(p.relative_to(REPO)), kind, n, names.problem(n)) for p, kind, n in found if names.problem(n)]
    assert not bad, bad
