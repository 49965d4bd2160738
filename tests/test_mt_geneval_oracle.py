"""Our MT-GenEval decisions equal those of the paper's own script (``accuracy_metric.py`` in the mirror,
tests/mt_geneval_oracle.py) on every line, for several sets of outputs: the references, the swapped
references, texts edited in case, punctuation, white space and Unicode, generated texts (hypothesis),
and Apertium's Spanish (slow: it translates). The script's printed accuracy equals our scorer's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import mt_geneval_oracle as oracle
from biaseval.metrics.mtgeneval import mtgeneval
from biaseval.suites.mt_geneval import CONTEXT_TARGETS, GENDERS, TARGETS, context_file, sentences_file

COUNTERFACTUAL, CONTEXTUAL = "mt-geneval-counterfactual", "mt-geneval-contextual"


@pytest.fixture(scope="module")
def mirror(data_dir):
    return oracle.script_path().parent


def _edit(text: str, k: int) -> str:
    """One of several edits of a reference, chosen by ``k``: none of them adds or removes a line."""
    words = text.split()
    edits = [
        lambda: text.upper(),
        lambda: text.title(),
        lambda: " ".join(f"({w})" if i % 3 == 0 else w for i, w in enumerate(words)),  # ASCII punctuation glued on
        lambda: " ".join(f"«{w}»" if i % 2 else w + "،" for i, w in enumerate(words)),  # Unicode punctuation: kept
        lambda: " ".join(words) + " ।",
        lambda: "\u00a0".join(words),  # no-break space
        lambda: "\x1c".join(words),  # information separator: white space to Python, not to Unicode
        lambda: "\u3000\t".join(words) + "\x85",
        lambda: "\u2009".join(w.capitalize() for w in words),
        lambda: text + " ΟΔΟΣ ΣΑΣ İstanbul \u212a \u1e9e",  # Σ in and at the end of a word, dotted İ, Kelvin sign, ẞ
        lambda: text.replace("a", "\u1c89"),  # a letter cased in Unicode 16, not in Python 3.11's tables
        lambda: text.replace(" ", "-") + "...",
        lambda: "",
        lambda: text[: len(text) // 2],
    ]
    return edits[k % len(edits)]()


def _mixed(reference: str, counterfactual: str, k: int) -> str:
    """The reference with one of the counterfactual's words (some lines), or the counterfactual with one of
    the reference's."""
    ref, ctf = reference.split(), counterfactual.split()
    if k % 2:
        return " ".join(ref + ctf[k % len(ctf):][:1])
    return " ".join(ctf + ref[k % len(ref):][:1])


SETS = {
    "references": lambda rows: rows["reference"].to_list(),
    "swapped": lambda rows: rows["counterfactual"].to_list(),
    "edited": lambda rows: [_edit(r, k) for k, r in enumerate(rows["reference"].to_list())],
    "edited-swapped": lambda rows: [_edit(c, k + 5) for k, c in enumerate(rows["counterfactual"].to_list())],
    "mixed": lambda rows: [_mixed(r, c, k) for k, (r, c) in enumerate(rows.select("reference", "counterfactual").rows())],
}


# The quick tier compares every language on the references and on the edited references (case,
# punctuation, white space, Unicode: where a decision can go wrong); `make test` adds the swapped,
# edited-swapped and mixed sets.
QUICK_SETS = ("references", "edited")
SET_PARAMS = [pytest.param(name, marks=() if name in QUICK_SETS else pytest.mark.slow) for name in SETS]


def _compare(rows: pl.DataFrame, hyps: list[str], expected: list[bool], what: str) -> None:
    got = oracle.ours(rows, hyps)["right"].to_list()
    assert len(got) == len(expected) == rows.height
    wrong = [k for k, (a, b) in enumerate(zip(got, expected)) if a != b]
    assert not wrong, (f"{what}: {len(wrong)} of {len(got)} lines differ from accuracy_metric.py, first at line "
                       f"{rows['line'][wrong[0]]}: {hyps[wrong[0]]!r} (ours {got[wrong[0]]})")


@pytest.mark.parametrize("name", SET_PARAMS)
@pytest.mark.parametrize("lang", TARGETS)
def test_counterfactual_decisions_equal_the_script_line_by_line(mirror, tmp_path, lang, name):
    for gender in GENDERS:
        other = GENDERS[1 - GENDERS.index(gender)]
        rows = oracle.language_items(COUNTERFACTUAL, lang, gender)
        hyps = SETS[name](rows)
        hyp = oracle.write_lines(tmp_path / f"{gender}.txt", hyps)
        expected = oracle.line_decisions(hyp, mirror / sentences_file("test", gender, lang, lang),
                                         mirror / sentences_file("test", other, lang, lang))
        _compare(rows, hyps, expected, f"{lang}/{gender}, {name}")


