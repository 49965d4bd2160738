"""Gender control: conditions (named option overrides asking for a gender) run and scored as systems
of their own, the control_acc / control_unknown / control_unasked metric, its report table, shard
folders for bracketed names (locally and in S3), and Azure's gender option on the wire against the
fake, which honours it for a given share of texts or ignores it."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.run.cluster import start_local_ray
from biaseval.config import load_config
from biaseval.errors import ConfigError
from biaseval.metrics.control import control, control_counts
from biaseval.report.markdown import control_section
from biaseval.run.filesystem import Folder, StoreOptions
from biaseval.run.rundir import RunDir, system_folder
from biaseval.translate.backends.azure import AzureTranslator
from fakes.azure_server import FRIEND_WORDS, FakeAzureTranslator
from test_object_store import BUCKET, s3  # noqa: F401  (moto's S3 server, as the object-store tests start it)

from conftest import REPO

KEY = "fake-azure-key-0123456789abcdef"
REGION = "westeurope"
GENDERS = ("female", "male", "neutral")
LANGUAGES = ("es", "it", "fr", "de")
PER_LANGUAGE = 80  # otsc-en: 2 pronouns x 40 occupations, each a distinct source text
SLOW_FIXTURES = {"azure_ray", "s3"}


@pytest.fixture(autouse=True)
def _no_proxy_for_the_fake(monkeypatch):
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))


def write_config(tmp_path: Path, systems: dict, name: str = "control.yaml", **extra) -> Path:
    config = {"name": "control", "suites": ["otsc-en"], "systems": systems, "metrics": {"bootstrap": 400, "seed": 3},
              "cache": {"path": str(tmp_path / "store")}, **extra}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def azure_system(endpoint: str = "https://example.invalid", **extra) -> dict:
    return {"backend": "azure", "version": "test", "concurrency": 2,
            "options": {"endpoint": endpoint, "category": "gpt-4o"},
            "conditions": {f"gender={g}": {"requests": g, "options": {"gender": g}} for g in GENDERS}, **extra}


# -- the metric, by hand ----------------------------------------------------------------------------

def labelled(system: str, subset: str, tgt: str, labels: dict[str, int]) -> pl.DataFrame:
    rows = [label for label, count in labels.items() for _ in range(count)]
    return pl.DataFrame({"system": system, "suite": "s", "subset": subset, "tgt_lang": tgt, "label": rows})


def test_control_counted_by_hand():
    rows = pl.concat([
        labelled("a[f]", "es/her", "es", {"female": 7, "male": 1, "unknown": 1, "ambiguous": 1}),
        labelled("a[f]", "es/him", "es", {"female": 3, "male": 6, "neutral": 1}),
        labelled("a[f]", "de/her", "de", {"female": 2, "unknown": 8}),
        labelled("a", "es/her", "es", {"female": 9, "male": 1}),
        labelled("a", "es/him", "es", {"male": 10}),
        labelled("a", "de/her", "de", {"male": 5, "female": 5}),
    ]).with_columns(pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("label")).alias("label"))
    # the first row (a[f], es/her, female) lost its label: a failed item, not scored
    metrics = control(control_counts(rows), {"a[f]": "female"}, {"a[f]": "a"})
    got = {(r["subset"], r["metric"]): (r["value"], r["n"]) for r in metrics.iter_rows(named=True)}
    assert got[("es/her", "control_acc")] == (6 / 9, 9)
    assert got[("es/her", "control_unknown")] == (2 / 9, 9)  # unknown and ambiguous
    assert got[("es/him", "control_acc")] == (3 / 10, 10)  # neutral is another gender when female is asked
    assert got[("es/him", "control_unknown")] == (0.0, 10)
    assert got[("es", "control_acc")] == (9 / 19, 19)  # the language, over its subsets
    assert got[("de", "control_unknown")] == (8 / 10, 10)
    assert got[("all", "control_acc")] == (11 / 29, 29)  # two languages: a suite-wide rollup too
    assert got[("es/her", "control_unasked")] == (9 / 10, 10)  # the baseline's share of female
    assert got[("es", "control_unasked")] == (9 / 20, 20)
    assert got[("all", "control_unasked")] == (14 / 30, 30)
    assert {m for _, m in got} == {"control_acc", "control_unknown", "control_unasked"}
    assert all(r["ci_low"] <= r["value"] <= r["ci_high"] for r in metrics.iter_rows(named=True))
    assert metrics.filter(pl.col("system") != "a[f]").height == 0  # the baseline gets no control rows


def test_neutral_requested_is_met_only_by_neutral_and_a_single_language_has_no_all():
    rows = labelled("b", "x", "en", {"neutral": 3, "unknown": 1, "male": 4})
    metrics = control(control_counts(rows), {"b": "neutral"})
    got = {(r["subset"], r["metric"]): r["value"] for r in metrics.iter_rows(named=True)}
    assert got == {("x", "control_acc"): 3 / 8, ("x", "control_unknown"): 1 / 8,
                   ("en", "control_acc"): 3 / 8, ("en", "control_unknown"): 1 / 8}


def test_intervals_are_deterministic_and_narrow_with_more_items():
    small = labelled("c", "x", "en", {"female": 9, "male": 1})
    large = labelled("c", "x", "en", {"female": 900, "male": 100})
    a = control(control_counts(small), {"c": "female"})
    b = control(control_counts(small), {"c": "female"})
    assert a.equals(b)
    width = lambda m: (m.filter(pl.col("subset") == "x")["ci_high"] - m.filter(pl.col("subset") == "x")["ci_low"])[0]  # noqa: E731
    big = control(control_counts(large), {"c": "female"})
    assert width(big) < width(a) / 5


def test_report_table_lists_each_condition_with_its_intervals():
    rows = pl.concat([labelled("az[gender=female]", "es/her", "es", {"female": 9, "male": 1}),
                      labelled("az", "es/her", "es", {"male": 10})])
    metrics = control(control_counts(rows), {"az[gender=female]": "female"}, {"az[gender=female]": "az"})
    systems = {"az": {}, "az[gender=female]": {"requests": "female", "condition_of": "az"}}
    text = "\n".join(control_section(metrics, systems))
    assert "## Gender control" in text and "### az" in text
    line = next(x for x in text.splitlines() if x.startswith("| gender=female | female | s | es/her |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # 0 of 10 unasked outputs are female: Wilson's 95% interval [0, 27.8 %], not the bootstrap's point
    assert cells[4].startswith("90.0 [") and cells[6] == "0.0 [0.0, 27.8]" and cells[7] == "10"
    assert control_section(metrics.clear(), systems) == []


# -- conditions in the config ------------------------------------------------------------------------

def test_conditions_become_systems_after_their_base(tmp_path):
    config = load_config(write_config(tmp_path, {
        "azure": azure_system(limits={"requests_per_s": 8, "chars_per_min": 400_000, "burst_s": 1}),
        "copy": {"backend": "identity"}}))
    assert list(config.systems) == ["azure", "azure[gender=female]", "azure[gender=male]", "azure[gender=neutral]",
                                    "copy"]
    base, female = config.systems["azure"], config.systems["azure[gender=female]"]
    assert base.conditions == {} and base.requests is None and base.condition_of is None
    assert female.options == {"endpoint": "https://example.invalid", "category": "gpt-4o", "gender": "female"}
    assert (female.requests, female.condition_of, female.version) == ("female", "azure", "test")
    # the four share Azure's quota: each runs under a quarter of every rate
    for cfg in list(config.systems.values())[:4]:
        assert (cfg.limits.requests_per_s, cfg.limits.chars_per_min, cfg.limits.burst_s) == (2, 100_000, 1)
    assert config.systems["copy"].limits.requests_per_s is None
    # a system without conditions dumps as before (no new keys); conditions dump as expanded systems
    dumped = config.model_dump(mode="json")["systems"]
    assert not {"conditions", "requests", "condition_of"} & (set(dumped["copy"]) | set(dumped["azure"]))
    assert dumped["azure[gender=male]"]["requests"] == "male"
    assert type(config).model_validate(config.model_dump(mode="json")) == config  # run.json reads back


def test_systems_option_takes_a_base_with_its_conditions_or_one_condition(tmp_path):
    config = load_config(write_config(tmp_path, {"azure": azure_system(), "copy": {"backend": "identity"}}))
    assert list(config.select_systems(["copy", "azure"]).systems) == [
        "copy", "azure", "azure[gender=female]", "azure[gender=male]", "azure[gender=neutral]"]
    assert list(config.select_systems(["azure[gender=neutral]"]).systems) == ["azure[gender=neutral]"]
    with pytest.raises(ConfigError, match="azure\\[gender=female\\]"):
        config.select_systems(["azure[gender=femal]"])  # did you mean


def test_translation_store_identities_differ_per_condition(tmp_path):
    from biaseval.run.plan import identity_of

    config = load_config(write_config(tmp_path, {"azure": azure_system()}))
    identities = [json.dumps(identity_of(cfg), sort_keys=True) for cfg in config.systems.values()]
    assert len(set(identities)) == 4


@pytest.mark.parametrize("condition, field, message", [
    ({"gender=f!": {"requests": "female", "options": {"gender": "female"}}}, "conditions.gender=f!", "a condition's name"),
    ({"fem": {"requests": "feminine", "options": {"gender": "female"}}}, "conditions.fem.requests", "'female'"),
    ({"fem": {"requests": "female"}}, "conditions.fem.options", "Field required"),
    ({"fem": {"requests": "female", "options": {"gender": "feminine"}}}, "conditions.fem.options.gender", "'female'"),
    ({"fem": {"requests": "female", "options": {"genre": "female"}}}, "conditions.fem.options.genre", "unknown key"),
    ({"fem": {"requests": "female", "options": {"key_env": "OTHER_KEY"}}}, "conditions.fem.options",
     "changes no option that decides"),
    ({"fem": {"requests": "female", "options": {"gender": "female"}, "tone": "formal"}}, "conditions.fem.tone",
     "unknown key"),
])
def test_a_bad_condition_is_named_with_file_line_and_field(tmp_path, condition, field, message):
    system = {"backend": "azure", "version": "t", "options": {"category": "gpt-4o"}, "conditions": condition}
    path = write_config(tmp_path, {"azure": system})
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert f"systems.azure.{field}" in text and message in text, text
    assert f"{path}:" in text and text.split(f"{path}:")[1].split(":")[0].isdigit(), text  # a line number


def test_a_condition_cannot_take_another_systems_name_nor_be_declared_by_hand(tmp_path):
    path = write_config(tmp_path, {"azure": azure_system(), "azure[gender=male]": {"backend": "identity"}})
    with pytest.raises(ConfigError, match=r"systems.azure\[gender=male\]: a system's name holds '\['.*brackets are for the "
                                          r"systems that conditions: makes"):
        load_config(path)
    path = write_config(tmp_path, {"copy": {"backend": "identity", "condition_of": "x"}})
    with pytest.raises(ConfigError, match="systems.copy.condition_of: set for the systems that conditions"):
        load_config(path)


@pytest.mark.parametrize("name, base, condition", [("azure-gender-control", "azure", "gender"),
                                                    ("llm-gender-control", "llm", "prompt")])
def test_the_shipped_examples_validate_and_plan_without_network(name, base, condition):
    config = REPO / "conf" / f"{name}.yaml"
    result = CliRunner().invoke(main, ["validate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert "4 systems" in result.output
    result = CliRunner().invoke(main, ["plan", "--config", str(config)])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines()[1:5]]
    assert names == [base] + [f"{base}[{condition}={g}]" for g in GENDERS]
    one = f"{base}[{condition}=neutral]"
    result = CliRunner().invoke(main, ["plan", "--config", str(config), "--systems", one])
    assert result.exit_code == 0 and result.output.splitlines()[1].startswith(f"{one} "), result.output
    assert not any(line.startswith((f"{base} ", f"{base}[{condition}=female]")) for line in result.output.splitlines())


# -- shard folders for bracketed names ------------------------------------------------------------

def test_shard_folders_of_bracketed_names_are_safe_and_distinct():
    assert system_folder("google") == "system=google"  # plain names: as before
    assert system_folder("nllb-600m_v1.2") == "system=nllb-600m_v1.2"
    assert system_folder("azure[gender=female]") == "system=azure!5Bgender=female!5D"
    names = ["a[b]", "a!5Bb!5D", "a*b", "a?b", "a%b", "a{b}", "a#b"]
    folders = [system_folder(n) for n in names]
    assert len(set(folders)) == len(names)
    assert not any(c in f for f in folders for c in "[]*?%{}#")


def test_a_bracketed_system_shard_is_written_listed_and_read_locally(tmp_path):
    run = RunDir(tmp_path / "run")
    rel = run.shard_path("azure[gender=female]", "otsc-en", 0)
    table = pl.DataFrame({"system": ["azure[gender=female]"], "item_id": ["x"]}).to_arrow()
    run.write_shard(rel, table, {b"biaseval.shard_key": b"k"})
    assert run.shard_files() == [rel]
    assert run.read_shards([rel])["system"].to_list() == ["azure[gender=female]"]  # polars, which globs [...]
    assert run.shard_stamp(rel) == ("k", 0)


# -- the Azure backend's gender on the wire --------------------------------------------------------

@pytest.fixture
def fake():
    with FakeAzureTranslator(key=KEY, region=REGION) as server:
        yield server


@pytest.fixture
def azure_env(monkeypatch):
    monkeypatch.setenv("AZURE_TRANSLATOR_KEY", KEY)
    monkeypatch.setenv("AZURE_TRANSLATOR_REGION", REGION)


SOURCES = ["I've known her for a long time, my friend works as a nurse.",
           "I've known him for a long time, my friend works as a baker."]


def test_gender_travels_in_the_target_and_the_fake_honours_it(fake, azure_env):
    fake.genders(honour=1.0, unasked="male")
    backend = AzureTranslator("az", AzureTranslator.Options(endpoint=fake.endpoint, category="gpt-4o", gender="female"))
    try:
        out = backend.translate(SOURCES, "en", "es")
    finally:
        backend.close()
    target = fake.requests[-1].body["inputs"][0]["targets"][0]
    assert target == {"language": "es", "deploymentName": "gpt-4o", "allowFallback": False, "gender": "female"}
    assert fake.requests[-1].gender == "female"
    assert all(" MY amiga WORKS" in t for t in out)
    assert fake.honoured == {("es", "female", s) for s in SOURCES}


def test_the_fake_ignores_or_partly_honours_the_request(fake, azure_env):
    texts = [f"My friend number {i} is here, I've known him long." for i in range(400)]
    for honour, unasked in [(0.0, "source"), (0.9, "male")]:
        fake.reset()
        fake.genders(honour=honour, unasked=unasked)
        backend = AzureTranslator("az", AzureTranslator.Options(endpoint=fake.endpoint, category="gpt-4o",
                                                                gender="female"))
        try:
            out = backend.translate(texts, "en", "it")
        finally:
            backend.close()
        feminine = sum(FRIEND_WORDS["it"]["female"] in t for t in out)
        assert feminine == len(fake.honoured)
        if honour == 0.0:
            assert feminine == 0  # ignored: every friend follows "him"
        else:
            assert 0.85 < feminine / len(texts) < 0.95


def test_the_fake_refuses_a_gender_the_api_does_not_define(fake):
    body = {"inputs": [{"text": "my friend", "language": "en", "targets": [{"language": "es", "gender": "feminine"}]}]}
    request = urllib.request.Request(f"{fake.endpoint}/translate?api-version=2026-06-06", data=json.dumps(body).encode(),
                                     headers={"Ocp-Apim-Subscription-Key": KEY, "Ocp-Apim-Subscription-Region": REGION,
                                              "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    assert err.value.code == 400 and "feminine" in json.load(err.value)["error"]["message"]


# -- sweeps: the fake honours 90 %, or ignores the request ------------------------------------------

@pytest.fixture(scope="module")
def azure_ray(s3):
    """A local Ray whose workers have the fake's key (and, started after it, moto's S3 credentials)."""
    import ray

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AZURE_TRANSLATOR_KEY", KEY)
        mp.setenv("AZURE_TRANSLATOR_REGION", REGION)
        for name in ("no_proxy", "NO_PROXY"):
            mp.setenv(name, "127.0.0.1,localhost")
        start_local_ray(2, logging_level="WARNING")
        try:
            yield ray
        finally:
            ray.shutdown()


def control_rows(metrics: pl.DataFrame, system: str) -> dict[tuple[str, str], dict]:
    part = metrics.filter((pl.col("system") == system) & pl.col("metric").str.starts_with("control_"))
    return {(r["subset"], r["metric"]): r for r in part.iter_rows(named=True)}


@pytest.mark.slow
def test_a_fake_that_honours_90_percent_scores_090_within_its_interval(tmp_path, azure_ray):
    from biaseval.pipeline import sweep

    with FakeAzureTranslator(key=KEY, region=REGION) as fake:
        fake.genders(honour=0.9, unasked="male")  # unasked, every friend is male
        path = write_config(tmp_path, {"azure": azure_system(fake.endpoint)})
        summary = sweep(path, tmp_path / "run")
        assert summary.sweep.failed == 0 and summary.sweep.sent == 4 * 4 * PER_LANGUAGE
        honoured = fake.honoured
        metrics = summary.metrics

        for gender in ("female", "neutral"):  # requests the fake's own choice (male) never meets by chance
            rows = control_rows(metrics, f"azure[gender={gender}]")
            total = 0
            for tgt in LANGUAGES:
                count = sum(1 for t, g, _ in honoured if t == tgt and g == gender)  # by hand, from the fake
                total += count
                seen = "control_unknown" if (gender, tgt) == ("neutral", "de") else "control_acc"
                other = "control_acc" if seen == "control_unknown" else "control_unknown"
                assert rows[(tgt, seen)]["value"] == count / PER_LANGUAGE, (gender, tgt)
                assert rows[(tgt, seen)]["n"] == PER_LANGUAGE
                assert rows[(tgt, other)]["value"] == 0.0
                assert rows[(tgt, "control_unasked")]["value"] == 0.0  # the baseline never says female/neutral
                assert rows[(tgt, seen)]["ci_low"] <= 0.9 <= rows[(tgt, seen)]["ci_high"], (gender, tgt)
            if gender == "female":
                all_ = rows[("all", "control_acc")]
                assert all_["value"] == total / (4 * PER_LANGUAGE) and all_["n"] == 4 * PER_LANGUAGE
                assert all_["ci_low"] <= 0.9 <= all_["ci_high"] and abs(all_["value"] - 0.9) < 0.03
        male = control_rows(metrics, "azure[gender=male]")
        assert all(male[(t, "control_acc")]["value"] == 1.0 for t in LANGUAGES)  # asked or not, male
        base = metrics.filter((pl.col("system") == "azure") & (pl.col("metric") == "p_f"))
        assert base["value"].max() == 0.0  # "does not unless asked": female only on request
        # every row has the provenance of the other metrics
        control_part = metrics.filter(pl.col("metric").str.starts_with("control_"))
        assert control_part["signature"].null_count() == 0 and control_part["run_id"].n_unique() == 1
        assert set(control_part["system"]) == {f"azure[gender={g}]" for g in GENDERS}

        run = tmp_path / "run"
        folders = sorted(p.name for p in (run / "translations").iterdir())
        assert folders == ["system=azure", "system=azure!5Bgender=female!5D", "system=azure!5Bgender=male!5D",
                           "system=azure!5Bgender=neutral!5D"]
        info = json.loads((run / "run.json").read_text(encoding="utf-8"))
        assert list(info["systems"]) == ["azure"] + [f"azure[gender={g}]" for g in GENDERS]
        report = (run / "report.md").read_text(encoding="utf-8")
        assert "## Gender control" in report and "| gender=female | female | otsc-en | es |" in report
        html = (run / "report.html").read_text(encoding="utf-8")
        assert 'id="gender-control"' in html and "azure[gender=neutral]" in html
        assert len(list((tmp_path / "store").glob("azure-*"))) == 4  # one stored identity per condition

        from biaseval.monitor.compare import suite_items

        assert suite_items(RunDir(run), "azure[gender=female]", "otsc-en").height == 4 * PER_LANGUAGE

        before = fake.count
        again = sweep(path, tmp_path / "run")  # a rerun: every shard found under its encoded folder
        assert again.sweep.skipped == again.sweep.shards == 4 and fake.count == before


@pytest.mark.slow
def test_a_fake_that_ignores_the_request_shows_the_unasked_shares_in_a_bucket(tmp_path, azure_ray, s3):
    from biaseval.pipeline import sweep

    with FakeAzureTranslator(key=KEY, region=REGION) as fake:
        fake.genders(honour=0.0, unasked="source")  # the friend follows her/him, whatever is asked
        path = write_config(tmp_path, {"azure": azure_system(fake.endpoint)},
                            output={"endpoint": s3, "region": "us-east-1"})
        out = f"s3://{BUCKET}/runs/control-ignored"
        summary = sweep(path, out)
        assert summary.sweep.failed == 0 and fake.honoured == set()
        metrics = summary.metrics
        p_f = {r["subset"]: r["value"] for r in metrics.filter((pl.col("system") == "azure")
                                                                & (pl.col("metric") == "p_f")).iter_rows(named=True)}
        rows = control_rows(metrics, "azure[gender=female]")
        for tgt in LANGUAGES:
            assert rows[(f"{tgt}/her", "control_acc")]["value"] == 1.0 == p_f[f"{tgt}/her"]
            assert rows[(f"{tgt}/him", "control_acc")]["value"] == 0.0 == p_f[f"{tgt}/him"]
            assert rows[(tgt, "control_acc")]["value"] == 0.5 == rows[(tgt, "control_unasked")]["value"]
        for gender in GENDERS:  # ignored: asked equals unasked, everywhere
            for (subset, metric), row in control_rows(metrics, f"azure[gender={gender}]").items():
                if metric == "control_acc":
                    unasked = control_rows(metrics, f"azure[gender={gender}]")[(subset, "control_unasked")]
                    assert row["value"] == unasked["value"], (gender, subset)

        bucket = Folder(out, StoreOptions(endpoint=s3))
        shards = [f for f in bucket.files("translations") if f.endswith(".parquet")]
        assert sorted({f.split("/")[1] for f in shards}) == [
            "system=azure", "system=azure!5Bgender=female!5D", "system=azure!5Bgender=male!5D",
            "system=azure!5Bgender=neutral!5D"]
        rows = bucket.read_frame(shards, ["system"])
        assert rows["system"].value_counts().sort("system")["count"].to_list() == [4 * PER_LANGUAGE] * 4
        again = sweep(path, out)
        assert again.sweep.skipped == 4 and again.sweep.sent == 0
