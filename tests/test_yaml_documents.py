"""Config documents the loader refuses up front (biaseval/data/yamlio.py): a key given twice, aliases
that expand a small file into a huge one, nesting deeper than any config needs, files too large, and
tags that build anything but plain data. Each is exit 2 with file:line, never a traceback, and
refused before the expensive work (parsing the whole file, composing, expanding)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.data.yamlio import MAX_BYTES, MAX_DEPTH, MAX_NODES, read_yaml
from biaseval.errors import ConfigError
from conftest import REPO


def validate(config: Path, *extra: str):
    result = CliRunner().invoke(main, ["validate", *extra, "--config", str(config)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output, result.output
    return result


def refused(config: Path, *patterns: str) -> str:
    result = validate(config, "--no-data")
    assert result.exit_code == 2, result.output
    for pattern in patterns:
        assert pattern in result.output, result.output
    return result.output


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- a key given twice -----------------------------------------------------------------------------

def test_a_system_defined_twice_is_refused_naming_both_lines(tmp_path):
    """(Finding: this validated as "1 systems", the first definition dropped without a word.)"""
    config = write(tmp_path, "name: dup\nsuites: [otsc-en]\nsystems:\n"
                             "  identity:\n    backend: identity\n    version: a\n"
                             "  identity:\n    backend: identity\n    version: b\n")
    refused(config, f"{config}:7:3: invalid YAML: systems.identity: key given twice (lines 4 and 7)")


@pytest.mark.parametrize("text, message", [
    ("name: a\nname: b\nsuites: [otsc-en]\nsystems: {c: {backend: identity}}\n", ":2:1: invalid YAML: name: key given twice (lines 1 and 2)"),
    # flow style, deep inside free-form options
    ("name: x\nsuites: [otsc-en]\nsystems:\n  c: {backend: identity, options: {a: {b: 1, b: 2}}}\n",
     ":4:46: invalid YAML: systems.c.options.a.b: key given twice (lines 4 and 4)"),
    # the same key spelled two ways is still the same key
    ("name: x\nsuites: [otsc-en]\n\"systems\": {}\nsystems: {c: {backend: identity}}\n", ":4:1: invalid YAML: systems: key given twice (lines 3 and 4)"),
    ("name: x\nsuites: [otsc-en]\nsystems: {c: {backend: identity}}\nmetrics: {seed: 1, seed: 0x1}\n",
     ":4:20: invalid YAML: metrics.seed: key given twice (lines 4 and 4)"),
    # inside a list
    ("name: x\nsuites: [otsc-en]\nsystems: {c: {backend: identity, options: {l: [{k: 1, k: 2}]}}}\n",
     ":3:55: invalid YAML: systems.c.options.l.0.k: key given twice (lines 3 and 3)"),
    # two merge keys in one mapping (list them in one: <<: [*a, *b])
    ("name: x\nsuites: [otsc-en]\nbase: &b {backend: identity}\nsystems:\n  c:\n    <<: *b\n    <<: *b\n",
     ":7:5: invalid YAML: systems.c.<<: key given twice (lines 6 and 7)"),
])
def test_duplicate_keys_at_any_depth(tmp_path, text, message):
    config = write(tmp_path, text)
    refused(config, f"{config}{message}")


def test_a_merge_key_supplies_defaults_that_explicit_keys_override(tmp_path):
    """``<<: *anchor`` copies a mapping's keys; a key given beside it overrides the merged one (the
    point of merging, not a duplicate); field errors name the line where the merged value was written."""
    config = write(tmp_path, "name: merged\nsuites: [otsc-en]\nsystems:\n"
                             "  a: &base\n    backend: identity\n    version: one\n"
                             "  b:\n    <<: *base\n    version: two\n")
    result = validate(config, "--no-data")
    assert result.exit_code == 0, result.output
    from biaseval.config import load_config

    loaded = load_config(config)
    assert loaded.systems["b"].version == "two" and loaded.systems["b"].backend == "identity"

    bad = write(tmp_path, "name: merged\nsuites: [otsc-en]\ndefaults: &d {actors: two}\nsystems:\n"
                          "  b:\n    <<: *d\n    backend: identity\n", "bad.yaml")
    refused(bad, f"{bad}:3: systems.b.actors: expected a whole number of actors")


# --- aliases that expand a small file into a huge one ("billion laughs") ---------------------------

def alias_bomb(levels: int = 10, width: int = 9) -> str:
    """An openai system whose extra_body (free-form data) holds ``width ** levels`` strings written as
    aliases of aliases: well under a kilobyte of YAML."""
    lines = ["name: bomb", "suites: [otsc-en]", "systems:", "  llm:", "    backend: openai",
             "    version: gpt-x 2026-01", "    options:", "      model: gpt-x", "      extra_body:",
             "        l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"        l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    """(Finding: 896 bytes of aliases in extra_body ran `biaseval validate` for minutes and took
    gigabytes: 9 ** 10 strings once expanded.)"""
    config = write(tmp_path, alias_bomb())
    assert config.stat().st_size < 1000
    start = time.monotonic()
    result = validate(config)  # with --data: the path that used to expand it
    elapsed = time.monotonic() - start
    assert result.exit_code == 2, result.output
    # refused at the alias that takes the count past the cap: the third *l3 of l4 (line 14), as
    # l3 stands for 7,381 nodes and the lines before it for 8,287
    assert f"{config}:14:28:" in result.output and f"aliases expand it past {MAX_NODES:,} nodes" in result.output
    # Expanded, this document has 3.5 billion nodes: anything that expands it takes minutes. Refused
    # up front it takes milliseconds; 10 s leaves room for a loaded 2-core machine and the import of
    # the backends validate does, and still tells the two apart by orders of magnitude.
    assert elapsed < 10, elapsed  # timing: 10 s, as the comment above says


def test_aliases_within_the_cap_are_read(tmp_path):
    """Anchors and aliases as people use them (one set of options shared by systems) still work."""
    config = write(tmp_path, alias_bomb(levels=3, width=3))  # 27 strings: far under the cap
    assert validate(config, "--no-data").exit_code == 0


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    """A node that contains itself (a cycle) could never be dumped or hashed."""
    config = write(tmp_path, "name: x\nsuites: [otsc-en]\nsystems:\n  c:\n    backend: identity\n"
                             "    options: &loop {self: *loop}\n")
    refused(config, f"{config}:6:27: invalid YAML: alias *loop inside the node it names")


# --- nesting ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [3_000, 100_000])
def test_deep_nesting_is_refused_with_its_line(tmp_path, depth):
    """(Finding: 3,000 nested `[` ended in a RecursionError traceback.)"""
    config = write(tmp_path, "name: deep\nsuites: [otsc-en]\nsystems: " + "[" * depth + "\n")
    # the scanner, which reads ahead of the composer, refuses the first `[` past the limit: column 10 + 64
    refused(config, f"{config}:3:{10 + MAX_DEPTH}: YAML too deep: more than {MAX_DEPTH} levels of nesting")


@pytest.mark.parametrize("nest, line, column", [
    (lambda i: " " * i + "k:\n", MAX_DEPTH + 1, MAX_DEPTH + 1),  # block mappings, one a line
    (lambda i: " " * i + "-\n", MAX_DEPTH + 1, MAX_DEPTH + 1),  # block sequences
])
def test_deep_block_nesting_is_refused_with_its_line(tmp_path, nest, line, column):
    config = write(tmp_path, "".join(nest(i) for i in range(700)))  # about as deep as fits in MAX_BYTES
    refused(config, f"{config}:{line}:{column}: YAML too deep: more than {MAX_DEPTH} levels of nesting")


def test_nesting_up_to_the_cap_is_read(tmp_path):
    inner = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    path = write(tmp_path, f"deep: {inner}\n")
    doc = read_yaml(path)
    value, depth = doc.data["deep"], 2
    while value:
        value, depth = value[0], depth + 1
    assert depth == MAX_DEPTH


# --- size, tags ------------------------------------------------------------------------------------

def test_a_file_over_the_size_cap_is_refused_before_it_is_parsed(tmp_path):
    config = tmp_path / "big.yaml"
    config.write_bytes(b"name: big\n# " + b"x" * MAX_BYTES + b"\n")
    refused(config, f"{config}: YAML too large: {MAX_BYTES + 13:,} bytes; biaseval reads YAML files of at most "
                    f"{MAX_BYTES:,} bytes")


@pytest.mark.parametrize("tag", ["!!python/object:os.system", "!!python/name:os.system", "!!binary", "!!set",
                                 "!!omap", "!custom"])
def test_tags_other_than_plain_data_are_refused(tmp_path, tag):
    config = write(tmp_path, f"name: x\nsuites: [otsc-en]\nsystems: {{c: {{backend: identity, options: {{a: {tag} x}}}}}}\n")
    refused(config, f"{config}:3:", f"invalid YAML: tag {tag}", "is not allowed")


@pytest.mark.parametrize("value, message", [
    ("!!int abc", "3:47: invalid YAML: cannot read 'abc' as int (invalid literal"),
    ("!!bool maybe", "3:47: invalid YAML: cannot read 'maybe' as bool"),
    ("!!float x", "3:47: invalid YAML: cannot read 'x' as float"),
    ("!!int ''", "3:47: invalid YAML: cannot read '' as int"),
    ("1" * 5000, "3:47: invalid YAML: cannot read '1111111111111111111111111111111111111...' as int (Exceeds the limit"),
])
def test_a_value_its_tag_cannot_build_is_refused_with_its_line(tmp_path, value, message):
    """(These were a ValueError, KeyError or IndexError traceback from inside the YAML library.)"""
    config = write(tmp_path, f"name: x\nsuites: [otsc-en]\nsystems: {{c: {{backend: identity, options: {{a: {value}}}}}}}\n")
    refused(config, f"{config}:{message}")


def test_plain_data_tags_are_read(tmp_path):
    path = write(tmp_path, "a: !!str 010\nb: !!int '7'\nc: !!float 1\nd: !!bool true\ne: !!null ''\n"
                           "f: !!seq [1]\ng: !!map {h: 1}\n")
    assert read_yaml(path).data == {"a": "010", "b": 7, "c": 1.0, "d": True, "e": None, "f": [1], "g": {"h": 1}}


def test_yaml_1_2_reading(tmp_path):
    """YAML 1.2 (the loader's version): `no` is the Norwegian language code, not false; 1e3 a number."""
    path = write(tmp_path, "targets: [no, de]\nx: 1e3\nflag: true\n")
    assert read_yaml(path).data == {"targets": ["no", "de"], "x": 1000.0, "flag": True}


def test_every_yaml_file_the_package_ships_passes_the_loader():
    """The caps sit far above what real files need: every YAML shipped or in conf/ loads."""
    files = sorted((REPO / "biaseval" / "data").rglob("*.yaml")) + sorted((REPO / "conf").glob("*.yaml"))
    assert len(files) > 20
    for path in files:
        read_yaml(path)


def test_errors_are_config_errors(tmp_path):
    path = write(tmp_path, "a: [" * 2 + "\n")
    with pytest.raises(ConfigError, match=r"invalid YAML"):
        read_yaml(path)


def test_merging_several_mappings_the_first_listed_wins(tmp_path):
    path = write(tmp_path, "a: &a {k: from-a, x: 1}\nb: &b {k: from-b, y: 2}\nc:\n  <<: [*a, *b]\n  z: 3\n")
    assert read_yaml(path).data["c"] == {"k": "from-a", "x": 1, "y": 2, "z": 3}
