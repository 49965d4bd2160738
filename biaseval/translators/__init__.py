"""Translation backends. Importing this package registers the built-in ones in ``TRANSLATORS``."""

from . import apertium, aws, azure, ct2, google, hf, identity, recorded  # noqa: F401  (registration)
from .base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    ItemTranslator,
    MissingExtra,
    Retry,
    TextTranslator,
    Translator,
)

__all__ = ["TRANSLATORS", "BatchLimits", "BatchOutput", "ItemTranslator", "MissingExtra", "Retry",
           "TextTranslator", "Translator"]
