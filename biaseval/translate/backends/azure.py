"""Azure AI Translator (text translation) through ``azure-ai-translation-text``.

One ``translate_batch`` is one ``POST /translate`` with one source and one target language. The
key comes from an environment variable named in the config (never the config itself; read by
``read_secret``: stripped, remembered by the redactor), the region from another one. The client's
own retry policy is off, so every attempt RequestRunner counts is one request on the wire; timeouts
are the runner's. Redirects are not followed: the key travels in a header (Ocp-Apim-Subscription-Key)
that azure-core keeps on a redirect to another host.

Errors are turned into ``AzureTranslatorError``, which keeps the status, the service's error code
and message and the Retry-After advice but no reference to the request (whose headers hold the key)
or to the original exception; its text is redacted (``biaseval.credentials.redact``) before it is cut.
"""

from __future__ import annotations

import email.utils
import math
import os
import threading
import time
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from biaseval.credentials import read_secret, redact
from biaseval.errors import MissingExtra
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    TextDetails,
    TextTranslator,
)
from biaseval.urls import check_url

GLOBAL_ENDPOINT = "https://api.cognitive.microsofttranslator.com"
# The service's limits for one translate request: elements, and characters (Unicode code points)
# summed over all elements and target languages.
MAX_ELEMENTS = 1_000
MAX_CHARS = 50_000
# Statuses worth another attempt: throttling, the service's own trouble, and 408, which the service
# sends while a custom model is still being loaded.
TRANSIENT_STATUSES = frozenset({408, 429})


