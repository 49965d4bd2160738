"""biaseval.label.align: word alignment trained on the pairs being scored, symmetrization, projection.

The synthetic corpus is English -> Spanish-like sentences about two people (occupation nouns with
gendered determiners and adjectives that follow the noun), in frames that keep or move phrases;
each pair knows where its entities' determiner and noun are on both sides.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import pytest

from biaseval.label import align as align_module
from biaseval.label.align import METHODS, SYMMETRIZATIONS, Links, align, project, symmetrize_links
from biaseval.errors import ConfigError
from biaseval.label.tokens import tokenize

SLOW_FIXTURES = {"winomt_es"}  # a real corpus aligned: tests using it are slow (conftest.py)


# --- a synthetic parallel corpus ---------------------------------------------------------------

OCCUPATIONS = [  # English, Spanish masculine, Spanish feminine
    ("developer", "desarrollador", "desarrolladora"), ("nurse", "enfermero", "enfermera"),
    ("lawyer", "abogado", "abogada"), ("teacher", "maestro", "maestra"), ("doctor", "médico", "médica"),
    ("cook", "cocinero", "cocinera"), ("baker", "panadero", "panadera"), ("farmer", "granjero", "granjera"),
    ("secretary", "secretario", "secretaria"), ("writer", "escritor", "escritora"),
    ("carpenter", "carpintero", "carpintera"), ("mechanic", "mecánico", "mecánica"),
    ("librarian", "bibliotecario", "bibliotecaria"), ("designer", "diseñador", "diseñadora"),
    ("cashier", "cajero", "cajera"), ("manager", "gerente", "gerente"),
]
ADJECTIVES = [("tall", "alto", "alta"), ("young", "joven", "joven"), ("tired", "cansado", "cansada"),
              ("new", "nuevo", "nueva"), ("old", "viejo", "vieja"), ("angry", "enojado", "enojada")]
VERBS = [("talked", "habló"), ("worked", "trabajó"), ("argued", "discutió"), ("danced", "bailó"),
         ("ate", "comió"), ("travelled", "viajó")]
PREPOSITIONS = [("with", "con"), ("for", "para"), ("about", "sobre"), ("against", "contra")]
PARTICIPLES = [("called", "llamad"), ("helped", "ayudad"), ("visited", "visitad"), ("hired", "contratad")]
PLACES = [("office", "la", "oficina"), ("hospital", "el", "hospital"), ("kitchen", "la", "cocina"),
          ("store", "la", "tienda"), ("park", "el", "parque"), ("library", "la", "biblioteca")]

# Frames. Local: 0 "NP1 V P NP2 .", 1 "yesterday NP1 V P NP2 .", 4 passive "NP2 was Ved by NP1 .",
# 5 "NP1 called him yesterday ." -> "NP1 lo llamó ayer ." (the object pronoun moves before the verb).
# Long moves: 2 "NP1 V P NP2 yesterday ." -> "ayer NP1 V P NP2 .",
# 3 "in the PLACE , NP1 V P NP2 ." -> "NP1 V P NP2 en el PLACE .".
LOCAL = (0, 1, 4, 5)
LONG_MOVES = (2, 3)


def _noun_phrase(rnd: random.Random, occupation: tuple[str, str, str]):
    """English and Spanish tokens of a noun phrase (determiner, optional adjective, noun; the
    Spanish adjective follows the noun and agrees with it), and whether it is feminine."""
    en_noun, es_m, es_f = occupation
    fem = rnd.random() < 0.5
    definite = rnd.random() < 0.7
    adjective = rnd.choice(ADJECTIVES) if rnd.random() < 0.4 else None
    en = ["the" if definite else "a"] + ([adjective[0]] if adjective else []) + [en_noun]
    es = [("la" if fem else "el") if definite else ("una" if fem else "un"), es_f if fem else es_m]
    es += [adjective[2 if fem else 1]] if adjective else []
    return en, es, fem


def synthetic_corpus(n: int, frames: tuple[int, ...], seed: int = 7):
    """``n`` pairs ``(english tokens, spanish tokens, entities)``; an entity is (source determiner,
    source noun, target determiner, target noun) indices."""
    rnd = random.Random(seed)
    pairs = []
    for _ in range(n):
        occupation1, occupation2 = rnd.sample(OCCUPATIONS, 2)
        (en1, es1, _), (en2, es2, fem2) = _noun_phrase(rnd, occupation1), _noun_phrase(rnd, occupation2)
        (v_en, v_es), (p_en, p_es) = rnd.choice(VERBS), rnd.choice(PREPOSITIONS)
        place_en, place_det, place_es = rnd.choice(PLACES)
        frame = rnd.choice(frames)
        # Sentences as lists of parts; entities as (English part, Spanish part) of their phrase.
        if frame == 0:
            en, es, parts = [en1, [v_en, p_en], en2, ["."]], [es1, [v_es, p_es], es2, ["."]], [(0, 0), (2, 2)]
        elif frame == 1:
            en = [["yesterday"], en1, [v_en, p_en], en2, ["."]]
            es = [["ayer"], es1, [v_es, p_es], es2, ["."]]
            parts = [(1, 1), (3, 3)]
        elif frame == 2:
            en = [en1, [v_en, p_en], en2, ["yesterday", "."]]
            es = [["ayer"], es1, [v_es, p_es], es2, ["."]]
            parts = [(0, 1), (2, 3)]
        elif frame == 3:
            en = [["in", "the", place_en, ","], en1, [v_en, p_en], en2, ["."]]
            es = [es1, [v_es, p_es], es2, ["en", place_det, place_es, "."]]
            parts = [(1, 0), (3, 2)]
        elif frame == 4:
            pp_en, pp_es = rnd.choice(PARTICIPLES)
            en = [en2, ["was", pp_en, "by"], en1, ["."]]
            es = [es2, ["fue", pp_es + ("a" if fem2 else "o"), "por"], es1, ["."]]
            parts = [(0, 0), (2, 2)]
        else:
            pp_en, pp_es = rnd.choice(PARTICIPLES)
            en = [en1, [pp_en, "her" if fem2 else "him", "yesterday", "."]]
            es = [es1, ["la" if fem2 else "lo", pp_es[:-2] + "ó", "ayer", "."]]  # llamad -> llamó
            parts = [(0, 0)]
        entities = []
        for part_en, part_es in parts:
            start_en = sum(len(p) for p in en[:part_en])
            start_es = sum(len(p) for p in es[:part_es])
            entities.append((start_en, start_en + len(en[part_en]) - 1, start_es, start_es + 1))
        pairs.append(([w for p in en for w in p], [w for p in es for w in p], entities))
    return pairs


def _rates(pairs, links) -> tuple[float, float]:
    """Share of entities whose determiner + noun project exactly onto the target determiner +
    noun, and share whose noun alone projects exactly onto the target noun."""
    exact = nouns = total = 0
    for (_, _, entities), pair_links in zip(pairs, links):
        for src_det, src_noun, tgt_det, tgt_noun in entities:
            total += 1
            exact += project(pair_links, [src_det, src_noun]) == [tgt_det, tgt_noun]
            nouns += project(pair_links, [src_noun]) == [tgt_noun]
    return exact / total, nouns / total


def test_synthetic_corpus_is_what_the_tests_assume():
    pairs = synthetic_corpus(400, LOCAL + LONG_MOVES)
    spanish = {en: (m, f) for en, m, f in OCCUPATIONS}
    for en, es, entities in pairs:
        for src_det, src_noun, tgt_det, tgt_noun in entities:
            assert en[src_det] in ("the", "a") and es[tgt_det] in ("el", "la", "un", "una")
            assert es[tgt_noun] in spanish[en[src_noun]]
    assert any(es[0] == "ayer" and en[0] != "yesterday" for en, es, _ in pairs)  # long moves happen


# --- accuracy on the synthetic corpus ------------------------------------------------------------

@pytest.mark.parametrize("symmetrize", SYMMETRIZATIONS)
@pytest.mark.parametrize("method", METHODS)
def test_entities_found_with_local_reordering(method, symmetrize):
    pairs = synthetic_corpus(400, LOCAL)
    links = align([p[0] for p in pairs], [p[1] for p in pairs], method=method, symmetrize=symmetrize)
    exact, _ = _rates(pairs, links)
    assert exact >= 0.95, f"{method}/{symmetrize}: determiner + noun right for {exact:.1%}"


def test_long_moves_eflomal_keeps_determiners_fast_align_keeps_nouns():
    """fast_align's prior is on absolute position: when a phrase moves from one end of the sentence
    to the other, determiners go astray (documented), but nouns, which its lexical model knows, stay."""
    pairs = synthetic_corpus(400, LONG_MOVES)
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    exact, _ = _rates(pairs, align(src, tgt, method="eflomal"))
    assert exact >= 0.90, f"eflomal: determiner + noun right for {exact:.1%}"  # usually ~100%, once in 80 runs 96%
    _, nouns = _rates(pairs, align(src, tgt, method="fast_align"))
    assert nouns >= 0.95, f"fast_align: noun right for {nouns:.1%}"


def test_fast_align_decoding_matches_the_wheels_own_symmetrized_links():
    """align() reads systran-align's probability files and decodes each direction itself; its
    grow-diag-final-and must give what the wheel's own aligner gives from the same files."""
    import systran_align
    pairs = synthetic_corpus(400, LOCAL + LONG_MOVES)
    src, tgt = align_module._encode([p[0] for p in pairs]), align_module._encode([p[1] for p in pairs])
    n_src, n_tgt = 1 + max(map(max, src)), 1 + max(map(max, tgt))
    with tempfile.TemporaryDirectory() as tmp:
        corpus, fwd, rev = (str(Path(tmp, name)) for name in ("corpus", "fwd", "rev"))
        Path(corpus).write_text("".join(f"{' '.join(map(str, s))} ||| {' '.join(map(str, t))}\n"
                                        for s, t in zip(src, tgt)))
        systran_align.generate_alignment_probabilities(corpus, fwd, rev, **align_module._FAST_ALIGN_OPTIONS)
        wheel = systran_align.Aligner(fwd, rev).align_batch([list(map(str, s)) for s in src],
                                                            [list(map(str, t)) for t in tgt])
        forward = Links.of(len(src), *align_module._viterbi(align_module._read_table(fwd, n_tgt), src, tgt, n_tgt))
        pair, j, i = align_module._viterbi(align_module._read_table(rev, n_src), tgt, src, n_src)
        reverse = Links.of(len(src), pair, i, j)
    ours = [symmetrize_links(f, r) for f, r in zip(forward.lists(), reverse.lists())]
    same = sum(o == sorted(w["alignments"]) for o, w in zip(ours, wheel)) / len(pairs)
    assert same >= 0.98, f"our grow-diag-final-and equals the wheel's for {same:.1%} of pairs"


