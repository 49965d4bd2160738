"""Issue 23, names: hostile names in a config are refused by ``biaseval validate`` (exit 2, file:line:
field), before a sweep or a monitoring run makes any folder; what a run's data holds (versions, error
messages, occupations, subsets) reaches report.md and drift.md as text and the charts as text.

Each test here was seen failing on the code before the names rule (biaseval/names.py): the sweep wrote
its shard outside --out, the monitor's run folder left its store, long names failed every shard or
ended in a traceback, table rows split, ``<img>`` landed in report.md, ``$...$`` broke the charts."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.errors import ConfigError
from metric_rows import metric_frame


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def identity_config(folder: Path, systems: dict | None = None, **top) -> Path:
    """otsc-en into Spanish with the identity backend: no data set, no network."""
    config = {"name": "names", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
              "systems": systems or {"identity": {"backend": "identity", "version": "v"}},
              "metrics": {"bootstrap": 20}, **top}
    path = folder / "conf" / "names.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def refused(config: Path, *expected: str, command: str = "validate", extra: tuple[str, ...] = ()) -> str:
    result = run_cli(command, "--config", str(config), *extra)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    for text in expected:
        assert text in result.output, result.output
    return result.output


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


IDENTITY = {"backend": "identity", "version": "v"}


# -- finding 3: names become paths ----------------------------------------------------------------

def test_a_system_name_that_climbs_out_of_the_run_directory_is_refused(tmp_path):
    config = identity_config(tmp_path, {"x/../../../escaped": IDENTITY})
    refused(config, f"{config}:8: systems.x/../../../escaped: a system's name holds '/'")
    before = files_under(tmp_path)
    out = tmp_path / "a" / "b" / "out"
    refused(config, "systems.x/../../../escaped", command="sweep", extra=("--out", str(out)))
    assert files_under(tmp_path) == before, "a refused sweep writes nothing, anywhere"


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped", "..", "a/b"])
def test_a_config_name_that_is_a_path_is_refused_before_the_monitor_makes_its_run_folder(tmp_path, name):
    store = tmp_path / "store"
    config = identity_config(tmp_path, name=name, monitor={"store": str(store)})
    refused(config, f"{config}:1: name: {name!r} ")
    before = files_under(tmp_path)
    refused(config, "name:", command="monitor", extra=("--dry-run",))
    assert files_under(tmp_path) == before and not store.exists()


def test_a_300_character_system_name_is_refused_naming_its_length(tmp_path):
    config = identity_config(tmp_path, {"s" * 300: IDENTITY})
    out = refused(config, "a system's name is 300 bytes long in UTF-8; at most 48")
    assert "rerun" not in out


def test_a_300_character_config_name_ends_the_monitor_with_an_error_not_a_traceback(tmp_path):
    config = identity_config(tmp_path, name="m" * 300, monitor={"store": str(tmp_path / "store")})
    refused(config, "name: ", "300 bytes long", command="monitor", extra=("--dry-run",))


@pytest.mark.parametrize("name, reason", [("", "is empty"), ("a\0b", "holds U+0000"), (".hidden", "starts with '.'"),
                                          ("a\\b", "holds '\\\\'"), ("a\u202eb", "holds U+202E RIGHT-TO-LEFT OVERRIDE")])
def test_empty_nul_hidden_and_control_names_are_refused(tmp_path, name, reason):
    config = identity_config(tmp_path, {name: IDENTITY})
    refused(config, f"{config}:8: systems.", f"a system's name {reason}")


def test_a_suite_named_in_a_config_is_a_name_not_a_path(tmp_path):
    (tmp_path / "elsewhere.yaml").write_text("name: elsewhere\n", encoding="utf-8")
    (tmp_path / "conf" / "suites").mkdir(parents=True)  # <config dir>/suites/../../elsewhere.yaml exists
    config = identity_config(tmp_path, suites=["../../elsewhere"], targets={})
    refused(config, f"{config}:3: suites.0: suite '../../elsewhere' holds '/'", "a path ending in .yaml")


def test_a_condition_name_is_a_name_too(tmp_path):
    system = {**IDENTITY, "conditions": {"gender=../../x": {"requests": "female", "options": {"x": 1}}}}
    config = identity_config(tmp_path, {"identity": system})
    refused(config, "systems.identity.conditions.gender=../../x: a condition's name holds '/'")


def test_a_template_suite_name_variant_and_subset_are_names(tmp_path):
    from conftest import REPO

    spec = yaml.safe_load((REPO / "biaseval" / "data" / "suites" / "otsc-en.yaml").read_text(encoding="utf-8"))
    spec["occupations"]["lexicon"] = str(REPO / "biaseval" / "data" / "lexicon" / "occupations.csv")
    for field, value, expected in (("variants", [{**spec["variants"][0], "name": "a|b"}], "variants.0.name: 'a|b' holds '|'"),
                                   ("name", "x" * 80, "name: "),
                                   ("subset", "{target}/../{variant}", "subset: makes the subset 'es/../her'")):
        path = tmp_path / f"suite-{field}.yaml"
        path.write_text(yaml.safe_dump({**spec, field: value}, allow_unicode=True), encoding="utf-8")
        refused(identity_config(tmp_path, name="t", suites=[str(path)], targets={}), str(path), expected)


# -- finding 4: names break outputs ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["a|b|c", "<img src=x onerror=alert(1)>", "cost $\\undefinedcmd$ x", "a`b", "a b"])
def test_names_holding_markup_are_refused(tmp_path, name):
    config = identity_config(tmp_path, {name: IDENTITY})
    refused(config, f"{config}:8: systems.", "a system's name holds")


def test_names_that_file_systems_ignoring_case_would_merge_are_refused(tmp_path):
    config = identity_config(tmp_path, {"Google": IDENTITY, "google": IDENTITY})
    refused(config, "'Google' and 'google' differ only in case")


def _cells(line: str) -> list[str]:
    """A GitHub-flavoured Markdown table row's cells: split at each | no backslash escapes."""
    cells, cell, k = [], "", 1
    while k < len(line) - 1:
        if line[k] == "\\":
            cell, k = cell + line[k:k + 2], k + 2
            continue
        if line[k] == "|":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += line[k]
        k += 1
    return cells + [cell.strip()]


