"""WinoMT's adjective experiment: the suite ``winomt-en-adj`` (sources rebuilt the way mt_gender built
them, joined to the recorded outputs like winomt-en's), the article taken across the inserted
adjective, no ΔS for a suite of anti-stereotypical items only, and the report's table of Acc with and
without the adjective."""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from biaseval.label.entities import entity_tokens
from biaseval.label.tokens import tokenize
from biaseval.metrics.winomt import winomt
from biaseval.report.adjectives import adjective_section, adjective_table
from biaseval.suites import BUILTIN  # the shipped suites (SUITES holds the last resolved run's versions)
from biaseval.suites.winomt_en import TARGETS
from conftest import REPO

MT_GENDER = "mt_gender"


@pytest.fixture(scope="module")
def adj_data(data_dir):
    return BUILTIN["winomt-en-adj"].open()


def test_items_are_the_anti_sentences_with_the_adjective(adj_data, data_dir):
    assert adj_data.size == 1584 * len(TARGETS)
    assert adj_data.subset_sizes() == {f"{t}/anti": 1584 for t in TARGETS}
    es = adj_data.table.filter(pl.col("tgt_lang") == "es")
    anti = (data_dir / MT_GENDER / "data/aggregates/en_anti.txt").read_text(encoding="utf-8").splitlines()
    for row, line in zip(es.iter_rows(named=True), anti):
        gold, index, sentence, entity = line.split("\t")
        words = row["source"].split(" ")
        # one word more: the adjective of the gold gender, where the entity was; the entity one to the right
        assert words[int(index)] == {"male": "handsome", "female": "pretty"}[gold]
        assert words[:int(index)] + words[int(index) + 1:] == sentence.split(" ")
        assert row["entity_index"] == int(index) + 1 and words[row["entity_index"]].strip(".,") == entity.split()[0]
        assert (row["gold"], row["occupation"], row["stereotype"]) == (gold, entity, "anti")
    # line numbers are those of en.txt, whose first 1,584 lines are en_anti.txt: item ids pair with winomt-en's
    assert es["item_id"][6] == "winomt-en-adj/es/anti/00007"


