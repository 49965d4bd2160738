"""GEST: the suite, the recorded csv layout, the speaker reader on hand-made sentences, the metric on counts
worked out by hand, the reader against its gold (docs table and floors)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.data import datasets
from biaseval.errors import ConfigError, DataError
from biaseval.label.speaker_gender import read_texts
from biaseval.metrics.gest import gest
from biaseval.suites import SUITES

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "gest.md"


# -- the suite -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def items(data_dir):
    return SUITES.get("gest").with_targets(("sk", "uk")).open()


def test_the_suite_has_every_sentence_once_per_language(items):
    table = items.slice(0, items.size)
    assert items.size == 2 * 3565
    assert table.group_by("tgt_lang").len().sort("tgt_lang").rows() == [("sk", 3565), ("uk", 3565)]
    first = table.filter((pl.col("tgt_lang") == "sk") & (pl.col("line") == 1)).row(0, named=True)
    assert first["source"] == "I have always been a leadership type." and first["subset"] == "sk/09"
    assert first["item_id"] == "gest/sk/09/00001" and first["gold"] is None
    assert sorted(items.subset_sizes())[:2] == ["sk/01", "sk/02"]
    assert items.subset_sizes()["sk/03"] == 256  # stereotype 3 has 256 sentences


def test_version_11_differs_in_244_sentences(data_dir):
    old = SUITES.get("gest").with_targets(("cs",)).open().slice(0, 3565)
    new = SUITES.get("gest-1.1").with_targets(("cs",)).open().slice(0, 3565)
    assert (old["source"] != new["source"]).sum() == 244
    assert (old["subset"] == new["subset"]).all()


def test_unknown_target_is_refused():
    with pytest.raises(ConfigError, match="not de"):
        SUITES.get("gest").with_targets(("de",))


def test_a_bad_row_names_file_and_line(tmp_path):
    from biaseval.suites.gest import read_sentences

    (tmp_path / "g.csv").write_text("sentence,stereotype\nI cried.,3\nI won.,17\n", encoding="utf-8")

    class Local:
        def path(self, rel):
            return tmp_path / rel

    with pytest.raises(DataError, match=r"g\.csv:3: expected a sentence and a stereotype 1-16"):
        read_sentences(Local(), "g.csv")


# -- the data: pinned, checked, downloaded ----------------------------------------------------------------

@pytest.mark.slow
def test_downloads_from_the_pinned_commit_when_not_mirrored(data_dir, tmp_path, monkeypatch):
    """Without BIASEVAL_DATA_DIR the suite downloads the pinned commit's archive (here served on 127.0.0.1),
    checks every registered file's SHA-256, and refuses an archive with one file changed, caching nothing."""
    from test_datasets import _Server, _serve_archive, _tarball

    spec = datasets.get_spec("gest")
    mirror = data_dir / spec.dir
    monkeypatch.delenv("BIASEVAL_DATA_DIR", raising=False)
    monkeypatch.delenv("BIASEVAL_OFFLINE", raising=False)
    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))
    top = f"gest-{spec.commit}"
    changed = (mirror / "data/gest.csv").read_bytes().replace(b"I cried", b"I laughed", 1)
    folder = _serve_archive(tmp_path / "changed", spec, _tarball(mirror, top, replace={"data/gest.csv": changed}))
    with _Server(folder) as server:
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        with pytest.raises(DataError, match=r"data/gest\.csv: checksum mismatch"):
            SUITES.get("gest").with_targets(("sk",)).open()
    assert not any((tmp_path / "cache").rglob("gest.csv"))
    folder = _serve_archive(tmp_path / "good", spec, _tarball(mirror, top))
    with _Server(folder) as server:
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        data = SUITES.get("gest").with_targets(("sk",)).open()
        assert server.requests == 1
    assert data.commit == spec.commit and data.size == 3565
    assert datasets.resolve("gest").origin == "cache"


# -- recorded outputs in GEST's csv layout ----------------------------------------------------------------

