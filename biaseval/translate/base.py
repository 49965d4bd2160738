"""What a translation backend is, and the registry of backends.

A backend is built once per Ray actor from its system's config. Two kinds:

- ``TextTranslator`` (live systems: cloud APIs, local models, engines) translates one request's
  worth of texts in ``translate_batch``. The sweep around it (``biaseval/translate/runner.py``) packs texts into
  requests within ``limits()``, rate-limits, retries what ``classify`` calls transient, and caches
  every result in the translation store, so a backend holds only what is specific to its provider.
- ``ItemTranslator`` (recorded outputs) needs to know which item it translates and implements
  ``translate_items``.

Backends import their client libraries lazily (in ``__init__``), so biaseval imports without the
extras; a missing one fails with ``MissingExtra`` naming what to install.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Iterable, Mapping, Sequence

import polars as pl
from pydantic import BaseModel, ConfigDict

from biaseval.registry import Registry
from biaseval.translate.packing import BatchLimits, pack  # noqa: F401  (BatchLimits: re-exported)

if TYPE_CHECKING:
    from biaseval.suites.base import SuiteData


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Translator(ABC):
    """One MT system. ``Options`` validates the ``options:`` block of the system's config."""

    Options: ClassVar[type[BaseModel]] = NoOptions
    # Options that do not change what the system outputs nor where its texts go (how fast, which
    # credential variable): two systems that differ only in these share stored translations. Where
    # a text was sent (endpoint, transport, credentials, region) is never operational: a run against
    # an emulator must not feed a later run against the real service.
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset()
    # A provider's service that changes its model under one name: needs a version or a max_age.
    CLOUD: ClassVar[bool] = False
    # Sends to a server, whose 429 + Retry-After must pause every actor of the system (run/execute.py
    # gives such a system a limiter actor even without limits); local backends never get one.
    REMOTE: ClassVar[bool] = False

    def __init__(self, system: str, options: BaseModel, *, config_dir: Path | None = None):
        self.system = system
        self.options = options
        self.config_dir = config_dir or Path.cwd()

    @classmethod
    def identity_options(cls, options: BaseModel) -> dict:
        """The options that make this system's outputs what they are (its translation-store identity):
        all but OPERATIONAL, with defaults that depend on the environment resolved where a backend can."""
        return {k: v for k, v in options.model_dump(mode="json").items() if k not in cls.OPERATIONAL}

    @classmethod
    def sends(cls, options: BaseModel) -> str:
        """The item column whose text this system translates: ``source`` (the passage), or ``prompt``
        (the dataset's own LLM prompt around it, for an LLM told ``prompt: dataset``). The sweep sends,
        keys in the translation store and writes as the rows' ``source`` exactly that text."""
        return "source"

    @classmethod
    def covers(cls, options: BaseModel, suite: str) -> bool:
        """Whether a system with these options can translate the suite (live systems translate anything)."""
        return True

    def check(self, suites: Mapping[str, "SuiteData"], targets: Mapping[str, tuple[str, ...]] | None = None) -> None:
        """Called once in the driver, before anything runs, with the suites this system translates
        (and, per suite, the target languages it translates into); raise BiasevalError for bad input."""

    @classmethod
    def missing_system_packages(cls, options: BaseModel, pairs: Iterable[tuple[str, str]]) -> tuple[str, ...]:
        """The Debian packages (biaseval/system_packages.py) this machine lacks for a system with these
        options to translate these (source, target) pairs: none for most backends."""
        return ()

    @classmethod
    def preflight(cls, system: str, options: BaseModel, suites: Mapping[str, "SuiteData"],
                  targets: Mapping[str, tuple[str, ...]], config_dir: Path) -> None:
        """The driver's check of a system before anything runs (``biaseval validate``, ``sweep``, ``plan``):
        raise ConfigError naming the system and field. This default builds the backend and calls
        ``check``; live backends override it, since they are built on the workers."""
        cls(system, options, config_dir=config_dir).check(suites, targets)


class ItemTranslator(Translator):
    """A backend that translates particular items (it needs their suite, subset and line)."""

    @abstractmethod
    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        """Translations of ``items`` (an item table), in its row order."""

    def translate_items_with_errors(self, items: pl.DataFrame) -> tuple[list[str | None], list[str | None]]:
        """Translations and, where one is missing, why (for the rows' ``error``)."""
        out = self.translate_items(items)
        return out, [None if t is not None else "no translation" for t in out]


