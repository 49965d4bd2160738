"""LLMs over the OpenAI chat completions API, through the official ``openai`` SDK: OpenAI itself,
Azure OpenAI (``api: azure``), and every server that speaks the same API (vLLM, Ollama, llama.cpp,
TGI, Ray Serve LLM, and the OpenAI-compatible endpoints of hosted providers) through ``base_url``.

One ``translate_batch`` is one ``POST .../chat/completions``: the configured system and user
templates (``llm_prompts``) filled for the language pair and the text, temperature 0 and a fixed seed
by default, and ``max_tokens`` bounded from the source's length. With ``texts_per_request`` above 1,
several texts go in one request as a numbered JSON array and the reply must be one back, in order;
any other answer raises ``SplitBatch``, and the runner sends the texts again in smaller requests.

The reply is read strictly (``llm_replies``): wrappers are stripped, and a reply that is not a
translation (refusal, empty, explanation, wrong language) becomes a ``None`` translation with
``TextDetails(rejected=..., raw=...)``: stored, never scored, never sent again. Every text records the
model the server reports, its ``system_fingerprint``, the prompt hash and its input/output tokens.

The SDK's own retries are off (``max_retries=0``): one attempt the runner counts is one request on
the wire. A refused key (401) or a spent quota (429 ``insufficient_quota``) stops the system
(``Stop``): no request of it could pass. Errors become ``LLMRequestError``, which keeps status, message and Retry-After but neither
the request (whose headers hold the key) nor the SDK's exception; its text is redacted
(``biaseval.credentials``). Keys are read by ``read_secret`` (stripped, remembered by the redactor);
``base_url``, ``azure_endpoint`` and ``$OPENAI_BASE_URL`` are held to ``biaseval.urls.check_url``, and
redirects are not followed (the SDK's client would follow them, with Azure's ``api-key`` dropped but
the texts sent on).
"""

from __future__ import annotations

import math
import os
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from biaseval.credentials import Secret, read_secret, redact
from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate.backends.azure import retry_after_seconds
from biaseval.translate.backends.llm_prompts import (
    BATCH_FIELDS,
    BATCH_SYSTEM_PROMPT,
    BATCH_USER_PROMPT,
    SINGLE_FIELDS,
    SYSTEM_PROMPT,
    USER_PROMPT,
    batch_payload,
    check_template,
    estimate_tokens,
    fields_of,
    language_name,
    max_output_tokens,
    messages_tokens,
    prompt_hash,
    render,
)
from biaseval.translate.backends.llm_replies import CHECKS, read_batch, read_reply
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    SplitBatch,
    Stop,
    TextDetails,
    TextTranslator,
    TokenEstimate,
    language_pairs,
)
from biaseval.urls import check_url

