"""Bad input fails fast, names the file/line/field, exits non-zero and writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from conftest import REPO


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def paper_with(tmp_path: Path, edit) -> Path:
    config = yaml.safe_load((REPO / "conf" / "paper.yaml").read_text(encoding="utf-8"))
    edit(config)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def assert_fails(tmp_path: Path, config: Path, *patterns: str, extra: tuple[str, ...] = ()):
    out = tmp_path / "out"
    result = run_cli("sweep", "--config", str(config), "--out", str(out), *extra)
    assert result.exit_code != 0, result.output
    for pattern in patterns:
        assert pattern in result.output, result.output
    assert not out.exists(), "a failed validation must not create the run directory"
    return result.output


def test_invalid_yaml_names_file_line_and_column(tmp_path):
    config = write_config(tmp_path, "name: x\nsuites: [otsc-hi\nsystems: {}\n")
    assert_fails(tmp_path, config, f"{config}:3:", "invalid YAML")


def test_unknown_suite_suggests_the_closest(tmp_path):
    config = write_config(tmp_path, "name: x\nsuites:\n  - otsc-hi\n  - tgbi-hx\nsystems:\n  g: {backend: recorded, options: {files: {otsc-hi: a.txt}}}\n")
    assert_fails(tmp_path, config, f"{config}:4: suites.1: unknown suite 'tgbi-hx' (did you mean 'tgbi-hi'?)")


def test_unknown_backend(tmp_path):
    config = paper_with(tmp_path, lambda c: c["systems"]["google"].update(backend="recordd"))
    assert_fails(tmp_path, config, "systems.google.backend: unknown backend 'recordd' (did you mean 'recorded'?)")


def test_unknown_key_is_rejected_with_its_line(tmp_path):
    config = write_config(tmp_path, "name: x\nsuites: [otsc-hi]\nsytems: {}\n")
    out = assert_fails(tmp_path, config, f"{config}:3: sytems: unknown key")
    assert "systems: Field required" in out


def test_wrong_type_names_the_field(tmp_path):
    config = paper_with(tmp_path, lambda c: c["systems"]["aws"].update(actors="two"))
    assert_fails(tmp_path, config, "systems.aws.actors: expected a whole number of actors (at least 1) or 'auto', not 'two'")


def test_backend_options_are_validated_by_the_backend(tmp_path):
    config = paper_with(tmp_path, lambda c: c["systems"]["aws"]["options"].update(filez={}))
    assert_fails(tmp_path, config, "systems.aws.options.filez: unknown key")


def test_unknown_system_on_the_command_line(tmp_path, paper_config):
    assert_fails(tmp_path, paper_config, "--systems: unknown system 'gogle' (did you mean 'google'?)",
                 extra=("--systems", "google,gogle"))


def test_missing_config_file(tmp_path):
    assert_fails(tmp_path, tmp_path / "nope.yaml", "nope.yaml: cannot read config")


@pytest.fixture
def data_copy(hindi, tmp_path, monkeypatch):
    root = tmp_path / "data"
    shutil.copytree(hindi, root / hindi.name)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    monkeypatch.setenv("BIASEVAL_DATA_DIR", str(root))
    return root / hindi.name


def test_corrupt_dataset_file_fails_before_anything_is_written(tmp_path, data_copy, paper_config):
    path = data_copy / "WinoMT-Hindi" / "stereo_aws" / "prostereohindi_aws.txt"
    path.write_text(path.read_text(encoding="utf-8").replace("he ", "she ", 1), encoding="utf-8")
    assert_fails(tmp_path, paper_config, f"{path}: checksum mismatch")


def test_missing_dataset_file_fails_and_says_how_to_provide_it(tmp_path, data_copy, paper_config):
    path = data_copy / "WinoMT-Hindi" / "profinal.txt"
    path.unlink()
    assert_fails(tmp_path, paper_config, f"{path}: missing file", "BIASEVAL_DATA_DIR")


def test_missing_dataset_directory(tmp_path, monkeypatch, paper_config):
    monkeypatch.setenv("BIASEVAL_DATA_DIR", str(tmp_path / "empty"))
    assert_fails(tmp_path, paper_config, "dataset gender-bias-hi-en-eval", "has no Gender-Bias-Hi-En-Eval/")


def _recorded_config(tmp_path: Path, lines: dict[str, list[str]], newline: str = "\n") -> Path:
    """A winomt-hi run with one recorded system whose files are given here."""
    for stem, content in lines.items():
        (tmp_path / f"{stem}.txt").write_bytes(newline.join(content).encode("utf-8"))
    return write_config(
        tmp_path,
        "name: rec\nsuites: [winomt-hi]\nsystems:\n  mine:\n    backend: recorded\n"
        "    options:\n      files: {winomt-hi: '{stem}.txt'}\n",
    )


def test_misaligned_recorded_file_names_file_and_both_counts(tmp_path, data_dir):
    config = _recorded_config(tmp_path, {"pro": ["He did."] * 351, "anti": ["She did."] * 352})
    assert_fails(tmp_path, config, f"{tmp_path / 'pro.txt'}: 351 lines, but its source", "has 352")


def test_recorded_file_with_crlf_and_trailing_blank_lines_is_fine(tmp_path, data_dir):
    config = _recorded_config(tmp_path, {"pro": ["He did."] * 352 + ["", ""], "anti": ["She did."] * 352 + [""]},
                              newline="\r\n")
    result = run_cli("validate", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert ": 704 items in " in result.output


def test_validate_does_not_run_anything(tmp_path, paper_config):
    result = run_cli("validate", "--config", str(paper_config))
    assert result.exit_code == 0, result.output
    assert "5 systems, 3 suites: 182,516 items in 44 shards" in result.output


def test_recorded_options_name_unknown_suites_and_datasets(tmp_path):
    config = paper_with(tmp_path, lambda c: c["systems"]["aws"]["options"]["files"].update({"otsc-hu": "x/{stem}.txt"}))
    assert_fails(tmp_path, config, "systems.aws.options.files: Value error, unknown suite 'otsc-hu' (did you mean 'otsc-hi'?)")
    config = paper_with(tmp_path, lambda c: c["systems"]["aws"]["options"].update(dataset="gender-bias"))
    assert_fails(tmp_path, config, "systems.aws.options.dataset: Value error, unknown dataset 'gender-bias'")


def test_detectors_are_configurable_per_suite(tmp_path):
    from biaseval.config import load_config

    def edit(c):
        c["detectors"] = {"tgbi-hi": "tgbi-paper-his", "otsc-hi": "friend-only"}
        c["rule_sets"] = {"friend-only": {"doc": "object pronoun only", "rules": [{"label": "female", "words": [["her"]]}]}}

    config = load_config(paper_with(tmp_path, edit))
    assert config.detector_for("tgbi-hi", "en").signature == "tgbi-paper-his@1"
    assert config.detector_for("otsc-hi", "en").signature == "friend-only@1"
    assert config.detector_for("winomt-hi", "en").signature == "winomt-hi-paper@1"  # the suite's default


def test_unknown_detector_and_bad_rule_set(tmp_path):
    config = paper_with(tmp_path, lambda c: c.update(detectors={"tgbi-hi": "tgbi-papr"}))
    assert_fails(tmp_path, config, "detectors.tgbi-hi: unknown detector 'tgbi-papr' (did you mean 'tgbi-paper'?)")
    config = paper_with(tmp_path, lambda c: c.update(rule_sets={"mine": {"rules": [{"label": "boy", "words": [["he"]]}]}}))
    assert_fails(tmp_path, config, "rule_sets.mine.rules.0.label: Input should be 'male'")


def _no_traceback(result) -> None:
    assert result.exit_code == 2, (result.output, result.exception)
    assert "Traceback" not in result.output


def test_config_that_is_not_utf8_names_file_line_and_column(tmp_path):
    """A config saved as Latin-1 (é is byte 0xe9): exit 2 with file:line:column, for validate and sweep."""
    config = tmp_path / "latin1.yaml"
    config.write_bytes("name: x\nsuites: [otsc-hi]\ndescription: caf\u00e9 r\u00e9sum\u00e9\nsystems: {}\n".encode("latin-1"))
    result = run_cli("validate", "--config", str(config))
    _no_traceback(result)
    assert f"{config}:3:17: config is not valid UTF-8 (byte 0xe9" in result.output
    assert_fails(tmp_path, config, f"{config}:3:17: config is not valid UTF-8")


def test_template_suite_that_is_not_utf8(tmp_path):
    suite = tmp_path / "mine.yaml"
    text = (REPO / "biaseval" / "data" / "suites" / "otsc-en.yaml").read_text(encoding="utf-8")
    suite.write_bytes(("# Fran\u00e7ais\n" + text.replace("name: otsc-en", "name: mine")).encode("latin-1"))
    config = write_config(tmp_path, f"name: x\nsuites: [{suite}]\nsystems: {{copy: {{backend: identity}}}}\n")
    result = run_cli("validate", "--config", str(config))
    _no_traceback(result)
    assert f"{suite}:1:7: suite is not valid UTF-8 (byte 0xe7" in result.output


def test_control_character_in_config_names_line_and_column(tmp_path):
    config = tmp_path / "ctrl.yaml"
    config.write_bytes(b"name: x\nsuites: [otsc-hi]\ndescription: \"a\x07b\"\nsystems: {}\n")
    result = run_cli("validate", "--config", str(config))
    _no_traceback(result)
    assert f"{config}:3:16: invalid YAML: character U+0007 is not allowed" in result.output


def test_config_with_a_byte_order_mark_is_read(tmp_path):
    config = tmp_path / "bom.yaml"
    config.write_bytes(b"\xef\xbb\xbfname: x\nsuites: [otsc-hi]\nsystems: {copy: {backend: identity}}\n")
    result = run_cli("validate", "--no-data", "--config", str(config))
    assert result.exit_code == 0, result.output


def test_missing_recorded_file_exits_2_naming_file_and_field(tmp_path, data_dir):
    """(A missing local file used to end in a FileNotFoundError traceback, in validate too.)"""
    config = _recorded_config(tmp_path, {"pro": ["He did."] * 352})
    result = run_cli("validate", "--config", str(config))
    _no_traceback(result)
    assert f"{tmp_path / 'anti.txt'}: no such file" in result.output
    assert "systems.mine.options.files.winomt-hi" in result.output
    assert_fails(tmp_path, config, f"{tmp_path / 'anti.txt'}: no such file", "systems.mine.options.files.winomt-hi")
