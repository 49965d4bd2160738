"""What the ``hf`` and ``ctranslate2`` backends share as translators (``LocalModelTranslator``):
the libraries imported up front (``MissingExtra`` naming the extra), the codec built once from the
model's config and tokenizer, the weights loaded once per actor (a failed load remembered as
``ModelLoadError``), and the driver-side checks: the model is found, its code is run only when
trusted, and every language pair of the suites has tags in the model (``check_pairs``), all
before any weights are read.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Mapping, Sequence

from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate.base import BatchLimits, TextTranslator, language_pairs
from biaseval.translate.local_models.codec import TextCodec
from biaseval.translate.local_models.languages import detect_family
from biaseval.translate.local_models.location import (
    ModelLocation,
    locate_model,
    require_trust,
)


def check_pairs(codec: TextCodec, system: str, pairs: Mapping[tuple[str, str], str]) -> None:
    """ConfigError, in the driver, for a language pair the model cannot do (``pairs``: (source,
    target) -> the suite that needs it, as ``language_pairs`` gives them)."""
    for (src, tgt), suite in sorted(pairs.items()):
        try:
            codec.pair(src, tgt)
        except ValueError as exc:
            raise ConfigError(f"systems.{system}: cannot translate {src}->{tgt} (suite {suite}): {exc}; or leave "
                              f"{tgt} out of the system's targets") from None


class ModelLoadError(RuntimeError):
    """Loading the model failed; remembered, so later requests fail at once instead of reloading."""


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

