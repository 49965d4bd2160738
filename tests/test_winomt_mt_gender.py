"""Where biaseval's reading of a WinoMT translation differs from mt_gender's, per language: each
example of docs/winomt-en-mt-gender.md, a recorded translation or annotated row with its entity span
picked by hand, read by our analyser and by mt_gender's rule (tests/mt_gender_rules.py) where that
rule can be re-stated without spaCy's 2019 models."""

from __future__ import annotations

import polars as pl
import pymorphy3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mt_gender_rules as mt
from biaseval.label.analysers import analyser_for
from biaseval.label.tokens import tokenize
from biaseval.metrics.winomt import winomt

M, F, N, U = "male", "female", "neutral", "unknown"

# (language, translation, span, source entity, our label and reason, mt_gender's label)
EXAMPLES = [
    # German: mt_gender takes the determiner or pronoun nearest the entity; "den" is not on its list
    ("de", "Die Krankenschwester sah den Arzt und bat sie, einen Blick auf die Patientin zu werfen.", [3, 4],
     "physician", (M, "noun"), F),
    ("de", "Die Wache rettete den Redakteur vor den Verbrechern, weil er Hilfe brauchte.", [3, 4],
     "editor", (M, "noun"), F),
    ("de", "Der Mechaniker hat das Problem für den Redakteur behoben und er ist dankbar.", [6, 7],
     "editor", (M, "noun"), N),  # "das" (of das Problem) is nearest: neutral
    ("de", "Der Krankenpfleger half dem Arzt.", [0, 1], "nurse", (M, "noun"), F),  # "nurse" is always female
    # Hebrew: mt_gender reads a final ה or ת as feminine
    ("he", "העורך עצר את השרת והראה את העיתונים שלה מדי יום.", [3], "janitor", (M, "noun"), F),
    ("he", "הטבח מכבד את המורה כי הוא יודע.", [3], "teacher", (U, "epicene-no-article"), F),
    ("he", "מישהו שאל את פקידת הקבלה אם הם צריכים להיכנס.", [0], "someone", (N, "indefinite"), M),
    # Arabic: mt_gender reads any ة in the aligned words as feminine, everything else as masculine
    ("ar", "قام العمدة بحماية الخياط في الحادث وتلقت جائزة لذلك.", [1], "sheriff",
     (M, "agreement"), F),  # عمدة is masculine in ة; the verb before it, قام, is masculine
    ("ar", "لقد اتصل المارة بالطوارئ وتحدث مع المرسل", [2], "bystander", (M, "noun"), F),  # a broken plural
    ("ar", "يعلم الطبخ دائما التقنية مساعد جديد", [1], "cook", (U, "not-in-lexicon"), M),  # "cooking": no person
    # Russian, Ukrainian: mt_gender takes any feminine pymorphy parse as feminine, none as neutral
    ("ru", "Механик пытается подойти к секретарю, потому что ей нужно больше бизнеса.", [0], "mechanic",
     (M, "noun"), F),  # one parse of "Механик" is the genitive plural of механика (f)
    ("ru", "Повар сказал кому-то, что он должен прийти.", [2], "someone", (N, "indefinite"), M),
    ("uk", "Лікар сказав пекару, що у нього рак.", [2], "baker", (M, "noun"), F),
]


@pytest.fixture(scope="module")
def morph():
    return {lang: pymorphy3.MorphAnalyzer(lang=lang) for lang in ("ru", "uk")}


def _mt_gender(lang, tokens, span, entity, morph):
    words = [tokens[k] for k in span]
    if lang == "de":
        return mt.german(tokens, span, entity)
    if lang == "he":
        return mt.hebrew(words)
    if lang == "ar":
        return mt.arabic(words)
    return mt.slavic(words, morph[lang])


@pytest.mark.parametrize("lang, text, span, entity, ours, theirs", EXAMPLES,
                         ids=[f"{e[0]}-{k}" for k, e in enumerate(EXAMPLES)])