OPENAI_URL = "https://api.openai.com/v1"
CLEAR_TEXT = "the API key and the texts"
TRANSIENT_STATUSES = frozenset({408, 409, 429})  # and every 5xx: what the SDK itself would retry
PROMPTS = ("system_prompt", "user_prompt")
# prompt: dataset: no system message, the item's prompt as the user message (hashed like templates)
DATASET_TEMPLATES = ("", "{text}")
BATCH_PROMPTS = ("batch_system_prompt", "batch_user_prompt")
Check = Literal["refusal", "explanation", "wrong-language"]


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="the model (OpenAI's name, a server's served model name; for "
                       "Azure, the deployment name unless azure_deployment is given)")
    api: Literal["openai", "azure"] = Field(default="openai", description="azure: AzureOpenAI with azure_endpoint, "
                                            "api_version and an optional azure_deployment")
    allow_insecure_http: bool = Field(default=False, description="allow an http:// URL that is not a loopback "
                                      "address (the key and texts then travel unencrypted): a server inside a "
                                      "trusted cluster network")
    base_url: str | None = Field(default=None, description=f"the API's URL up to /v1 (default: $OPENAI_BASE_URL, "
                                 f"else {OPENAI_URL}); a vLLM or other OpenAI-compatible server")
    azure_endpoint: str | None = Field(default=None, description="https://RESOURCE.openai.azure.com (api: azure)")
    azure_deployment: str | None = Field(default=None, min_length=1)
    api_version: str | None = Field(default=None, min_length=1, description="Azure OpenAI API version (api: azure)")
    api_key_env: str | None = Field(default=None, min_length=1, description="environment variable holding the key "
                                    "(default: the SDK's own: OPENAI_API_KEY; for Azure AZURE_OPENAI_API_KEY or an "
                                    "Entra ID token in AZURE_OPENAI_AD_TOKEN)")
    no_key: bool = Field(default=False, description="the server takes no key (a self-hosted server started "
                         "without one): a placeholder is sent")
    prompt: Literal["template", "dataset"] = Field(
        default="template", description="template: the source in system_prompt and user_prompt; dataset: "
        "the suite's own prompt around it (MiTTenS's), sent alone as the user message, no system message")
    system_prompt: str = SYSTEM_PROMPT
    user_prompt: str = USER_PROMPT
    batch_system_prompt: str = BATCH_SYSTEM_PROMPT
    batch_user_prompt: str = BATCH_USER_PROMPT
    language_names: dict[str, str] = Field(default_factory=dict, description="code -> English name for the "
                                           "prompts, adding to or overriding the built-in list")
    texts_per_request: int = Field(default=1, ge=1, le=200, description="above 1: texts sent together as a "
                                   "numbered JSON array (fewer requests; replies checked for count and order)")
    max_chars_per_request: int = Field(default=8000, ge=1, description="a longer text is recorded as an error")
    temperature: float | None = Field(default=0.0, ge=0, le=2, description="null: not sent (models that refuse it)")
    seed: int | None = Field(default=0, description="sent where the server supports it; null: not sent")
    max_tokens_ratio: float = Field(default=4.0, gt=0, description="max_tokens per text: max_tokens_base + this × "
                                    "the source's estimated tokens")
    max_tokens_base: int = Field(default=32, ge=1)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens", description="the request field for the bound (max_completion_tokens for OpenAI's "
                                          "reasoning models)")
    reply_checks: tuple[Check, ...] = Field(default=CHECKS, description="the checks that reject a reply as not a "
                                            "translation (refusal, explanation, wrong-language)")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="more request fields, sent as they are "
                                       "(e.g. a vLLM server's chat_template_kwargs)")

    @field_validator("base_url", "azure_endpoint")
    @classmethod
    def _outbound(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:  # allow_insecure_http is declared above these, so it is in info.data
            check_url(value, allow_insecure_http=info.data.get("allow_insecure_http", False), carries=CLEAR_TEXT)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "OpenAIOptions":
        if self.api == "azure":
            if self.azure_endpoint is None or self.api_version is None or self.base_url is not None:
                raise ValueError("api: azure needs azure_endpoint and api_version (and no base_url)")
            if self.no_key:
                raise ValueError("api: azure always needs a key or an Entra ID token; no_key is for servers without one")
        elif self.azure_endpoint or self.azure_deployment or self.api_version:
            raise ValueError("azure_endpoint, azure_deployment and api_version need api: azure")
        if self.no_key and self.api_key_env:
            raise ValueError("no_key and api_key_env exclude each other")
        if self.prompt == "dataset" and self.texts_per_request > 1:
            raise ValueError("prompt: dataset sends each item's own prompt, one per request: texts_per_request "
                             "must be 1")
        check_template(self.system_prompt, SINGLE_FIELDS)
        check_template(self.user_prompt, SINGLE_FIELDS, required=("text",))
        check_template(self.batch_system_prompt, BATCH_FIELDS)
        check_template(self.batch_user_prompt, BATCH_FIELDS, required=("texts",))
        return self


class LLMRequestError(Exception):
    """A failed request, safe to record and to pickle: no request, no key, no SDK exception."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None,
                 transient: bool = False, stop: str | None = None):
        super().__init__(message)
        self.status, self.retry_after, self.transient = status, retry_after, transient
        self.stop = stop  # why no request of this system can pass (a refused key, a spent quota)

    def __reduce__(self):
        return (_rebuild, (str(self), self.status, self.retry_after, self.transient, self.stop))


def _rebuild(message, status, retry_after, transient, stop=None):
    return LLMRequestError(message, status=status, retry_after=retry_after, transient=transient, stop=stop)


def base_url_of(options: OpenAIOptions) -> str | None:
    """Where a non-Azure system's requests go: options.base_url, else $OPENAI_BASE_URL, else OpenAI."""
    if options.api == "azure":
        return None
    return (options.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")


@TRANSLATORS.register("openai")
class OpenAITranslator(TextTranslator):
    """Chat completions through ``openai.OpenAI`` or ``openai.AzureOpenAI``."""

    Options = OpenAIOptions
    # how the key is found, and max_tokens (it decides only whether a reply is cut short, and a cut
    # reply is never stored as a translation), change no stored translation
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset({"api_key_env", "no_key", "allow_insecure_http",
                                                       "max_tokens_ratio", "max_tokens_base", "max_tokens_field"})
    # a hosted model changes under one name; a self-hosted server can be restarted with other weights
    # under the same served name: either way the config says which model it was (version or max_age)
    CLOUD = True
    REMOTE = True
    provider = "OpenAI chat completions"

    @classmethod
    def identity_options(cls, options: OpenAIOptions) -> dict:
        """Where texts go (the base URL, resolved; Azure's endpoint and deployment) and what shapes the
        output (model, temperature, seed, checks, the prompts, by their hash)."""
        identity = super().identity_options(options)
        used = PROMPTS + (BATCH_PROMPTS if options.texts_per_request > 1 else ())
        for name in PROMPTS + BATCH_PROMPTS:
            identity.pop(name)
        identity["prompt_hash"] = prompt_hash(*cls.templates(options, batched=False)) if options.prompt == "dataset" \
            else prompt_hash(*(getattr(options, name) for name in used))
        if options.api == "openai":
            identity["base_url"] = base_url_of(options)
        return identity

    @classmethod
    def sends(cls, options: OpenAIOptions) -> str:
        return "prompt" if options.prompt == "dataset" else "source"

    @classmethod
    def templates(cls, options: OpenAIOptions, batched: bool) -> tuple[str, str]:
        """The system and user templates of a request (``prompt: dataset``: none and the text itself)."""
        if options.prompt == "dataset":
            return DATASET_TEMPLATES
        if batched:
            return options.batch_system_prompt, options.batch_user_prompt
        return options.system_prompt, options.user_prompt

    @classmethod
    def preflight(cls, system, options: OpenAIOptions, suites, targets, config_dir) -> None:
        """Every language the prompts name has a name; with ``prompt: dataset`` every suite brings its
        own prompts; a base URL from the environment is held to the clear-text rule too. No client is
        built and nothing is sent."""
        _check_base_url(system, options)
        if options.prompt == "dataset":
            lacking = [name for name, data in suites.items() if not data.suite.prompts]
            if lacking:
                raise ConfigError(f"systems.{system}.options.prompt: dataset, but suite {lacking[0]} has no prompts "
                                  f"of its own (MiTTenS has); give this system `suites:` with those that do, or "
                                  f"use prompt: template")
            return  # the dataset's prompts name their languages themselves
        templates = [getattr(options, name) for name in
                     PROMPTS + (BATCH_PROMPTS if options.texts_per_request > 1 else ())]
        if not any(fields_of(t) & {"src_lang", "tgt_lang"} for t in templates):
            return
        for (src, tgt), suite in language_pairs(suites, targets).items():
            for code in (src, tgt):
                if language_name(code, options.language_names) is None:
                    raise ConfigError(f"systems.{system}.options.language_names: no English name for {code!r} "
                                      f"(suite {suite}); the prompts name languages, so add {code}: <name>")

    def __init__(self, system: str, options: OpenAIOptions, **kwargs: Any):
        super().__init__(system, options, **kwargs)
        try:
            import openai
        except ImportError:
            raise MissingExtra("openai", "llm", "openai") from None
        self._errors = openai
        key = self._key(system, options)
        # the SDK's client follows redirects; with the key on, biaseval follows none
        http_client = openai.DefaultHttpxClient(follow_redirects=False)
        if options.api == "azure":
            credential = {"api_key": key.reveal()} if key else {"azure_ad_token": read_secret(
                "AZURE_OPENAI_AD_TOKEN", "the Entra ID token", where=f"system {system!r}").reveal()}
            self._client = openai.AzureOpenAI(
                azure_endpoint=options.azure_endpoint, azure_deployment=options.azure_deployment,
                api_version=options.api_version, max_retries=0, http_client=http_client, **credential)
            self.provider = "Azure OpenAI"
        else:
            _check_base_url(system, options)
            url = base_url_of(options)
            self._client = openai.OpenAI(base_url=url, api_key=key.reveal(), max_retries=0, http_client=http_client)
            host = urlsplit(url).hostname or url
            self.provider = "OpenAI API" if host == "api.openai.com" else f"OpenAI-compatible API at {host}"

    @staticmethod
    def _key(system: str, options: OpenAIOptions) -> Secret | None:
        if options.no_key:
            return Secret("no-key", "options.no_key")
        default = "AZURE_OPENAI_API_KEY" if options.api == "azure" else "OPENAI_API_KEY"
        name = options.api_key_env or default
        key = read_secret(name, "the API key", required=False, where=f"system {system!r}")
        if key:
            return key
        if options.api == "azure" and not options.api_key_env and os.environ.get("AZURE_OPENAI_AD_TOKEN", "").strip():
            return None  # the SDK's chain: an Entra ID token
        raise ConfigError(f"system {system!r}: environment variable {name} (the API key) is not set"
                          + ("; for a server that takes no key set options.no_key: true" if options.api == "openai" else ""))

    def __repr__(self) -> str:
        return f"OpenAITranslator(system={self.system!r}, model={self.options.model!r})"

    @classmethod
    def limits_for(cls, options: OpenAIOptions) -> BatchLimits:
        return BatchLimits(max_items=options.texts_per_request, max_units=options.max_chars_per_request)

    @classmethod
    def messages_for(cls, options: OpenAIOptions, texts: list[str], src: str, tgt: str) -> tuple[list[dict], str]:
        """The chat messages of one request, and the hash of the templates that made them."""
        names = options.language_names
        templates = cls.templates(options, batched=len(texts) > 1)
        if len(texts) == 1:
            values = {"text": texts[0]}
        else:
            values = {"count": len(texts), "texts": batch_payload(texts)}
        system, user = (render(t, src, tgt, names, **values) for t in templates)
        messages = ([{"role": "system", "content": system}] if system.strip() else []) + \
                   [{"role": "user", "content": user}]
        return messages, prompt_hash(*templates)

    @classmethod
    def tokens_per_batch(cls, options: OpenAIOptions, texts, src: str, tgt: str) -> TokenEstimate:
        texts = list(texts)
        messages, _ = cls.messages_for(options, texts, src, tgt)
        batched = len(texts) > 1
        output = sum(estimate_tokens(t) for t in texts) + (12 * len(texts) + 2 if batched else 0)
        limit = max_output_tokens(texts, options.max_tokens_ratio, options.max_tokens_base, batched)
        return TokenEstimate(messages_tokens(m["content"] for m in messages), output, limit)

    def translate_batch(self, texts: list[str], src: str, tgt: str, *, timeout: float) -> BatchOutput:
        opts: OpenAIOptions = self.options  # type: ignore[assignment]
        messages, hashed = self.messages_for(opts, texts, src, tgt)
        batched = len(texts) > 1
        bound = max_output_tokens(texts, opts.max_tokens_ratio, opts.max_tokens_base, batched)
        request: dict[str, Any] = {"model": opts.model, "messages": messages, opts.max_tokens_field: bound,
                                   "timeout": timeout}
        if opts.temperature is not None:
            request["temperature"] = opts.temperature
        if opts.seed is not None:
            request["seed"] = opts.seed
        if opts.extra_body:
            request["extra_body"] = dict(opts.extra_body)
        failure = None
        try:
            response = self._client.chat.completions.create(**request)
        except Exception as exc:  # noqa: BLE001 - replaced below by an error that holds no request
            failure = self._sanitize(exc, timeout)
        if failure is not None:
            raise failure  # outside the except block: nothing keeps the SDK's exception (and the key) alive
        if not response.choices:
            raise LLMRequestError("the server answered without a choice")
        choice = response.choices[0]
        message = choice.message
        content = message.content if message is not None else None
        refusal = getattr(message, "refusal", None) if message is not None else None
        usage = response.usage
        inputs = _shares(getattr(usage, "prompt_tokens", None), texts)
        outputs = _shares(getattr(usage, "completion_tokens", None), texts)
        # an answered request is billed, even one whose reply is split and sent again
        spent = [TextDetails(input_tokens=i, output_tokens=o) for i, o in zip(inputs, outputs)]
        if choice.finish_reason == "length":
            if batched:
                raise SplitBatch(f"the reply to {len(texts)} texts was cut at {opts.max_tokens_field}={bound}", spent)
            raise LLMRequestError(f"the reply was cut at {opts.max_tokens_field}={bound} (finish_reason length); "
                                  f"raise options.max_tokens_ratio or max_tokens_base")
        refused = bool(refusal) or choice.finish_reason == "content_filter"
        checks, names = opts.reply_checks, opts.language_names
        if batched:
            if refused:
                raise SplitBatch(f"the request of {len(texts)} texts was refused as a whole", spent)
            try:
                readings = read_batch(content, texts, src, tgt, checks=checks, names=names)
            except SplitBatch as split:
                raise SplitBatch(str(split), spent) from None
        else:
            readings = [read_reply((refusal or content) if refused else content, texts[0], src, tgt, checks=checks,
                                   names=names, refused=refused)]
        details = [TextDetails(fingerprint=response.system_fingerprint, prompt_hash=hashed, input_tokens=i,
                               output_tokens=o, rejected=r.rejected, raw=r.raw)
                   for r, i, o in zip(readings, inputs, outputs)]
        return BatchOutput([r.translation for r in readings], model=response.model, details=details)

    def classify(self, exc: BaseException) -> Retry | Stop | None:
        if isinstance(exc, LLMRequestError):
            if exc.stop:
                return Stop(exc.stop)
            return Retry(after=exc.retry_after) if exc.transient else None
        if isinstance(exc, SplitBatch):
            return None  # the runner splits the batch (not counted as a failure)
        if isinstance(exc, self._errors.OpenAIError):  # the SDK's own, should one reach here raw
            return self.classify(self._sanitize(exc, 0.0))
        return super().classify(exc)

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass

    def _sanitize(self, exc: BaseException, timeout: float) -> LLMRequestError:
        """An ``LLMRequestError`` saying what ``exc`` says, minus the key and any live object."""
        errors = self._errors
        if isinstance(exc, errors.APITimeoutError):
            return LLMRequestError(f"no response within {timeout:g} s", transient=True)
        if isinstance(exc, errors.APIConnectionError):
            cause = exc.__cause__ or exc
            return LLMRequestError(f"connection failed ({type(cause).__name__}: {_first_line(redact(str(cause)))})"[:1000],
                                   transient=True)
        if isinstance(exc, errors.APIStatusError):
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) else {}
            error = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
            code = error.get("code") or error.get("type")
            message = _first_line(redact(str(error.get("message") or exc.message or "no error message")))
            headers = getattr(exc.response, "headers", None) or {}
            transient = (status in TRANSIENT_STATUSES or status >= 500) and code != "insufficient_quota"
            text = f"HTTP {status}" + (f" ({code})" if code else "") + f": {message}"
            request_id = headers.get("x-request-id") if hasattr(headers, "get") else None
            if request_id:
                text += f" [x-request-id {request_id}]"
            stop = None
            if code == "insufficient_quota":
                stop = f"the account's quota or credit is spent ({text}); add credit or raise the limit, then rerun"
            elif status == 401:
                stop = f"the server refused the key ({text}); check the key's variable, then rerun"
            return LLMRequestError(redact(text)[:1000], status=status, transient=transient,
                                   retry_after=retry_after_seconds(headers) if transient else None,
                                   stop=redact(stop)[:1000] if stop else None)
        return LLMRequestError(f"{type(exc).__name__}: {_first_line(redact(str(exc)))}"[:1000])


def _check_base_url(system: str, options: OpenAIOptions) -> None:
    """Where a non-Azure system's requests go, $OPENAI_BASE_URL included, is held to the URL rule."""
    url = base_url_of(options)
    if url is None:
        return
    try:
        check_url(url, allow_insecure_http=options.allow_insecure_http, carries=CLEAR_TEXT)
    except ValueError as exc:
        source = "" if options.base_url else " ($OPENAI_BASE_URL)"
        raise ConfigError(f"systems.{system}.options.base_url{source}: {exc}") from None


def _shares(total: int | None, texts: list[str]) -> list[int | None]:
    """A request's token count split over its texts by their length (summing to the total)."""
    if total is None:
        return [None] * len(texts)
    weights = [max(1, estimate_tokens(t)) for t in texts]
    cuts = [math.floor(total * sum(weights[:k]) / sum(weights)) for k in range(len(texts) + 1)]
    return [cuts[k + 1] - cuts[k] for k in range(len(texts))]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


__all__ = ["LLMRequestError", "OpenAIOptions", "OpenAITranslator", "base_url_of"]
