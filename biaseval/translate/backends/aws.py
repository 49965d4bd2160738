"""Amazon Translate (``TranslateText``) through boto3.

TranslateText takes one text per call, at most 10,000 bytes of UTF-8, so ``limits()`` is one item of
at most 10,000 ``utf8_bytes``; throughput comes from the runner's ``concurrency`` (several calls in
flight on one client: boto3 clients are thread-safe, sessions are not, so the session is only used
under a lock) and from several actors.

Credentials come only from boto3's standard chain (environment, shared config/credentials files and
the named ``profile``, container or instance role); the options have no field for them. Keys from the
environment are used stripped of surrounding whitespace (boto3 would put a trailing newline into a
header, and the error would quote it), and every credential the session holds is remembered by the
redactor. An endpoint, from the options or the environment, is held to ``biaseval.urls.check_url``:
``http://`` to a host other than a loopback address is refused unless ``allow_insecure_http: true``. botocore's own retries are off: the runner retries what
``classify`` calls transient, honouring Retry-After, so that attempts are counted and rate-limited
in one place.
"""

from __future__ import annotations

import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from biaseval.credentials import redact, remember
from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    TextDetails,
    TextTranslator,
)
from biaseval.urls import check_url

MAX_TEXT_BYTES = 10_000  # "Maximum input text: 10,000 bytes" (UTF-8), per TranslateText call
DEFAULT_TIMEOUT_S = 60.0  # RetryConfig.timeout_s's default: the client built up front uses it

# Error codes worth another attempt. Throttling codes follow botocore's standard retry mode (AWS
# services use several names; Translate models TooManyRequestsException, HTTP 429, and the AWS front
# end answers ThrottlingException, HTTP 400); LimitExceededException is a rate limit in some services
# and is never returned by TranslateText for a bad request. Faults are 5xx whatever their code.
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown",
})
TRANSIENT_CODES = frozenset({
    "InternalServerException", "ServiceUnavailableException", "ServiceUnavailable", "InternalFailure",
    "InternalError", "RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete",
})
MAX_RETRY_AFTER_S = 3600.0
CLEAR_TEXT = "the access key id, any session token and the texts"