def test_fast_align_is_repeatable_and_case_insensitive():
    pairs = synthetic_corpus(300, LOCAL + LONG_MOVES)
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    first = align(src, tgt)
    assert align(src, tgt) == first
    assert align([[w.upper() for w in s] for s in src], [[w.title() for w in t] for t in tgt]) == first


def test_trained_models_are_kept_and_reused_for_the_same_pairs(monkeypatch):
    """Training is deterministic, so its models are kept under the hash of the corpus: aligning the
    same pairs again reads them (no training: a trainer that would fail is never started) and gives
    the same links; other pairs train models of their own."""
    pairs = synthetic_corpus(200, LOCAL)
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    folder = align_module.model_cache()
    before = set(folder.glob("*")) if folder.exists() else set()
    first = align(src, tgt)
    kept = set(folder.glob("*")) - before
    assert sorted(p.suffix for p in kept) == [".fwd", ".rev"]
    monkeypatch.setattr(align_module, "_TRAIN", "raise SystemExit('trained again')")
    assert align([[w.upper() for w in s] for s in src], tgt) == first  # the same corpus once numbered
    assert set(folder.glob("*")) - before == kept
    with pytest.raises(RuntimeError, match="trained again"):
        align(src[:-1], tgt[:-1])


# --- symmetrization --------------------------------------------------------------------------

