"""The identity system: returns each source sentence unchanged.

Not a translator, but a real system for what needs one that costs nothing: plumbing checks of a
config, benchmarks of the sweep machinery, and the "no translation" baseline of a detector.
"""

from __future__ import annotations

from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    TextTranslator,
)


@TRANSLATORS.register("identity")
class IdentityTranslator(TextTranslator):
    """Returns the source text unchanged (baseline and benchmark system)."""

    provider = "biaseval identity"

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        return BatchLimits(max_items=100_000, max_units=10**9)

    def translate_batch(self, texts, src, tgt, *, timeout):
        return BatchOutput(list(texts), model="identity")
