"""Open seq2seq MT models through Hugging Face transformers: opus-mt (Marian), NLLB, M2M-100, IndicTrans2.

Configured per system::

    backend: hf
    options:
      model: facebook/nllb-200-distilled-600M     # a local directory or a hub id (cached)
      revision: <commit hash>                         # pins the weights (optional)
      num_beams: 4

The module also holds what the ``ctranslate2`` backend shares with this one (``ct2.py``):

- ``TextCodec``: the tokenizer side of a model family — language tags on the way in, decoding on
  the way out, thread-safe;
- language codes: ISO 639-1 -> FLORES-200 (NLLB, IndicTrans2), ISO (M2M-100), ``>>xx<<`` tokens
  (multi-target opus-mt);
- ``length_sorted_chunks``, ``sha256_of_files``, ``locate_model``.

Language tags per family:

- ``marian``: one language pair per model, nothing to add; a multi-target model (its vocabulary
  has ``>>xx<<`` tokens) gets the target token in front of each source text.
- ``nllb``, ``m2m100``: the tokenizer's ``src_lang`` puts the source tag on the input; the target
  tag is forced as the first generated token (``forced_bos_token_id``; a target prefix in CT2).
- ``indictrans2``: the input text itself carries the tags, ``"eng_Latn hin_Deva text"``. When the
  ``IndicTransToolkit`` package is importable its ``IndicProcessor`` does this, with the
  normalisation, transliteration and placeholder handling the models were trained with, and
  post-processes the outputs; otherwise the tags alone are added and outputs are left as decoded.
  Which one ran is part of the recorded model version, since it changes outputs.

Loading is lazy and happens once per backend instance (once per Ray actor): ``__init__`` only
imports the libraries; ``check`` (driver) reads the config and tokenizer to validate the language
pairs; the weights are loaded by ``load()`` or the first ``translate_batch``.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    TextTranslator,
    language_pairs,
)

FAMILIES: tuple[str, ...] = ("marian", "nllb", "m2m100", "indictrans2")

# ISO 639-1 (and a few ISO 639-3 without a 2-letter code) -> FLORES-200 codes, as NLLB and
# IndicTrans2 name languages. Extend or override per system with ``language_codes``.
FLORES200: dict[str, str] = {
    "af": "afr_Latn", "am": "amh_Ethi", "ar": "arb_Arab", "as": "asm_Beng", "az": "azj_Latn",
    "be": "bel_Cyrl", "bg": "bul_Cyrl", "bn": "ben_Beng", "bo": "bod_Tibt", "bs": "bos_Latn",
    "ca": "cat_Latn", "cs": "ces_Latn", "cy": "cym_Latn", "da": "dan_Latn", "de": "deu_Latn",
    "el": "ell_Grek", "en": "eng_Latn", "eo": "epo_Latn", "es": "spa_Latn", "et": "est_Latn",
    "eu": "eus_Latn", "fa": "pes_Arab", "fi": "fin_Latn", "fr": "fra_Latn", "ga": "gle_Latn",
    "gl": "glg_Latn", "gu": "guj_Gujr", "ha": "hau_Latn", "he": "heb_Hebr", "hi": "hin_Deva",
    "hr": "hrv_Latn", "hu": "hun_Latn", "hy": "hye_Armn", "id": "ind_Latn", "ig": "ibo_Latn",
    "is": "isl_Latn", "it": "ita_Latn", "ja": "jpn_Jpan", "jv": "jav_Latn", "ka": "kat_Geor",
    "kk": "kaz_Cyrl", "km": "khm_Khmr", "kn": "kan_Knda", "ko": "kor_Hang", "ks": "kas_Arab",
    "ky": "kir_Cyrl", "lo": "lao_Laoo", "lt": "lit_Latn", "lv": "lvs_Latn", "mk": "mkd_Cyrl",
    "ml": "mal_Mlym", "mn": "khk_Cyrl", "mr": "mar_Deva", "ms": "zsm_Latn", "mt": "mlt_Latn",
    "my": "mya_Mymr", "ne": "npi_Deva", "nl": "nld_Latn", "nb": "nob_Latn", "nn": "nno_Latn",
    "no": "nob_Latn", "or": "ory_Orya", "pa": "pan_Guru", "pl": "pol_Latn", "ps": "pbt_Arab",
    "pt": "por_Latn", "ro": "ron_Latn", "ru": "rus_Cyrl", "sa": "san_Deva", "sd": "snd_Arab",
    "si": "sin_Sinh", "sk": "slk_Latn", "sl": "slv_Latn", "so": "som_Latn", "sq": "als_Latn",
    "sr": "srp_Cyrl", "sv": "swe_Latn", "sw": "swh_Latn", "ta": "tam_Taml", "te": "tel_Telu",
    "tg": "tgk_Cyrl", "th": "tha_Thai", "tl": "tgl_Latn", "tr": "tur_Latn", "uk": "ukr_Cyrl",
    "ur": "urd_Arab", "uz": "uzn_Latn", "vi": "vie_Latn", "yo": "yor_Latn", "zh": "zho_Hans",
    "zu": "zul_Latn",
    # Indian languages without an ISO 639-1 code (IndicTrans2 covers them)
    "mai": "mai_Deva", "kok": "gom_Deva", "doi": "doi_Deva", "brx": "brx_Deva", "sat": "sat_Olck",
    "mni": "mni_Beng",
}

# Files whose bytes decide a local model's outputs (hashed into its version string).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5")
_CONFIG_FILES = ("config.json", "generation_config.json")
_COMMIT = re.compile(r"(?:^|/)snapshots/([0-9a-f]{40})(?:/|$)")


class HFOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="local model directory (relative to the config file) or hub id")
    revision: str | None = Field(default=None, description="hub branch, tag or commit (pin a commit)")
    local_files_only: bool = Field(default=True, description="never download: a local path or the hub cache only")
    trust_remote_code: bool = Field(default=False, description="run the model repo's own code (IndicTrans2 needs it)")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        default="auto", description="auto: bfloat16 (else float16) on CUDA, float32 on CPU")
    batch_size: int = Field(default=32, ge=1, description="sentences per forward pass")
    max_new_tokens: int = Field(default=256, ge=1)
    num_beams: int = Field(default=4, ge=1, description="1 is greedy search")
    family: Literal["auto", "marian", "nllb", "m2m100", "indictrans2"] = "auto"
    language_codes: dict[str, str] = Field(default_factory=dict, description="ISO 639 code -> the model's code")


# --------------------------------------------------------------------------------------------
# Pure helpers (shared with ct2.py)
# --------------------------------------------------------------------------------------------


def length_sorted_chunks(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices into ``lengths`` grouped into chunks of at most ``batch_size``, longest first, so
    that each chunk pads little. Every index appears exactly once; ties keep input order."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


def model_language_code(family: str, lang: str, overrides: Mapping[str, str]) -> str:
    """The code a model of ``family`` uses for the ISO 639 code ``lang``.

    ``overrides`` (the system's ``language_codes``) win; NLLB and IndicTrans2 use FLORES-200 codes
    (a code that already looks like one, ``hin_Deva``, passes through); M2M-100 and Marian use
    the ISO code itself.
    """
    if lang in overrides:
        return overrides[lang]
    if family in ("nllb", "indictrans2"):
        if re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", lang):
            return lang
        code = FLORES200.get(lang)
        if code is None:
            raise ValueError(f"no FLORES-200 code known for language {lang!r}; add it to the system's "
                             f"language_codes (e.g. {lang}: xxx_Latn)")
        return code
    return lang


def indictrans_input(text: str, src_code: str, tgt_code: str) -> str:
    """IndicTrans2's input convention without IndicTransToolkit: ``"src_tag tgt_tag text"``."""
    return f"{src_code} {tgt_code} {' '.join(text.split())}"


def marian_target_token(tgt: str, supported: Sequence[str], overrides: Mapping[str, str]) -> str | None:
    """The ``>>xx<<`` token a multi-target Marian model needs for target ``tgt``; None for a
    single-target model (no such tokens in its vocabulary)."""
    if not supported:
        return None
    candidates = [overrides.get(tgt), tgt, FLORES200.get(tgt, "").split("_")[0], FLORES200.get(tgt)]
    for code in candidates:
        if code and f">>{code}<<" in supported:
            return f">>{code}<<"
    shown = ", ".join(sorted(supported)[:12])
    raise ValueError(f"this multi-target Marian model has no target token for {tgt!r} (it has {shown}, ...); "
                     f"map it in language_codes")


def marian_declared_pair(tokenizer: Any, src: str, tgt: str, overrides: Mapping[str, str]) -> None:
    """ValueError when a Marian model is asked for languages its tokenizer says it does not translate
    (``source_lang``/``target_lang``: opus-mt-en-es has en and es). Only two-letter codes are compared:
    group models name theirs otherwise (mul, gem, ROMANCE)."""
    for side, lang in (("source", src), ("target", tgt)):
        declared = getattr(tokenizer, f"{side}_lang", None)
        if isinstance(declared, str) and re.fullmatch(r"[a-z]{2}", declared) and declared not in (lang, overrides.get(lang)):
            raise ValueError(f"this Marian model translates {tokenizer.source_lang}->{tokenizer.target_lang} (its "
                             f"tokenizer's {side}_lang), not {src}->{tgt}; map {lang} in language_codes if it is "
                             f"the same language")


def detect_family(model_type: str | None, architectures: Sequence[str], tokenizer_class: str) -> str:
    """The language-tag convention of a model, from its config and its tokenizer's class."""
    kind = (model_type or "").lower()
    names = " ".join([tokenizer_class, *architectures]).lower()
    if kind == "marian" or "marian" in names:
        return "marian"
    if "indictrans" in kind or "indictrans" in names:
        return "indictrans2"
    if "nllb" in kind or "nllb" in names:
        return "nllb"
    if kind == "m2m_100" or "m2m100" in names:
        return "m2m100"
    raise ConfigError(f"cannot tell which language tags this model needs (model_type {model_type!r}, tokenizer "
                      f"{tokenizer_class}); set family: one of {', '.join(FAMILIES)} "
                      f"(marian adds none)")


def sha256_of_files(paths: Sequence[Path]) -> str:
    """One SHA-256 over the names and bytes of ``paths`` (sorted by name)."""
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def weight_files(directory: Path) -> list[Path]:
    """The files of a local model directory that decide its outputs: weights and configs."""
    return [p for p in directory.iterdir()
            if p.is_file() and (p.name.endswith(_WEIGHT_SUFFIXES) or p.name in _CONFIG_FILES)]


def commit_of(resolved: str | Path) -> str | None:
    """The hub commit of a file resolved in the hub cache (``.../snapshots/<commit>/...``)."""
    match = _COMMIT.search(Path(resolved).as_posix())
    return match.group(1) if match else None


@dataclass(frozen=True)
class ModelLocation:
    """Where a model's files are: a local directory, or a hub id pinned to a commit of the cache."""

    ref: str  # what to pass to from_pretrained: the directory or the hub id
    local: Path | None
    revision: str | None  # the commit (hub) or None (local)
    config: dict[str, Any]

    def describe(self) -> str:
        return f"{self.ref}@{self.revision}" if self.revision else self.ref


def locate_model(model: str, config_dir: Path, revision: str | None, local_files_only: bool,
                 config_name: str = "config.json") -> ModelLocation:
    """Find a model directory (relative paths are relative to the config file) or its hub cache
    entry, and read its ``config_name``. Raises ConfigError when neither exists."""
    candidate = config_dir / Path(model).expanduser()  # an absolute path stays as it is
    if candidate.is_dir():
        cfg_file = candidate / config_name
        config = json.loads(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
        return ModelLocation(str(candidate), candidate.resolve(), None, config)
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ConfigError(f"model {model!r}: no such directory (relative paths are relative to {config_dir})")
    from transformers.utils import cached_file

    try:
        resolved = cached_file(model, config_name, revision=revision, local_files_only=local_files_only)
    except (OSError, ValueError) as exc:
        where = "the local hub cache (local_files_only: true)" if local_files_only else "the hub"
        raise ConfigError(f"model {model!r}: not a directory and not found in {where}: "
                          f"{str(exc).splitlines()[0]}") from None
    if resolved is None:
        raise ConfigError(f"model {model!r}: no {config_name} in its hub repository")
    config = json.loads(Path(resolved).read_text(encoding="utf-8"))
    return ModelLocation(model, None, commit_of(resolved) or revision, config)


def require_trust(loc: ModelLocation, trusted: bool, system: str) -> None:
    """ConfigError when the model ships its own code (``auto_map``, e.g. IndicTrans2) and the config
    does not say to run it."""
    if loc.config.get("auto_map") and not trusted:
        raise ConfigError(f"systems.{system}.options.trust_remote_code: {loc.ref!r} ships its own code (auto_map "
                          f"in its config); set trust_remote_code: true to run it")


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


# --------------------------------------------------------------------------------------------
# The tokenizer side of a model family
# --------------------------------------------------------------------------------------------


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


def check_pairs(codec: TextCodec, system: str, pairs: Mapping[tuple[str, str], str]) -> None:
    """ConfigError, in the driver, for a language pair the model cannot do (``pairs``: (source,
    target) -> the suite that needs it, as ``language_pairs`` gives them)."""
    for (src, tgt), suite in sorted(pairs.items()):
        try:
            codec.pair(src, tgt)
        except ValueError as exc:
            raise ConfigError(f"systems.{system}: cannot translate {src}->{tgt} (suite {suite}): {exc}; or leave "
                              f"{tgt} out of the system's targets") from None


def sane_length(value: Any) -> int | None:
    """A tokenizer's or config's maximum length, unless it is unset (None, or the 1e30 sentinel)."""
    return int(value) if isinstance(value, int) and 0 < value < 1_000_000 else None


class ModelLoadError(RuntimeError):
    """Loading the model failed; remembered, so later requests fail at once instead of reloading."""


# --------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------


class LocalModelTranslator(TextTranslator):
    """What ``hf`` and ``ctranslate2`` share: a codec (tokenizer, family, language tags) built once,
    weights loaded once per actor (a failed load is remembered, not retried on every request), and
    requests of ``batch_size`` × 8 texts."""

    REQUIRES: tuple[tuple[str, str], ...] = ()  # (module, extra) pairs imported up front

    def __init__(self, system, options, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        for module, extra in self.REQUIRES:
            try:
                importlib.import_module(module)
            except ImportError:
                raise MissingExtra(extra, extra, module) from None
        self._setup_lock = threading.Lock()
        self._codec: TextCodec | None = None
        self._load_error: str | None = None
        self.family: str | None = None
        self.version: str | None = None

    def codec(self) -> TextCodec:
        """The config and tokenizer (cheap): resolves the model's location and its family."""
        with self._setup_lock:
            if self._codec is None:
                self._codec = self._make_codec()
            return self._codec

    def _make_codec(self) -> TextCodec:
        raise NotImplementedError

    def _loaded(self) -> bool:
        raise NotImplementedError

    def _load(self, codec: TextCodec) -> None:
        raise NotImplementedError

    def check(self, suites, targets=None) -> None:
        """The model's config and tokenizer (never its weights) and every language pair it is given."""
        check_pairs(self.codec(), self.system, language_pairs(suites, targets))

    @classmethod
    def preflight(cls, system, options, suites, targets, config_dir) -> None:
        cls(system, options, config_dir=config_dir).check(suites, targets)

    def _locate(self, name: str, revision: str | None, field: str, config_name: str = "config.json") -> ModelLocation:
        """``locate_model``, its errors naming the option at fault; model code only when trusted."""
        try:
            loc = locate_model(name, self.config_dir, revision, self.options.local_files_only, config_name)
        except ConfigError as exc:
            raise ConfigError(f"systems.{self.system}.options.{field}: {exc}") from None
        require_trust(loc, self.options.trust_remote_code, self.system)
        return loc

    def _tokenizer(self, loc: ModelLocation, field: str) -> Any:
        from transformers import AutoTokenizer

        opts = self.options
        try:
            return AutoTokenizer.from_pretrained(loc.ref, revision=loc.revision, local_files_only=opts.local_files_only,
                                                 trust_remote_code=opts.trust_remote_code)
        except Exception as exc:  # noqa: BLE001 - any loading failure is a config problem here
            raise ConfigError(f"systems.{self.system}.options.{field}: cannot load the tokenizer of {loc.ref!r}: "
                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None

    def _family(self, model_type: str | None, architectures: Sequence[str], tokenizer: Any) -> str:
        if self.options.family != "auto":
            return self.options.family
        try:
            return detect_family(model_type, architectures, type(tokenizer).__name__)
        except ConfigError as exc:
            raise ConfigError(f"systems.{self.system}.options.family: {exc}") from None

    def load(self) -> None:
        """Load the weights (once); later calls return at once. Raises ModelLoadError on failure."""
        codec = self.codec()
        with self._setup_lock:
            if self._loaded():
                return
            if self._load_error is not None:
                raise ModelLoadError(self._load_error)
            try:
                self._load(codec)
            except Exception as exc:  # noqa: BLE001 - remembered: no reload per request
                self._load_error = f"cannot load {self.options.model!r}: {type(exc).__name__}: {exc}"
                raise ModelLoadError(self._load_error) from exc

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        return BatchLimits(max_items=options.batch_size * 8, max_units=1_000_000)


@TRANSLATORS.register("hf")
class HFTranslator(LocalModelTranslator):
    """A transformers seq2seq checkpoint (opus-mt/Marian, NLLB, M2M-100, IndicTrans2), loaded once."""

    provider = "Hugging Face transformers"
    Options = HFOptions
    options: HFOptions
    # batch_size only changes padding (numerical noise, not a different system); local_files_only
    # only says where files may come from, and the weights are pinned in the model version. device
    # is not here: with dtype auto it changes the precision, and GPU kernels change numerics.
    OPERATIONAL = frozenset({"batch_size", "local_files_only"})

    REQUIRES = (("torch", "hf"), ("transformers", "hf"))

    def __init__(self, system, options, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        self._run_lock = threading.Lock()  # one generate at a time per instance (one model, one device)
        self._location: ModelLocation | None = None
        self._model = None
        self._generation: dict[int | None, Any] = {}
        self.device: str | None = None
        self.dtype: str | None = None
        self.forward_passes = 0  # generate() calls, for tests and benchmarks

    # -- setup ------------------------------------------------------------------------------

    def _make_codec(self) -> TextCodec:
        opts = self.options
        loc = self._locate(opts.model, opts.revision, "model")
        tokenizer = self._tokenizer(loc, "model")
        model_vocab = sane_length(loc.config.get("vocab_size") or loc.config.get("encoder_vocab_size"))
        if model_vocab and len(tokenizer) < model_vocab // 2:
            raise ConfigError(f"systems.{self.system}.options.model: the tokenizer of {opts.model!r} has "
                              f"{len(tokenizer)} tokens, the model {model_vocab} (tokenizer files missing?)")
        family = self._family(loc.config.get("model_type"), loc.config.get("architectures") or [], tokenizer)
        limits = [sane_length(getattr(tokenizer, "model_max_length", None)),
                  sane_length(loc.config.get("max_position_embeddings")),
                  sane_length(loc.config.get("max_source_positions"))]
        self._location, self.family = loc, family
        return TextCodec(tokenizer, family, opts.language_codes, min([n for n in limits if n], default=None))

    def _load(self, codec: TextCodec) -> None:
        import torch
        from transformers import AutoModelForSeq2SeqLM

        opts, loc = self.options, self._location
        assert loc is not None
        device = opts.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        elif device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("device: cuda, but torch sees no CUDA device here")
        dtype = opts.dtype
        if dtype == "auto":
            if device == "cuda":
                dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
            else:
                dtype = "float32"
        model = AutoModelForSeq2SeqLM.from_pretrained(
            loc.ref, revision=loc.revision, local_files_only=opts.local_files_only,
            trust_remote_code=opts.trust_remote_code, dtype=getattr(torch, dtype))
        model.to(device)
        model.eval()
        generation = copy.deepcopy(model.generation_config)  # the model's own settings, then ours
        generation.num_beams = opts.num_beams
        generation.do_sample = False
        generation.num_return_sequences = 1
        generation.max_new_tokens = opts.max_new_tokens
        generation.max_length = None  # max_new_tokens decides
        self._generation = {None: generation}
        if loc.local is not None:
            weights = sha256_of_files(weight_files(loc.local))[:16]
            pinned = f"{opts.model} sha256:{weights}"
        else:
            pinned = loc.describe()
        extra = f", {codec.preprocessing}" if codec.preprocessing else ""
        self.version = f"{pinned} ({self.family}, {dtype}{extra})"
        self.device, self.dtype = device, dtype
        self._model = model

    # -- translation ------------------------------------------------------------------------

    def _loaded(self) -> bool:
        return self._model is not None

    def translate_batch(self, texts, src, tgt, *, timeout):
        """Length-sorted forward passes of ``batch_size``; outputs in input order. ``timeout`` is not
        applied: a forward pass cannot be interrupted, and cutting generation short would change
        the output rather than fail it."""
        self.load()
        codec = self.codec()
        with self._run_lock, codec.request(src, tgt) as request:
            ids = request.encode(texts)
            outputs: list[list[int] | None] = [None] * len(texts)
            todo = [i for i in range(len(texts)) if i not in request.empty]
            forced = codec.target_token_id(request.pair)
            for chunk in length_sorted_chunks([len(ids[i]) for i in todo], self.options.batch_size):
                rows = [todo[k] for k in chunk]
                for i, seq in zip(rows, self._generate([ids[i] for i in rows], forced)):
                    outputs[i] = seq
            return BatchOutput(request.decode_ids(outputs), model=self.version)

    def _generate(self, batch: list[list[int]], forced_bos: int | None) -> list[list[int]]:
        """One forward pass; on CUDA out-of-memory the chunk is halved (down to one sentence)."""
        import torch

        try:
            return self._forward(batch, forced_bos)
        except torch.OutOfMemoryError:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if len(batch) == 1:
                raise
            half = len(batch) // 2
            return self._generate(batch[:half], forced_bos) + self._generate(batch[half:], forced_bos)

    def _forward(self, batch: list[list[int]], forced_bos: int | None) -> list[list[int]]:
        import torch

        tok = self.codec().tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        width = max(len(row) for row in batch)
        left = self.codec().left_padding
        input_ids, mask = [], []
        for row in batch:
            fill = [pad] * (width - len(row))
            ones, zeros = [1] * len(row), [0] * len(fill)
            input_ids.append(fill + row if left else row + fill)
            mask.append(zeros + ones if left else ones + zeros)
        self.forward_passes += 1
        with torch.inference_mode():
            out = self._model.generate(
                input_ids=torch.tensor(input_ids, device=self.device),
                attention_mask=torch.tensor(mask, device=self.device),
                generation_config=self._generation_for(forced_bos))
        return out.cpu().tolist()

    def _generation_for(self, forced_bos: int | None):
        """The generation settings for one target language (its forced first token, if any)."""
        if forced_bos not in self._generation:
            generation = copy.deepcopy(self._generation[None])
            generation.forced_bos_token_id = forced_bos
            self._generation[forced_bos] = generation
        return self._generation[forced_bos]

    def classify(self, exc: BaseException) -> Retry | None:
        # CUDA out-of-memory reaches here only for a single sentence (chunks are halved first):
        # permanent for that text, so the runner records it and goes on. A failed load is permanent.
        return super().classify(exc)
