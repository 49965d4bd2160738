"""The open-model backends (``hf``, ``ctranslate2``) on a tiny Marian model built here, offline.

The model (``tiny_mt.py``) is trained to know a few English->Spanish pairs by heart, so a correct
pipeline (tokenizer, generation, decoding, order) reproduces them exactly. Language tags of the
other families (NLLB, M2M-100, IndicTrans2) are checked on tokenizers built locally.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from biaseval.errors import ConfigError
from biaseval.translate.runner import RequestRunner, RetryPolicy
from biaseval.translate.base import TRANSLATORS
from biaseval.errors import MissingExtra
from biaseval.translate.backends.ct2 import CT2Translator
from biaseval.translate.backends.hf import HFTranslator, length_sorted_chunks
from biaseval.translate.local_models.codec import TextCodec
from biaseval.translate.local_models.languages import (
    detect_family,
    indictrans_input,
    marian_target_token,
    model_language_code,
)
from biaseval.translate.local_models.location import commit_of
from biaseval.translate.local_models.translator import ModelLoadError, check_pairs

sys.path.insert(0, str(Path(__file__).parent))
from tiny_mt import PAIRS, build_tiny_marian, build_tiny_nllb, convert_to_ct2  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")
SLOW_FIXTURES = {"tiny", "tiny_nllb"}  # trained here: tests using them are slow (conftest.py)

SOURCES = [s for s, _ in PAIRS]
EXPECTED = dict(PAIRS)
# lengths deliberately out of order (longest in the middle, a blank text, a short one last)
MIXED = [PAIRS[2][0], PAIRS[5][0], "", PAIRS[4][0], PAIRS[3][0], PAIRS[0][0], PAIRS[1][0]]
UNSEEN = ["The doctor is tired.", "A nurse.", "My friend asked the baker."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_marian(tmp_path_factory.mktemp("tiny-mt"))


@pytest.fixture(scope="module")
def ct2_dir(tiny, tmp_path_factory) -> Path:
    return convert_to_ct2(tiny, tmp_path_factory.mktemp("tiny-ct2") / "model")


@pytest.fixture(scope="module")
def tiny_nllb(tmp_path_factory) -> Path:
    return build_tiny_nllb(tmp_path_factory.mktemp("tiny-nllb"))


def hf(model: Path | str, **options) -> HFTranslator:
    return HFTranslator("tiny", HFTranslator.Options(model=str(model), **options))


@pytest.fixture(scope="module")
def greedy(tiny) -> HFTranslator:
    return hf(tiny, num_beams=1, batch_size=2)


def runner(translator) -> RequestRunner:
    return RequestRunner(translator, RetryPolicy(max_attempts=2, backoff_s=0), sleep=lambda s: None)


def expected(texts):
    return [EXPECTED.get(t, "") for t in texts]


# -- hf -----------------------------------------------------------------------------------------


def test_registered_with_validated_options():
    assert TRANSLATORS.get("hf") is HFTranslator and TRANSLATORS.get("ctranslate2") is CT2Translator
    assert HFTranslator.provider == "Hugging Face transformers" and CT2Translator.provider == "CTranslate2"
    with pytest.raises(ValidationError):
        HFTranslator.Options(model="x", beams=4)  # unknown key
    with pytest.raises(ValidationError):
        HFTranslator.Options(model="x", dtype="float64")
    assert HFTranslator.Options(model="x").local_files_only is True
    assert {"num_beams", "dtype", "device", "model"}.isdisjoint(HFTranslator.OPERATIONAL)
    assert "batch_size" in HFTranslator.OPERATIONAL and "batch_size" in CT2Translator.OPERATIONAL


def test_translates_through_the_live_runner_in_input_order(greedy):
    results = runner(greedy).translate(MIXED, "en", "es")
    assert [r.translation for r in results] == expected(MIXED)
    assert all(r.error is None and r.attempts == 1 for r in results)
    assert {r.model for r in results} == {greedy.version}


def test_deterministic_and_batch_size_does_not_change_outputs(tiny, greedy):
    texts = MIXED + UNSEEN
    first = greedy.translate(texts, "en", "es")
    assert greedy.translate(texts, "en", "es") == first
    assert all(isinstance(t, str) for t in first) and len(first) == len(texts)
    assert hf(tiny, num_beams=1, batch_size=5).translate(texts, "en", "es") == first


def test_batch_size_bounds_every_forward_pass(greedy, monkeypatch):
    sizes = []
    generate = greedy._model.generate

    def spy(*args, **kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        return generate(*args, **kwargs)

    monkeypatch.setattr(greedy._model, "generate", spy)
    greedy.translate(MIXED, "en", "es")
    assert max(sizes) <= 2 and sum(sizes) == len(MIXED) - 1  # the blank text is not sent
    assert len(sizes) == 3
    assert greedy.limits().max_items == 2 * 8


def test_requests_are_packed_within_limits(tiny):
    small = hf(tiny, num_beams=1, batch_size=1)  # at most 8 texts per request
    run = runner(small)
    out = run.translate(SOURCES * 2, "en", "es")
    assert [r.translation for r in out] == expected(SOURCES * 2)
    assert run.requests == 2 and small.forward_passes == 12


def test_beam_search(tiny):
    assert hf(tiny, num_beams=4).translate(SOURCES, "en", "es") == expected(SOURCES)


def test_version_pins_the_local_weights(tiny, greedy, tmp_path):
    greedy.load()
    assert re.fullmatch(rf"{re.escape(str(tiny))} sha256:[0-9a-f]{{16}} \(marian, float32\)", greedy.version)
    assert greedy.device == "cpu" and greedy.dtype == "float32"
    copy = shutil.copytree(tiny, tmp_path / "model")
    same = hf(copy)
    same.load()
    assert same.version.split()[1] == greedy.version.split()[1]
    config = json.loads((copy / "generation_config.json").read_text())
    (copy / "generation_config.json").write_text(json.dumps({**config, "max_length": 63}))
    changed = hf(copy)
    changed.load()
    assert changed.version.split()[1] != greedy.version.split()[1]


def test_version_pins_the_hub_commit(tiny, tmp_path, monkeypatch):
    import huggingface_hub.constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--biaseval--tiny-marian"
    shutil.copytree(tiny, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    cached = hf("biaseval/tiny-marian", num_beams=1)
    assert cached.translate(SOURCES[:2], "en", "es") == expected(SOURCES[:2])
    assert cached.version == f"biaseval/tiny-marian@{commit} (marian, float32)"
    assert commit_of(f"/x/models--a--b/snapshots/{commit}/config.json") == commit
    assert commit_of("/some/dir/config.json") is None


def test_relative_paths_are_relative_to_the_config_file(tiny, ct2_dir):
    local = HFTranslator("tiny", HFTranslator.Options(model="model", num_beams=1), config_dir=tiny.parent)
    assert local.translate(SOURCES[:1], "en", "es") == expected(SOURCES[:1])
    engine = CT2Translator("tiny", CT2Translator.Options(model=ct2_dir.name, beam_size=1), config_dir=ct2_dir.parent)
    assert engine.translate(SOURCES[:1], "en", "es") == expected(SOURCES[:1])


def test_missing_model_is_a_config_error_without_download(tmp_path):
    with pytest.raises(ConfigError, match=r"systems\.tiny\.options\.model: .*no such directory"):
        hf("./not-here").check({})
    with pytest.raises(ConfigError, match=r"systems\.tiny\.options\.model: .*local hub cache"):
        hf("biaseval-tests/no-such-model").check({})


def test_check_accepts_the_pairs_it_can_translate(greedy):
    """check() passes the pairs the en->es model translates, and names one it cannot: passing means
    the pairs were looked at."""
    def suite(src, *targets):  # what check reads of a suite's data: its source and target languages
        return SimpleNamespace(suite=SimpleNamespace(src_lang=src, targets=targets))

    assert greedy.check({"s": suite("en", "es")}) is None
    assert greedy.check({"s": suite("en", "es", "de")}, {"s": ("es",)}) is None  # only the targets it is given
    with pytest.raises(ConfigError, match=r"systems\.tiny: cannot translate en->de \(suite s\)"):
        greedy.check({"s": suite("en", "es", "de")})
    with pytest.raises(ConfigError, match=r"cannot translate hi->es"):
        greedy.check({"t": suite("hi", "es")})


def test_out_of_memory_halves_the_batch(tiny, monkeypatch):
    import torch

    model = hf(tiny, num_beams=1, batch_size=4)
    forward = model._forward
    seen = []

    def tight(batch, forced_bos):
        seen.append(len(batch))
        if len(batch) > 1:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(batch, forced_bos)

    monkeypatch.setattr(model, "_forward", tight)
    assert model.translate(SOURCES, "en", "es") == expected(SOURCES)
    assert seen.count(1) == len(SOURCES) and max(seen) == 4
    assert model.classify(torch.OutOfMemoryError("one sentence")) is None  # permanent for that text


def test_over_long_text_fails_alone(greedy):
    texts = [SOURCES[0], "la " * 200, SOURCES[1]]
    out = runner(greedy).translate(texts, "en", "es")
    assert [r.translation for r in out] == [EXPECTED[SOURCES[0]], None, EXPECTED[SOURCES[1]]]
    assert "tokens long; the model takes at most 128" in out[1].error


def test_failed_load_is_recorded_and_not_retried(tiny):
    import torch  # here, not at collection: importing torch costs every pytest process 2 s

    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    broken = hf(tiny, device="cuda")
    out = runner(broken).translate(SOURCES[:2], "en", "es")
    assert all(r.translation is None and "sees no CUDA device" in r.error for r in out)
    with pytest.raises(ModelLoadError):
        broken.load()


def test_missing_library_names_the_extra(tiny, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingExtra, match=r"biaseval\[hf\]"):
        hf(tiny)
    monkeypatch.setitem(sys.modules, "ctranslate2", None)
    with pytest.raises(MissingExtra, match=r"biaseval\[ctranslate2\]"):
        CT2Translator("x", CT2Translator.Options(model=str(tiny)))


# -- ctranslate2 --------------------------------------------------------------------------------


def ct2(model: Path, **options) -> CT2Translator:
    return CT2Translator("tiny-ct2", CT2Translator.Options(model=str(model), **options))


def test_ctranslate2_matches_hf_greedy(ct2_dir, greedy):
    texts = MIXED + UNSEEN
    engine = ct2(ct2_dir, beam_size=1, batch_size=2)
    results = runner(engine).translate(texts, "en", "es")
    assert [r.translation for r in results] == greedy.translate(texts, "en", "es")
    assert [r.translation for r in results][: len(MIXED)] == expected(MIXED)
    import ctranslate2

    assert re.fullmatch(rf"\S+ sha256:[0-9a-f]{{16}} \(ctranslate2 {re.escape(ctranslate2.__version__)}, marian, "
                        rf"cpu float32\)", engine.version)
    assert {r.model for r in results} == {engine.version}


def test_ctranslate2_beam_search(ct2_dir):
    assert ct2(ct2_dir).translate(SOURCES, "en", "es") == expected(SOURCES)


def test_ctranslate2_tokenizer_from_elsewhere(ct2_dir, tiny, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("model.bin", "config.json", "shared_vocabulary.json"):
        shutil.copy(ct2_dir / name, bare / name)
    with pytest.raises(ConfigError, match="holds no tokenizer"):
        ct2(bare).codec()
    engine = ct2(bare, tokenizer=str(tiny), beam_size=1)
    assert engine.translate(SOURCES[:3], "en", "es") == expected(SOURCES[:3])
    with pytest.raises(ConfigError, match="not a CTranslate2 model"):
        ct2(tiny).codec()


def test_nllb_tags_end_to_end_in_both_backends(tiny_nllb, tmp_path, monkeypatch):
    """NLLB: source tag from src_lang, target tag forced first (hf) or as target prefix (ct2)."""
    model = hf(tiny_nllb, num_beams=1, max_new_tokens=12)
    firsts, forward = [], model._forward

    def spy(batch, forced_bos):
        out = forward(batch, forced_bos)
        firsts.extend(row[1] for row in out)  # row[0] is the decoder start token
        return out

    monkeypatch.setattr(model, "_forward", spy)
    texts = ["hello world", "The doctor."]
    to_es, to_hi = model.translate(texts, "hi", "es"), model.translate(texts, "en", "hi")
    tok = model.codec().tokenizer
    assert firsts == [tok.convert_tokens_to_ids("spa_Latn")] * 2 + [tok.convert_tokens_to_ids("hin_Deva")] * 2
    assert all(isinstance(t, str) and t for t in to_es + to_hi)  # text, the tags skipped
    assert model.version.endswith("(nllb, float32)")

    engine = ct2(convert_to_ct2(tiny_nllb, tmp_path / "ct2"), beam_size=1, max_decoding_length=12)
    engine.load()
    prefixes, real = [], engine._translator

    class Spy:
        def translate_batch(self, source, target_prefix=None, **kwargs):
            prefixes.extend(target_prefix)
            return real.translate_batch(source, target_prefix=target_prefix, **kwargs)

    monkeypatch.setattr(engine, "_translator", Spy())
    assert engine.translate(texts, "hi", "es") == to_es and engine.translate(texts, "en", "hi") == to_hi
    assert prefixes == [["spa_Latn"]] * 2 + [["hin_Deva"]] * 2
    assert engine.family == "nllb"


def test_a_tokenizer_that_does_not_fit_the_model_is_refused(tiny, tiny_nllb, ct2_dir, tmp_path):
    with pytest.raises(ConfigError, match="does not match the model"):
        ct2(ct2_dir, tokenizer=str(tiny_nllb)).codec()
    copy = shutil.copytree(tiny_nllb, tmp_path / "nllb")
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "vocab_size": 10 * config["vocab_size"]}))
    with pytest.raises(ConfigError, match="tokenizer files missing"):
        hf(copy).codec()


def test_model_code_runs_only_when_trusted(tiny, tmp_path):
    copy = shutil.copytree(tiny, tmp_path / "custom")
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoConfig": "x.Config"}}))
    with pytest.raises(ConfigError, match="trust_remote_code: true"):
        hf(copy).codec()


# -- language tags (no model needed) -------------------------------------------------------------


def test_language_codes():
    assert model_language_code("nllb", "hi", {}) == "hin_Deva"
    assert model_language_code("nllb", "en", {}) == "eng_Latn"
    assert model_language_code("indictrans2", "es", {}) == "spa_Latn"
    assert model_language_code("indictrans2", "mar_Deva", {}) == "mar_Deva"  # already FLORES
    assert model_language_code("nllb", "hi", {"hi": "hne_Deva"}) == "hne_Deva"
    assert model_language_code("m2m100", "hi", {}) == "hi"
    with pytest.raises(ValueError, match="language_codes"):
        model_language_code("nllb", "xx", {})


def test_nllb_source_tag_and_forced_target():
    from transformers import NllbTokenizer

    tok = NllbTokenizer()  # the NLLB special tokens and language codes, no vocabulary: no download
    codec = TextCodec(tok, "nllb", {})
    with codec.request("hi", "en") as request:
        tokens = request.encode_tokens(["नमस्ते", "x"])
        assert [t[0] for t in tokens] == ["hin_Deva", "hin_Deva"] and tokens[0][-1] == "</s>"
        assert request.pair.target_token == "eng_Latn"
        assert codec.target_token_id(request.pair) == tok.convert_tokens_to_ids("eng_Latn")
    with codec.request("en", "es") as request:  # the source tag follows the request
        assert request.encode_tokens(["x"])[0][0] == "eng_Latn"
        eos, spa = tok.eos_token_id, tok.convert_tokens_to_ids("spa_Latn")
        assert request.decode_tokens([["spa_Latn", "</s>"]]) == [""]
        assert request.decode_ids([[eos, spa, eos]]) == [""]
    with pytest.raises(ValueError, match="language_codes"):
        codec.pair("en", "tlh")
    assert TextCodec(tok, "nllb", {"tlh": "spa_Latn"}).pair("en", "tlh").target_token == "spa_Latn"
    check_pairs(codec, "nllb", {("hi", "en"): "suite-a"})
    with pytest.raises(ConfigError, match=r"systems\.nllb: cannot translate hi->tlh \(suite suite-b\)"):
        check_pairs(codec, "nllb", {("hi", "en"): "suite-a", ("hi", "tlh"): "suite-b"})


def test_m2m100_source_tag_and_forced_target(tiny, tmp_path):
    from transformers import M2M100Tokenizer

    marian_vocab = json.loads((tiny / "vocab.json").read_text())
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in marian_vocab:
        vocab.setdefault(piece, len(vocab))
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    tok = M2M100Tokenizer(vocab_file=str(tmp_path / "vocab.json"), spm_file=str(tiny / "source.spm"))
    codec = TextCodec(tok, "m2m100", {})
    with codec.request("hi", "es") as request:
        tokens = request.encode_tokens(["The doctor"])[0]
        assert tokens[0] == "__hi__" and tokens[-1] == "</s>"
        assert request.pair.target_token == "__es__"
        assert codec.target_token_id(request.pair) == tok.get_lang_id("es")
    with pytest.raises(ValueError, match="no language"):
        codec.pair("hi", "xx")


def test_indictrans2_tags_in_the_text():
    from transformers import NllbTokenizer

    assert indictrans_input("  The  doctor. ", "eng_Latn", "hin_Deva") == "eng_Latn hin_Deva The doctor."
    # any tokenizer that knows the FLORES tags will do to check the request side
    codec = TextCodec(NllbTokenizer(), "indictrans2", {}, use_indic_processor=False)
    with codec.request("en", "hi") as request:
        assert request.source_texts(["The doctor."]) == ["eng_Latn hin_Deva The doctor."]
        assert request.pair.target_token is None  # no forced BOS: the tags are in the input
    assert codec.preprocessing == "language tags only"


class FakeIndicProcessor:
    """IndicTransToolkit's contract: pre-processing queues one entry per text, post-processing pops
    them in the same order (placeholders restored into the right sentence)."""

    made = 0

    def __init__(self, inference=True):
        FakeIndicProcessor.made += 1
        self.queue = []

    def preprocess_batch(self, texts, src_lang, tgt_lang):
        self.queue.extend(texts)
        return [f"{src_lang} {tgt_lang} {t.lower()}" for t in texts]

    def postprocess_batch(self, texts, lang):
        return [f"{t} <{self.queue.pop(0)}>" for t in texts]


def test_indictrans2_with_indic_processor(monkeypatch):
    from transformers import NllbTokenizer

    from biaseval.translate.local_models import codec as codec_module

    monkeypatch.setattr(codec_module, "import_indic_processor", lambda: (FakeIndicProcessor, "0-test"))
    codec = TextCodec(NllbTokenizer(), "indictrans2", {})
    assert codec.preprocessing == "IndicProcessor (IndicTransToolkit 0-test)"
    with codec.request("en", "hi") as request:
        assert request.source_texts(["A", "B"]) == ["eng_Latn hin_Deva a", "eng_Latn hin_Deva b"]
        assert request._finish(["x", "y"]) == ["x <A>", "y <B>"]  # paired in input order
    with pytest.raises(RuntimeError):
        with codec.request("en", "hi") as request:
            request.source_texts(["C"])
            raise RuntimeError("generation failed half-way")
    made = FakeIndicProcessor.made
    with codec.request("en", "hi") as request:  # a fresh processor: no stale entry from the failure
        request.source_texts(["D"])
        assert request._finish(["z"]) == ["z <D>"]
    assert FakeIndicProcessor.made == made + 1


def test_marian_multi_target_token():
    assert marian_target_token("es", [], {}) is None  # a single-pair model needs nothing
    assert marian_target_token("es", [">>es<<", ">>fr<<"], {}) == ">>es<<"
    assert marian_target_token("hi", [">>hin<<", ">>mar<<"], {}) == ">>hin<<"
    assert marian_target_token("hi", [">>hin_Deva<<"], {}) == ">>hin_Deva<<"
    with pytest.raises(ValueError, match="no target token"):
        marian_target_token("de", [">>es<<"], {})


def test_family_detection():
    assert detect_family("marian", ["MarianMTModel"], "MarianTokenizer") == "marian"
    assert detect_family("m2m_100", ["M2M100ForConditionalGeneration"], "NllbTokenizer") == "nllb"
    assert detect_family("m2m_100", ["M2M100ForConditionalGeneration"], "M2M100Tokenizer") == "m2m100"
    assert detect_family("IndicTrans", ["IndicTransForConditionalGeneration"], "IndicTransTokenizer") == "indictrans2"
    assert detect_family(None, [], "NllbTokenizerFast") == "nllb"
    with pytest.raises(ConfigError, match="set family"):
        detect_family("t5", ["T5ForConditionalGeneration"], "T5Tokenizer")


def test_length_sorted_chunks_cover_every_index_once():
    chunks = length_sorted_chunks([3, 9, 1, 9, 4], 2)
    assert chunks == [[1, 3], [4, 0], [2]]
    assert sorted(i for c in length_sorted_chunks(list(range(50)), 7) for i in c) == list(range(50))