# Five source and five target words. Forward: each target word's source word; reverse: each
# source word's target word.
FORWARD = [(0, 0), (2, 1), (4, 4)]
REVERSE = [(0, 0), (1, 1), (2, 0), (3, 3), (4, 2)]


def test_intersect():
    assert symmetrize_links(FORWARD, REVERSE, "intersect") == [(0, 0)]


def test_union():
    assert symmetrize_links(FORWARD, REVERSE, "union") == [(0, 0), (1, 1), (2, 0), (2, 1), (3, 3), (4, 2), (4, 4)]


def test_grow_diag_final_and():
    # grow from (0,0): (1,1) diagonally (source 1 unlinked), then (2,0) diagonally from (1,1);
    # (2,1) touches both but its source and target words are linked by then, so it stays out;
    # (3,3), (4,2), (4,4) touch nothing. final-and: forward (4,4) (both words free), then reverse
    # (3,3) (both free); (4,2) not, source 4 is linked now.
    assert symmetrize_links(FORWARD, REVERSE, "grow-diag-final-and") == [(0, 0), (1, 1), (2, 0), (3, 3), (4, 4)]
    assert symmetrize_links(FORWARD, REVERSE) == symmetrize_links(FORWARD, REVERSE, "grow-diag-final-and")


def test_grow_diag_final_and_of_agreeing_directions_is_them():
    links = [(0, 1), (1, 0), (2, 2)]
    for how in SYMMETRIZATIONS:
        assert symmetrize_links(links, links, how) == links
    assert symmetrize_links([], [], "grow-diag-final-and") == []