class AzureTranslatorError(Exception):
    """A failed Translator request, safe to record and to pickle: no request, no key, no chain."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 retry_after: float | None = None, transient: bool = False):
        super().__init__(message)
        self.status = status
        self.code = code
        self.retry_after = retry_after
        self.transient = transient

    def __reduce__(self):
        return (_rebuild_error, (str(self), self.status, self.code, self.retry_after, self.transient))


def _rebuild_error(message, status, code, retry_after, transient):
    return AzureTranslatorError(message, status=status, code=code, retry_after=retry_after, transient=transient)


@TRANSLATORS.register("azure")
class AzureTranslator(TextTranslator):
    """Azure AI Translator via ``azure.ai.translation.text.TextTranslationClient``."""

    provider = "Azure AI Translator"
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset({"key_env", "region_env", "allow_insecure_http"})
    CLOUD = True
    REMOTE = True

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        allow_insecure_http: bool = Field(
            default=False, description="allow an http:// endpoint that is not a loopback address (the key and "
                                       "texts then travel unencrypted)")
        endpoint: str | None = Field(
            default=None,
            description=f"service URL (default: the global endpoint {GLOBAL_ENDPOINT}); a regional or "
                        "custom-domain endpoint, a proxy or a test server")
        key_env: str = Field(default="AZURE_TRANSLATOR_KEY", min_length=1,
                             description="environment variable holding the resource key")
        region_env: str = Field(default="AZURE_TRANSLATOR_REGION", min_length=1,
                                description="environment variable holding the resource's region (unset: none "
                                            "sent, which only a global single-service resource accepts)")
        category: str | None = Field(
            default=None, min_length=1,
            description="Custom Translator category (model id) or deployment name; default: the general model")
        allow_fallback: bool = Field(
            default=False,
            description="with a category: let the service fall back to the general model where the custom one "
                        "is missing (off, so results are never silently from another model)")
        text_type: Literal["plain", "html"] = "plain"
        tone: Literal["neutral", "formal", "informal"] | None = Field(
            default=None, description="desired tone (LLM deployments only)")
        gender: Literal["neutral", "male", "female"] | None = Field(
            default=None, description="desired gender of the translation (LLM deployments only)")
        api_version: Literal["2026-06-06", "2025-10-01-preview"] = Field(
            default="2026-06-06", description="Translator API version (pinned so results stay comparable)")

        @field_validator("endpoint")
        @classmethod
        def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
            if value is None:
                return None
            check_url(value, allow_insecure_http=info.data.get("allow_insecure_http", False),
                      carries="the resource key and the texts")
            return value.rstrip("/")

    def __init__(self, system: str, options: BaseModel, **kwargs: Any):
        super().__init__(system, options, **kwargs)
        try:
            from azure.ai.translation.text import TextTranslationClient
            from azure.core import exceptions as core_exceptions
            from azure.core.credentials import AzureKeyCredential
        except ImportError:
            raise MissingExtra("azure", "azure", "azure-ai-translation-text") from None
        opts: AzureTranslator.Options = options  # type: ignore[assignment]
        key = read_secret(opts.key_env, "the Azure Translator key", where=f"system {system!r}")
        region = os.environ.get(opts.region_env, "").strip() or None
        self._exceptions = core_exceptions
        # what every request asks of its target besides the language (unset fields are not sent)
        self._target_settings = {k: v for k, v in {
            "deploymentName": opts.category,
            "allowFallback": opts.allow_fallback if opts.category else None,
            "tone": opts.tone,
            "gender": opts.gender,
        }.items() if v is not None}

        def new_client():
            return TextTranslationClient(
                endpoint=opts.endpoint or GLOBAL_ENDPOINT,
                credential=AzureKeyCredential(key.reveal()),
                region=region,
                api_version=opts.api_version,
                retry_total=0,  # RequestRunner retries; one attempt here is one request
                permit_redirects=False,  # the key's header would follow a redirect to another host
                logging_enable=False,
            )

        self._new_client = new_client
        # A client per request in flight: the SDK's requests transport is not meant to be shared
        # between threads, and RequestRunner may call translate_batch from several at once.
        self._idle: list[Any] = [new_client()]
        self._all: list[Any] = list(self._idle)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AzureTranslator(system={self.system!r}, options={self.options!r})"

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        return BatchLimits(max_items=MAX_ELEMENTS, max_units=MAX_CHARS, unit="chars")

    def translate_batch(self, texts: list[str], src: str, tgt: str, *, timeout: float) -> BatchOutput:
        opts: AzureTranslator.Options = self.options  # type: ignore[assignment]
        # The request body as the API's JSON (the SDK's TranslateBody shape): one input per text, each
        # from ``src`` to the one target. Plain dicts cost half the client time of the SDK's models.
        target = {"language": tgt, **self._target_settings}
        text_type = _TEXT_TYPES[opts.text_type]
        body = {"inputs": [{"text": t, "language": src, "textType": text_type, "targets": [target]} for t in texts]}
        client = self._checkout()
        failure: AzureTranslatorError | None = None
        headers: dict[str, Any] = {}

        def keep_headers(pipeline_response, result, response_headers):  # the SDK's ``cls`` hook
            headers.update(response_headers)
            return result

        try:
            items = client.translate(body, connection_timeout=timeout, read_timeout=timeout, cls=keep_headers)
        except Exception as exc:  # noqa: BLE001 - replaced below by an error that holds no request
            failure = self._sanitize(exc, timeout)
            items = None
        finally:
            self._checkin(client)
        if failure is not None:
            # raised outside the except block, so neither __context__ nor a traceback frame keeps the
            # SDK's exception (and through it the request and its key header) alive
            raise failure
        translations, details = [], []
        for i, item in enumerate(items or []):
            found = [t for t in (item.translations or []) if t.language == tgt] or list(item.translations or [])
            if len(found) != 1:
                raise AzureTranslatorError(f"the service returned {len(found)} translations for input {i}")
            translations.append(found[0].text)
            # sourceCharacters: what the service billed for the text (absent: code points, as it counts)
            reported = getattr(found[0], "source_characters", None)
            details.append(TextDetails(billed_chars=int(reported) if reported is not None else len(texts[i])))
        return BatchOutput(translations, model=reported_model(opts.category, headers.get("x-mt-system")),
                           details=details)

    def classify(self, exc: BaseException) -> Retry | None:
        if isinstance(exc, AzureTranslatorError):
            return Retry(after=exc.retry_after) if exc.transient else None
        errors = self._exceptions
        if isinstance(exc, errors.HttpResponseError):  # raised by the SDK, should one reach here raw
            status = exc.status_code
            if status is not None and _transient_status(status):
                headers = getattr(exc.response, "headers", None) or {}
                return Retry(after=retry_after_seconds(headers))
            return None
        if isinstance(exc, (errors.ServiceRequestError, errors.ServiceResponseError)):
            return Retry()
        return super().classify(exc)

    def close(self) -> None:
        """Close every client's connections."""
        with self._lock:
            clients, self._all, self._idle = self._all, [], []
        for client in clients:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    # -- internals ------------------------------------------------------------------------------

    def _checkout(self):
        with self._lock:
            if self._idle:
                return self._idle.pop()
        client = self._new_client()
        with self._lock:
            self._all.append(client)
        return client

    def _checkin(self, client) -> None:
        with self._lock:
            if client in self._all:
                self._idle.append(client)

    def _sanitize(self, exc: BaseException, timeout: float) -> AzureTranslatorError:
        """An ``AzureTranslatorError`` saying what ``exc`` says, minus the key and any live objects."""
        errors = self._exceptions
        if isinstance(exc, errors.HttpResponseError):
            status = exc.status_code
            response = exc.response
            headers = getattr(response, "headers", None) or {}
            code, message = _service_error(response)
            if message is None:
                message = (exc.reason or "").strip() or "no error message"
            transient = status is not None and _transient_status(status)
            after = retry_after_seconds(headers) if transient else None
            text = f"HTTP {status}" + (f" ({code})" if code else "") + f": {message}"
            request_id = headers.get("X-RequestId") if hasattr(headers, "get") else None
            if request_id:
                text += f" [X-RequestId {request_id}]"
            return AzureTranslatorError(redact(text)[:1000], status=status, code=code, retry_after=after,
                                        transient=transient)
        if isinstance(exc, (errors.ServiceRequestTimeoutError, errors.ServiceResponseTimeoutError, TimeoutError)):
            return AzureTranslatorError(f"no response within {timeout:g} s ({type(exc).__name__})", transient=True)
        if isinstance(exc, (errors.ServiceRequestError, errors.ServiceResponseError, ConnectionError)):
            detail = _first_line(redact(str(exc)))
            return AzureTranslatorError(f"connection failed ({type(exc).__name__}: {detail})"[:1000], transient=True)
        return AzureTranslatorError(f"{type(exc).__name__}: {_first_line(redact(str(exc)))}"[:1000])