class AwsOptions(BaseModel):
    """``options:`` of an ``aws`` system. No credentials here: boto3's standard chain supplies them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    region: str | None = Field(default=None, description="AWS region (default: AWS_DEFAULT_REGION, else the profile's region)")
    allow_insecure_http: bool = Field(default=False, description="allow an http:// endpoint that is not a loopback "
                                      "address (signed requests, a session token and texts then travel unencrypted)")
    endpoint: str | None = Field(default=None, description="endpoint URL: a regional or VPC endpoint, a proxy, a test server")
    profile: str | None = Field(default=None, description="named profile of the shared AWS config files")
    terminology_names: tuple[str, ...] = Field(default=(), max_length=1,
                                               description="custom terminology (TranslateText applies at most one)")
    formality: Literal["FORMAL", "INFORMAL"] | None = None
    profanity: Literal["MASK"] | None = None
    brevity: Literal["ON"] | None = None
    max_connections: int = Field(default=64, ge=1, description="HTTP connection pool size; at least the concurrency")

    @field_validator("formality", "profanity", "brevity", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("endpoint")
    @classmethod
    def _plain_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        check_url(value, allow_insecure_http=info.data.get("allow_insecure_http", False), carries=CLEAR_TEXT)
        if urlsplit(value).query:
            raise ValueError("must not carry a query; credentials come from the AWS chain")
        return value


@TRANSLATORS.register("aws")
class AwsTranslator(TextTranslator):
    """Amazon Translate, one TranslateText call per text."""

    Options = AwsOptions
    OPERATIONAL = frozenset({"profile", "max_connections", "allow_insecure_http"})  # how, not what or where
    CLOUD = True
    REMOTE = True
    provider = "Amazon Translate"

    @classmethod
    def identity_options(cls, options: AwsOptions) -> dict:
        """With the region and endpoint boto3 resolves here (options, else AWS_DEFAULT_REGION /
        AWS_ENDPOINT_URL(_TRANSLATE) / the profile): texts sent to another region or to an emulator
        are another system's. No request is made and no credentials are needed for this."""
        identity = super().identity_options(options)
        try:
            import boto3

            session = boto3.session.Session(profile_name=options.profile, region_name=options.region)
            region = session.region_name
            identity["region"] = region
            if region:  # placeholder keys: resolving the endpoint must not walk the credential chain (IMDS)
                client = session.client("translate", endpoint_url=options.endpoint, aws_access_key_id="unused",
                                        aws_secret_access_key="unused")
                identity["endpoint"] = client.meta.endpoint_url
        except Exception:  # noqa: BLE001 - no boto3 or no such profile: the options as given (the worker says why)
            pass
        return identity

    def __init__(self, system: str, options: AwsOptions, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        try:
            import boto3
            import botocore.config
            import botocore.exceptions
        except ImportError:
            raise MissingExtra("aws", "aws", "boto3") from None
        self._botocore_config = botocore.config.Config
        try:
            self._session = boto3.session.Session(profile_name=options.profile, region_name=options.region)
        except botocore.exceptions.ProfileNotFound:
            raise ConfigError(f"system {system!r}: AWS profile {options.profile!r} not found") from None
        if not self._session.region_name:
            raise ConfigError(f"system {system!r}: no AWS region: set options.region or "
                              f"AWS_DEFAULT_REGION, or a region in the profile's config")
        self._credentials = self._session.get_credentials()
        if self._credentials is None:
            raise ConfigError(f"system {system!r}: no AWS credentials found by the standard chain "
                              f"(environment, shared credentials/config files, container or instance role)")
        if getattr(self._credentials, "method", None) == "env":
            self._strip_environment_keys(boto3, options)
        self._remember_credentials()
        self._lock = threading.Lock()  # boto3 sessions are not thread-safe; clients are
        self._clients: dict[float, Any] = {}
        self._client(DEFAULT_TIMEOUT_S)

    def _strip_environment_keys(self, boto3, options: AwsOptions) -> None:
        """Keys from the environment, stripped (``$(cat key)`` leaves a newline no header may hold)."""
        frozen = self._credentials.get_frozen_credentials()
        keys = (frozen.access_key, frozen.secret_key, frozen.token)
        remember(*keys)
        stripped = tuple(k.strip() if k else k for k in keys)
        if stripped != keys:
            self._session = boto3.session.Session(aws_access_key_id=stripped[0], aws_secret_access_key=stripped[1],
                                                  aws_session_token=stripped[2] or None,
                                                  region_name=self._session.region_name)
            self._credentials = self._session.get_credentials()

    def _remember_credentials(self) -> None:
        """The session's credentials as they are now (a role's are refreshed): known to the redactor."""
        try:
            frozen = self._credentials.get_frozen_credentials()
        except Exception:  # noqa: BLE001 - a refresh that fails is reported by the request itself
            return
        remember(frozen.access_key, frozen.secret_key, frozen.token)

    # -- the client -------------------------------------------------------------------------------

    def _client(self, timeout: float) -> Any:
        """The client whose read timeout is ``timeout``: built once (normally one per backend)."""
        client = self._clients.get(timeout)
        if client is None:
            with self._lock:
                client = self._clients.get(timeout)
                if client is None:
                    config = self._botocore_config(
                        retries={"mode": "standard", "total_max_attempts": 1},  # the runner retries
                        connect_timeout=min(timeout, 10.0),
                        read_timeout=timeout,
                        max_pool_connections=self.options.max_connections,
                        user_agent_extra="biaseval",
                    )
                    client = self._session.client("translate", endpoint_url=self.options.endpoint, config=config)
                    self._check_endpoint(client.meta.endpoint_url)
                    self._clients[timeout] = client
        return client

    def _check_endpoint(self, url: str) -> None:
        """The endpoint boto3 resolved (``endpoint``, else AWS_ENDPOINT_URL_TRANSLATE or AWS_ENDPOINT_URL
        from the environment or the profile) is held to the rule the options are, before any request."""
        try:
            check_url(url, allow_insecure_http=self.options.allow_insecure_http, carries=CLEAR_TEXT)
        except ValueError as exc:
            raise ConfigError(f"system {self.system!r}: endpoint {url}: {exc}") from None

    # -- translating ------------------------------------------------------------------------------

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        return BatchLimits(max_items=1, max_units=MAX_TEXT_BYTES, unit="utf8_bytes")

    def _request(self, text: str, src: str, tgt: str) -> dict[str, Any]:
        request: dict[str, Any] = {"Text": text, "SourceLanguageCode": src, "TargetLanguageCode": tgt}
        if self.options.terminology_names:
            request["TerminologyNames"] = list(self.options.terminology_names)
        settings = {k: v for k, v in (("Formality", self.options.formality), ("Profanity", self.options.profanity),
                                      ("Brevity", self.options.brevity)) if v}
        if settings:
            request["Settings"] = settings
        return request

    def translate_batch(self, texts: list[str], src: str, tgt: str, *, timeout: float) -> BatchOutput:
        if len(texts) != 1:
            raise ValueError(f"Amazon Translate takes one text per request, got {len(texts)}")
        if texts[0] == "":
            return BatchOutput([""], model=None, details=[TextDetails(billed_chars=0)])  # the API rejects empty text
        client = self._client(float(timeout))
        try:
            response = client.translate_text(**self._request(texts[0], src, tgt))
        except Exception as exc:
            self._scrub(exc)
            raise
        # billed per character of the source; the response says neither how many nor which model
        return BatchOutput([response["TranslatedText"]], model=_applied(response),
                           details=[TextDetails(billed_chars=len(texts[0]))])

    # -- failures ---------------------------------------------------------------------------------

    def classify(self, exc: BaseException) -> Retry | None:
        import botocore.exceptions as bex

        if isinstance(exc, bex.ClientError):
            error = exc.response.get("Error", {})
            meta = exc.response.get("ResponseMetadata", {})
            status = meta.get("HTTPStatusCode") or 0
            code = error.get("Code", "")
            if code in THROTTLING_CODES or code in TRANSIENT_CODES or status == 429 or status >= 500:
                return Retry(after=_retry_after(meta.get("HTTPHeaders", {})))
            return None
        # Timeouts, refused or dropped connections (not credential, parameter or config errors).
        if isinstance(exc, (bex.ConnectionError, bex.HTTPClientError)) and not isinstance(exc, bex.SSLError):
            return Retry()
        return super().classify(exc)

    def _scrub(self, exc: BaseException) -> None:
        """Redact the exception's text in place (the runner records ``str(exc)``; Ray may pickle it),
        the session's current credentials known to the redactor first (a profile's or a role's are
        not in the environment)."""
        self._remember_credentials()

        def clean(value: Any) -> Any:
            if isinstance(value, str):
                return redact(value)
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            return value

        exc.args = tuple(clean(a) for a in exc.args)
        response = getattr(exc, "response", None)
        if isinstance(response, dict) and isinstance(response.get("Error"), dict):
            response["Error"] = clean(response["Error"])  # ClientError pickles from its response
        kwargs = getattr(exc, "kwargs", None)
        if isinstance(kwargs, dict):  # BotoCoreError pickles from its kwargs
            exc.kwargs = {k: clean(v) if isinstance(v, str) else v for k, v in kwargs.items()}


def _applied(response: dict[str, Any]) -> str | None:
    """What the service says it applied (settings, terminology), or None when nothing."""
    parts = [f"{k.lower()}={v}" for k, v in sorted((response.get("AppliedSettings") or {}).items()) if v]
    parts += [f"terminology={t['Name']}" for t in response.get("AppliedTerminologies") or () if t.get("Name")]
    return ",".join(parts) or None


def _retry_after(headers: dict[str, str]) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), if there is one."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError):
            return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)
