"""Translating texts: what a backend is (``base``), texts packed into requests (``packing``), rate
limits kept in every window (``ratelimit``), retries and bisection of failing batches (``runner``),
credentials kept out of logs and off clear-text links (``credentials``), and the backends
(``backends/``; importing this package registers them in ``TRANSLATORS``). Imports ``suites``,
``data``, ``errors``, ``registry``; never ``run``.
"""

from biaseval.errors import MissingExtra
from biaseval.translate.backends import (  # noqa: F401  (registration)
    apertium,
    aws,
    azure,
    ct2,
    deepl,
    google,
    hf,
    identity,
    openai,
    recorded,
    references,
)
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    ItemTranslator,
    Retry,
    Stop,
    SystemStopped,
    TextTranslator,
    Translator,
)

__all__ = ["TRANSLATORS", "BatchLimits", "BatchOutput", "ItemTranslator", "MissingExtra", "Retry", "Stop",
           "SystemStopped", "TextTranslator", "Translator"]