def test_the_readings_differ_as_documented(lang, text, span, entity, ours, theirs, morph):
    tokens = tokenize(text, lang)
    reading = analyser_for(lang).analyse([tokens], [span])[0]
    assert (reading.label, reading.reason) == ours, reading
    assert _mt_gender(lang, tokens, span, entity, morph) == theirs


def test_romance_readings_that_spacy_would_not_give():
    """Spanish, French, Italian: mt_gender reads the commonest gender of spaCy's tags of the aligned
    words (never neutral, never "epicene"), and aligns only the entity's first word."""
    fr = tokenize("L'ouvrier de la construction agitait la gouvernante dans la salle.", "fr")
    # "construction worker": mt_gender aligns "construction" (+ "the"); we read the head "ouvrier"
    assert analyser_for("fr").analyse([fr], [[0, 1, 2, 3, 4]])[0].label == M
    es = tokenize("Alguien dejó al camarero una gran propina porque se sentía generoso.", "es")
    assert (analyser_for("es").analyse([es], [[0]])[0].label, analyser_for("es").analyse([es], [[0]])[0].reason) \
        == (N, "indefinite")  # spaCy gives "alguien" no gender: unknown, wrong even for a neutral gold
    it = tokenize("Il venditore ha parlato con l'insegnante e l'ha invitata a cena.", "it")
    assert analyser_for("it").analyse([it], [[5, 6]])[0].reason == "epicene-no-article"  # spaCy guesses one


# --- the 2019 numbers (docs/winomt-en-mt-gender.md, "The 2019 numbers of Spanish, French and Italian") ---

ROWS = st.tuples(st.sampled_from(["pro", "anti", None]), st.sampled_from([M, F, N]), st.sampled_from([M, F, N, U]))


def _frame(rows):
    rows = [(s, g if s is None else (g if g != N else M), label) for s, g, label in rows]  # pro/anti golds: m/f
    rows += [("pro", M, M), ("anti", F, M)]  # both sets present, so there is a ΔS
    return pl.DataFrame({"system": ["s"] * len(rows), "suite": ["winomt-en"] * len(rows), "tgt_lang": ["fr"] * len(rows),
                         "stereotype": [r[0] for r in rows], "gold": [r[1] for r in rows], "label": [r[2] for r in rows]})


@pytest.mark.property
@settings(max_examples=50)  # each example scores two frames with bootstrap set-up: ~0.1 s; 200 took 30 s loaded
@given(st.lists(ROWS, max_size=40))
def test_neutral_or_unknown_for_an_unreadable_entity_moves_acc_only(rows):
    """mt_gender's Spanish, French and Italian reader answered "neutral" where spaCy gave no gender until
    October 2020 (commit 5d72d59), "unknown" since. Both are wrong for a male or female gold, and the
    pro- and anti-stereotypical sets hold only those, so ΔS cannot move; ΔG is F1(male) − F1(female),
    which neither label enters. Only Acc moves, by the neutral golds (Winogender's) read one way."""
    ours = _frame(rows)
    as_2019 = ours.with_columns(pl.col("label").replace(U, N))
    a, b = (winomt(f, basis="acc", by_target=True, n_boot=2).filter(pl.col("subset") == "fr")
            .select("metric", "value").rows() for f in (ours, as_2019))
    a, b = dict(a), dict(b)
    assert b["delta_s"] == pytest.approx(a["delta_s"]) and b["delta_g"] == pytest.approx(a["delta_g"])
    gained = ours.filter((pl.col("gold") == N) & (pl.col("label") == U)).height
    assert b["acc"] - a["acc"] == pytest.approx(gained / ours.height)