@dataclass(frozen=True)
class TextDetails:
    """What a provider said about one text besides its translation (None where it says nothing).
    Every field is a column of the translation store and of the shards (``DETAIL_COLUMNS``)."""

    fingerprint: str | None = None  # the serving configuration it ran on (OpenAI's system_fingerprint)
    prompt_hash: str | None = None  # SHA-256 of the prompt templates that carried it (LLM backends)
    input_tokens: int | None = None  # tokens billed for it (a request's share, for batched texts)
    output_tokens: int | None = None
    billed_chars: int | None = None  # characters billed for it (as the provider reports them, or counts them)
    rejected: str | None = None  # why the reply is not a translation: refusal, empty, explanation, wrong-language
    raw: str | None = None  # the reply as received, when it was rejected


DETAIL_COLUMNS = tuple(TextDetails.__dataclass_fields__)


@dataclass(frozen=True)
class BatchOutput:
    """One request's result: a translation per text, or None where ``details`` says why the reply
    was not one (a refusal is a result, not a failure: it is stored and not sent again)."""

    translations: list[str | None]
    model: str | None = None  # the model or version the provider says it used, where it says one
    details: list[TextDetails] | None = None  # per text, where the backend reports more


@dataclass(frozen=True)
class Retry:
    """``classify``'s verdict that a failure is transient; ``after`` is the server's Retry-After."""

    after: float | None = None


@dataclass(frozen=True)
class TokenEstimate:
    """What one request to a provider that bills tokens (an LLM) is expected to cost, before it is sent:
    ``input`` prompt tokens, ``output`` the tokens its translations should take (about their sources'),
    ``limit`` the most output tokens the request allows (its max_tokens). A tokens-per-minute limit
    counts ``input + limit`` (``quota``), as providers do; the cost plan counts ``input + output``."""

    input: int
    output: int
    limit: int

    @property
    def quota(self) -> int:
        return self.input + self.limit

    def __add__(self, other: "TokenEstimate") -> "TokenEstimate":
        return TokenEstimate(self.input + other.input, self.output + other.output, self.limit + other.limit)


class SplitBatch(Exception):
    """Raised by ``translate_batch`` when the provider answered a request of several texts, but not with
    one usable answer per text, in order (an LLM's list with a text missing): the runner sends the
    batch's halves again, down to one text per request, and does not count it as a failure.

    The provider answered, so it billed the request: ``spent`` holds, per text of the batch, the
    ``TextDetails`` of that share (tokens), which the runner adds to the text's final row."""

    def __init__(self, message: str, spent: list["TextDetails"] | None = None):
        super().__init__(message)
        self.spent = spent


@dataclass(frozen=True)
class Stop:
    """``classify``'s verdict that the system cannot go on at all (DeepL's 456: the billing period's
    character quota is spent): nothing is retried, no text gets this as its error, and the sweep stops
    the system's work, keeping what was stored. ``reason`` says why and what to do, for the user."""

    reason: str


class SystemStopped(Exception):
    """Raised by ``RequestRunner.translate`` on a ``Stop`` verdict. ``results`` (not pickled): what the
    call finished before it, per text (None where unfinished), so that the caller can store them."""

    def __init__(self, reason: str, results: list | None = None):
        super().__init__(reason)
        self.reason = reason
        self.results = results

    def __reduce__(self):
        return (SystemStopped, (self.reason,))


