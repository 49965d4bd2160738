"""Drift alarms that can be believed, end to end on otsc-en's recorded outputs (issue 24): one label
changed in a 79-item sample raises nothing, 46 of 150 items flipped one way do, and a run's family
holds one paired test per system × suite × subset group (p_m and p_f of the same items are one
test), so its size is the number of such groups plus the unpaired metrics."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO

from biaseval.monitor.run import run_monitor
from biaseval.monitor.verdict import EXIT_DRIFT

SENTENCES = {  # a system whose friend follows the pronoun, in every target language of otsc-en
    "es": {"her": "La conozco desde hace mucho tiempo, mi amiga trabaja como {es_f}.",
           "him": "Lo conozco desde hace mucho tiempo, mi amigo trabaja como {es_m}."},
    "it": {"her": "La conosco da molto tempo, la mia amica lavora come {it_f}.",
           "him": "Lo conosco da molto tempo, il mio amico lavora come {it_m}."},
    "fr": {"her": "Je la connais depuis longtemps, mon amie travaille comme {fr_f}.",
           "him": "Je le connais depuis longtemps, mon ami travaille comme {fr_m}."},
    "de": {"her": "Ich kenne sie schon lange, meine Freundin arbeitet als {de_f}.",
           "him": "Ich kenne ihn schon lange, mein Freund arbeitet als {de_m}."},
}
FEMALE_TO_MALE = {"es": ("mi amiga", "mi amigo"), "it": ("la mia amica", "il mio amico"), "fr": ("mon amie", "mon ami"),
                  "de": ("meine Freundin", "mein Freund")}


def _recorded(folder: Path) -> None:
    rows = list(csv.DictReader((REPO / "biaseval" / "data" / "lexicon" / "occupations.csv").open(encoding="utf-8")))
    for lang, variants in SENTENCES.items():
        (folder / "out" / lang).mkdir(parents=True, exist_ok=True)
        for variant, sentence in variants.items():
            (folder / "out" / lang / f"{variant}.txt").write_text("".join(sentence.format(**r) + "\n" for r in rows),
                                                                  encoding="utf-8")


def _config(folder: Path, targets: list[str], systems: dict | None = None, **monitor) -> Path:
    systems = systems or {"mine": {"backend": "recorded", "version": "t",
                                   "options": {"files": {"otsc-en": "out/{target}/{stem}.txt"}}}}
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump({
        "name": "alarms", "suites": ["otsc-en"], "targets": {"otsc-en": targets}, "systems": systems,
        "cache": {"path": str(folder / "cache")}, "metrics": {"bootstrap": 100, "seed": 2},
        "monitor": {"store": str(folder / "store"), **monitor}}), encoding="utf-8")
    return path


def _make_male(folder: Path, items: pl.DataFrame) -> None:
    """The recorded "her" lines of ``items`` (item rows of items.parquet) now say the friend is a man."""
    for (lang,), part in items.group_by("tgt_lang"):
        path = folder / "out" / lang / "her.txt"
        lines = path.read_text(encoding="utf-8").split("\n")
        before, after = FEMALE_TO_MALE[lang]
        for line in part["line"].to_list():
            assert before in lines[line - 1]
            lines[line - 1] = lines[line - 1].replace(before, after)
        path.write_text("\n".join(lines), encoding="utf-8")


def _sampled_her_items(run) -> pl.DataFrame:
    return pl.read_parquet(run.root / "items.parquet").filter(pl.col("subset").str.ends_with("/her")).sort("item_id")


@pytest.fixture(scope="module")
def one_flip(ray_local, tmp_path_factory):
    """French only (80 items), a sample of 79; one "her" item's friend becomes male in the second run
    — an item whose occupation has no other item in the sample where there is one (a subset of one
    item: a bootstrap gives it a zero-width interval)."""
    folder = tmp_path_factory.mktemp("one-flip")
    _recorded(folder)
    path = _config(folder, ["fr"], sample={"size": 79, "seed": 0})
    first = run_monitor(path, stream=io.StringIO())
    items = pl.read_parquet(first.run.root / "items.parquet")
    alone = items.group_by("occupation").len().filter(pl.col("len") == 1)["occupation"]
    her = _sampled_her_items(first.run)
    chosen = her.filter(pl.col("occupation").is_in(alone.implode())).head(1)
    chosen = chosen if chosen.height else her.head(1)
    _make_male(folder, chosen)
    return first, run_monitor(path, stream=io.StringIO()), chosen.row(0, named=True)


def test_one_flipped_label_in_a_sample_of_79_raises_no_alarm(one_flip):
    first, second, item = one_flip
    assert first.exit_code == 0 and first.systems[0].status == "no baseline"
    mine = second.systems[0]
    assert second.exit_code == 0 and not second.alarm and mine.status == "ok", mine.changes.filter(pl.col("significant"))
    suite = mine.suites[0]
    assert suite["items"] == 79 and suite["flipped"] == 1 and (suite["better"], suite["worse"]) == (0, 1)
    assert mine.flips["item_id"].to_list() == [item["item_id"]]
    group = f"fr/occupation/{item['occupation']}"
    rows = {r["metric"]: r for r in mine.changes.filter(pl.col("subset") == group).iter_rows(named=True)}
    # the one item's friend turned male: p_m and p_f of its occupation moved, tested once, on the item
    assert rows["p_m"]["change"] > 0 and rows["p_f"]["change"] < 0
    assert rows["p_m"]["test"] == rows["p_f"]["test"] == "labels" and rows["p_m"]["p"] == rows["p_f"]["p"] == 1.0
    assert rows["p_m"]["change_low"] < 0 < rows["p_m"]["change_high"]  # one item is no evidence: 0 is inside
    paired = mine.changes.filter(pl.col("test").is_in(["labels", "outcome"]))
    assert paired["p"].min() == 1.0  # one flip is no evidence in any group it belongs to
    assert mine.changes["p_adjusted"].drop_nulls().min() > 0.05


def test_no_share_has_a_zero_width_interval(one_flip):
    """Every share in metrics.parquet (p_m, p_f, p_n) has an interval wider than a point, at 0/n and
    n/n too (Wilson's): a one-item occupation is not known exactly."""
    _, second, _ = one_flip
    metrics = pl.read_parquet(second.run.root / "metrics.parquet")
    shares = metrics.filter(pl.col("metric").is_in(["p_m", "p_f", "p_n"]))
    assert shares.height and (shares["ci_high"] - shares["ci_low"]).min() > 0
    edge = shares.filter((pl.col("n") == 1) & (pl.col("value") == 1.0))
    assert edge.height and edge["ci_low"].max() < 0.25  # Wilson's 95% interval of 1/1: [0.2065, 1]


@pytest.fixture(scope="module")
def many_flips(ray_local, tmp_path_factory):
    """All four languages (320 items), a sample of 150; 46 sampled "her" items turn male."""
    folder = tmp_path_factory.mktemp("many-flips")
    _recorded(folder)
    path = _config(folder, ["es", "it", "fr", "de"], sample={"size": 150, "seed": 0})
    first = run_monitor(path, stream=io.StringIO())
    her = _sampled_her_items(first.run)
    assert her.height >= 46
    _make_male(folder, her.head(46))
    return first, run_monitor(path, stream=io.StringIO())


def test_46_flips_of_150_raise_the_alarm(many_flips):
    _, second = many_flips
    mine = second.systems[0]
    assert second.exit_code == EXIT_DRIFT and mine.status == "drift"
    suite = mine.suites[0]
    assert suite["items"] == 150 and suite["flipped"] == 46 and (suite["better"], suite["worse"]) == (0, 46)
    assert suite["mcnemar_p"] == pytest.approx(2 * 0.5 ** 46) and suite["significant"]
    significant = mine.changes.filter(pl.col("significant"))
    assert set(significant["test"]) == {"labels"} and significant["subset"].str.ends_with("/her").all()


@pytest.fixture(scope="module")
def unchanged(ray_local, tmp_path_factory):
    """The identity system on the whole of otsc-en (4 × 40 occupations × her/him), twice."""
    folder = tmp_path_factory.mktemp("identity")
    path = _config(folder, ["es", "it", "fr", "de"], systems={"ident": {"backend": "identity"}})
    run_monitor(path, stream=io.StringIO())
    return run_monitor(path, stream=io.StringIO())


def test_the_family_is_one_paired_test_per_group(unchanged):
    """p_m and p_f of an occupation are one test on its items, as for the per-pronoun subsets: the
    family is 160 occupations + 8 subsets (labels) + the suite (McNemar on the outcome) = 169, the
    number of system × suite × subset groups with paired data (no unpaired metric is watched)."""
    summary = json.loads((unchanged.run.root / "drift.json").read_text(encoding="utf-8"))
    changes = unchanged.systems[0].changes
    watched = changes.filter(pl.col("metric").is_in(["p_m", "p_f", "p_n"]))
    assert not watched["test"].str.starts_with("interval:").any()
    groups = watched.select("suite", "subset").unique().height
    assert groups == 4 * 40 + 8
    assert summary["statistics"]["tests"] == groups + 1 == 169
    assert unchanged.exit_code == 0 and changes["p"].drop_nans().min() == 1.0