def assert_tables_whole(text: str) -> None:
    """Every row of every table has as many cells as its header."""
    header = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = len(_cells(line))
        assert len(_cells(line)) == header, line


HOSTILE = "<img src=x onerror=alert(1)> a|b $\\undefinedcmd$ `tick"


def test_report_md_shows_markup_from_the_data_as_text(tmp_path):
    """A system's version, an error message, subsets and occupations holding markup, pipes and
    dollars: report.md keeps every table whole and has no raw HTML."""
    from biaseval.report.markdown import read_failures, render

    systems = {"one": {"backend": "identity", "version": HOSTILE, "suites": ["otsc-en"]}}
    info = {"run_id": "names-1", "config_hash": "c0ffee", "biaseval_version": "0.1.0",
            "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00",
            "config": {"name": "names", "description": f"Tom & Jerry {HOSTILE}", "systems": systems},
            "suites": {"otsc-en": {"size": 8, "fingerprint": "e" * 24, "commit": None, "dataset": None, "version": 1}},
            "systems": systems}
    rows = [("one", "otsc-en", f"es/{HOSTILE}", "p_f", 0.4, 8, 0.3, 0.5),
            ("one", "otsc-en", f"es/occupation/{HOSTILE}", "p_f", 0.8, 4, 0.7, 0.9),
            ("one", "otsc-en", "es/occupation/nurse", "p_f", 0.6, 4, 0.5, 0.7),
            ("one", "otsc-en", "es", "r_female_share", 0.5, 2, 0.1, 0.9),
            ("one", "otsc-en", "es", "rho_female_share", 0.5, 2, 0.1, 0.9)]
    metrics = metric_frame(rows)
    labels = tmp_path / "labels.parquet"
    pl.DataFrame({"system": ["one"], "suite": ["otsc-en"], "item_id": ["i1"], "label": [None],
                  "error": [f"HTTP 500: {HOSTILE}\nsecond line"]}, schema_overrides={"label": pl.String}).write_parquet(labels)
    report = render(metrics, info, None, read_failures(labels))
    assert "<img" not in report and "&lt;img src=x onerror=alert(1)>" in report
    assert "$\\undefinedcmd$" not in report.replace("\\$\\\\undefinedcmd\\$", "")  # every $ escaped
    assert_tables_whole(report)
    failure = next(line for line in report.splitlines() if line.startswith("| one | otsc-en | 1 |"))
    assert len(_cells(failure)) == 4


def test_drift_md_keeps_its_tables_whole_whatever_a_translation_holds():
    from biaseval.config import MonitorConfig
    from biaseval.monitor.summary import drift_markdown
    from biaseval.monitor.verdict import SystemDrift

    flips = pl.DataFrame({"suite": ["otsc-en"], "item_id": ["i|1"], "label_base": ["male"], "label": ["female"],
                          "translation_base": [f"a\\|{HOSTILE}"], "translation": [f"b | {HOSTILE}\nmore"]})
    drift = SystemDrift("one", "ok", HOSTILE, f"previous run {HOSTILE}", flips=flips)
    summary = {"run_id": "names-1", "alarm": False, "statistics": {"tests": 0}}
    text = drift_markdown([drift], summary, MonitorConfig(store="s"))
    assert "<img" not in text
    assert_tables_whole(text)
    row = next(line for line in text.splitlines() if line.startswith("| otsc-en |"))
    assert len(_cells(row)) == 6


def _metric_rows(groups: list[str], systems: list[str], metric: str) -> pl.DataFrame:
    rows = [(s, "suite", g, metric, 0.3 + 0.1 * k, 10, 0.2, 0.6) for k, s in enumerate(systems) for g in groups]
    return metric_frame(rows)