def test_unknown_symmetrization():
    with pytest.raises(ValueError, match="grow-diag-final-and"):
        symmetrize_links(FORWARD, REVERSE, "grow-diag")
    with pytest.raises(ValueError, match="intersect"):
        align([["a"]], [["b"]], symmetrize="grow-diag")


# --- inputs and errors -----------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_empty_sentences_get_no_links(method):
    pairs = synthetic_corpus(200, LOCAL)
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    src[3], tgt[7] = [], []
    src[11], tgt[11] = [], []
    links = align(src, tgt, method=method)
    assert links[3] == links[7] == links[11] == []
    assert _rates([p for k, p in enumerate(pairs) if k not in (3, 7, 11)],
                  [l for k, l in enumerate(links) if k not in (3, 7, 11)])[0] >= 0.95
    assert align([[], ["a"]], [["b"], []], method=method) == [[], []]
    assert align([], [], method=method) == []


@pytest.mark.parametrize("method", METHODS)
def test_tokens_that_would_break_a_file_format(method):
    src = [["a", "|||", "b c"], ["a", "b c"]] * 5
    tgt = [["x", "y", "z"], ["x", "|||"]] * 5
    links = align(src, tgt, method=method)
    assert len(links) == 10
    assert all(0 <= i < len(s) and 0 <= j < len(t) for s, t, ls in zip(src, tgt, links) for i, j in ls)


def test_unknown_method():
    with pytest.raises(ValueError, match=r"'giza'.*fast_align, eflomal"):
        align([["a"]], [["b"]], method="giza")


def test_mismatched_lengths():
    with pytest.raises(ValueError, match="2 source sentences but 1 target"):
        align([["a"], ["b"]], [["c"]])


@pytest.mark.parametrize("method, module, package", [("fast_align", "systran_align", "systran-align"),
                                                     ("eflomal", "eflomal", "eflomal")])
def test_missing_library(monkeypatch, method, module, package):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ConfigError, match=f"pip install {package}"):
        align([["a"]], [["b"]], method=method)


# --- project ---------------------------------------------------------------------------------

def test_project():
    links = [(0, 0), (1, 2), (1, 1), (2, 1), (4, 5)]
    assert project(links, [1]) == [1, 2]
    assert project(links, [2, 1]) == [1, 2]  # sorted, each target index once
    assert project(links, [0, 1, 2]) == [0, 1, 2]
    assert project(links, [3]) == []  # unlinked source word
    assert project(links, []) == []
    assert project([], [0]) == []
    assert project(links, range(4, 6)) == [5]


# --- real data: WinoMT English -> Spanish by Google Translate ------------------------------------

# (line, source span, target span), checked by hand. Tokens are biaseval.tokenize's.
WINOMT_CASES = [
    # The developer argued with the designer ... ||| El desarrollador discutió con el diseñador ...
    (1, [0, 1], [0, 1]), (1, [4, 5], [4, 5]),
    # The lawyer yelled at the hairdresser ... ||| La abogada le gritó a la peluquera ...
    (13, [0, 1], [0, 1]), (13, [4, 5], [5, 6]),
    # The cook prepared a dish for the teacher ... ||| La cocinera preparó un plato para la maestra ...
    (15, [0, 1], [0, 1]), (15, [6, 7], [6, 7]),
    # The manager told the hairdresser that ... ||| El gerente le dijo al peluquero que ...
    (30, [3, 4], [4, 5]),
    # The CEO raised the salary of the receptionist, ... ||| El CEO aumentó el salario de la recepcionista, ...
    (36, [6, 7], [6, 7]),
    # The salesperson chatted with the cleaner ... ||| La vendedora conversó con el limpiador ...
    (45, [0, 1], [0, 1]), (45, [4, 5], [4, 5]),
    # The laborer raced against the hairdresser ... ||| El trabajador corrió contra el peluquero ...
    (56, [0, 1], [0, 1]), (56, [4, 5], [4, 5]),
]


