"""Keeping secrets out of logs, Parquet, reports and exception text.

Credentials reach backends only through the providers' standard chains and the environment; this
module scrubs their values from any text biaseval records (error messages above all), in case a
client library echoes a key or token back, and refuses plain ``http://`` endpoints other than this
host's own (loopback) unless a system's options say ``allow_insecure_http: true``.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlsplit

_SECRET_NAME = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_MIN_LENGTH = 8
# Shapes of secrets that may appear without coming from our environment: (pattern, replacement).
_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+"), r"\1\2***"),  # tokens in auth headers
    (re.compile(r"(?i)\b(ocp-apim-subscription-key|x-goog-api-key|api-key|authorization|x-amz-security-token)"
                r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"), r"\1\2***"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "***"),  # AWS access key ids, long-term and temporary
    (re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"), "***"),  # OpenAI API keys
    (re.compile(r"(?i)(signature=)[0-9a-f]{16,}"), r"\1***"),  # SigV4 signatures
    (re.compile(r"(?i)([?&](?:key|sig|signature|token)=)[^&\s]+"), r"\1***"),
]


def secret_values() -> list[str]:
    return sorted(
        {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and v and len(v) >= _MIN_LENGTH},
        key=len, reverse=True,
    )


def redact(text: str) -> str:
    """``text`` with every secret-looking value replaced by ``***``."""
    for value in secret_values():
        text = text.replace(value, "***")
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


# --- credentials never travel in clear text to another host -----------------------------------

INSECURE_HTTP_HINT = ("use https://, or set allow_insecure_http: true if the network to it is trusted "
                      "(a proxy or an emulator on a private network)")


def is_loopback(host: str | None) -> bool:
    """``localhost``, 127.0.0.0/8 or ::1 (a name is not resolved: any other name is not loopback)."""
    if not host:
        return False
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def insecure_http(endpoint: str | None) -> str | None:
    """The host of an ``http://`` endpoint that is not a loopback address, else None."""
    if not endpoint or not endpoint.strip().lower().startswith("http://"):
        return None
    try:
        host = urlsplit(endpoint.strip()).hostname
    except ValueError:  # a malformed address: not one to send credentials to either
        return endpoint
    return None if is_loopback(host) else (host or endpoint)


def check_endpoint(endpoint: str | None, allow_insecure_http: bool, what: str) -> None:
    """ValueError when ``endpoint`` would carry ``what`` (the credentials a backend sends) in clear
    text to a host other than this one, unless ``allow_insecure_http``."""
    host = insecure_http(endpoint)
    if host is not None and not allow_insecure_http:
        raise ValueError(f"http:// to {host!r}, which is not a loopback address, would send {what} in clear "
                         f"text; {INSECURE_HTTP_HINT}")
