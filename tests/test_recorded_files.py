"""Recorded outputs must be the outputs of the items they are read for: one file per target
language ({target}), the right line counts and sources per file, text in the file's own language;
a missing file is a clear error. All refused at validation, before anything is written."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.translate.backends.language_guess import reads_as, sample
from conftest import REPO

LEXICON = REPO / "biaseval" / "data" / "lexicon" / "occupations.csv"
OCCUPATIONS = list(csv.DictReader(LEXICON.open(encoding="utf-8")))

# What a system might answer for "I've known her/him for a long time, my friend works as a(n) <x>."
SENTENCES = {
    "es": {"her": "La conozco desde hace mucho tiempo, mi amiga trabaja como {es_f}.",
           "him": "Lo conozco desde hace mucho tiempo, mi amigo trabaja como {es_m}."},
    "it": {"her": "La conosco da molto tempo, la mia amica lavora come {it_f}.",
           "him": "Lo conosco da molto tempo, il mio amico lavora come {it_m}."},
}


def outputs(lang: str, variant: str) -> list[str]:
    return [SENTENCES[lang][variant].format(**row) for row in OCCUPATIONS]


def sources(variant: str) -> list[str]:
    pronoun = {"her": "her", "him": "him"}[variant]
    return [f"I've known {pronoun} for a long time, my friend works as {row['en_article']} {row['en']}."
            for row in OCCUPATIONS]


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def config(tmp_path: Path, pattern: str, *, fmt: str = "lines", targets=("es", "it")) -> Path:
    path = tmp_path / "run.yaml"
    options = {"files": {"otsc-en": pattern}}
    if fmt != "lines":
        options["format"] = fmt
    path.write_text(yaml.safe_dump({
        "name": "rec", "suites": ["otsc-en"], "targets": {"otsc-en": list(targets)},
        "systems": {"mine": {"backend": "recorded", "version": "test", "options": options}},
    }), encoding="utf-8")
    return path


def per_target(tmp_path: Path, content=lambda lang, variant: outputs(lang, variant)) -> Path:
    for lang in ("es", "it"):
        for variant in ("her", "him"):
            write(tmp_path / "out" / lang / f"{variant}.txt", content(lang, variant))
    return config(tmp_path, "out/{target}/{stem}.txt")


def refused(tmp_path: Path, config_path: Path, *fragments: str) -> str:
    """validate and sweep both exit 2 naming the problem, with no traceback and no run directory."""
    for args in (["validate", "--config", str(config_path)],
                 ["sweep", "--config", str(config_path), "--out", str(tmp_path / "run")]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args[0], result.output, result.exception)
        assert "Traceback" not in result.output
        for fragment in fragments:
            assert fragment in result.output, (args[0], result.output)
    assert not (tmp_path / "run").exists(), "a refused config must not create the run directory"
    return result.output


def validates(config_path: Path) -> str:
    result = CliRunner().invoke(main, ["validate", "--config", str(config_path)])
    assert result.exit_code == 0, result.output
    return result.output


# -- one file per target language -----------------------------------------------------------------

def test_per_target_files_validate(tmp_path):
    assert ": 160 items in " in validates(per_target(tmp_path))


def test_one_file_for_two_target_languages_is_refused(tmp_path):
    """{stem} alone gives es/her and it/her the same file: Spanish text for the Italian items."""
    for variant in ("her", "him"):
        write(tmp_path / f"{variant}.txt", outputs("es", variant))
    out = refused(tmp_path, config(tmp_path, "{stem}.txt"),
                  f"{tmp_path / 'her.txt'}: one file for several target languages (es, it",
                  "otsc-en/es/her, otsc-en/it/her", "{target}", "systems.mine.options.files.otsc-en")
    assert "Spanish" not in out  # the message is about the file, not a guess at its language



def test_one_file_behind_two_paths_is_refused(tmp_path):
    """out/it is a link to out/es: two patterns' paths, one file (its text says nothing of its language)."""
    for variant in ("her", "him"):
        write(tmp_path / "out" / "es" / f"{variant}.txt", [f"{variant} {k}" for k in range(40)])
    (tmp_path / "out" / "it").symlink_to(tmp_path / "out" / "es", target_is_directory=True)
    refused(tmp_path, config(tmp_path, "out/{target}/{stem}.txt"), "her.txt: one file for several target languages (es, it")

def test_one_target_needs_no_target_placeholder(tmp_path):
    for variant in ("her", "him"):
        write(tmp_path / f"{variant}.txt", outputs("it", variant))
    validates(config(tmp_path, "{stem}.txt", targets=("it",)))


def test_swapped_language_files_are_refused(tmp_path):
    """The Italian outputs in the Spanish folder and the other way round: counts and sources agree,
    the language does not."""
    swapped = per_target(tmp_path, lambda lang, variant: outputs("it" if lang == "es" else "es", variant))
    refused(tmp_path, swapped, f"{tmp_path / 'out' / 'es' / 'her.txt'}: reads as 'it', not 'es'",
            "otsc-en/es/her", "systems.mine.options.files.otsc-en")


def test_untranslated_sources_are_refused(tmp_path):
    """The source sentences where the outputs belong (a common slip with line-aligned files)."""
    config_path = per_target(tmp_path, lambda lang, variant: sources(variant) if lang == "it" else outputs(lang, variant))
    refused(tmp_path, config_path, f"{tmp_path / 'out' / 'it' / 'her.txt'}: reads as 'en', not 'it'")


