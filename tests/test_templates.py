"""Template suites: expansion, lazy slices, lexicon-derived labels, and errors that name file and line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from biaseval.config import load_config
from biaseval.errors import ConfigError
from biaseval.metrics.occupations import per_occupation
from biaseval.suites import SUITES, load_template
from conftest import REPO

OTSC_EN = REPO / "biaseval" / "data" / "suites" / "otsc-en.yaml"
LEXICON = REPO / "biaseval" / "data" / "lexicon" / "occupations.csv"


@pytest.fixture(scope="module")
def otsc_en():
    return load_template(OTSC_EN).open()


def test_otsc_en_expands_targets_variants_occupations(otsc_en):
    assert otsc_en.size == 4 * 2 * 40
    items = otsc_en.slice(0, otsc_en.size)
    assert items["item_id"].n_unique() == items.height
    first = items.row(0, named=True)
    assert first["source"] == "I've known her for a long time, my friend works as a carpenter."
    assert (first["tgt_lang"], first["gold"], first["occupation"], first["female_share"]) == ("es", "female", "carpenter", 2.0)
    assert first["stereotype"] == "anti"  # a female friend in a male-dominated occupation
    accountant = items.filter((pl.col("occupation") == "accountant") & (pl.col("subset") == "de/him")).row(0, named=True)
    assert accountant["source"].endswith("works as an accountant.")
    assert accountant["stereotype"] == "anti" and accountant["gold"] == "male"
    assert sorted(items["subset"].unique()) == sorted(f"{t}/{v}" for t in ("es", "it", "fr", "de") for v in ("her", "him"))
    counts = items.group_by("stereotype").len()
    assert dict(counts.iter_rows()) == {"pro": 160, "anti": 160}


def test_any_range_equals_the_full_expansion(otsc_en):
    full = otsc_en.slice(0, otsc_en.size)
    pieces = pl.concat(list(otsc_en.batches(rows=37)))
    assert pieces.equals(full)
    assert otsc_en.slice(100, 105).equals(full.slice(100, 5))
    assert otsc_en.slice(otsc_en.size - 2, otsc_en.size + 50).height == 2


def test_fingerprint_follows_the_lexicon(otsc_en, tmp_path):
    other = tmp_path / "lexicon.csv"
    text = LEXICON.read_text(encoding="utf-8").replace("carpenter,2,male", "carpenter,3,male")
    other.write_text(text, encoding="utf-8")
    assert load_template(OTSC_EN, lexicon=other).open().fingerprint != otsc_en.fingerprint
    assert load_template(OTSC_EN).open().fingerprint == otsc_en.fingerprint


def test_a_run_can_choose_target_languages(tmp_path, data_dir):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "suites": [str(OTSC_EN)], "targets": {"otsc-en": ["it"]},
        "systems": {"copy": {"backend": "identity"}}}), encoding="utf-8")
    loaded = load_config(config)
    assert loaded.suites == ("otsc-en",)
    assert SUITES.get("otsc-en").targets == ("it",)
    assert SUITES.get("otsc-en").open().size == 80
    config.write_text(yaml.safe_dump({
        "suites": [str(OTSC_EN)], "targets": {"otsc-en": ["pt"]},
        "systems": {"copy": {"backend": "identity"}}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"run.yaml:\d+: targets.otsc-en: otsc-en has target languages es, it, fr, de; not pt"):
        load_config(config)


def _suite(tmp_path: Path, **changes) -> Path:
    spec = yaml.safe_load(OTSC_EN.read_text(encoding="utf-8"))
    spec["occupations"]["lexicon"] = str(LEXICON)
    for key, value in changes.items():
        if value is None:
            spec.pop(key)
        else:
            spec[key] = value
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("changes, message", [
    ({"template": "I've known {pronoun}, my {adjective} friend is {article} {occupation}."},
     r"variants.0.fill: no value for slot \{adjective\}"),
    ({"variants": [{"name": "her", "gold": "female", "fill": {"pronoun": "her", "colour": "red"}}]},
     r"variants.0.fill.colour: unknown slot"),
    ({"variants": [{"name": "her", "fill": {"pronoun": "her"}}]}, r"variants.0.gold: Field required"),
    ({"variants": [{"name": "x", "gold": "female", "fill": {"pronoun": "her"}},
                   {"name": "x", "gold": "male", "fill": {"pronoun": "him"}}]}, r"variants.1.name: variant 'x' is listed twice"),
    ({"detectors": {"es": "otsc-friend-es"}}, r"detectors: no detector for target language 'it'"),
    ({"subset": "{language}"}, r"subset: may use \{target\} and \{variant\} only"),
    ({"scorer": "bleu"}, r"scorer: Input should be 'otsc' or 'tgbi'"),
    ({"flavour": 1}, r"flavour: unknown key"),
    ({"occupations": {"lexicon": str(LEXICON), "slots": {"job": "en"}}}, r"occupations.slots.job: unknown slot"),
])
def test_malformed_templates_name_file_line_and_field(tmp_path, changes, message):
    path = _suite(tmp_path, **changes)
    with pytest.raises(ConfigError, match=rf"{path}:\d+: {message}"):
        load_template(path)


@pytest.mark.parametrize("edit, message", [
    (lambda rows: rows + [rows[1]], r":42: occupation: 'carpenter' is listed twice \(first on line 2\)"),
    (lambda rows: [rows[0], rows[1].replace(",carpintero,", ",,")] + rows[2:], r":2: es_m: missing form for occupation 'carpenter'"),
    (lambda rows: [rows[0], rows[1].replace("carpenter,2,", "carpenter,200,")] + rows[2:], r":2: female_share: 200.0 is outside 0..100"),
    (lambda rows: [rows[0], rows[1].replace(",male,", ",macho,")] + rows[2:], r":2: stereotype: 'macho' is not one of"),
    (lambda rows: [rows[0].replace("en_article", "article")] + rows[1:], r":1: lexicon lacks column\(s\) en_article"),
])
def test_malformed_lexicons_name_file_and_line(tmp_path, edit, message):
    rows = LEXICON.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(edit(rows)) + "\n", encoding="utf-8")
    spec = _suite(tmp_path)
    with pytest.raises(ConfigError, match=rf"{bad}{message}"):
        load_template(spec, lexicon=bad)
    if "es_m" in message:  # a form only one language needs is checked only when a suite uses it
        german_only = _suite(tmp_path, targets=["de"], detectors={"de": "otsc-friend-de"})
        assert load_template(german_only, lexicon=bad).open().size == 80


def test_per_occupation_correlation_follows_female_share():
    """p_f rises with the share in one synthetic system and falls in another."""
    rows = []
    for k, share in enumerate(np.linspace(5, 95, 10)):
        female = k + 1  # out of 10 outputs: linear in the share
        for i in range(10):
            rows.append({"system": "up", "suite": "s", "tgt_lang": "es", "occupation": f"o{k}", "female_share": share,
                         "label": "female" if i < female else "male"})
            rows.append({"system": "down", "suite": "s", "tgt_lang": "es", "occupation": f"o{k}", "female_share": share,
                         "label": "male" if i < female else "female"})
    out = per_occupation(pl.DataFrame(rows), n_boot=200, seed=0)
    r = {row["system"]: row for row in out.filter(pl.col("metric") == "r_female_share").iter_rows(named=True)}
    assert r["up"]["value"] > 0.99 and r["down"]["value"] < -0.99
    # at r = 1 every replicate is at most 1: the percentile interval sits just below the point
    assert r["up"]["n"] == 10 and 0.8 < r["up"]["ci_low"] <= r["up"]["ci_high"] <= 1.0
    rho = out.filter((pl.col("metric") == "rho_female_share") & (pl.col("system") == "up"))["value"].item()
    assert rho == pytest.approx(1.0)
    o9 = out.filter((pl.col("subset") == "es/occupation/o9") & (pl.col("metric") == "p_f") & (pl.col("system") == "up"))
    assert o9["value"].item() == pytest.approx(1.0) and o9["n"].item() == 10
