"""The monitor's fixed sample (``biaseval.suites.sample``): a seeded random draw in each stratum, with
the remainders rounded at random, the same items for one seed whatever the order of the suite's rows,
other items for another seed; every item has the same chance to be drawn, so the sample's occupations
look like the suite's (issue 24, finding 3). Shown in ``biaseval plan`` and in the report."""

from __future__ import annotations

import csv
import json
import math
import random
from collections import Counter
from pathlib import Path
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from conftest import QUICK, REPO
from hypothesis import given
from hypothesis import strategies as st

from biaseval.cli import main
from biaseval.pipeline import load
from biaseval.run.driver import open_run, write_items
from biaseval.suites.base import SuiteData, conform
from biaseval.suites.sample import STRATA, allocate, sample_suite, stratified_indices

LEXICON = REPO / "biaseval" / "data" / "lexicon" / "occupations.csv"
WHAT = ["tgt_lang", "subset", "occupation", "source"]  # an item's content, whatever its id or line


def _config(folder: Path, size: int, seed: int, lexicon: Path | None = None) -> Path:
    """A monitor config over otsc-en (4 targets × her/him × the 40 occupations of biaseval's lexicon:
    320 items) with a sample of ``size`` items drawn with ``seed``."""
    config = {"name": "sample", "suites": ["otsc-en"], "cache": {"path": str(folder / "cache")},
              "systems": {"copy": {"backend": "identity", "version": "v1", "price_per_million_chars": 10}},
              "monitor": {"store": str(folder / "store"), "sample": {"size": size, "seed": seed}}}
    if lexicon is not None:
        config["lexicon"] = str(lexicon)
    path = folder / f"monitor-{size}-{seed}-{lexicon is not None}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _items(folder: Path, path: Path) -> pl.DataFrame:
    """The run's items.parquet as a sweep writes it (``write_items``, from the prepared suites)."""
    _, prepared = load(path)
    out = folder / f"{path.stem}-items.parquet"
    write_items(out, prepared.suites)
    return pl.read_parquet(out)


def _lexicon_shares() -> np.ndarray:
    with open(LEXICON, encoding="utf-8") as fh:
        return np.array([float(row["female_share"]) for row in csv.DictReader(fh)])


def _female_share_error(n: int, subsets: int = 8) -> float:
    """Standard error of a stratified sample's mean female share: n items of otsc-en, spread evenly
    over its subsets, each subset a simple random sample of its 40 occupations (one item each):
    sqrt((1/H) · (1 − n_h/40) · S² / n_h) with n_h = n/H and S² the occupations' variance."""
    shares = _lexicon_shares()
    per = n / subsets
    return math.sqrt((1 - per / len(shares)) * shares.var(ddof=1) / per / subsets)


# --- finding 3, through the config -----------------------------------------------------------------

def test_the_seed_chooses_the_items_and_their_occupations_look_like_the_suites(tmp_path):
    """Finding 3: seed 0 and seed 999 gave the same items, otsc-en's first 15 lexicon occupations
    (carpenter ... physician, all male-stereotyped; the lexicon is sorted by female share), and a
    150-item sample averaged a 23.7 % female share against the suite's 50.6 %."""
    first = _items(tmp_path, _config(tmp_path, 30, 0))
    other = _items(tmp_path, _config(tmp_path, 30, 999))
    assert first.height == other.height == 30
    assert set(first["item_id"]) != set(other["item_id"])
    lexicon_order = [row["occupation"] for row in csv.DictReader(open(LEXICON, encoding="utf-8"))]
    for items in (first, other):
        assert set(items["occupation"]) != set(lexicon_order[:15])
    suite = _items(tmp_path, _config(tmp_path, 400, 0))  # more than the suite: the whole suite
    assert suite.height == 320
    whole = suite["female_share"].mean()
    # Every item has the same chance (150/320) to be drawn, so the sample's mean female share is the
    # suite's on average, give or take its standard error (about 1.8 points here: 8 subsets, each a
    # random 18 or 19 of the 40 occupations); 3 standard errors would be exceeded by chance by about
    # one seed in 400 — these two seeds are fixed, so the test is deterministic.
    error = _female_share_error(150)
    assert 1.0 < error < 2.5
    for seed in (0, 999):
        sample = _items(tmp_path, _config(tmp_path, 150, seed))
        assert sample.height == 150
        assert abs(sample["female_share"].mean() - whole) < 3 * error, (seed, sample["female_share"].mean(), whole)
        assert sample["occupation"].n_unique() > 30  # spread over the lexicon, not its first rows


