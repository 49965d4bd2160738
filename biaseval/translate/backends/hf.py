"""Open seq2seq MT models through Hugging Face transformers: opus-mt (Marian), NLLB, M2M-100, IndicTrans2.

Configured per system::

    backend: hf
    options:
      model: facebook/nllb-200-distilled-600M     # a local directory or a hub id (cached)
      revision: <commit hash>                         # pins the weights (optional)
      num_beams: 4

What this backend shares with ``ctranslate2`` (``ct2.py``) is in ``biaseval.translate.local_models``:
the language tags of each model family (``languages``), finding a model and pinning its files
(``location``), the tokenizer side (``codec.TextCodec``) and the translator base with the
driver-side checks (``translator.LocalModelTranslator``). This module holds what is transformers'
own: loading the weights on a device in a dtype, and generation in length-sorted forward passes.

Loading is lazy and happens once per backend instance (once per Ray actor): ``__init__`` only
imports the libraries; ``check`` (driver) reads the config and tokenizer to validate the language
pairs; the weights are loaded by ``load()`` or the first ``translate_batch``.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

from biaseval.errors import ConfigError
from biaseval.translate.base import TRANSLATORS, BatchOutput, Retry
from biaseval.translate.local_models.codec import TextCodec, sane_length
from biaseval.translate.local_models.location import (
    ModelLocation,
    sha256_of_files,
    weight_files,
)
from biaseval.translate.local_models.translator import LocalModelTranslator


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


def length_sorted_chunks(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices into ``lengths`` grouped into chunks of at most ``batch_size``, longest first, so
    that each chunk pads little. Every index appears exactly once; ties keep input order."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


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