@pytest.mark.parametrize("name", SET_PARAMS)
@pytest.mark.parametrize("lang", CONTEXT_TARGETS)
def test_contextual_decisions_equal_the_script_line_by_line(mirror, tmp_path, lang, name):
    rows = oracle.language_items(CONTEXTUAL, lang)
    hyps = SETS[name](rows)
    hyp = oracle.write_lines(tmp_path / "hyp.txt", hyps)
    expected = oracle.line_decisions(hyp, mirror / context_file("test", "original", lang),
                                     mirror / context_file("test", "flipped", lang))
    _compare(rows, hyps, expected, f"contextual {lang}, {name}")


def _scored(rows: pl.DataFrame, hyps: list[str], paired: bool) -> pl.DataFrame:
    labelled = oracle.ours(rows, hyps).with_columns(pl.lit(rows["suite"][0]).alias("suite"))
    counts = labelled.group_by("system", "suite", "tgt_lang", "gold", "label", "reason", "partner").len().rename(
        {"len": "count"})
    return mtgeneval(counts, paired=paired, n_boot=20)


@pytest.mark.parametrize("lang", TARGETS)
def test_the_printed_counterfactual_accuracy_equals_ours(mirror, tmp_path, lang):
    """What the script prints for a language (both versions of a sentence right) is our ``acc`` of the
    language, for the references, the swapped references and the edited texts."""
    rows = oracle.language_items(COUNTERFACTUAL, lang)
    for name in ("references", "swapped", "edited", "mixed"):
        hyps, files = [], {}
        for gender in GENDERS:
            part = rows.filter(pl.col("subset") == f"{lang}/{gender}")
            text = SETS[name](part)
            hyps += text
            files[f"hyp_{gender}"] = oracle.write_lines(tmp_path / f"{name}-{gender}.txt", text)
        printed = oracle.script(lang, "counterfactual", "test", **files)
        ordered = pl.concat([rows.filter(pl.col("subset") == f"{lang}/{g}") for g in GENDERS])
        metrics = _scored(ordered, hyps, paired=True)
        ours = metrics.filter((pl.col("subset") == lang) & (pl.col("metric") == "acc"))["value"].item()
        assert ours == pytest.approx(printed, abs=1e-12), (lang, name)
        if name == "references":
            assert printed == 1.0
        if name == "swapped":
            assert 0 <= printed < 0.15  # not 0: lines whose references have the same words count as right


@pytest.mark.parametrize("lang", [t for t in CONTEXT_TARGETS if t != "nl"])  # the script's --target_lang has no nl
def test_the_printed_contextual_accuracy_equals_ours(mirror, tmp_path, lang):
    rows = oracle.language_items(CONTEXTUAL, lang)
    for name in ("references", "swapped", "edited"):
        hyps = SETS[name](rows)
        printed = oracle.script(lang, "contextual", "test", hyp=oracle.write_lines(tmp_path / f"{name}.txt", hyps))
        metrics = _scored(rows, hyps, paired=False)
        ours = metrics.filter((pl.col("subset") == lang) & (pl.col("metric") == "acc"))["value"].item()
        assert ours == pytest.approx(printed, abs=1e-12), (lang, name)


# Generated texts: words of MT-GenEval's own references mixed with characters that stress the cleaning
# (case, ASCII and Unicode punctuation, every kind of white space Python splits on, Σ, İ, letters newer
# than Python's Unicode tables).
_ODD = ["Σ", "ς", "σ", "İ", "ı", "\u212a", "\u1e9e", "ß", "\u1c89", "\u1c8a", "\ua7cb", "\U00010d50", "Ǆ", "ǅ", "ﬁ", "\u0130",
        "«", "»", "،", "।", "॥", "…", "—", "¿", "¡", "'", "\u2019", "-", ".", ",", "!", "?", '"', "(", ")", "_", "~",
        "\u00a0", "\u2009", "\u3000", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\x0b", "\x0c", "\t", " ", "\u200b",
        "\u180e", "\u2028", "\u2029", "\u0301", "\u0307"]