def test_the_same_seed_draws_the_same_items_from_a_shuffled_lexicon(tmp_path):
    """Items are ranked by a seeded hash of what they say, never by where they stand: the lexicon's
    rows in another order give the same sample (the item ids, which count lexicon lines, differ)."""
    with open(LEXICON, encoding="utf-8") as fh:
        header, *rows = fh.read().splitlines()
    random.Random(7).shuffle(rows)
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    for size, seed in ((30, 0), (150, 999)):
        plain = _items(tmp_path, _config(tmp_path, size, seed, LEXICON))
        moved = _items(tmp_path, _config(tmp_path, size, seed, shuffled))
        assert plain.select(WHAT).sort(WHAT).equals(moved.select(WHAT).sort(WHAT))
        assert set(plain["item_id"]) != set(moved["item_id"])  # the same items under other ids: the test can fail


# --- every item the same chance ------------------------------------------------------------------------

class _Table(SuiteData):
    """A small suite with uneven strata: two targets; subsets of 13 and 7 (es) and 9 (it) items;
    occupations of 1 to 4 items, one with none given."""

    def __init__(self):
        rows = []
        for tgt, subsets in (("es", (("pro", 13), ("anti", 7))), ("it", (("pro", 9),))):
            for subset, n in subsets:
                for k in range(n):
                    rows.append({"item_id": f"{tgt}/{subset}/{k}", "tgt_lang": tgt, "subset": subset,
                                 "occupation": ["nurse", "pilot", "pilot", "baker", "baker", "baker", None][k % 7],
                                 "source": f"sentence {k} of {subset}", "female_share": float(k)})
        self.table = conform(pl.DataFrame(rows))
        self.size = self.table.height
        self.fingerprint, self.commit, self.suite = "f", None, None

    def slice(self, start, stop):
        return self.table.slice(start, stop - start)

    def subset_sizes(self):
        return dict(self.table.group_by("subset").len().iter_rows())


def test_over_many_seeds_every_item_is_drawn_at_the_sampling_rate():
    """Systematic rounding from a random offset gives every stratum its quota on average, so each
    item's chance to be drawn is size/rows, in every stratum: over 400 seeds each item's count is a
    binomial(400, 11/29). The bound, z = 4.14 standard deviations (Bonferroni over the 29 items at a
    family-wise 0.001), would fail a correct sampler on one set of seeds in a thousand (these are
    fixed, so the test is deterministic); the old rule, which gave the first groups of a tie their
    extra item every time, landed 25 standard deviations off."""
    data, size, seeds = _Table(), 11, 100 if QUICK else 400  # the quick tier: 100 seeds (the old rule: 12 sd off)
    counts = np.zeros(data.size)
    samples = set()
    for seed in range(seeds):
        sample = sample_suite(data, size, seed)
        counts[sample.indices] += 1
        samples.add(tuple(sample.indices))
    rate = size / data.size
    z = NormalDist().inv_cdf(1 - 0.001 / 2 / data.size)
    assert 4.1 < z < 4.2
    deviation = np.abs(counts - seeds * rate) / math.sqrt(seeds * rate * (1 - rate))
    assert deviation.max() < z, (deviation.round(1), counts)
    assert len(samples) > 0.9 * seeds  # seeds draw other samples (C(29, 11) of them are possible)


def test_the_mean_female_share_over_seeds_is_the_suites(tmp_path):
    """Unbiased, not just close: over 200 seeds the 150-item samples' mean female share averages the
    suite's to within 3 standard errors of that average (seeds taken as independent draws)."""
    _, prepared = load(_config(tmp_path, 400, 0))
    whole = prepared.suites["otsc-en"]
    suite_mean = whole.slice(0, whole.size)["female_share"].mean()
    means = [sample_suite(whole, 150, seed).profile["sample"]["female_share"] for seed in range(50 if QUICK else 200)]
    assert abs(np.mean(means) - suite_mean) < 3 * _female_share_error(150) / math.sqrt(len(means))
    assert 0.5 * _female_share_error(150) < np.std(means) < 1.5 * _female_share_error(150)