class TextTranslator(Translator):
    """A backend that needs only the texts and the language pair."""

    provider: ClassVar[str] = ""  # e.g. "Google Cloud Translation v3", recorded on every row

    @classmethod
    def preflight(cls, system, options, suites, targets, config_dir) -> None:
        """Nothing by default: a live backend is built on the workers (clients, credentials, models).
        Override to check, without those, what the options and language pairs alone tell."""

    def load(self) -> None:
        """Acquire what is heavy (a model's weights) once per actor, before the first request; a
        failure here stops the sweep instead of being recorded on every row."""

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        """What one request may carry, from the options alone (the cost plan needs it without a client)."""
        return BatchLimits(max_items=64, max_units=100_000)

    def limits(self) -> BatchLimits:
        return self.limits_for(self.options)

    @classmethod
    def requests_per_batch(cls, options, texts: Sequence[str]) -> int:
        """How many provider requests one batch costs (for request-rate limits), from the options
        alone (the cost plan needs it without a client). Backends override this, not ``requests_for``."""
        return 1

    def requests_for(self, texts: Sequence[str]) -> int:
        return self.requests_per_batch(self.options, texts)

    @classmethod
    def requests_for_task(cls, options, texts: pl.DataFrame) -> int:
        """Provider requests one send task of the sweep makes when nothing fails: ``texts`` (columns
        src_lang, tgt_lang, source, in the order sent) per language pair, packed within
        ``limits_for(options)``; a text over the per-request size is never sent."""

        limits = cls.limits_for(options)
        total = 0
        for _, group in texts.group_by(["src_lang", "tgt_lang"], maintain_order=True):
            sources = group["source"].to_list()
            for batch in pack(sources, limits):
                if not batch.too_long:
                    total += cls.requests_per_batch(options, [sources[i] for i in batch.indices])
        return total

    @classmethod
    def tokens_per_batch(cls, options, texts: Sequence[str], src: str, tgt: str) -> TokenEstimate | None:
        """The tokens one request of ``texts`` is expected to cost, from the options alone (for a
        tokens-per-minute limit and the cost plan); None for a backend that is not billed in tokens."""
        return None

    def tokens_for(self, texts: Sequence[str], src: str, tgt: str) -> int:
        """The tokens a tokens-per-minute limit counts for one request of ``texts`` (0: none)."""
        estimate = self.tokens_per_batch(self.options, texts, src, tgt)
        return estimate.quota if estimate is not None else 0

    @classmethod
    def tokens_for_task(cls, options, texts: pl.DataFrame) -> TokenEstimate | None:
        """``tokens_per_batch`` summed over the requests of one send task, packed as
        ``requests_for_task`` packs them; None for a backend that is not billed in tokens."""
        limits = cls.limits_for(options)
        total = None
        for (src, tgt), group in texts.group_by(["src_lang", "tgt_lang"], maintain_order=True):
            sources = group["source"].to_list()
            for batch in pack(sources, limits):
                if not batch.too_long:
                    one = cls.tokens_per_batch(options, [sources[i] for i in batch.indices], src, tgt)
                    if one is None:
                        return None
                    total = one if total is None else total + one
        return total

    @abstractmethod
    def translate_batch(self, texts: list[str], src: str, tgt: str, *, timeout: float) -> BatchOutput:
        """One request: translate ``texts`` (within ``limits()``) from ``src`` to ``tgt`` (ISO 639
        codes), one output per input, giving up after ``timeout`` seconds."""

    def classify(self, exc: BaseException) -> Retry | Stop | None:
        """Retry (transient: throttling, 5xx, timeouts), None (permanent: recorded as the texts' error),
        or Stop (the system cannot go on: quota spent). Backends extend this."""
        if isinstance(exc, (TimeoutError, ConnectionError)):
            return Retry()
        return None

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        """Plain translation without rate limits, retries or cache (interactive use and tests)."""

        out: list[str] = [""] * len(texts)
        for batch in pack(list(texts), self.limits()):
            if batch.too_long:
                raise ValueError(f"text {batch.indices[0]} is longer than one request may carry")
            result = self.translate_batch([texts[i] for i in batch.indices], src, tgt, timeout=60.0)
            for i, text in zip(batch.indices, result.translations):
                out[i] = text
        return out


def language_pairs(suites: Mapping[str, "SuiteData"],
                   targets: Mapping[str, tuple[str, ...]] | None = None) -> dict[tuple[str, str], str]:
    """The (source, target) language pairs of ``suites``, into ``targets`` per suite where given,
    each with the first suite that needs it (for messages)."""
    pairs: dict[tuple[str, str], str] = {}
    for name, data in suites.items():
        wanted = targets[name] if targets is not None and name in targets else data.suite.targets
        for src in getattr(data.suite, "sources", ()) or (data.suite.src_lang,):  # into English from several
            for tgt in wanted:
                pairs.setdefault((src, tgt), name)
    return pairs


TRANSLATORS: Registry[type[Translator]] = Registry("backend")