@st.composite
def _case(draw):
    rows = oracle.items(COUNTERFACTUAL)
    k = draw(st.integers(0, rows.height - 1))
    reference, counterfactual = rows["reference"][k], rows["counterfactual"][k]
    pool = reference.split() + counterfactual.split()
    piece = st.one_of(st.sampled_from(pool), st.sampled_from(_ODD), st.text(max_size=3))
    casing = st.sampled_from([str, str.upper, str.lower, str.title, str.swapcase])
    parts = draw(st.lists(st.tuples(piece, casing), max_size=12))
    seps = draw(st.lists(st.sampled_from([" ", "", "\u00a0", "\x1c", ",", "\n", "\r\n"]), min_size=len(parts),
                         max_size=len(parts)))
    hyp = "".join(case(p) + s for (p, case), s in zip(parts, seps))
    if draw(st.booleans()):  # the references themselves generated too
        pieces = st.lists(st.sampled_from(pool + _ODD + [" "] * 8), max_size=16).map("".join)
        reference, counterfactual = draw(pieces), draw(pieces)
    return hyp, reference, counterfactual


@pytest.mark.property
@given(st.lists(_case(), min_size=1, max_size=6))
@example([("ΟΔΟΣ", "οδος", "οδοσ")])  # final sigma: Python lowers it to ς
@example([("A\x1cB", "a b", "a")])  # U+001C splits words in Python
@example([("x\u1c89", "y", "x\u1c8a")])  # polars lowercases U+1C89 to U+1C8A (Unicode 16), Python 3.11 does not
@example([("«Ella»", "ella", "él")])  # « » are not ASCII punctuation: the word is «ella», not ella
def test_generated_texts_get_the_script_decision(cases):
    """Any text, with any references: the whole counterfactual-set path (``label_outputs``) decides as the
    script's functions do."""
    frame = pl.DataFrame({
        "item_id": [f"x/{k}" for k in range(len(cases))], "tgt_lang": ["es"] * len(cases),
        "gold": ["female"] * len(cases), "line": np.arange(1, len(cases) + 1), "system": ["s"] * len(cases),
        "reference": [c[1] for c in cases], "counterfactual": [c[2] for c in cases],
        "translation": [c[0] for c in cases]})
    from biaseval.label.reference_words import label_outputs

    got = label_outputs(frame, paired=False)["right"].to_list()
    assert got == [oracle.text_decision(*c) for c in cases]


@pytest.fixture(scope="module")
def apertium_es(data_dir):
    """Apertium eng-spa's translations of the Spanish items of both suites (its real backend)."""
    from biaseval.translate import TRANSLATORS
    from biaseval.translate.runner import RequestRunner

    backend = TRANSLATORS.get("apertium")
    runner = RequestRunner(backend("apertium", backend.Options()))
    out = {}
    for suite in (COUNTERFACTUAL, CONTEXTUAL):
        rows = oracle.language_items(suite, "es")
        out[suite] = [r.translation for r in runner.translate(rows["source"].to_list(), "en", "es")]
    return out


@pytest.mark.slow
def test_apertium_spanish_decisions_equal_the_script(mirror, tmp_path, apertium_es):
    """Apertium's outputs: the counterfactual set line by line and as printed; the contextual set on the
    output's last line (the sentence scored: Apertium keeps the two lines apart)."""
    rows = oracle.language_items(COUNTERFACTUAL, "es")
    hyps = dict(zip(rows["item_id"].to_list(), apertium_es[COUNTERFACTUAL]))
    files = {}
    for gender in GENDERS:
        other = GENDERS[1 - GENDERS.index(gender)]
        part = oracle.language_items(COUNTERFACTUAL, "es", gender)
        text = [hyps[i] for i in part["item_id"]]
        files[f"hyp_{gender}"] = oracle.write_lines(tmp_path / f"{gender}.txt", text)
        expected = oracle.line_decisions(files[f"hyp_{gender}"], mirror / sentences_file("test", gender, "es", "es"),
                                         mirror / sentences_file("test", other, "es", "es"))
        _compare(part, text, expected, f"apertium es/{gender}")
        assert 0.2 < np.mean(expected) < 1.0  # a real system: neither all right nor all wrong
    printed = oracle.script("es", "counterfactual", "test", **files)
    ordered = pl.concat([oracle.language_items(COUNTERFACTUAL, "es", g) for g in GENDERS])
    metrics = _scored(ordered, [hyps[i] for i in ordered["item_id"]], paired=True)
    assert metrics.filter((pl.col("subset") == "es") & (pl.col("metric") == "acc"))["value"].item() == pytest.approx(printed)

    rows = oracle.language_items(CONTEXTUAL, "es")
    outputs = apertium_es[CONTEXTUAL]
    # the context's translation, then the sentence's (a few items have no context: one line)
    assert [o.count("\n") for o in outputs] == [s.count("\n") for s in rows["source"]]
    last = [o.split("\n")[-1] for o in outputs]
    expected = oracle.line_decisions(oracle.write_lines(tmp_path / "ctx.txt", last),
                                     mirror / context_file("test", "original", "es"),
                                     mirror / context_file("test", "flipped", "es"))
    _compare(rows, outputs, expected, "apertium contextual es")