# --- the rule, on generated inputs ---------------------------------------------------------------

def test_allocate_by_hand():
    # 5 of 10 over groups of 5, 3, 2: quotas 2.5, 1.5, 1; cumulated 25, 40, 50 (tenths of an item)
    assert allocate([5, 3, 2], 5, 0) == [2, 2, 1]  # 25 // 10, 40 // 10 − 2, 50 // 10 − 4
    assert allocate([5, 3, 2], 5, 5) == [3, 1, 1]  # 30 // 10, 45 // 10 − 3, 55 // 10 − 4
    # over the ten offsets the first group gets 3 five times: 2.5 on average, its quota
    assert sum(allocate([5, 3, 2], 5, offset)[0] for offset in range(10)) == 25
    assert allocate([0, 4], 0) == [0, 0] and allocate([], 0) == []


@pytest.mark.property
@given(sizes=st.lists(st.integers(0, 60), min_size=1, max_size=12), data=st.data())
def test_allocate_rounds_each_quota_down_or_up_and_sums_to_the_total(sizes, data):
    whole = sum(sizes)
    total = data.draw(st.integers(0, whole))
    offset = data.draw(st.integers(0, max(whole - 1, 0)))
    take = allocate(sizes, total, offset)
    assert sum(take) == total and take == allocate(sizes, total, offset)
    for size, k in zip(sizes, take):
        quota = total * size / whole if whole else 0
        assert math.floor(quota) <= k <= math.ceil(quota) and 0 <= k <= size


@pytest.mark.property
@given(sizes=st.lists(st.integers(0, 12), min_size=1, max_size=8).filter(lambda s: sum(s) > 0), data=st.data())
def test_allocate_gives_each_group_its_quota_on_average_over_the_offsets(sizes, data):
    """Offsets 0..whole−1 equally likely: each group's expected take is exactly its quota."""
    whole = sum(sizes)
    total = data.draw(st.integers(0, whole))
    sums = np.sum([allocate(sizes, total, offset) for offset in range(whole)], axis=0)
    assert sums.tolist() == [total * size for size in sizes]


def test_allocate_refuses_more_than_the_groups_hold():
    with pytest.raises(ValueError, match="cannot take 4 of 3"):
        allocate([1, 2], 4)


_row = st.fixed_dictionaries({"tgt_lang": st.sampled_from(["es", "it"]), "subset": st.sampled_from(["pro", "anti", "x"]),
                              "occupation": st.sampled_from(["nurse", "pilot", "baker", "ceo", None]),
                              "source": st.sampled_from([f"s{k}" for k in range(12)])})


@pytest.mark.property
@given(rows=st.lists(_row, max_size=60), size=st.integers(0, 70), seed=st.integers(-5, 2**40), data=st.data())
def test_a_sample_is_nested_proportional_and_the_same_from_shuffled_rows(rows, size, seed, data):
    """Any table (duplicates included), any size: min(size, rows) distinct rows, sorted; every group of
    every level gets its share of its parent's items rounded down or up; the same call draws the same
    rows; and the rows in another order give the same items (a multiset of contents, as duplicates
    are interchangeable)."""
    items = pl.DataFrame(rows, schema={c: pl.String for c in WHAT})
    chosen = stratified_indices(items, size, seed)
    assert len(chosen) == min(size, items.height) == len(set(chosen.tolist()))
    assert chosen.tolist() == sorted(chosen.tolist())
    assert np.array_equal(chosen, stratified_indices(items, size, seed))
    picked = items.with_columns(pl.Series("_in", np.isin(np.arange(items.height), chosen)))
    for depth in range(1, len(STRATA) + 1):
        parents = list(STRATA[:depth - 1])
        groups = picked.group_by(list(STRATA[:depth])).agg(pl.len().alias("n"), pl.col("_in").sum().alias("k"))
        if parents:
            totals = picked.group_by(parents).agg(pl.len().alias("pn"), pl.col("_in").sum().alias("pk"))
            groups = groups.join(totals, on=parents, nulls_equal=True)
        else:
            groups = groups.with_columns(pn=pl.lit(items.height), pk=pl.lit(len(chosen)))
        for n, k, pn, pk in groups.select("n", "k", "pn", "pk").iter_rows():
            quota = pk * n / pn
            assert math.floor(quota) <= k <= math.ceil(quota), (STRATA[:depth], n, k, pn, pk)
    order = data.draw(st.permutations(range(items.height)))
    moved = items[list(order)]
    again = moved[stratified_indices(moved, size, seed).tolist()]
    assert Counter(again.iter_rows()) == Counter(items[chosen.tolist()].iter_rows())