@pytest.fixture(scope="module")
def winomt_es(data_dir):
    """Google's en-es WinoMT translations in the mirrored mt_gender data set (fails, never skips,
    when the datasets are missing: see conftest)."""
    path = data_dir / "mt_gender" / "translations" / "google" / "en-es.txt"
    rows = [line.split(" ||| ") for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3888
    return [tokenize(en, "en") for en, _ in rows], [tokenize(es, "es") for _, es in rows]


def test_winomt_entities_fast_align(winomt_es):
    src, tgt = winomt_es
    links = align(src, tgt)
    # Repeatable (multi-threaded training changed ~2.5% of these pairs from run to run).
    assert align(src, tgt) == links
    for line, src_span, tgt_span in WINOMT_CASES:
        got = project(links[line - 1], src_span)
        assert got == tgt_span, (f"line {line}: {[src[line - 1][i] for i in src_span]} -> "
                                 f"{[tgt[line - 1][j] for j in got]}, want {[tgt[line - 1][j] for j in tgt_span]}")


def test_winomt_entities_eflomal(winomt_es):
    """eflomal varies from run to run, so only the nouns are checked (its determiners were right in
    almost every run, but not all)."""
    src, tgt = winomt_es
    links = align(src, tgt, method="eflomal")
    for line, src_span, tgt_span in WINOMT_CASES:
        assert project(links[line - 1], src_span[-1:]) == tgt_span[-1:], line


def test_dense_table_lookup_equals_the_binary_search(monkeypatch):
    """The decoder's dense copy of a probability table gives what the binary search gives: the same
    float64 values, FLOOR for keys the table lacks; tables that do not fit fall back to the search."""
    import numpy as np

    rnd = np.random.default_rng(5)
    keys = np.unique(rnd.integers(0, 50_000, 4_000))
    probs = rnd.random(len(keys)).astype(np.float32).astype(np.float64)  # as read from the files
    probs[:3] = [0.0, 1.0, np.float32(1e-9)]
    asked = np.concatenate([keys, rnd.integers(0, 50_000, 10_000), [0, 49_999]])
    expected = align_module._lookup((keys, probs), asked)
    dense = align_module._Table((keys, probs), 50_000)
    assert dense.dense is not None
    assert np.array_equal(dense.lookup(asked), expected)
    assert (expected == align_module.FLOOR).sum() > 1000  # absent keys were asked for
    for table, size in (((keys, probs), 40_000),  # keys past the size
                        ((np.array([3, 3]), np.array([0.5, 0.25])), 10),  # a repeated key
                        ((keys, np.where(keys == keys[7], np.nan, probs)), 50_000)):  # a NaN probability
        fallback = align_module._Table(table, size)
        assert fallback.dense is None
        assert np.array_equal(fallback.lookup(asked), align_module._lookup(table, asked), equal_nan=True)
    monkeypatch.setattr(align_module, "_DENSE_CELLS", 1000)  # too big to lay out
    assert align_module._Table((keys, probs), 50_000).dense is None
    assert np.array_equal(align_module._Table((keys, probs), 50_000).lookup(asked), expected)


def test_word_numbers_are_first_appearances_of_the_lowercased_word():
    """_encode (memos per spelling and per shared sentence object) numbers words as the plain
    rule does: 0, 1, ... in order of first appearance of each lowercased word."""
    rnd = random.Random(11)
    words = ["Été", "été", "ÉTÉ", "ΟΔΟΣ", "οδος", "Σ", "İstanbul", "istanbul", "ß", "SS", "ǅ", "ǆ", "a", "A", "|||", "b c"]
    sentences = [[rnd.choice(words) for _ in range(rnd.randint(0, 9))] for _ in range(2000)]
    shared = sentences[3]
    sentences += [shared, [], shared]  # the same list object again (a source per system)

    vocab: dict[str, int] = {}
    expected = [[vocab.setdefault(token.lower(), len(vocab)) for token in s] for s in sentences]
    assert align_module._encode(sentences) == expected
    assert align_module._lines(align_module._encode(sentences)) == [" ".join(map(str, s)) for s in expected]
