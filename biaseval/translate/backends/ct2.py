"""Open seq2seq MT models converted to CTranslate2 (opus-mt/Marian, NLLB, M2M-100, IndicTrans2).

Configured per system::

    backend: ctranslate2
    options:
      model: models/nllb-200-distilled-600M-ct2      # a converted model directory
      tokenizer: facebook/nllb-200-distilled-600M     # default: the model directory, if it has one
      compute_type: int8_float16

Convert a transformers checkpoint with ``ct2-transformers-converter --model ID --output_dir DIR
--copy_files tokenizer_config.json ...`` (or ``ctranslate2.converters.TransformersConverter``).
Tokenization, language tags and decoding are those of the ``hf`` backend (both use
``biaseval.translate.local_models``), so the two backends see the same inputs; the target tag of
NLLB and M2M-100 is a target prefix here.
The weights and the tokenizer are loaded once per backend instance, on first use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from biaseval.errors import ConfigError
from biaseval.translate.base import TRANSLATORS, BatchOutput
from biaseval.translate.local_models.codec import TextCodec, sane_length
from biaseval.translate.local_models.location import ModelLocation, sha256_of_files
from biaseval.translate.local_models.translator import LocalModelTranslator

_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json")


class CT2Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="converted CTranslate2 model directory (relative to the config file)")
    tokenizer: str | None = Field(default=None,
                                  description="HF tokenizer directory or hub id (default: the model directory)")
    tokenizer_revision: str | None = None
    local_files_only: bool = Field(default=True, description="never download the tokenizer")
    trust_remote_code: bool = Field(default=False, description="the tokenizer's own code (IndicTrans2 needs it)")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    compute_type: Literal["default", "auto", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16",
                          "float16", "bfloat16", "float32"] = Field(
        default="default", description="default: the type the model was converted with")
    inter_threads: int = Field(default=1, ge=1, description="batches translated in parallel")
    intra_threads: int = Field(default=0, ge=0, description="threads per batch (0: CTranslate2's default)")
    batch_size: int = Field(default=32, ge=1, description="sentences per forward pass")
    beam_size: int = Field(default=4, ge=1, description="1 is greedy search")
    max_decoding_length: int = Field(default=256, ge=1)
    family: Literal["auto", "marian", "nllb", "m2m100", "indictrans2"] = "auto"
    language_codes: dict[str, str] = Field(default_factory=dict, description="ISO 639 code -> the model's code")


def source_vocabulary(model_dir: Path) -> list[str]:
    """The source-side tokens of a CTranslate2 model (its shared or source vocabulary file)."""
    for name in ("shared_vocabulary", "source_vocabulary"):
        if (model_dir / f"{name}.json").is_file():
            return json.loads((model_dir / f"{name}.json").read_text(encoding="utf-8"))
        if (model_dir / f"{name}.txt").is_file():
            return (model_dir / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return []


def unknown_share(tokenizer, vocabulary: list[str], sample: int = 5000) -> float:
    """The share of (a sample of) a model's vocabulary that the tokenizer maps to its unknown token:
    near 0 for the model's own tokenizer, near 1 for a wrong or incomplete one."""
    tokens = [t for t in vocabulary if not t.startswith("madeupword") and t != tokenizer.unk_token]
    tokens = tokens[:: max(1, len(tokens) // sample)]
    if not tokens:
        return 0.0
    ids = tokenizer.convert_tokens_to_ids(tokens)
    return sum(1 for i in ids if i is None or i == tokenizer.unk_token_id) / len(tokens)


@TRANSLATORS.register("ctranslate2")
class CT2Translator(LocalModelTranslator):
    """A CTranslate2 model with its Hugging Face tokenizer, loaded once."""

    provider = "CTranslate2"
    Options = CT2Options
    options: CT2Options
    # Padding and parallelism only; device and compute_type change numerics (and precision).
    OPERATIONAL = frozenset({"batch_size", "inter_threads", "intra_threads", "local_files_only"})

    REQUIRES = (("ctranslate2", "ctranslate2"), ("transformers", "ctranslate2"))

    def __init__(self, system, options, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        self._model_dir: Path | None = None
        self._tokenizer_at: ModelLocation | None = None
        self._translator = None

    # -- setup ------------------------------------------------------------------------------

    def model_dir(self) -> Path:
        path = Path(self.options.model).expanduser()
        if not path.is_absolute():
            path = self.config_dir / path
        if not (path / "model.bin").is_file():
            raise ConfigError(f"systems.{self.system}.options.model: {self.options.model!r} is not a CTranslate2 "
                              f"model directory (no model.bin in {path})")
        return path

    def _make_codec(self) -> TextCodec:
        opts = self.options
        model_dir = self.model_dir()
        name, field = opts.tokenizer, "tokenizer"
        if name is None:
            if not any((model_dir / f).is_file() for f in _TOKENIZER_FILES):
                raise ConfigError(f"systems.{self.system}.options.tokenizer: {opts.model!r} holds no tokenizer; set "
                                  f"tokenizer: to the original model's directory or hub id (or convert with --copy_files)")
            name, field = str(model_dir), "model"
        loc = self._locate(name, opts.tokenizer_revision, field, config_name="tokenizer_config.json")
        tokenizer = self._tokenizer(loc, field)
        unknown = unknown_share(tokenizer, source_vocabulary(model_dir))
        if unknown > 0.05:
            raise ConfigError(f"systems.{self.system}.options.{field}: the tokenizer {name!r} does not match the "
                              f"model: it maps {unknown:.0%} of the model's source vocabulary to its unknown token "
                              f"(tokenizer files missing?)")
        family = self._family(None, [], tokenizer)
        self._model_dir, self._tokenizer_at, self.family = model_dir, loc, family
        return TextCodec(tokenizer, family, opts.language_codes,
                         sane_length(getattr(tokenizer, "model_max_length", None)))

    def _load(self, codec: TextCodec) -> None:
        import ctranslate2

        opts = self.options
        assert self._model_dir is not None and self._tokenizer_at is not None
        device = opts.device
        if device == "auto":
            device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        elif device == "cuda" and ctranslate2.get_cuda_device_count() == 0:
            raise ConfigError("device: cuda, but CTranslate2 sees no CUDA device here")
        translator = ctranslate2.Translator(str(self._model_dir), device=device, compute_type=opts.compute_type,
                                            inter_threads=opts.inter_threads, intra_threads=opts.intra_threads)
        weights = sha256_of_files([self._model_dir / "model.bin"])[:16]
        tokenizer = "" if self._tokenizer_at.local == self._model_dir.resolve() else \
            f", tokenizer {self._tokenizer_at.describe()}"
        extra = f", {codec.preprocessing}" if codec.preprocessing else ""
        self.version = (f"{opts.model} sha256:{weights} (ctranslate2 {ctranslate2.__version__}, {self.family}, "
                        f"{device} {translator.compute_type}{tokenizer}{extra})")
        self._translator = translator

    # -- translation ------------------------------------------------------------------------

    def _loaded(self) -> bool:
        return self._translator is not None

    def translate_batch(self, texts, src, tgt, *, timeout):
        self.load()
        opts = self.options
        with self.codec().request(src, tgt) as request:
            tokens = request.encode_tokens(texts)
            todo = [i for i in range(len(texts)) if i not in request.empty]
            prefix = request.pair.target_token
            outputs: list[list[str] | None] = [None] * len(texts)
            if todo:
                results = self._translator.translate_batch(
                    [tokens[i] for i in todo],
                    target_prefix=[[prefix] for _ in todo] if prefix else None,
                    max_batch_size=opts.batch_size, beam_size=opts.beam_size,
                    max_decoding_length=opts.max_decoding_length,
                    max_input_length=0)  # no silent truncation: over-long texts fail in encode()
                for i, result in zip(todo, results):
                    outputs[i] = result.hypotheses[0]
            return BatchOutput(request.decode_tokens(outputs), model=self.version)
