"""Google Cloud Translation v3 (``TranslationServiceClient.translate_text``), over gRPC or REST.

Config block::

    backend: google
    options:
      project: my-project           # required: the project billed (id or number)
      location: global              # or a region, e.g. us-central1 (needed for regional models)
      model: general/nmt            # optional: general/nmt, general/translation-llm, or a full path
      transport: grpc               # or rest
      credentials: default          # Application Default Credentials; "anonymous" for test servers
      endpoint: translate-eu.googleapis.com   # optional: regional endpoint, proxy or test server

An ``endpoint`` starting with ``http://`` is reached without TLS (emulators, local fakes). Unless
``allow_insecure_http: true``, such an endpoint must be a loopback address (localhost, 127.0.0.0/8,
::1): the access token and the texts would otherwise cross the network in clear text. Over gRPC,
credentials other than ``anonymous`` go without TLS only to a loopback address in any case.

One ``translate_batch`` is one TranslateText request with the library's own retries turned off, so
the runner's attempt counts are the requests sent; over REST no redirect is followed. Errors are
re-raised as copies whose text is redacted (``biaseval.credentials``: the access token in use is
remembered first) and which carry neither the HTTP response nor the gRPC call (both hold the
request's headers).
"""

from __future__ import annotations

import email.utils
import re
import time
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    TextDetails,
    TextTranslator,
)
from biaseval.credentials import redact, remember
from biaseval.urls import check_url, insecure_http

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
# TranslateTextRequest.contents: at most 1024 strings, at most 30,000 code points in all.
MAX_STRINGS = 1024
MAX_CODEPOINTS = 30_000
REST_POOL = 64  # HTTP connections kept per host over REST: the most requests in flight per actor

_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",}\]]+")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
# A 403 that is a per-minute quota ("User Rate Limit Exceeded"), not a missing permission.
_RATE_LIMIT_REASONS = {"RATE_LIMIT_EXCEEDED", "RESOURCE_EXHAUSTED", "rateLimitExceeded", "userRateLimitExceeded"}


class GoogleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    project: str = Field(min_length=1, description="Google Cloud project id or number (billing and quota)")
    location: str = Field(default="global", min_length=1, description="'global' or a region such as us-central1")
    model: str | None = Field(default=None, description="general/nmt, general/translation-llm, a custom model "
                                                        "id, or a full projects/.../models/... name")
    allow_insecure_http: bool = Field(default=False, description="allow an http:// endpoint that is not a "
                                      "loopback address (the access token and texts then travel unencrypted)")
    endpoint: str | None = Field(default=None, description="api_endpoint: regional endpoint, proxy or test "
                                                           "server; http://host:port means no TLS")
    transport: Literal["grpc", "rest"] = "grpc"
    credentials: Literal["default", "anonymous"] = Field(
        default="default", description="'default': Application Default Credentials; 'anonymous': none (test servers)")

    @field_validator("endpoint")
    @classmethod
    def _no_clear_text_elsewhere(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:  # HOST[:PORT] without a scheme: TLS, as https:// is
            check_url(value if "://" in value else f"https://{value}",
                      allow_insecure_http=info.data.get("allow_insecure_http", False),
                      carries="the access token and the texts")
        return value

    @model_validator(mode="after")
    def _grpc_plaintext_is_local(self) -> "GoogleOptions":
        if self.transport == "grpc" and self.credentials != "anonymous" and insecure_http(self.endpoint):
            raise ValueError("endpoint: over gRPC, credentials go without TLS only to a loopback address (gRPC "
                             "refuses to send them otherwise); use https://, or transport: rest")
        return self

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    @property
    def model_name(self) -> str | None:
        if not self.model:
            return None
        if self.model.startswith("projects/"):
            return self.model
        return f"{self.parent}/models/{self.model}"


@TRANSLATORS.register("google")
class GoogleTranslator(TextTranslator):
    """Google Cloud Translation v3 (Advanced): NMT, Translation LLM or custom models."""

    Options = GoogleOptions
    options: GoogleOptions
    provider = "Google Cloud Translation v3"
    OPERATIONAL = frozenset({"allow_insecure_http"})  # endpoint, transport, credentials: where texts went
    CLOUD = True
    REMOTE = True

    def __init__(self, system: str, options: BaseModel, **kwargs: Any):
        super().__init__(system, options, **kwargs)
        try:
            import google.api_core.exceptions as api_exceptions
            import google.auth
            import google.auth.credentials
            import google.auth.exceptions
            import google.cloud.translate_v3 as translate_v3
        except ImportError:
            raise MissingExtra("google", "google", "google-cloud-translate") from None
        self._exceptions = api_exceptions
        self._types = translate_v3
        opts = self.options
        if opts.credentials == "anonymous":
            credentials = google.auth.credentials.AnonymousCredentials()
        else:
            try:
                credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
            except google.auth.exceptions.DefaultCredentialsError as exc:
                raise ConfigError(
                    f"system {system!r} (google): no Application Default Credentials: {redact(str(exc))} "
                    f"(run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS)"
                ) from None
        self._credentials = credentials
        self.client = self._make_client(translate_v3, credentials)
        if opts.transport == "rest":
            _widen_pool(self.client.transport)

    def _make_client(self, translate_v3: Any, credentials: Any) -> Any:
        opts = self.options
        endpoint = opts.endpoint
        plaintext = bool(endpoint and endpoint.startswith("http://"))
        if opts.transport == "rest" or not endpoint:
            client_options = {"api_endpoint": endpoint} if endpoint else None
            return translate_v3.TranslationServiceClient(
                credentials=credentials, transport=opts.transport, client_options=client_options)
        host = re.sub(r"^https?://", "", endpoint).rstrip("/")
        if not plaintext:
            return translate_v3.TranslationServiceClient(
                credentials=credentials, transport="grpc", client_options={"api_endpoint": host})

        import grpc
        from google.auth.credentials import AnonymousCredentials
        from google.cloud.translate_v3.services.translation_service.transports import (
            TranslationServiceGrpcTransport,
        )

        if isinstance(credentials, AnonymousCredentials):
            # Nothing to protect: a plain channel reaches any emulator or fake.
            transport = TranslationServiceGrpcTransport(host=host, channel=grpc.insecure_channel(host))
        else:
            # Real credentials go without TLS only to a loopback address (gRPC's local credentials).
            transport = TranslationServiceGrpcTransport(
                host=host, credentials=credentials,
                ssl_channel_credentials=grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP))
        return translate_v3.TranslationServiceClient(transport=transport)

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        return BatchLimits(max_items=MAX_STRINGS, max_units=MAX_CODEPOINTS, unit="chars")

    def translate_batch(self, texts: list[str], src: str, tgt: str, *, timeout: float) -> BatchOutput:
        request = self._types.TranslateTextRequest(
            parent=self.options.parent,
            contents=list(texts),
            mime_type="text/plain",
            source_language_code=src,
            target_language_code=tgt,
            model=self.options.model_name or "",
        )
        try:
            response = self.client.translate_text(request=request, retry=None, timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - re-raised as a scrubbed copy below
            clean = self._scrubbed(exc)
        else:
            translations = [t.translated_text for t in response.translations]
            reported = next((t.model for t in response.translations if t.model), None)
            # billed per character of the source (code points); the response does not say how many
            billed = [TextDetails(billed_chars=len(t)) for t in texts]
            return BatchOutput(translations, model=_model_id(reported), details=billed)
        # Raised outside the except block so the original (with its response, call and headers)
        # is neither the cause nor the context of what the runner sees.
        raise clean

    def classify(self, exc: BaseException) -> Retry | None:
        ex = getattr(self, "_exceptions", None)
        if ex is None:  # pragma: no cover - the client library is missing
            return super().classify(exc)
        after = exc.retry_after if hasattr(exc, "retry_after") else retry_after(exc)
        transient = (ex.TooManyRequests, ex.ServiceUnavailable, ex.InternalServerError, ex.BadGateway,
                     ex.GatewayTimeout)  # ResourceExhausted and DeadlineExceeded are subclasses
        if isinstance(exc, transient):
            return Retry(after=after)
        if isinstance(exc, ex.Forbidden) and _is_rate_limit(exc):
            return Retry(after=after)
        if isinstance(exc, ex.GoogleAPICallError):
            return None
        if _is_transport_failure(exc):
            return Retry(after=after)
        return super().classify(exc)

    def close(self) -> None:
        """Closes the channel or HTTP session (Ray actors end with their process; tests call this)."""
        self.client.transport.close()

    # --- keeping credentials out of error text ---------------------------------------------

    def _scrub(self, text: str) -> str:
        token = getattr(self._credentials, "token", None)
        remember(token if isinstance(token, str) else None)  # refreshed tokens are new secrets
        return redact(_BEARER.sub(r"\1***", text))

    def _scrubbed(self, exc: BaseException) -> BaseException:
        """A copy of ``exc`` of the same class whose text is scrubbed and that holds no request."""
        ex = self._exceptions
        after = retry_after(exc)
        if isinstance(exc, ex.GoogleAPICallError):
            message = exc.message if isinstance(exc.message, str) else str(exc.message)
            details = [_detail_text(d) for d in exc.details if not _is_retry_info(d)]
            if details:
                message = f"{message} [{'; '.join(details)}]"
            info = {"reason": exc.reason, "domain": exc.domain} if exc.reason else None
            clean: BaseException = type(exc)(self._scrub(message), error_info=info)
            if clean.code != exc.code:  # a status without its own class (from_http_status sets it)
                clean.code = exc.code
            if clean.grpc_status_code != exc.grpc_status_code:
                clean.grpc_status_code = exc.grpc_status_code
        else:
            text = self._scrub(str(exc))
            try:
                clean = type(exc)(text)
            except Exception:  # noqa: BLE001 - an exception class with an unusual constructor
                clean = (TimeoutError if isinstance(exc, TimeoutError) else
                         ConnectionError if _is_transport_failure(exc) else RuntimeError)(
                    f"{type(exc).__name__}: {text}")
        clean.retry_after = after  # type: ignore[attr-defined]
        return clean


def _widen_pool(transport: Any, size: int = REST_POOL) -> None:
    """Lets ``size`` requests share the REST session at once (requests keeps 10 connections per
    host, so a higher ``concurrency`` would reconnect for every request beyond them)."""
    session = getattr(transport, "_session", None)  # the transport's AuthorizedSession
    try:
        from requests.adapters import HTTPAdapter
    except ImportError:  # pragma: no cover
        return
    if session is None or not hasattr(session, "mount"):
        return
    for prefix in ("https://", "http://"):
        if type(session.get_adapter(prefix)) is HTTPAdapter:  # leave an mTLS adapter alone
            session.mount(prefix, HTTPAdapter(pool_maxsize=size))
    session.max_redirects = 0  # a redirect is an error (TooManyRedirects): texts go where configured or nowhere


def _model_id(reported: str | None) -> str | None:
    """``projects/<number>/locations/<loc>/models/general/nmt`` -> ``general/nmt`` (the response
    names the project by number; it says nothing about the model and stays out of the rows)."""
    if not reported:
        return None
    return reported.split("/models/", 1)[1] if "/models/" in reported else reported


def _detail_text(detail: Any) -> str:
    """One google.rpc error detail (a dict from JSON, a protobuf message from gRPC) on one line."""
    if isinstance(detail, dict):
        kind = str(detail.get("@type", "")).rsplit(".", 1)[-1]
        fields = ", ".join(f"{k}={v}" for k, v in detail.items() if k != "@type")
        return f"{kind}({fields})"
    try:
        from google.protobuf import text_format

        return f"{type(detail).__name__}({text_format.MessageToString(detail, as_one_line=True)})"
    except Exception:  # noqa: BLE001 - not a protobuf message
        return str(detail)


def _is_retry_info(detail: Any) -> bool:
    if isinstance(detail, dict):
        return detail.get("@type") == _RETRY_INFO
    return type(detail).__name__ == "RetryInfo"


def retry_after(exc: BaseException) -> float | None:
    """The delay the server asks for: google.rpc.RetryInfo (gRPC or JSON), else a Retry-After header."""
    for detail in getattr(exc, "details", None) or ():
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            delay = _duration(detail.get("retryDelay"))
            if delay is not None:
                return delay
        elif type(detail).__name__ == "RetryInfo" and hasattr(detail, "retry_delay"):
            return detail.retry_delay.seconds + detail.retry_delay.nanos / 1e9
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = None
    if headers is not None and hasattr(headers, "get"):
        value = headers.get("Retry-After")
    elif response is not None and callable(getattr(response, "trailing_metadata", None)):
        try:
            value = dict(response.trailing_metadata() or ()).get("retry-after")
        except Exception:  # noqa: BLE001 - metadata of a call that never started
            value = None
    return _retry_after_header(value)


def _duration(value: Any) -> float | None:
    """A google.protobuf.Duration in JSON ("1.5s"), as seconds."""
    if isinstance(value, str) and value.endswith("s"):
        try:
            return max(0.0, float(value[:-1]))
        except ValueError:
            return None
    return None


def _retry_after_header(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _is_rate_limit(exc: Any) -> bool:
    if getattr(exc, "reason", None) in _RATE_LIMIT_REASONS:
        return True
    message = str(getattr(exc, "message", "")).lower()
    return "rate limit exceeded" in message or ("quota exceeded" in message and "per day" not in message)


def _is_transport_failure(exc: BaseException) -> bool:
    """Timeouts and connection failures below the API: sockets, requests/urllib3, token refresh."""
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    try:
        import requests

        if isinstance(exc, (requests.exceptions.Timeout, requests.exceptions.ConnectionError,
                            requests.exceptions.ChunkedEncodingError)):
            return True
    except ImportError:  # pragma: no cover
        pass
    try:
        import google.auth.exceptions as auth_exceptions

        if isinstance(exc, auth_exceptions.TransportError):
            return True
        if isinstance(exc, auth_exceptions.RefreshError) and getattr(exc, "retryable", False):
            return True
    except ImportError:  # pragma: no cover
        pass
    return False
