"""Apertium, for real: the Debian packages `apertium` and `apertium-eng-spa` (installed by .ci/run)."""

from __future__ import annotations

import stat

import pytest

from biaseval.errors import ConfigError
from biaseval.translate.runner import RequestRunner
from biaseval.translate import TRANSLATORS

Apertium = TRANSLATORS.get("apertium")


def backend(**options):
    return Apertium("apertium", Apertium.Options(**options))


# English source -> what apertium-eng-spa 0.8.1 gives (whitespace normalised).
CASES = [
    ("The doctor arrived.", "El doctor llegó."),
    ("She is a nurse.", "Es una enfermera ."),
    ("He is a nurse.", "Es un enfermero ."),
    ("I have known her for a long time, my friend works as a teacher.",
     "He sabido su para un tiempo largo, mis obras de amigo como profesor."),
]


def test_translates_with_the_installed_pair():
    results = RequestRunner(backend()).translate([c[0] for c in CASES], "en", "es")
    assert [r.translation for r in results] == [c[1] for c in CASES]
    assert all(r.error is None and r.attempts == 1 for r in results)
    assert results[0].model.startswith("apertium-eng-spa 0.8")


def test_one_process_per_batch_and_texts_stay_aligned(tmp_path):
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "apertium-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho call >> "{log}"\nexec apertium "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    texts = [f"The {w} arrived.\nLate." if i == 3 else f"The {w} arrived." for i, w in
             enumerate(["doctor", "nurse", "teacher", "engineer", "lawyer"] * 4)]
    results = RequestRunner(backend(command=str(wrapper), max_texts=8)).translate(texts, "en", "es")
    assert len(log.read_text().splitlines()) == 3  # 20 texts, 8 per process
    assert results[3].translation.endswith("Tarde.")  # the inner newline did not shift the rest
    assert results[4].translation.startswith("El abogado")
    assert all(r.translation for r in results)


def test_unknown_words_are_unmarked_unless_asked():
    plain = RequestRunner(backend()).translate(["The zorblax arrived."], "en", "es")[0].translation
    marked = RequestRunner(backend(mark_unknown=True)).translate(["The zorblax arrived."], "en", "es")[0].translation
    assert "*" not in plain and "*zorblax" in marked


def test_a_pair_not_installed_is_a_recorded_error_naming_its_package():
    result = RequestRunner(backend(pair="eng-xyz")).translate(["Hello."], "en", "es")[0]
    assert result.translation is None and result.attempts == 1  # not retried: nothing changes by itself
    assert ("the Apertium mode 'eng-xyz' is not installed: missing Debian package: apertium-eng-xyz. "
            "Install with: sudo apt-get install -y apertium-eng-xyz") in result.error


def test_a_failing_apertium_is_a_recorded_error_not_a_crash(tmp_path):
    modes = tmp_path / "modes"
    modes.mkdir()
    (modes / "eng-spa.mode").write_text("no-such-program-in-this-pipeline\n")  # a mode that cannot run
    result = RequestRunner(backend(data_dir=str(tmp_path))).translate(["Hello."], "en", "es")[0]
    assert result.translation is None and result.error.startswith("RuntimeError: apertium eng-spa ")


def test_missing_executable_is_a_config_error():
    with pytest.raises(ConfigError, match=r"'no-such-apertium' not found .*sudo apt-get install -y apertium"):
        backend(command="no-such-apertium")


def test_language_codes_map_to_modes():
    assert backend().mode("en", "es") == "eng-spa"
    assert backend(pair="eng-cat").mode("en", "es") == "eng-cat"
    with pytest.raises(ConfigError, match="set options.pair"):
        backend().mode("en", "xx")


def test_pivot_chain_translates_english_to_italian():
    """eng-spa then spa-ita (both Debian packages): English→Italian offline."""
    results = RequestRunner(backend(pair="eng-spa|spa-ita")).translate(["nurse", "actress", "king", "house"], "en", "it")
    assert [r.translation for r in results] == ["Infermiere", "Attrice", "Re", "Casa"]
    assert results[0].model.startswith("apertium-eng-spa 0.8") and "apertium-spa-ita 0.2" in results[0].model


def test_line_breaks_inside_a_text_are_kept():
    """A text's lines come back as lines (MT-GenEval's contextual items put the context sentence and the
    sentence scored on two lines, and the scorer reads the last one); spaces within a line are
    normalised, blank lines dropped."""
    texts = ["She was a teacher.\nThe doctor  arrived late.", "The doctor arrived.\r\n\r\nLate.", "The doctor arrived."]
    results = RequestRunner(backend()).translate(texts, "en", "es")
    assert [r.translation.split("\n") for r in results] == [
        ["Era una profesora .", "El doctor llegó tarde."], ["El doctor llegó.", "Tarde."], ["El doctor llegó."]]
