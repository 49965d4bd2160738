"""The identity system: returns each source sentence unchanged.

Not a translator, but a real system for what needs one that costs nothing: plumbing checks of a
config, benchmarks of the sweep machinery, and the "no translation" baseline of a detector.
"""

from __future__ import annotations

from typing import Sequence

from .base import TRANSLATORS, TextTranslator


@TRANSLATORS.register("identity")
class IdentityTranslator(TextTranslator):
    """Returns the source text unchanged (baseline and benchmark system)."""

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        return list(texts)