@pytest.mark.parametrize("system", ["google", "bing"])
def test_sources_are_exactly_those_of_the_recorded_files(adj_data, data_dir, system):
    items = adj_data.table
    for tgt in TARGETS:
        path = data_dir / MT_GENDER / f"translations/{system}/adj.en-{tgt}.txt"
        recorded = [line.split(" ||| ")[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
        assert items.filter(pl.col("tgt_lang") == tgt)["source"].to_list() == recorded, (system, tgt)


def test_arabic_is_an_optional_language_of_the_adjective_suite(data_dir):
    """conf/winomt-en-adj.yaml adds Arabic (which has adjective outputs) to both suites' default seven."""
    from biaseval.config import load_config
    from biaseval.run.plan import prepare

    assert "ar" not in BUILTIN["winomt-en-adj"].targets  # not scored unless a run names it
    config = REPO / "conf" / "winomt-en-adj.yaml"
    prepared = prepare(load_config(config), config.parent)
    adj = prepared.suites["winomt-en-adj"]
    assert adj.suite.targets == ("ar", *TARGETS) and adj.size == 1584 * 8
    arabic = adj.table.filter(pl.col("tgt_lang") == "ar")
    for system in ("google", "bing"):
        path = data_dir / MT_GENDER / f"translations/{system}/adj.en-ar.txt"
        recorded = [line.split(" ||| ")[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
        assert arabic["source"].to_list() == recorded, system


def test_the_article_is_taken_across_the_adjective_and_the_adjective_is_not():
    source = "The pretty developer argued with the designer because she did not like the design."
    tokens = tokenize(source, "en")
    assert [tokens[k] for k in entity_tokens(source, 2, "developer")] == ["The", "developer"]
    source = "The developer argued with the handsome designer because his idea cannot be implemented."
    assert [tokenize(source, "en")[k] for k in entity_tokens(source, 6, "designer")] == ["the", "designer"]
    # without an inserted adjective, only a directly preceding article counts
    source = "The developer argued with the designer today."
    assert [tokenize(source, "en")[k] for k in entity_tokens(source, 5, "designer")] == ["the", "designer"]
    assert [tokenize(source, "en")[k] for k in entity_tokens(source, 1, "developer")] == ["The", "developer"]
    source = "Someone left the bartender a tip."
    assert [tokenize(source, "en")[k] for k in entity_tokens(source, 0, "someone")] == ["Someone"]


def _labelled(stereotypes, golds, labels, suite="winomt-en-adj"):
    n = len(golds)
    return pl.DataFrame({"system": ["s"] * n, "suite": [suite] * n, "tgt_lang": ["es"] * n,
                         "stereotype": stereotypes, "gold": golds, "label": labels})


def test_no_delta_s_for_a_suite_of_anti_items_only():
    only_anti = winomt(_labelled(["anti"] * 3, ["male", "female", "female"], ["male", "male", "female"]),
                       basis="acc", by_target=True, n_boot=20)
    assert "delta_s" not in only_anti["metric"].to_list()
    assert only_anti.filter((pl.col("subset") == "es") & (pl.col("metric") == "acc"))["value"][0] == pytest.approx(2 / 3)
    both = winomt(_labelled(["anti", "pro"], ["male", "female"], ["male", "male"], "winomt-en"),
                  basis="acc", by_target=True, n_boot=20)
    assert both.filter(pl.col("metric") == "delta_s")["value"].to_list() == [pytest.approx(0 - 1)]


def _acc_row(system, suite, subset, value, n, low, high):
    return {"system": system, "suite": suite, "subset": subset, "metric": "acc", "value": value, "n": n,
            "ci_low": low, "ci_high": high}


def test_adjective_table_pairs_the_anti_subsets_by_system_and_language():
    metrics = pl.DataFrame([
        _acc_row("google", "winomt-en", "es/anti", 740 / 1584, 1584, 0.44, 0.49),
        _acc_row("google", "winomt-en", "es/pro", 0.9, 1582, 0.88, 0.92),  # not part of the table
        _acc_row("google", "winomt-en", "es", 0.6, 3886, 0.58, 0.62),
        _acc_row("google", "winomt-en-adj", "es/anti", 1386 / 1584, 1584, 0.857, 0.891),
        _acc_row("google", "winomt-en-adj", "es", 1386 / 1584, 1584, 0.857, 0.891),
        _acc_row("bing", "winomt-en-adj", "ru/anti", 0.433, 1584, 0.41, 0.46),  # no winomt-en row for it
    ])
    table = adjective_table(metrics)
    assert table.select("language", "system").rows() == [("es", "google"), ("ru", "bing")]
    google = table.row(0, named=True)
    assert google["delta"] == pytest.approx((1386 - 740) / 1584)  # 40.8 points
    assert (google["acc_without"], google["n_with"]) == (pytest.approx(740 / 1584), 1584)
    assert table.row(1, named=True)["acc_without"] is None and table.row(1, named=True)["delta"] is None
    text = "\n".join(adjective_section(metrics))
    # the paper's comparison (§3.3, Table 4): the whole set (2,332 of 3,886 right) against the whole set with
    # the anti sentences replaced by their adjective versions (2,332 - 740 + 1,386 of 3,886 right)
    assert google["acc_all"] == pytest.approx(0.6) and google["n_replaced"] == 3886
    assert google["acc_replaced"] == pytest.approx((2332 - 740 + 1386) / 3886)
    assert google["delta_replaced"] == pytest.approx((2332 - 740 + 1386) / 3886 - 0.6)
    # each whole-set Acc with its interval (Wilson's of 2,978 of 3,886: [75.3, 77.9], as statsmodels gives it)
    assert ("| es | google | 46.7 [44.0, 49.0] | 87.5 [85.7, 89.1] | +40.8 | 60.0 [58.0, 62.0] | 76.6 [75.3, 77.9] "
            "| +16.6 | 1,584 | 1,584 |") in text
    assert "| ru | bing | — | 43.3 [41.0, 46.0] | — | — | — | — | — | 1,584 |" in text
    assert "§3.3, Table 4" in text and "section 4" not in text
    assert adjective_section(metrics.filter(pl.col("suite") == "winomt-en")) == []


@pytest.fixture(scope="module")
def adj_run(data_dir, ray_local, tmp_path_factory):
    """conf/winomt-en-adj.yaml for Spanish only (the whole config is seven times the labelling)."""
    from biaseval.pipeline import sweep

    spec = yaml.safe_load((REPO / "conf" / "winomt-en-adj.yaml").read_text(encoding="utf-8"))
    spec["targets"] = {"winomt-en": ["es"], "winomt-en-adj": ["es"]}
    spec["metrics"] = {"bootstrap": 200, "seed": 1}
    path = tmp_path_factory.mktemp("config") / "winomt-en-adj.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    return sweep(path, tmp_path_factory.mktemp("winomt-en-adj") / "run")


def test_sweep_scores_the_adjective_suite_and_reports_the_table(adj_run):
    labels = pl.read_parquet(adj_run.run.labels)
    items = pl.read_parquet(adj_run.run.items).select("item_id", "suite", "subset", "gold")
    counts = dict(labels.group_by("suite").len().iter_rows())
    assert counts == {"winomt-en": 2 * 3888, "winomt-en-adj": 2 * 1584}
    # every adjective source is in its recorded file: all translated (winomt-en lacks the two edited sources)
    assert labels.filter(pl.col("suite") == "winomt-en-adj")["label"].null_count() == 0
    # Acc of each table cell, recounted from labels.parquet: right labels / translated anti items
    rows = labels.drop("suite").join(items, on="item_id").filter(pl.col("subset") == "es/anti")
    table = adjective_table(adj_run.metrics)
    for system in ("google", "bing"):
        cell = table.filter(pl.col("system") == system).row(0, named=True)
        for suite, column in (("winomt-en", "acc_without"), ("winomt-en-adj", "acc_with")):
            part = rows.filter((pl.col("system") == system) & (pl.col("suite") == suite) & pl.col("label").is_not_null())
            assert part.height == 1584
            assert cell[column] == pytest.approx((part["label"] == part["gold"]).sum() / part.height), (system, suite)
        # the paper's "+adj" set: winomt-en's Spanish items, the anti ones taken from winomt-en-adj
        whole = labels.drop("suite").join(items, on="item_id").filter(
            (pl.col("system") == system) & pl.col("label").is_not_null()
            & (((pl.col("suite") == "winomt-en") & (pl.col("subset") != "es/anti")) | (pl.col("subset") == "es/anti")
               & (pl.col("suite") == "winomt-en-adj")) & pl.col("item_id").str.contains("/es/"))
        assert cell["n_replaced"] == whole.height == 3886 - 1584 + 1584
        assert cell["acc_replaced"] == pytest.approx((whole["label"] == whole["gold"]).sum() / whole.height), system
    # the paper's finding, for Google's Spanish: an adjective agreeing with the gold gender helps, clearly
    google = table.filter(pl.col("system") == "google").row(0, named=True)
    assert google["with_low"] > google["without_high"]
    assert adj_run.metrics.filter((pl.col("suite") == "winomt-en-adj") & (pl.col("metric") == "delta_s")).height == 0
    report = adj_run.run.report.read_text(encoding="utf-8")
    assert "## WinoMT: the adjective experiment" in report
    assert f"| es | google | {100 * google['acc_without']:.1f} [" in report
    html = (adj_run.run.root / "report.html").read_text(encoding="utf-8")
    table = html[html.index('id="winomt-the-adjective-experiment"'):]
    assert table[:table.index("</table>")].count("<tr><td>es</td>") == 2  # google and bing
    assert "whole set, +adj: Acc (%)" in table and "§3.3, Table 4" in table
    from biaseval.report.tables import value_cell

    # the HTML's precision for Acc, with its Wilson interval
    shown = value_cell(google["acc_replaced"], google["replaced_low"], google["replaced_high"], "acc")
    assert f'<td class="num">{shown.text}<span class="ci">{shown.ci}</span></td>' in table[:table.index("</table>")]


def test_the_adjective_goes_where_the_entity_was():
    from biaseval.suites.winomt_en_adj import with_adjective

    assert with_adjective("female", 1, "The nurse left.") == ("The pretty nurse left.", 2)
    assert with_adjective("male", 4, "She spoke to the clerk.") == ("She spoke to the handsome clerk.", 5)
    assert with_adjective("neutral", 1, "The nurse left.") == ("The nurse left.", 1)