_TEXT_TYPES = {"plain": "Plain", "html": "Html"}


def reported_model(category: str | None, mt_system: str | None) -> str | None:
    """The row's ``model``: the deployment asked for and the service's ``X-MT-System`` answer (``Team``:
    the general model, ``Custom``: a custom one), e.g. ``deployment=abc;system=Custom``. With
    ``allow_fallback``, ``system=Team`` beside a deployment says the service fell back."""
    parts = [f"deployment={category}" if category else None, f"system={mt_system}" if mt_system else None]
    return ";".join(p for p in parts if p) or None


def _transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUSES or 500 <= status <= 599


def _service_error(response: Any) -> tuple[str | None, str | None]:
    """The ``error.code`` and ``error.message`` of the service's JSON error body, where there is one."""
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - not JSON (a proxy's HTML page, say)
        return None, None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, None
    code = error.get("code")
    message = error.get("message")
    return (str(code) if code is not None else None), (_first_line(redact(str(message))) if message else None)


def retry_after_seconds(headers: Any, now: float | None = None) -> float | None:
    """Seconds a response asks the client to wait: ``Retry-After`` (seconds or an HTTP date), else
    ``retry-after-ms`` / ``x-ms-retry-after-ms``; None if it asks nothing (or nonsense)."""
    def get(name: str) -> str | None:
        value = headers.get(name)
        if value is None:  # plain dicts are case-sensitive
            value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
        return value.strip() if isinstance(value, str) and value.strip() else None

    value = get("Retry-After")
    if value is not None:
        try:
            seconds = float(value)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                return None
            if when is None:
                return None
            seconds = when.timestamp() - (time.time() if now is None else now)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    for name in ("retry-after-ms", "x-ms-retry-after-ms"):
        value = get(name)
        if value is not None:
            try:
                ms = float(value)
            except ValueError:
                return None
            return max(0.0, ms / 1000) if math.isfinite(ms) else None
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
