"""Embedding loaders and features, on small fastText models trained here on a generated corpus."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from biaseval.metrics.word_vectors import load_vectors, read_text_vectors
from biaseval.errors import ConfigError
from biaseval.metrics.embedding import bins, bin_rows, features, pair_vectors, text_vectors, tokens


EN = ["she", "he", "her", "him", "woman", "man", "nurse", "engineer", "doctor", "teacher", "kitchen", "garage"]
IT = ["lei", "lui", "donna", "uomo", "infermiera", "infermiere", "ingegnere", "dottore", "maestra", "cucina", "il", "la"]


def _corpus(path: Path, words: list[str], seed: int) -> None:
    rng = random.Random(seed)
    # two "topics" so that the vectors differ in a structured way
    female, male = words[: len(words) // 2], words[len(words) // 2:]
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(20_000):
            pool = female if rng.random() < 0.5 else male
            fh.write(" ".join(rng.choice(pool if rng.random() < 0.8 else words) for _ in range(12)) + "\n")


TRAIN = """
import sys, fasttext
model = fasttext.train_unsupervised(sys.argv[1], model="skipgram", dim=16, epoch=5, minCount=1, bucket=2000,
                                    thread=1, verbose=0, minn=3, maxn=5)
model.save_model(sys.argv[2])
"""


def _train(fasttext, corpus: Path):
    """A small skipgram model of ``corpus``, trained in a fresh process. fastText's training raises
    "Encountered NaN" now and then on toy corpora, more often in a process that already runs many
    threads (Ray, polars): a fresh interpreter and a few attempts make the fixture reliable."""
    import subprocess
    import sys

    out = corpus.with_suffix(".bin")
    for attempt in range(10):
        done = subprocess.run([sys.executable, "-c", TRAIN, str(corpus), str(out)], capture_output=True, text=True)
        if done.returncode == 0:
            return fasttext.load_model(str(out))
        if "NaN" not in done.stderr or attempt == 9:
            raise RuntimeError(f"fastText training failed: {done.stderr[-2000:]}")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    import fasttext

    folder = tmp_path_factory.mktemp("fasttext")
    out = {}
    for lang, words, seed in (("en", EN, 1), ("it", IT, 2)):
        corpus = folder / f"{lang}.txt"
        _corpus(corpus, words, seed)
        model = _train(fasttext, corpus)
        model.save_model(str(folder / f"{lang}.bin"))
        with open(folder / f"{lang}.vec", "w", encoding="utf-8") as fh:  # fastText's text format
            fh.write(f"{len(model.words)} {model.get_dimension()}\n")
            for word in model.words:
                fh.write(word + " " + " ".join(f"{x:.6f}" for x in model.get_word_vector(word)) + "\n")
        out[lang] = (folder / f"{lang}.bin", folder / f"{lang}.vec", model)
    return out


def _cos(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_bin_vectors_and_subwords(models):
    path, _, model = models["en"]
    vectors = load_vectors(path, ["nurse", "nurses", "she"])
    assert vectors.dim == 16 and vectors.found.tolist() == [True, False, True]
    np.testing.assert_allclose(vectors.get("nurse"), model.get_word_vector("nurse"))
    assert np.linalg.norm(vectors.get("nurses")) > 0  # an unseen word still has a subword vector


def test_bin_reader_gives_fasttexts_vectors_bit_for_bit(models):
    """The .bin reader's vectors are fastText's own ``get_word_vector``, to the bit: words of the
    vocabulary, unseen words (character n-grams only), non-ASCII ones (n-grams cut at character
    boundaries, bytes hashed as signed chars), the end-of-sentence word, one letter, the empty word."""
    path, _, model = models["it"]
    words = ["lei", "infermiera", "cucina", "infermieri", "città", "perché", "ärztin", "日本語", "</s>", "x", "",
             "lei lui"]
    vectors = load_vectors(path, words)
    vocabulary = set(model.words)
    for k, word in enumerate(words):
        expected = model.get_word_vector(word)
        assert vectors.matrix[k].dtype == np.float32 and np.array_equal(vectors.matrix[k], expected), word
        assert vectors.found[k] == (word in vocabulary), word
    assert vectors.found[:3].all() and not vectors.found[3:8].any()


def test_bin_models_are_read_without_the_fasttext_library(models):
    """Reading a .bin never loads the model through fastText (which holds all of it in memory: ~7 GB
    for cc.en.300.bin): with the library made unimportable the vectors are still read."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['fasttext'] = None\n"
            "from biaseval.metrics.word_vectors import load_vectors\n"
            f"v = load_vectors({str(models['en'][0])!r}, ['nurse', 'nurses'])\n"
            "print(v.found.tolist(), float(abs(v.matrix).sum()) > 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[True, False] True"