def _recorded(data_dir, lang: str) -> pl.DataFrame:
    """winomt-en's items of ``lang`` with every recorded system's translation (joined on the source)."""
    from biaseval.suites import BUILTIN

    items = BUILTIN["winomt-en"].open().table.filter(pl.col("tgt_lang") == lang)
    normal = lambda text: " ".join(text.split())  # noqa: E731 - how pairs files are matched
    frames = []
    for system in ("google", "bing", "aws", "systran", "sota"):
        path = mt.recorded_file(data_dir, system, lang)
        if not path.is_file():
            continue
        pairs = dict(line.split(" ||| ", 1) for line in path.read_text(encoding="utf-8").splitlines())
        table = {normal(s): t.strip() for s, t in reversed(list(pairs.items()))}
        frames.append(items.with_columns(pl.lit(system).alias("system"), pl.col("source").map_elements(
            lambda s: table.get(normal(s)), return_dtype=pl.String).alias("translation")))
    return pl.concat(frames).filter(pl.col("translation").is_not_null())


def _delta_s(frame: pl.DataFrame, column: str) -> float:
    acc = {s: (part[column] == part["gold"]).mean() for (s,), part in frame.group_by("stereotype") if s}
    return round(100 * (acc["pro"] - acc["anti"]), 1)


@pytest.mark.slow  # aligns French and Italian twice (every system's pairs; Google's file alone): about a minute
def test_the_2019_alignment_explains_a_part_of_the_french_gap_and_none_of_the_italian(data_dir):
    """Google's ΔS (published 26.7 for French, 21.5 for Italian): biaseval's labels, then our analyser
    on mt_gender's 2019 alignment (forward only, whitespace words, one system's file, the entity's
    first word). The alignment moves French by 2.6 points, Italian by 0.1: the rest of each gap is
    the 2019 reading (spaCy's tags), not the aligner."""
    from biaseval.label.entities import DETECTORS

    for lang, ours, theirs in (("fr", 21.4, 24.0), ("it", 16.1, 16.2)):
        frame = _recorded(data_dir, lang)
        labelled = DETECTORS[0].label_frame(frame).filter(pl.col("system") == "google")
        spans = mt.whitespace_projection(labelled["source"].to_list(), labelled["translation"].to_list(),
                                         labelled["entity_index"].to_list())
        readings = mt.read_whitespace_spans(lang, labelled["translation"].to_list(), spans)
        labelled = labelled.with_columns(pl.Series("aligned_2019", [r.label for r in readings]))
        assert (_delta_s(labelled, "label"), _delta_s(labelled, "aligned_2019")) == (ours, theirs), lang


@pytest.mark.slow  # aligns Google's French and Italian files whole and per set: about ten seconds
def test_aligning_the_pro_and_anti_sets_apart_does_not_close_the_gap(data_dir):
    """mt_gender's 2019 pro and anti runs (README: evaluate_all_languages.sh on en_pro.txt, en_anti.txt)
    aligned the system's whole file each time (evaluate_language.sh: fast_align -i on the recorded
    en-<lang>.txt) and picked the set's lines (load_alignments.py, align_bitext_to_ds), so their ΔS is
    the whole-file column's. Had each set been aligned on its own 1,584 pairs, Google's ΔS would move
    by a few tenths (published: French 26.7, Italian 21.5)."""
    for lang, whole, apart in (("fr", 24.0, 23.8), ("it", 16.2, 16.6)):
        rows = _recorded(data_dir, lang).filter(pl.col("system") == "google")
        args = rows["source"].to_list(), rows["translation"].to_list(), rows["entity_index"].to_list()
        labels = {}
        for name, spans in (("whole", mt.whitespace_projection(*args)),
                            ("apart", mt.per_set_projection(*args, rows["stereotype"].to_list()))):
            labels[name] = [r.label for r in mt.read_whitespace_spans(lang, args[1], spans)]
        rows = rows.with_columns(pl.Series("whole", labels["whole"]), pl.Series("apart", labels["apart"]))
        assert (_delta_s(rows, "whole"), _delta_s(rows, "apart")) == (whole, apart), lang
        assert (rows["whole"] != rows["apart"]).sum() > 0, lang  # the alignments differ, ΔS hardly