def test_a_file_shared_by_subsets_with_different_sources_is_refused(tmp_path):
    """{target} alone gives her and him one file: line 1 would answer two different sentences."""
    for lang in ("es", "it"):
        write(tmp_path / f"{lang}.txt", outputs(lang, "her"))
    refused(tmp_path, config(tmp_path, "{target}.txt"),
            f"{tmp_path / 'es.txt'}: read for otsc-en/es/her and otsc-en/es/him, whose sources differ (line 1")


def test_line_count_is_checked_per_target(tmp_path):
    config_path = per_target(tmp_path, lambda lang, variant: outputs(lang, variant)[:-1] if lang == "it" else
                             outputs(lang, variant))
    refused(tmp_path, config_path, f"{tmp_path / 'out' / 'it' / 'her.txt'}: 39 lines, but its source", "has 40")


def test_unknown_placeholder_is_a_config_error(tmp_path):
    refused(tmp_path, config(tmp_path, "out/{lang}/{stem}.txt"),
            "systems.mine.options.files", "uses {lang}; it may use {stem} and {target} only")


# -- pairs files (source ||| translation) ----------------------------------------------------------

def pairs(lang: str, variant: str, source_variant: str | None = None) -> list[str]:
    return [f"{s} ||| {t}" for s, t in zip(sources(source_variant or variant), outputs(lang, variant))]


def test_pairs_per_target_validate(tmp_path):
    for lang in ("es", "it"):
        for variant in ("her", "him"):
            write(tmp_path / lang / f"{variant}.txt", pairs(lang, variant))
    validates(config(tmp_path, "{target}/{stem}.txt", fmt="pairs"))


def test_pairs_file_for_other_sources_is_refused(tmp_path):
    """es/her.txt holds the 'him' sentences: no item of es/her finds its source."""
    for lang in ("es", "it"):
        for variant in ("her", "him"):
            write(tmp_path / lang / f"{variant}.txt", pairs(lang, variant, "him" if lang == "es" else None))
    refused(tmp_path, config(tmp_path, "{target}/{stem}.txt", fmt="pairs"),
            f"{tmp_path / 'es' / 'her.txt'}: no line for the sources of 40 of the 40 items it is read for (otsc-en/es/her)")


def test_pairs_in_the_wrong_language_are_refused(tmp_path):
    for lang in ("es", "it"):
        for variant in ("her", "him"):
            write(tmp_path / lang / f"{variant}.txt", pairs("it" if lang == "es" else "es", variant))
    refused(tmp_path, config(tmp_path, "{target}/{stem}.txt", fmt="pairs"),
            f"{tmp_path / 'es' / 'her.txt'}: reads as 'it', not 'es'")


def test_one_pairs_file_for_two_targets_is_refused(tmp_path):
    for variant in ("her", "him"):
        write(tmp_path / f"{variant}.txt", pairs("es", variant))
    refused(tmp_path, config(tmp_path, "{stem}.txt", fmt="pairs"),
            f"{tmp_path / 'her.txt'}: one file for several target languages (es, it")


# -- missing files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["lines", "pairs"])
def test_missing_recorded_file_names_file_and_field(tmp_path, fmt):
    refused(tmp_path, config(tmp_path, "nowhere/{target}/{stem}.txt", fmt=fmt),
            f"{tmp_path / 'nowhere' / 'es' / 'her.txt'}: no such file",
            "systems.mine.options.files.otsc-en", "'nowhere/{target}/{stem}.txt'")


def test_recorded_path_that_is_a_directory(tmp_path):
    (tmp_path / "es" / "her.txt").mkdir(parents=True)
    refused(tmp_path, config(tmp_path, "{target}/{stem}.txt"), f"{tmp_path / 'es' / 'her.txt'}: is a directory")


def test_missing_file_in_the_hindi_suites(tmp_path, data_dir):
    """The same for a built-in single-target suite (winomt-hi), with an absolute pattern."""
    (tmp_path / "pro.txt").write_text("He did.\n" * 352, encoding="utf-8")
    path = tmp_path / "hi.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "suites": ["winomt-hi"], "systems": {"mine": {
        "backend": "recorded", "options": {"files": {"winomt-hi": str(tmp_path / "{stem}.txt")}}}}}), encoding="utf-8")
    refused(tmp_path, path, f"{tmp_path / 'anti.txt'}: no such file", "systems.mine.options.files.winomt-hi")


# -- the language check never refuses real recorded outputs ------------------------------------------

MT_GENDER_LANGS = ("ar", "de", "es", "fr", "he", "it", "nl", "pt", "ru", "uk")


def test_language_check_on_real_recorded_outputs(data_dir):
    """Google's 2019 WinoMT outputs (mt_gender): each file passes for its own language and is
    refused for every other."""
    root = data_dir / "mt_gender" / "translations" / "google"
    for lang in MT_GENDER_LANGS:
        text = sample([line.partition(" ||| ")[2] for line in (root / f"en-{lang}.txt").read_text(encoding="utf-8").splitlines()])
        assert reads_as(text, lang) is None, lang
        for other in (*MT_GENDER_LANGS, "en"):
            if other != lang:
                verdict = reads_as(text, other)
                assert verdict is not None and verdict[0] == lang, (lang, other, verdict)
                assert reads_as(text[:40], other)[0] == lang, (lang, other)  # 40 lines are enough


def test_language_check_has_no_verdict_without_evidence():
    assert reads_as(["infermiera", "falegname", "medico"] * 10, "es") is None  # single words: no function words
    assert reads_as(["Ciao."], "es") is None
    assert reads_as(["La conosco da molto tempo."] * 100, "xx") is None  # no word list for the target