# --- what plan and the report show ------------------------------------------------------------------

def test_plan_shows_the_strata_and_the_samples_occupations_beside_the_suites(tmp_path):
    path = _config(tmp_path, 150, 0)
    result = CliRunner().invoke(main, ["plan", "--config", str(path)])
    assert result.exit_code == 0, result.output
    items = _items(tmp_path, path)
    _, prepared = load(_config(tmp_path, 400, 0))
    whole = prepared.suites["otsc-en"].slice(0, 320)
    lines = result.output.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("monitor sample: otsc-en: 150 of 320 items (seed 0)"))
    per = dict(((t, s), n) for t, s, n in items.group_by("tgt_lang", "subset").len().iter_rows())
    strata = ", ".join(f"{s} {per[(t, s)]} of 40" for t in ("es", "it", "fr", "de") for s in (f"{t}/her", f"{t}/him"))
    assert lines[at + 1] == f"  strata (target, subset: sample of suite): {strata}"
    pro = lambda f: 100 * (f["stereotype"] == "pro").mean()  # noqa: E731
    assert lines[at + 2] == (f"  occupations: {items['occupation'].n_unique()} of 40; mean female share "
                             f"{items['female_share'].mean():.1f}% (suite {whole['female_share'].mean():.1f}%); "
                             f"pro-stereotypical {pro(items):.1f}% (suite {pro(whole):.1f}%)")


def test_the_report_shows_the_sample_beside_the_suite(tmp_path):
    """run.json records the sample's profile (``open_run``); report.md and report.html show it."""
    from biaseval.pipeline import write_report

    _, prepared = load(_config(tmp_path, 150, 0))
    run = open_run(tmp_path / "run", prepared, tmp_path / "monitor.yaml", "sample-run", None, False)
    info = json.loads((run.root / "run.json").read_text(encoding="utf-8"))
    recorded = info["suites"]["otsc-en"]
    assert recorded["size"] == 150 and recorded["population"] == 320
    profile = recorded["sample"]
    items = pl.read_parquet(run.items)
    assert profile["seed"] == 0 and profile["sample"]["items"] == 150 and profile["population"]["items"] == 320
    assert profile["sample"]["female_share"] == pytest.approx(items["female_share"].mean())
    assert [(s["subset"], s["items"], s["population"]) for s in profile["strata"]] == \
        [(s, n, 40) for s, n in items.group_by("subset", maintain_order=True).len().iter_rows()]
    metrics = pl.DataFrame({"system": ["copy"], "suite": ["otsc-en"], "subset": ["es/her"], "metric": ["p_f"],
                            "value": [0.5], "n": [19], "ci_low": [0.4], "ci_high": [0.6]})
    metrics.write_parquet(run.metrics)
    pl.DataFrame({"system": ["copy"], "suite": ["otsc-en"], "item_id": [items["item_id"][0]], "label": ["female"],
                  "error": [None]}, schema_overrides={"error": pl.String}).write_parquet(run.labels)
    write_report(run, metrics)
    share = f"{profile['sample']['female_share']:.1f}% (suite {profile['population']['female_share']:.1f}%)"
    report = (run.root / "report.md").read_text(encoding="utf-8")
    assert "## Sample" in report and f"| otsc-en | 150 of 320 | 0 | {profile['sample']['occupations']} of 40 | {share}" in report
    page = (run.root / "report.html").read_text(encoding="utf-8")
    assert '<table class="sample">' in page and share in page and "es/her 1" in page