MATH = ["cost $\\undefinedcmd$ x", "$x^$", "a $ b", "\\$\\$", "50% $$"]


def test_charts_draw_dollars_and_backslashes_as_text():
    """Subsets, occupations, languages and systems (read back from a run, not only from a config)
    holding mathtext: every chart the reports draw still draws."""
    from datetime import UTC, datetime

    from biaseval.report import plots
    from biaseval.report.occupation_chart import occupation_charts
    from biaseval.report.trends import trend_plot

    systems = ["one", MATH[0]]
    colours = plots.system_colours(systems)
    png, _ = plots.proportion_bars(pl.concat([_metric_rows(MATH, systems, m) for m in ("p_m", "p_f")]), colours)
    assert png.startswith(b"\x89PNG")
    assert plots.tgbi_bars(pl.concat([_metric_rows(MATH, systems, "P"), _metric_rows(["x"], systems, "tgbi")]),
                           colours).startswith(b"\x89PNG")
    assert plots.winomt_bars(_metric_rows(["all"], systems, "acc"), colours, {MATH[0]: "best"}).startswith(b"\x89PNG")
    assert plots.winomt_language_bars(_metric_rows(MATH, systems, "acc"), colours).startswith(b"\x89PNG")
    rates = _metric_rows(MATH, systems, "p_f").rename({"subset": "occupation"})
    assert occupation_charts([rates], colours, {m: 50.0 for m in MATH})[0][0].startswith(b"\x89PNG")
    history = _metric_rows([MATH[1]], systems, "acc").with_columns(
        pl.lit("r1").alias("run_id"), pl.lit(datetime(2026, 1, 1, tzinfo=UTC)).alias("created_at"),
        pl.lit(None, pl.Float64).alias("change"), pl.lit(None, pl.Float64).alias("change_low"),
        pl.lit(None, pl.Float64).alias("change_high"), pl.lit(False).alias("significant"))
    assert trend_plot(history, colours, [(MATH[1], "acc")]).startswith(b"\x89PNG")


def test_embedding_plot_names_stay_in_their_folder(tmp_path):
    from biaseval.report.plots import embedding_scatter

    features = pl.DataFrame({"suite": ["s"], "system": ["../../escaped"], "tgt_lang": ["it"], "src_lang": [MATH[0]],
                             "gender_class": ["neutral"], "cos_src_m": [0.1], "cos_src_f": [0.2], "cos_tgt_m": [0.1],
                             "cos_tgt_f": [0.3]})
    with pytest.raises(ConfigError, match="cannot be made into a path"):
        embedding_scatter(features, tmp_path / "run" / "plots")
    assert not any(p.suffix == ".png" for p in tmp_path.rglob("*"))


# -- the path builders hold even for names that never met the config check ------------------------

def test_a_shard_path_never_leaves_the_run_directory(tmp_path):
    from biaseval.run.rundir import RunDir

    run = RunDir(tmp_path / "run")
    assert run.shard_path("..", "otsc-en", 0) == "system=../suite=otsc-en/shard-00000.parquet"  # one folder
    for name in ("x/../../../escaped", "a/b", "s" * 300):
        with pytest.raises(ConfigError, match="cannot be made into a path"):
            run.shard_path(name, "otsc-en", 0)
    with pytest.raises(ConfigError):
        run.shard_path("ok", "../suite", 0)


def test_a_tampered_status_table_cannot_point_the_monitor_outside_its_store(tmp_path):
    from datetime import UTC, datetime

    from biaseval.monitor.history import previous_run

    outside = tmp_path / "outside"
    (outside / "metrics.parquet").parent.mkdir()
    (outside / "metrics.parquet").write_bytes(b"")
    status = pl.DataFrame({"run_id": ["../outside"], "system": ["one"], "status": ["ok"],
                           "created_at": [datetime(2026, 1, 1, tzinfo=UTC)]})
    with pytest.raises(ConfigError, match="'../outside'"):
        previous_run(status, tmp_path / "store" / "runs", "one")


@pytest.mark.filterwarnings("ignore:Glyph.*missing from font")  # Devanagari: boxes in the charts (DejaVu Sans)
def test_names_at_the_limits_run_end_to_end(tmp_path, ray_local):
    """Accepted names at the edge of the rule (48 bytes; Devanagari) go through a whole
    sweep, score and both reports, their shards in folders under the run directory."""
    hindi = "गूगल_अनुवाद"  # 11 characters, 33 bytes
    long = "n" * 48
    systems = {hindi: IDENTITY, long: IDENTITY}
    config = identity_config(tmp_path, systems, name="m" * 48)
    out = tmp_path / "out"
    result = run_cli("sweep", "--config", str(config), "--out", str(out))
    assert result.exit_code == 0, result.output
    folders = sorted(p.relative_to(out).as_posix() for p in (out / "translations").iterdir())
    assert folders == sorted(f"translations/system={n}" for n in systems)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- system **{hindi}** (identity)" in report and f"| {long} |" in report
    assert (out / "report.html").is_file()
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["run_id"].startswith("m" * 48 + "-")