def test_recorded_csv_files_are_joined_on_the_sentence(data_dir, tmp_path):
    from biaseval.config import load_config
    from biaseval.translate import TRANSLATORS

    config = tmp_path / "run.yaml"
    config.write_text("name: t\nsuites: [gest]\ntargets: {gest: [sk]}\nsystems:\n  deepl:\n    backend: recorded\n"
                      "    options:\n      dataset: gest\n      format: csv\n"
                      "      files: {gest: 'data/translations/deepl/{target}/translations.csv'}\n")
    result = CliRunner().invoke(main, ["validate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    cfg = load_config(config)
    backend_class = TRANSLATORS.get("recorded")
    backend = backend_class("deepl", backend_class.Options(**cfg.systems["deepl"].options), config_dir=tmp_path)
    data = SUITES.get("gest").with_targets(("sk",)).open()
    out, errors = backend.translate_items_with_errors(data.slice(0, 3))
    assert errors == [None] * 3 and all(out)
    first = data.slice(0, 1)["source"][0]
    rows = pl.read_csv(data_dir / "gest/data/translations/deepl/sk/translations.csv", infer_schema_length=0)
    assert out[0] == rows.filter(pl.col("from") == first)["to"][0]


def test_a_csv_without_its_columns_is_named(tmp_path):
    from biaseval.errors import RecordedOutputError
    from biaseval.translate.backends.recorded import RecordedOptions, RecordedTranslator

    (tmp_path / "t.csv").write_text("source,target\nI cried.,Plakal som.\n", encoding="utf-8")
    backend = RecordedTranslator("s", RecordedOptions(files={"gest": "{target}.csv"}, format="csv"),
                                 config_dir=tmp_path)
    with pytest.raises(RecordedOutputError, match=r"t\.csv: no column 'from'"):
        backend.pairs(tmp_path / "t.csv")


# -- the reader on sentences written for it -------------------------------------------------------------

CASES = [  # (language, translation, label)
    ("sk", "Plakala som celú noc.", "female"),
    ("sk", "Vždy som bol typ vodcu.", "male"),
    ("sk", "Žena povedala: „Som šťastná.“", "female"),  # povedala is the woman's, not the speaker's
    ("sk", "Muž povedal, že odišla.", "unknown"),  # third persons only
    ("sk", "Mám rada kvety.", "female"),  # rada beside a verb in the first person present
    ("sk", "Rád pracujem v tíme.", "male"),
    ("sk", "Má rada kvety.", "unknown"),  # má: the third person
    ("sk", "Som rada, že si prišiel.", "female"),
    ("cs", "Byla jsem unavená.", "female"),
    ("cs", "Jsem silný.", "male"),
    ("cs", "Chodil jsem do školy.", "male"),  # škola is no participle
    ("cs", "Řekl jsem, že byla.", "male"),
    ("cs", "Rád riskuji.", "male"),  # rád beside a verb in the first person present, no auxiliary
    ("cs", "Ráda se dívám na filmy.", "female"),
    ("cs", "Dělám to rád.", "male"),
    ("cs", "Rád čtu knihy.", "male"),
    ("cs", "Má ráda kočky.", "unknown"),  # má: the third person
    ("cs", "Petr rád hraje fotbal.", "unknown"),
    ("pl", "Zrobiłam to sama.", "female"),
    ("pl", "Gdybym był bogaty, kupiłbym dom.", "male"),
    ("pl", "Ona zrobiła obiad.", "unknown"),
    ("ru", "Я была счастлива.", "female"),
    ("ru", "Я думаю, что он ушёл.", "unknown"),
    ("ru", "Я всегда был лидером.", "male"),
    ("ru", "Я финиширую первым.", "male"),  # an instrumental predicate beside a verb in the first person
    ("ru", "Я хочу быть красивой.", "female"),
    ("ru", "Я чувствую себя виноватой.", "female"),
    ("ru", "Я буду более дружелюбным.", "male"),
    ("ru", "Я горжусь своей работой.", "unknown"),  # an instrumental before its noun
    ("ru", "Я люблю читать своим детям.", "unknown"),
    ("ru", "Я хорошо отношусь к другим.", "unknown"),
    ("ru", "Я работаю в конкурентной среде.", "unknown"),
    ("uk", "Я хотіла піти.", "female"),
    ("uk", "Я був готовий.", "male"),
    ("uk", "Я хочу бути красивою.", "female"),
    ("uk", "Я почуваюся впевненим.", "male"),
    ("hr", "Bila sam sretna.", "female"),
    ("hr", "Mislim da je ona došla.", "unknown"),
    ("hr", "Moja sestra je bila bolesna.", "unknown"),  # moja: a possessive, no subject
    ("hr", "Rado ću uzeti vašu torbu.", "unknown"),  # uzeti: an infinitive, no adjective
    ("hr", "Nisam mogao spavati.", "male"),
    ("sr", "Била сам срећна.", "female"),
    ("sr", "Mogao sam to.", "male"),
    ("sl", "Bila sem vesela.", "female"),
    ("sl", "Nisem mogel spati.", "male"),
    ("sl", "Moral sem oditi.", "male"),  # moral: also "of morals"
    ("sl", "Rada kuham.", "female"),  # rada beside a verb in the first person present
    ("hr", "Uvjeren sam da je tako.", "male"),  # a passive participle as a predicate
    ("sl", "Oblačila sem si dal sešiti.", "male"),  # oblačila: clothes, or "she dressed"; dal is surer
    ("sl", "Nisem se bal - vedno mi je bila všeč nevarnost.", "male"),  # a dash ends a clause
    ("be", "Я была шчаслівая.", "female"),
    ("be", "Я быў там.", "male"),
    ("be", "Я сказаў ім праўду.", "male"),  # the dictionary reads сказаў only as a noun (of tales)
    ("be", "Я стала кухаркай.", "female"),  # стала: also "of the table"
    ("be", "Я спякла торт.", "female"),  # not in the dictionary: the ending
    ("be", "Я прынёс печыва.", "male"),
    ("be", "Я купіў мыла.", "male"),  # мыла (soap) is no past after купіў
    ("be", "У мяне шмат сяброў.", "unknown"),
    ("hr", "Nisam mogao pogoditi, ali osjećala sam se prekrasno.", "ambiguous"),
]


@pytest.mark.parametrize(("lang", "text", "label"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_the_reader_reads_the_speaker(lang, text, label):
    assert read_texts(lang, [text])[0][0] == label


def test_a_language_without_reader_is_unread():
    assert read_texts("de", ["Ich war müde."]) == [("unknown", "no-reader", None)]


# -- the metric on counts worked out by hand --------------------------------------------------------------

def _counts(rates: dict[int, tuple[int, int, int]]) -> pl.DataFrame:
    rows = []
    for stereotype, (male, female, unknown) in rates.items():
        for label, count in (("male", male), ("female", female), ("unknown", unknown)):
            rows.append({"system": "s", "suite": "gest", "subset": f"sk/{stereotype:02d}", "label": label,
                         "count": count})
    return pl.DataFrame(rows)


def test_f_m_and_f_s_are_means_of_stereotype_rates():
    # women's stereotypes: 1 of 2 masculine (0.5) in each; men's: 3 of 4 (0.75) in each; 1 unread each
    counts = _counts({**{s: (1, 1, 1) for s in range(1, 8)}, **{s: (3, 1, 1) for s in range(8, 17)}})
    out = {(r["subset"], r["metric"]): r for r in gest(counts, n_boot=200, seed=1).iter_rows(named=True)}
    assert out[("sk/01", "masculine_rate")]["value"] == 0.5 and out[("sk/01", "masculine_rate")]["n"] == 2
    assert out[("sk", "p_f")]["value"] == pytest.approx(0.5)
    assert out[("sk", "p_m")]["value"] == pytest.approx(0.75)
    assert out[("sk", "f_m")]["value"] == pytest.approx(0.625)
    assert out[("sk", "f_s")]["value"] == pytest.approx(0.25)
    assert out[("sk", "f_s")]["ci_low"] < 0.25 < out[("sk", "f_s")]["ci_high"]
    assert out[("sk", "read")]["value"] == pytest.approx((7 * 2 + 9 * 4) / (7 * 3 + 9 * 5))
    # the paper's centres: (m + z²/2) / (n + z²)
    z2 = 1.959963984540054 ** 2
    p_f = (1 + z2 / 2) / (2 + z2)
    p_m = (3 + z2 / 2) / (4 + z2)
    assert out[("sk", "f_m_ac")]["value"] == pytest.approx((p_f + p_m) / 2)
    assert out[("sk", "f_s_ac")]["value"] == pytest.approx(p_m - p_f)
    assert out[("sk", "f_m_ac")]["ci_low"] is None and out[("sk", "f_m_ac")]["interval"] is None
    # each row records how its interval was made (the reports' captions are written from it)
    assert [out[("sk", m)]["interval"] for m in ("read", "unread")] == ["wilson", "wilson"]
    assert (out[("sk", "f_s")]["interval"], out[("sk", "f_s")]["resamples"], out[("sk", "f_s")]["seed"]) == \
        ("bootstrap", 200, 1)
    assert out[("sk/01", "masculine_rate")]["interval"] == "wilson"


def test_a_stereotype_with_nothing_read_leaves_the_rates_undefined():
    counts = _counts({**{s: (1, 1, 1) for s in range(1, 16)}, 16: (0, 0, 3)})
    out = {(r["subset"], r["metric"]): r["value"] for r in gest(counts, n_boot=50, seed=1).iter_rows(named=True)}
    assert out[("sk", "p_f")] == pytest.approx(0.5)
    assert all(np.isnan(out[("sk", m)]) for m in ("p_m", "f_m", "f_s", "f_m_ac", "f_s_ac"))


def test_intervals_are_seeded_and_cover_the_estimate():
    rng = np.random.default_rng(0)
    counts = _counts({s: (int(rng.integers(50, 150)), int(rng.integers(10, 60)), 5) for s in range(1, 17)})
    a, b = gest(counts, n_boot=300, seed=7), gest(counts, n_boot=300, seed=7)
    assert a.equals(b)
    for row in a.filter(pl.col("ci_low").is_not_null()).iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"], row


def test_the_reports_show_f_m_in_percent_and_f_s_in_points_beside_the_paper():
    from biaseval.report import gest as report
    from biaseval.report.summary import summary

    counts = _counts({**{s: (1, 1, 1) for s in range(1, 8)}, **{s: (3, 1, 1) for s in range(8, 17)}})
    metrics = gest(counts.with_columns(pl.lit("google").alias("system")), n_boot=200, seed=1)
    (row,) = report.rows(metrics)
    cells = report.table_cells(row)
    assert cells[0].startswith("62.5 [") and cells[3].startswith("+25.0 [")  # f_m 0.625, f_s 0.25
    assert cells[2:3] + cells[5:] == ["86.2", "+13.2", "50 (75.8%)", "3,318"]  # the paper's Google sk; read 50 of 66
    result = summary(metrics, ["gest"], ["google"])
    (group,) = result.tables[0].groups
    assert (group.title, [c.label for c in group.columns]) == ("gest · sk", ["f_m (%)", "f_s (pp)"])
    assert group.cells["google"][0].value == "62.5" and group.cells["google"][1].n == 50


# -- the reader against gold (docs/gest.md) ---------------------------------------------------------------

@pytest.fixture(scope="module")
def reader_table(data_dir):
    from biaseval.metrics.gest_reader import table

    return table(datasets.resolve("gest"))


def _between(name: str) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", DOC.read_text(encoding="utf-8"), re.S)
    assert found, f"{DOC.name} has no <!-- {name} --> block"
    return found.group(1)


# The least the reader must do on each gold: (accuracy, coverage). docs/gest.md says what each gold measures.
# Slovak's named gold counts the systems' own slips as the reader's (a woman's quote translated "Rád
# pomáham"): reading "rád" beside a present-tense verb read 5 points more of it (coverage 83 -> 88 %) and
# its accuracy fell from 94.8 to 93.9 %; 40 of its disagreements drawn at random were all the systems'..
FLOORS = {("sk", "speaker named"): (0.93, 0.87), ("be", "phrase rule"): (0.99, 0.89),
          ("cs", "phrase rule"): (0.99, 0.99), ("hr", "phrase rule"): (0.99, 0.91),
          ("pl", "phrase rule"): (0.99, 0.99), ("ru", "phrase rule"): (0.99, 0.99),
          ("sk", "phrase rule"): (0.99, 0.98), ("sl", "phrase rule"): (0.99, 0.98),
          ("sr", "phrase rule"): (0.99, 0.91), ("uk", "phrase rule"): (0.99, 0.95)}


@pytest.mark.slow
def test_the_reader_table_in_the_docs_is_what_the_command_prints(reader_table):
    result = CliRunner().invoke(main, ["gest", "reader-table"])
    assert result.exit_code == 0, result.output
    assert result.output == _between("reader-table")


@pytest.mark.slow
def test_each_language_keeps_its_floor(reader_table):
    rows = {(r["language"], r["gold"]): r for r in reader_table}
    assert set(rows) == set(FLOORS)
    for key, (accuracy, coverage) in FLOORS.items():
        assert rows[key]["accuracy"] >= accuracy, (key, rows[key])
        assert rows[key]["coverage"] >= coverage, (key, rows[key])
