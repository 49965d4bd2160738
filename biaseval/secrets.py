"""Keeping secrets out of logs, Parquet, reports and exception text.

Credentials reach backends only through the providers' standard chains and the environment; this
module scrubs their values from any text biaseval records (error messages above all), in case a
client library echoes a key or token back.
"""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_MIN_LENGTH = 8
# Shapes of secrets that may appear without coming from our environment: (pattern, replacement).
_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+"), r"\1\2***"),  # tokens in auth headers
    (re.compile(r"(?i)\b(ocp-apim-subscription-key|x-goog-api-key|authorization|x-amz-security-token)"
                r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"), r"\1\2***"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "***"),  # AWS access key ids, long-term and temporary
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