@pytest.mark.slow
def test_the_sanity_run_gives_the_scripts_values(data_dir, tmp_path, mirror):
    """conf/mt-geneval-references.yaml, swept for real: the references score 100 % everywhere; the swapped
    references score what the script prints; labels.parquet holds the script's decision on every line,
    with the words that decided; every metric has an interval and its provenance."""
    from click.testing import CliRunner

    from biaseval.cli import main
    from conftest import REPO

    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["sweep", "--config", str(REPO / "conf" / "mt-geneval-references.yaml"),
                                       "--out", str(out), "--no-report"])
    assert result.exit_code == 0, result.output
    metrics = pl.read_parquet(out / "metrics.parquet").filter(pl.col("suite").str.starts_with("mt-geneval"))
    acc = metrics.filter(pl.col("metric") == "acc")
    assert (acc.filter(pl.col("system") == "references")["value"] == 1.0).all()
    assert acc.filter(pl.col("system") == "references").height == 8 * 3 + 9 * 4  # <lang>, per gender (+ unmarked)
    scores = metrics.filter(~pl.col("subset").str.starts_with("vs/"))  # McNemar's rows between systems have no interval
    assert scores["ci_low"].is_not_null().all() and scores["ci_high"].is_not_null().all()
    mcnemar = metrics.filter((pl.col("subset") == "vs/counterfactual") & (pl.col("metric") == "diff_correct")
                             & (pl.col("suite") == COUNTERFACTUAL))
    assert mcnemar["value"].item() == pytest.approx(1 - 156 / 4800)  # paired on the paper's decision
    assert (metrics["dataset_commit"] == "c77132ccd248d0b09ac185aebebc94f1051dbc9e").all()
    assert metrics["signature"].str.contains("mt-geneval-words@1").all()
    swapped = acc.filter(pl.col("system") == "counterfactual")
    labels = pl.read_parquet(out / "labels.parquet").join(
        pl.read_parquet(out / "items.parquet").select("item_id", "tgt_lang", "line", "gold"), on="item_id")
    right = labels.with_columns(~pl.col("reason").is_in(["counterfactual-word", "both-words"]).alias("right"))
    for lang in TARGETS:
        files = {}
        for gender in GENDERS:
            other = GENDERS[1 - GENDERS.index(gender)]
            files[f"hyp_{gender}"] = mirror / sentences_file("test", other, lang, lang)  # the swapped references
            for system, hyp in (("references", sentences_file("test", gender, lang, lang)),
                                ("counterfactual", sentences_file("test", other, lang, lang))):
                expected = oracle.line_decisions(mirror / hyp, mirror / sentences_file("test", gender, lang, lang),
                                                 mirror / sentences_file("test", other, lang, lang))
                got = (right.filter((pl.col("suite") == COUNTERFACTUAL) & (pl.col("system") == system)
                                    & (pl.col("tgt_lang") == lang) & (pl.col("gold") == {"feminine": "female"}.get(gender, "male")))
                       .sort("line")["right"].to_list())
                assert got == expected, (system, lang, gender)
        printed = oracle.script(lang, "counterfactual", "test", **files)
        assert swapped.filter((pl.col("suite") == COUNTERFACTUAL) & (pl.col("subset") == lang))["value"].item() == \
            pytest.approx(printed, abs=1e-12), lang
    for lang in CONTEXT_TARGETS:
        flipped = mirror / context_file("test", "flipped", lang)
        expected = oracle.line_decisions(flipped, mirror / context_file("test", "original", lang), flipped)
        got = (right.filter((pl.col("suite") == CONTEXTUAL) & (pl.col("system") == "counterfactual")
                            & (pl.col("tgt_lang") == lang)).sort("line")["right"].to_list())
        assert got == expected, lang
        ours = swapped.filter((pl.col("suite") == CONTEXTUAL) & (pl.col("subset") == lang))["value"].item()
        assert ours == pytest.approx(np.mean(expected), abs=1e-12)
        if lang != "nl":  # the script's --target_lang has no nl
            assert ours == pytest.approx(oracle.script(lang, "contextual", "test", hyp=flipped), abs=1e-12)
    evidence = labels.filter((pl.col("system") == "counterfactual") & (pl.col("reason") == "counterfactual-word"))
    assert evidence["evidence"].str.starts_with("-").all()
