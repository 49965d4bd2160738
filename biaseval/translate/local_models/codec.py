"""The tokenizer side of a model family (``TextCodec``): language tags on the way in, decoding on
the way out, for the ``hf`` and ``ctranslate2`` backends alike, so both see the same inputs.

IndicTrans2: when the ``IndicTransToolkit`` package is importable its ``IndicProcessor`` adds the
tags, with the normalisation, transliteration and placeholder handling the models were trained
with, and post-processes the outputs; otherwise the tags alone are added and outputs are left as
decoded. Which one ran is part of the recorded model version (``TextCodec.preprocessing``), since
it changes outputs.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from biaseval.translate.local_models.languages import (
    indictrans_input,
    marian_declared_pair,
    marian_target_token,
    model_language_code,
)


def sane_length(value: Any) -> int | None:
    """A tokenizer's or config's maximum length, unless it is unset (None, or the 1e30 sentinel)."""
    return int(value) if isinstance(value, int) and 0 < value < 1_000_000 else None


def import_indic_processor() -> tuple[type, str] | None:
    """IndicTransToolkit's IndicProcessor class and the package version, when installed."""
    for module in ("IndicTransToolkit.processor", "IndicTransToolkit", "IndicTransToolkit.IndicTransToolkit"):
        try:
            mod = __import__(module, fromlist=["IndicProcessor"])
            cls = getattr(mod, "IndicProcessor")
        except (ImportError, AttributeError):
            continue
        try:
            from importlib.metadata import version

            ver = version("IndicTransToolkit")
        except Exception:  # noqa: BLE001 - the version is informative only
            ver = "?"
        return cls, ver
    return None


@dataclass(frozen=True)
class Pair:
    """A language pair resolved for one model: what goes before the text, which tags to set."""

    src: str
    tgt: str
    src_code: str | None  # the tokenizer's src_lang (nllb, m2m100) or the source tag (indictrans2)
    tgt_code: str | None
    text_prefix: str | None  # marian multi-target: ">>xx<<"
    target_token: str | None  # the forced first target token (nllb, m2m100)


class TextCodec:
    """Turns texts into token ids with a family's language tags, and generated tokens into text.

    Thread-safe: a tokenizer's language state (``src_lang``, IndicTrans' source/target mode) is only
    touched under one lock, and IndicProcessor, which pairs pre- and post-processing through an
    internal queue, is kept per thread and dropped when a request fails half-way.
    """

    def __init__(self, tokenizer: Any, family: str, overrides: Mapping[str, str],
                 max_source_tokens: int | None = None, use_indic_processor: bool = True):
        self.tokenizer = tokenizer
        self.family = family
        self.overrides = dict(overrides)
        self.lock = threading.RLock()
        self.max_source_tokens = max_source_tokens
        self.left_padding = getattr(tokenizer, "padding_side", "right") == "left"  # IndicTrans pads left
        self._pairs: dict[tuple[str, str], Pair] = {}
        self._local = threading.local()
        self.indic = import_indic_processor() if family == "indictrans2" and use_indic_processor else None

    @property
    def preprocessing(self) -> str:
        """How source texts are prepared, when it is not just the tokenizer (for the version string)."""
        if self.family != "indictrans2":
            return ""
        return f"IndicProcessor (IndicTransToolkit {self.indic[1]})" if self.indic else "language tags only"

    # -- languages -------------------------------------------------------------------------

    def _known_token(self, token: str) -> bool:
        tok = self.tokenizer
        ids = tok.convert_tokens_to_ids([token])
        return bool(ids) and ids[0] is not None and ids[0] != tok.unk_token_id

    def pair(self, src: str, tgt: str) -> Pair:
        """The resolved pair; ValueError when the model has no tag for one of the languages."""
        key = (src, tgt)
        if key not in self._pairs:
            self._pairs[key] = self._resolve(src, tgt)
        return self._pairs[key]

    def _resolve(self, src: str, tgt: str) -> Pair:
        tok = self.tokenizer
        if self.family == "marian":
            marian_declared_pair(tok, src, tgt, self.overrides)
            supported = list(getattr(tok, "supported_language_codes", None) or [])
            return Pair(src, tgt, None, None, marian_target_token(tgt, supported, self.overrides), None)
        src_code = model_language_code(self.family, src, self.overrides)
        tgt_code = model_language_code(self.family, tgt, self.overrides)
        if self.family == "m2m100":
            known = getattr(tok, "lang_code_to_token", {})
            for lang, code in ((src, src_code), (tgt, tgt_code)):
                if code not in known:
                    raise ValueError(f"M2M-100 tokenizer has no language {code!r} (for {lang!r}); "
                                     f"map it in language_codes")
            return Pair(src, tgt, src_code, tgt_code, None, tok.get_lang_token(tgt_code))
        for lang, code in ((src, src_code), (tgt, tgt_code)):
            if not self._known_token(code):
                raise ValueError(f"the tokenizer has no language tag {code!r} (for {lang!r}); "
                                 f"map it in language_codes")
        target = tgt_code if self.family == "nllb" else None
        return Pair(src, tgt, src_code, tgt_code, None, target)

    def target_token_id(self, pair: Pair) -> int | None:
        """``forced_bos_token_id`` for generation (nllb, m2m100), else None."""
        if pair.target_token is None:
            return None
        return self.tokenizer.convert_tokens_to_ids(pair.target_token)

    # -- one request ------------------------------------------------------------------------

    @contextlib.contextmanager
    def request(self, src: str, tgt: str) -> Iterator["Request"]:
        """A request's encode/decode; the per-thread IndicProcessor is reset if it fails."""
        pair = self.pair(src, tgt)
        processor = None
        if self.indic is not None:
            processor = getattr(self._local, "processor", None)
            if processor is None:
                processor = self._local.processor = self.indic[0](inference=True)
        try:
            yield Request(self, pair, processor)
        except BaseException:
            self._local.processor = None  # its placeholder queue may hold this request's entries
            raise