def test_cut_bin_models_are_named(models, tmp_path):
    data = models["en"][0].read_bytes()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:200])
    with pytest.raises(ConfigError, match=r"cut\.bin: the dictionary ends early"):
        load_vectors(cut, ["she"])
    short = tmp_path / "short.bin"
    short.write_bytes(data[:len(data) // 2])  # inside the input matrix
    with pytest.raises(ConfigError, match=r"short\.bin: the input matrix .* does not fit"):
        load_vectors(short, ["she"])


def test_vec_and_bin_agree(models):
    bin_path, vec_path, _ = models["it"]
    a = load_vectors(bin_path, ["lei", "lui", "cucina"])
    b = load_vectors(vec_path, ["lei", "lui", "cucina", "absent"])
    np.testing.assert_allclose(a.matrix, b.matrix[:3], atol=1e-5)
    assert b.found.tolist() == [True, True, True, False] and not b.matrix[3].any()


def test_every_feature_matches_numpy(models):
    en = load_vectors(models["en"][0], ["nurse", "engineer", "she", "he"])
    it = load_vectors(models["it"][0], ["infermiera", "ingegnere", "lei", "lui"])
    src_pair = pair_vectors(en, ("she", "he"), "en")
    tgt_pair = pair_vectors(it, ("lei", "lui"), "it")
    tv, tfound, missing = text_vectors(["l'infermiera", "un ingegnere"], "it", it)
    assert tfound.tolist() == [True, True] and missing == [[], []]
    got = features(["nurse", "engineer"], en.matrix[:2], en.found[:2], src_pair, tv, tfound, tgt_pair)
    assert got["cos_src_fm"].tolist() == pytest.approx([_cos(en.get("she"), en.get("he"))] * 2, abs=1e-5)
    assert got["cos_tgt_fm"].tolist() == pytest.approx([_cos(it.get("lei"), it.get("lui"))] * 2, abs=1e-5)
    for k, (w, t) in enumerate([("nurse", "infermiera"), ("engineer", "ingegnere")]):
        vw, vt = en.get(w), it.get(t)
        f_en, m_en, f_it, m_it = en.get("she"), en.get("he"), it.get("lei"), it.get("lui")
        assert got["cos_src_f"][k] == pytest.approx(_cos(vw, f_en), abs=1e-5)
        assert got["cos_src_m"][k] == pytest.approx(_cos(vw, m_en), abs=1e-5)
        assert got["intensity_src"][k] == pytest.approx(abs(_cos(vw, f_en) - _cos(vw, m_en)), abs=1e-5)
        assert got["direction_src"][k] == pytest.approx(_cos(vw, f_en) - _cos(vw, m_en), abs=1e-5)
        assert got["cos_tgt_f"][k] == pytest.approx(_cos(vt, f_it), abs=1e-5)
        assert got["intensity_tgt"][k] == pytest.approx(abs(_cos(vt, f_it) - _cos(vt, m_it)), abs=1e-5)
        assert got["direction_tgt"][k] == pytest.approx(_cos(vt, f_it) - _cos(vt, m_it), abs=1e-5)
        assert got["delta_f"][k] == pytest.approx(_cos(vt, f_it) - _cos(vw, f_en), abs=1e-5)
        assert got["delta_m"][k] == pytest.approx(_cos(vt, m_it) - _cos(vw, m_en), abs=1e-5)


def test_translations_are_embedded_by_their_words():
    assert tokens("l'infermiera", "it") == ["infermiera"]
    assert tokens("Il dottore", "it") == ["dottore"]
    assert tokens("la", "it") == ["la"]  # a lone article is the only word
    assert tokens("casa di cura", "it") == ["casa", "di", "cura"]
    assert tokens(None, "it") == [] and tokens("", "it") == []


def test_bins_equal_width_with_counts_shares_and_examples():
    values = np.array([0.0, 0.1, 0.2, 0.5, 0.9, 1.0])
    words = ["a", "b", "c", "d", "e", "f"]
    out = bins(values, words, 5, 2)
    assert [b["count"] for b in out] == [2, 1, 1, 0, 2]
    assert [round(b["lo"], 2) for b in out] == [0.0, 0.2, 0.4, 0.6, 0.8] and out[-1]["hi"] == 1.0
    assert out[-1]["examples"] == "f, e" and out[0]["share"] == pytest.approx(2 / 6)
    frame = pl.DataFrame({"word": words, "intensity_src": np.abs(values - 0.5), "direction_src": values - 0.5})
    rows = bin_rows(frame, "src", 3, 1)
    assert {r["feature"] for r in rows} == {"intensity", "direction+", "direction-", "direction0"}
    pos = [r for r in rows if r["feature"] == "direction+"]
    assert pos[0]["lo"] == 0.0 and sum(r["count"] for r in pos) == 2  # 0.4 (e), 0.5 (f); d (0.0) on neither side
    neg = [r for r in rows if r["feature"] == "direction-"]
    assert neg[0]["hi"] == 0.0 and sum(r["count"] for r in neg) == 3  # a, b, c
    assert neg[-1]["examples"] == "a"  # the most extreme word is in the strongest (last) bin


def test_vec_reader_keeps_only_what_it_needs(tmp_path):
    """A file far bigger than what is asked for: the memory kept is that of the words kept."""
    path = tmp_path / "big.vec"
    dim, total = 50, 60_000
    rng = np.random.default_rng(0)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{total} {dim}\n")
        block = rng.standard_normal((1000, dim))
        for i in range(total):
            fh.write(f"w{i} " + " ".join(f"{x:.4f}" for x in block[i % 1000]) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    vectors = read_text_vectors(path, ["w5", "w59999", "nope"])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert vectors.found.tolist() == [True, True, False] and vectors.dim == dim
    assert peak < size / 20, f"peak {peak} bytes for a {size}-byte file"


@pytest.mark.parametrize("content, message", [
    ("3 4\na 1 2 3 4\nb 1 2 3\n", r":3: 3 numbers, but the vectors have dimension 4"),
    ("a 1 2 x 4\n", r":1: not a vector of numbers"),
    ("", r"no vectors in the file"),
])
def test_bad_vector_files(tmp_path, content, message):
    path = tmp_path / "bad.vec"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        read_text_vectors(path, ["a"])


def test_wrong_dimension_and_missing_files(models, tmp_path):
    with pytest.raises(ConfigError, match="dimension 16, expected 300"):
        load_vectors(models["en"][0], ["she"], expected_dim=300)
    with pytest.raises(ConfigError, match="header says dimension 16, expected 300"):
        load_vectors(models["en"][1], ["she"], expected_dim=300)
    with pytest.raises(ConfigError, match="not found"):
        load_vectors(tmp_path / "cc.en.300.bin", ["she"])
    with pytest.raises(ConfigError, match="not found"):
        load_vectors(tmp_path / "cc.it.300.vec", ["lei"])
    not_a_model = tmp_path / "fake.bin"
    not_a_model.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="not a fastText .bin model"):
        load_vectors(not_a_model, ["she"])
    it = load_vectors(models["it"][1], ["lei"])
    with pytest.raises(ConfigError, match="has no vector for 'lui'"):
        pair_vectors(it, ("lei", "lui"), "it")


def test_direction_bins_weakest_first_with_shares_of_all_words():
    # female: .1 | .3 .5 over [0, .5] (edge .25); male sizes .05 .15 | .35 .4 over [0, .4] (edge .2); d: 0
    direction = np.array([0.5, 0.1, 0.3, 0.0, -0.05, -0.4, -0.15, -0.35, np.nan])
    frame = pl.DataFrame({"word": list("abcdefghi"), "intensity_src": np.abs(direction), "direction_src": direction})
    rows = bin_rows(frame, "src", 2, 3)
    female = [r for r in rows if r["feature"] == "direction+"]
    male = [r for r in rows if r["feature"] == "direction-"]
    zero = [r for r in rows if r["feature"] == "direction0"]
    assert [(r["bin"], r["count"], r["examples"]) for r in female] == [(1, 1, "b"), (2, 2, "a, c")]
    assert [(r["bin"], r["count"], r["examples"]) for r in male] == [(1, 2, "g, e"), (2, 2, "f, h")]
    assert [(r["lo"], r["hi"]) for r in male] == [(pytest.approx(-0.2), 0.0), (pytest.approx(-0.4), pytest.approx(-0.2))]
    assert [r["share"] for r in female] == pytest.approx([1 / 3, 2 / 3])
    assert [r["share_all"] for r in female + male] == pytest.approx([1 / 8, 2 / 8, 2 / 8, 2 / 8])  # 8 with a direction
    assert [(r["count"], r["examples"]) for r in zero] == [(1, "d")] and zero[0]["share_all"] == pytest.approx(1 / 8)


def test_fixed_width_bins_start_at_zero_and_a_value_on_an_edge_goes_up():
    out = bins(np.array([0.1, 0.3, 0.25, np.nan]), ["a", "b", "c", "d"], 5, 1, width=0.1)
    assert [(round(b["lo"], 9), round(b["hi"], 9), b["count"]) for b in out] == [
        (0.0, 0.1, 0), (0.1, 0.2, 1), (0.2, 0.3, 1), (0.3, 0.4, 1)]
    assert [b["share"] for b in out] == pytest.approx([0, 1 / 3, 1 / 3, 1 / 3])


def test_a_token_without_a_vector_is_left_out_of_the_mean(tmp_path):
    path = tmp_path / "it.vec"
    path.write_text("2 2\ncasa 1 0\ncura 0 1\n", encoding="utf-8")
    it = load_vectors(path, ["casa", "di", "cura", "medico"])
    vectors, found, missing = text_vectors(["casa di cura", "il medico", "casa"], "it", it)
    np.testing.assert_allclose(vectors[0], [0.5, 0.5])  # not (1/3, 1/3): "di" has no vector
    assert np.isnan(vectors[1]).all() and found.tolist() == [True, False, True]
    assert missing == [["di"], ["medico"], []]
