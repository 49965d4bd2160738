"""DeepL API (text translation) through the official ``deepl`` SDK.

One ``translate_batch`` is one ``POST /v2/translate`` (JSON) carrying up to 50 texts of one
language pair. The SDK's own retries are off (a client that tries each request once is put in place
of its HTTP client), so every attempt RequestRunner counts is one request on the wire, the timeout
is the runner's, and a 429's Retry-After reaches the runner. DeepL's 456 (the character quota of the
billing period is spent, or a Pro account's Cost Control limit is reached) is a ``Stop``: the
system's work stops, with no retries; so is 403 (the key refused), which no request could pass.

Errors become ``DeepLError``: status, Retry-After and the service's message, never the request
(whose header holds the key) nor the SDK's exception; its text is redacted (``biaseval.credentials``).
The key is read by ``read_secret`` (stripped, remembered by the redactor); redirects are not followed
(texts go to the configured server or nowhere).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from biaseval.credentials import read_secret, redact
from biaseval.errors import MissingExtra
from biaseval.translate.backends.azure import retry_after_seconds
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    Stop,
    TextDetails,
    TextTranslator,
)
from biaseval.urls import check_url

PRO_URL = "https://api.deepl.com"
FREE_URL = "https://api-free.deepl.com"
# DeepL's documented limits for one /v2/translate request: 50 texts, a body of 128 KiB.
MAX_TEXTS = 50
MAX_BODY_BYTES = 128 * 1024
BODY_RESERVE = 1024  # the body's other fields (languages, options, show_billed_characters) and brackets
QUOTA_EXCEEDED = 456
FORBIDDEN = 403  # a wrong or revoked key, or a Free key at the Pro endpoint: no request of the system can pass
# A target language DeepL only serves in a variant: the variant biaseval asks for by default.
TARGET_VARIANTS = {"en": "EN-US", "pt": "PT-BR", "zh": "ZH-HANS"}
SOURCE_ALIASES = {"no": "NB"}  # Norwegian: DeepL's code is Bokmål's
_CODE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,4})?$")


class DeepLError(Exception):
    """A failed DeepL request, safe to record and to pickle: no request, no key, no chain."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None,
                 transient: bool = False):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.transient = transient

    def __reduce__(self):
        return (_rebuild_error, (str(self), self.status, self.retry_after, self.transient))


def _rebuild_error(message, status, retry_after, transient):
    return DeepLError(message, status=status, retry_after=retry_after, transient=transient)


def target_code(lang: str, overrides: dict[str, str]) -> str:
    """DeepL's target code for an ISO 639-1 code (``pt-BR`` style tags keep their variant)."""
    if lang in overrides:
        return overrides[lang]
    base, _, variant = lang.partition("-")
    if variant:
        return f"{base.upper()}-{variant.upper()}"
    return TARGET_VARIANTS.get(base.lower(), SOURCE_ALIASES.get(base.lower(), base.upper()))


def source_code(lang: str) -> str:
    """DeepL's source code: the language without a variant (DeepL takes ``EN``, ``PT``, ``ZH``)."""
    base = lang.partition("-")[0].lower()
    return SOURCE_ALIASES.get(base, base.upper())


