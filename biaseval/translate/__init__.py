"""Translation backends. Importing this package registers the built-in ones in ``TRANSLATORS``."""

from biaseval.errors import MissingExtra
from biaseval.translate.backends import (  # noqa: F401  (registration)
    apertium,
    aws,
    azure,
    ct2,
    google,
    hf,
    identity,
    recorded,
)
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    ItemTranslator,
    Retry,
    TextTranslator,
    Translator,
)

__all__ = ["TRANSLATORS", "BatchLimits", "BatchOutput", "ItemTranslator", "MissingExtra", "Retry",
           "TextTranslator", "Translator"]