class Request:
    """Encoding and decoding for one request (one language pair, one thread)."""

    def __init__(self, codec: TextCodec, pair: Pair, processor: Any):
        self.codec = codec
        self.pair = pair
        self.processor = processor
        self.empty: set[int] = set()

    def source_texts(self, texts: Sequence[str]) -> list[str]:
        """The texts as the tokenizer must see them (with text-level tags)."""
        pair = self.pair
        if self.codec.family == "indictrans2":
            if self.processor is not None:
                return list(self.processor.preprocess_batch(list(texts), src_lang=pair.src_code,
                                                            tgt_lang=pair.tgt_code))
            return [indictrans_input(t, pair.src_code, pair.tgt_code) for t in texts]
        if pair.text_prefix:
            return [f"{pair.text_prefix} {t}" for t in texts]
        return list(texts)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, with the family's special tokens, in input order. Blank texts are
        not sent to the model (they translate to ""); a text over the model's input limit raises."""
        self.empty = {i for i, t in enumerate(texts) if not t.strip()}
        if not texts:
            return []
        prepared = self.source_texts(texts)
        tok = self.codec.tokenizer
        with self.codec.lock:
            if self.pair.src_code is not None and self.codec.family in ("nllb", "m2m100"):
                tok.src_lang = self.pair.src_code
            ids = [list(x) for x in tok(prepared, add_special_tokens=True)["input_ids"]]
        limit = self.codec.max_source_tokens
        if limit:
            for i, row in enumerate(ids):
                if len(row) > limit and i not in self.empty:
                    raise ValueError(f"text {i} is {len(row)} tokens long; the model takes at most {limit}")
        return ids

    def encode_tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Source tokens (strings) per text, as CTranslate2 takes them."""
        ids = self.encode(texts)
        with self.codec.lock:
            return [self.codec.tokenizer.convert_ids_to_tokens(row) for row in ids]

    def decode_ids(self, sequences: Sequence[Sequence[int] | None]) -> list[str]:
        """Generated ids -> finished translations, in input order (None for a blank input)."""
        rows = [list(s) if s is not None else [] for s in sequences]
        with self.codec.lock:
            texts = self.codec.tokenizer.batch_decode(rows, skip_special_tokens=True)
        return self._finish(texts)

    def decode_tokens(self, sequences: Sequence[Sequence[str] | None]) -> list[str]:
        """Generated tokens (strings, CTranslate2) -> finished translations, in input order."""
        tok = self.codec.tokenizer
        target_vocab = None
        if getattr(tok, "separate_vocabs", False):  # Marian with its own target vocabulary
            target_vocab = getattr(tok, "target_encoder", None)
        target_vocab = target_vocab or getattr(tok, "tgt_encoder", None)  # IndicTrans
        rows: list[list[int]] = []
        with self.codec.lock:
            for seq in sequences:
                seq = list(seq or [])
                if self.pair.target_token and seq[:1] == [self.pair.target_token]:
                    seq = seq[1:]
                if target_vocab is not None:
                    unk = target_vocab.get(tok.unk_token)
                    rows.append([target_vocab.get(t, unk) for t in seq])
                else:
                    rows.append(list(tok.convert_tokens_to_ids(seq)))
        return self.decode_ids(rows)

    def _finish(self, texts: list[str]) -> list[str]:
        texts = [t.strip() for t in texts]
        if self.processor is not None:
            texts = list(self.processor.postprocess_batch(texts, lang=self.pair.tgt_code))
        return ["" if i in self.empty else t for i, t in enumerate(texts)]