@TRANSLATORS.register("deepl")
class DeepLTranslator(TextTranslator):
    """DeepL via ``deepl.Translator``, one request per batch of up to 50 texts."""

    provider = "DeepL API"
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset({"key_env", "allow_insecure_http"})
    CLOUD = True
    REMOTE = True

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        allow_insecure_http: bool = Field(
            default=False, description="allow an http:// server_url that is not a loopback address (the key and "
                                       "texts then travel unencrypted)")
        server_url: str | None = Field(
            default=None,
            description=f"the API's base URL; default: as the key says ({FREE_URL} for a key ending ':fx', else "
                        f"{PRO_URL}); a proxy or a test server")
        key_env: str = Field(default="DEEPL_AUTH_KEY", min_length=1,
                             description="environment variable holding the authentication key")
        formality: Literal["default", "more", "less", "prefer_more", "prefer_less"] | None = Field(
            default=None, description="formal or informal register (more/less fail for targets without it; "
                                      "prefer_* fall back)")
        model_type: Literal["quality_optimized", "prefer_quality_optimized", "latency_optimized"] | None = Field(
            default=None, description="quality- or latency-optimised models (unset: DeepL's default)")
        glossary_id: str | None = Field(default=None, min_length=1, description="a glossary of this language pair")
        context: str | None = Field(
            default=None, min_length=1,
            description="text that influences the translation but is not translated (nor billed)")
        split_sentences: Literal["0", "1", "nonewlines"] | None = Field(
            default=None, description="how the engine splits the input into sentences (unset: DeepL's default, 1)")
        preserve_formatting: bool | None = None
        language_codes: dict[str, str] = Field(
            default_factory=dict,
            description="ISO code -> DeepL target code, e.g. {en: EN-GB, pt: PT-PT} (defaults: en EN-US, pt PT-BR, "
                        "zh ZH-HANS)")

        @field_validator("split_sentences", mode="before")
        @classmethod
        def _as_text(cls, value: Any) -> Any:
            return str(int(value)) if isinstance(value, (bool, int)) else value  # YAML's 0/1/false/true

        @field_validator("language_codes")
        @classmethod
        def _codes(cls, value: dict[str, str]) -> dict[str, str]:
            bad = [f"{k}: {v}" for k, v in value.items() if not _CODE.match(v)]
            if bad:
                raise ValueError(f"not DeepL language codes: {', '.join(bad)}")
            return {k: v.upper() for k, v in value.items()}

        @field_validator("server_url")
        @classmethod
        def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
            if value is None:
                return None
            check_url(value, allow_insecure_http=info.data.get("allow_insecure_http", False),
                      carries="the authentication key and the texts")
            return value.rstrip("/")

    @classmethod
    def identity_options(cls, options: BaseModel) -> dict:
        """Free and Pro are one service (the key picks the endpoint): both are ``server_url: None``, and
        share stored translations; any other server (a proxy, a test server) is another system's."""
        identity = super().identity_options(options)
        if identity.get("server_url") in (PRO_URL, FREE_URL):
            identity["server_url"] = None
        return identity

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        context = len(json.dumps(options.context)) if options.context else 0
        return BatchLimits(max_items=MAX_TEXTS, max_units=MAX_BODY_BYTES - BODY_RESERVE - context, unit="json_bytes")

    def __init__(self, system: str, options: BaseModel, **kwargs: Any):
        super().__init__(system, options, **kwargs)
        try:
            import deepl
            import requests
        except ImportError:
            raise MissingExtra("deepl", "deepl", "deepl") from None
        opts: DeepLTranslator.Options = options  # type: ignore[assignment]
        self._key = read_secret(opts.key_env, "the DeepL authentication key", where=f"system {system!r}")
        self._deepl = deepl
        self._requests = requests
        self.server_url = opts.server_url or (FREE_URL if deepl.auth_key_is_free_account(self._key.reveal()) else PRO_URL)
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._settings = {k: v for k, v in {
            "formality": opts.formality, "model_type": opts.model_type, "glossary": opts.glossary_id,
            "context": opts.context, "split_sentences": opts.split_sentences,
            "preserve_formatting": opts.preserve_formatting}.items() if v is not None}

    def __repr__(self) -> str:
        return f"DeepLTranslator(system={self.system!r}, options={self.options!r})"

    def translate_batch(self, texts: list[str], src: str, tgt: str, *, timeout: float) -> BatchOutput:
        opts: DeepLTranslator.Options = self.options  # type: ignore[assignment]
        client = self._checkout()
        client._client.timeout = timeout
        failure: DeepLError | None = None
        try:
            results = client.translate_text(texts, source_lang=source_code(src),
                                            target_lang=target_code(tgt, opts.language_codes), **self._settings)
        except Exception as exc:  # noqa: BLE001 - replaced below by an error that holds no request
            failure = self._sanitize(exc, client._client.retry_after, timeout)
            results = None
        finally:
            self._checkin(client)
        if failure is not None:
            raise failure  # outside the except block: nothing keeps the SDK's exception (and its request) alive
        if len(results) != len(texts):
            raise DeepLError(f"DeepL returned {len(results)} translations for {len(texts)} texts")
        models = sorted({r.model_type_used for r in results if r.model_type_used})
        details = [TextDetails(billed_chars=r.billed_characters) for r in results]
        return BatchOutput([r.text for r in results], model=",".join(models) or None, details=details)

    def classify(self, exc: BaseException) -> Retry | Stop | None:
        if isinstance(exc, DeepLError):
            if exc.status == QUOTA_EXCEEDED:
                return Stop(f"DeepL quota exceeded ({exc}). The character quota of this billing period (API Free) "
                            f"or the Cost Control limit (API Pro) is reached; nothing was retried. Rerun the same "
                            f"command once the quota resets or the limit is raised")
            if exc.status == FORBIDDEN:
                return Stop(f"DeepL refused the key in ${self.options.key_env} (403: {exc}); check the key and, "
                            f"for a Free key (ending ':fx') with a server_url, that it is {FREE_URL}")
            return Retry(after=exc.retry_after) if exc.transient else None
        return super().classify(exc)

    def close(self) -> None:
        with self._lock:
            clients, self._idle = self._idle, []
        for client in clients:
            client.close()

    # -- internals ------------------------------------------------------------------------------

    def _new_client(self):
        client = self._deepl.Translator(self._key.reveal(), server_url=self.server_url, send_platform_info=False)
        client._client.close()
        client._client = _single_attempt_client(self._deepl)
        return client

    def _checkout(self):
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._new_client()  # one per request in flight: a requests session is not shared by threads

    def _checkin(self, client) -> None:
        with self._lock:
            self._idle.append(client)

    def _sanitize(self, exc: BaseException, retry_after: float | None, timeout: float) -> DeepLError:
        """A ``DeepLError`` saying what ``exc`` says, minus the key and any live objects."""
        deepl = self._deepl
        text = _first_line(redact(str(exc)))
        if isinstance(exc, deepl.ConnectionException):
            cause = exc.__cause__
            if isinstance(cause, self._requests.exceptions.Timeout):
                return DeepLError(f"no response within {timeout:g} s ({type(cause).__name__})", transient=True)
            return DeepLError(f"connection failed: {text}"[:1000], transient=exc.should_retry)
        if isinstance(exc, deepl.DeepLException):
            status = exc.http_status_code
            transient = status is not None and (status == 429 or 500 <= status <= 599)
            label = f"HTTP {status}: " if status else ""
            return DeepLError(f"{label}{text}"[:1000], status=status,
                              retry_after=retry_after if transient else None, transient=transient)
        return DeepLError(f"{type(exc).__name__}: {text}"[:1000])


def _single_attempt_client(deepl):
    """An HTTP client for ``deepl.Translator`` that sends each request once (the SDK's own client
    retries up to five times with its own backoff and timeout), with the caller's ``timeout``, and
    keeps the answer's Retry-After, and follows no redirect (a 3xx is an error naming its status). The
    SDK's request building and error mapping are kept."""

    class SingleAttemptClient(deepl.http_client.HttpClient):
        timeout = 60.0
        retry_after: float | None = None

        def request_with_backoff(self, method, url, data, json, headers, stream=False, **kwargs):
            self.retry_after = None
            request = self._prepare_request(method, url, data, json, headers, **kwargs)
            request.register_hook("response", self._note)
            return self._internal_request(request, stream, timeout=self.timeout, allow_redirects=False)

        def _note(self, response, *args, **kwargs):
            self.retry_after = retry_after_seconds(response.headers)

    return SingleAttemptClient(send_platform_info=False)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
