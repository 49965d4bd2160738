"""`biaseval validate` and `biaseval sweep` check every system in the driver before anything runs:
open models (hf, ctranslate2) by their config and tokenizer only — never their weights — and every
language pair the run gives them; Apertium by its language codes. A bad system is a config error
(exit 2, no traceback) naming the system and the field, and nothing is written."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from tiny_mt import build_tiny_marian, build_tiny_nllb, convert_to_ct2  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")
SLOW_FIXTURES = {"models"}  # trained here: tests using them are slow (conftest.py)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A folder with tiny models: marian (en->es), marian-ct2, nllb, nllb-ct2."""
    root = tmp_path_factory.mktemp("models")
    shutil.move(build_tiny_marian(root / "build-marian"), root / "marian")
    shutil.move(build_tiny_nllb(root / "build-nllb"), root / "nllb")
    convert_to_ct2(root / "marian", root / "marian-ct2")
    convert_to_ct2(root / "nllb", root / "nllb-ct2")
    return root


def write_config(folder: Path, suites: list[str], systems: dict) -> Path:
    """A run config in ``folder`` (model paths in it are relative to ``folder``)."""
    config = {"name": "preflight", "suites": suites, "systems": systems, "cache": {"path": str(folder / "store")}}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def validate(path: Path):
    return CliRunner().invoke(main, ["validate", "--config", str(path)])


def refused(path: Path, *fragments: str) -> str:
    """``validate`` and ``sweep`` both stop with a config error holding ``fragments``; nothing is run."""
    result = validate(path)
    assert result.exit_code == 2, result.output
    out = path.parent / "run"
    swept = CliRunner().invoke(main, ["sweep", "--config", str(path), "--out", str(out)])
    assert swept.exit_code == 2, swept.output
    assert not out.exists()
    for output in (result.output, swept.output):
        assert "Traceback" not in output and output.startswith("error: ")
        for fragment in fragments:
            assert fragment in output, output
    return result.output


def hf(model: str, **options) -> dict:
    return {"backend": "hf", "version": "tiny", "options": {"model": model, **options}}


def ct2(model: str, **options) -> dict:
    return {"backend": "ctranslate2", "version": "tiny", "options": {"model": model, **options}}


def test_a_model_that_is_not_there(tmp_path, data_dir):
    refused(write_config(tmp_path, ["winomt-hi"], {"mt": hf("./models/nllb-typo")}),
            "systems.mt.options.model:", "'./models/nllb-typo'", "no such directory")
    refused(write_config(tmp_path, ["winomt-hi"], {"mt": hf("biaseval-tests/no-such-model")}),
            "systems.mt.options.model:", "not found in the local hub cache")
    refused(write_config(tmp_path, ["winomt-hi"], {"engine": ct2("/nowhere/ct2")}),
            "systems.engine.options.model:", "not a CTranslate2 model directory")


def test_a_ctranslate2_tokenizer_that_is_not_there(tmp_path, data_dir, models):
    config = write_config(tmp_path, ["winomt-hi"], {"engine": ct2(str(models / "nllb-ct2"), tokenizer="./nllb-tok")})
    refused(config, "systems.engine.options.tokenizer:", "'./nllb-tok'", "no such directory")


def test_nllb_language_codes_that_do_not_exist(tmp_path, data_dir, models):
    # WinoMT-Hindi is hi -> en: "eng_Latx" is no FLORES-200 tag, and not in the tokenizer
    for system in (hf(str(models / "nllb"), language_codes={"en": "eng_Latx"}),
                   ct2(str(models / "nllb-ct2"), language_codes={"en": "eng_Latx"})):
        refused(write_config(tmp_path, ["winomt-hi"], {"nllb": system}),
                "systems.nllb: cannot translate hi->en (suite winomt-hi)", "'eng_Latx'")
    # a run language with no FLORES-200 code: the system maps "en" to a code that is not one
    refused(write_config(tmp_path, ["otsc-en"], {"nllb": hf(str(models / "nllb"), language_codes={"es": "castellano"})}),
            "systems.nllb: cannot translate en->es (suite otsc-en)", "'castellano'")


def test_nllb_with_its_languages_validates_without_its_weights(tmp_path, data_dir, models):
    bare = shutil.copytree(models / "nllb", tmp_path / "nllb-bare")
    weights = [p for p in bare.iterdir() if p.suffix in (".safetensors", ".bin")]
    assert weights
    for p in weights:
        p.unlink()  # validation reads the config and tokenizer only
    systems = {"nllb": hf("nllb-bare"), "nllb-ct2": ct2(str(models / "nllb-ct2"))}
    result = validate(write_config(tmp_path, ["winomt-hi", "otsc-en"], systems))
    assert result.exit_code == 0, result.output


def test_a_one_pair_marian_model_is_given_its_pair_only(tmp_path, data_dir, models):
    # the tiny opus-mt-like model translates en -> es; OTSC goes into es, it, fr and de
    for system in (hf(str(models / "marian")), ct2(str(models / "marian-ct2"))):
        refused(write_config(tmp_path, ["otsc-en"], {"opus": system}),
                "systems.opus: cannot translate en->de (suite otsc-en)", "translates en->es",
                "leave de out of the system's targets")
        narrowed = write_config(tmp_path, ["otsc-en"], {"opus": {**system, "targets": ["es"]}})
        assert validate(narrowed).exit_code == 0
    refused(write_config(tmp_path, ["winomt-hi"], {"opus": hf(str(models / "marian"))}),
            "cannot translate hi->en", "not hi->en")


def test_apertium_language_codes_and_pairs(tmp_path, data_dir):
    # no executable needed in the driver (the command does not exist here)
    apertium = {"backend": "apertium", "version": "x", "options": {"command": "no-such-apertium"}}
    refused(write_config(tmp_path, ["winomt-en"], {"rule": apertium}),
            "systems.rule: no Apertium code for 'en' or 'he' (suite winomt-en)")
    fixed = {**apertium, "options": {"pair": "eng-spa", "command": "no-such-apertium"}}
    refused(write_config(tmp_path, ["otsc-en"], {"rule": fixed}),
            "systems.rule.options.pair: 'eng-spa' would translate every language pair", "en->de, en->es")
    assert validate(write_config(tmp_path, ["otsc-en"], {"rule": {**fixed, "targets": ["es"]}})).exit_code == 0
