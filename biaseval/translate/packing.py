"""Texts into requests: consecutive texts packed within a backend's per-request limits
(``BatchLimits``: texts per request, characters or bytes per request); a text too long for one
request is set apart, never cut.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, Sequence


@dataclass(frozen=True)
class BatchLimits:
    """What one request may carry: at most ``max_items`` texts and ``max_units`` of ``unit`` in all.
    ``json_bytes``: bytes a text takes as an element of a JSON array the way ``requests`` encodes it
    (ASCII-escaped, with its separator), for a limit on a JSON body's size."""

    max_items: int
    max_units: int
    unit: Literal["chars", "utf8_bytes", "utf16_units", "json_bytes"] = "chars"

    def size(self, text: str) -> int:
        if self.unit == "json_bytes":
            return len(json.dumps(text)) + 2
        if self.unit == "utf8_bytes":
            return len(text.encode("utf-8"))
        if self.unit == "utf16_units":
            return len(text.encode("utf-16-le")) // 2
        return len(text)

    def sizes(self, texts: Sequence[str]):
        """``size`` of each text, lazily (``len`` itself for characters: the common limit, and a
        Python call less per text)."""
        return map(len, texts) if self.unit == "chars" else map(self.size, texts)


@dataclass(frozen=True)
class Batch:
    indices: list[int]
    units: int
    too_long: bool = False  # one text over the per-request size: never sent, recorded as an error


def pack(texts: Sequence[str], limits: BatchLimits) -> list[Batch]:
    """Consecutive texts into requests of at most ``max_items`` texts and ``max_units`` units."""
    batches: list[Batch] = []
    current: list[int] = []
    units = 0
    max_items, max_units = limits.max_items, limits.max_units
    for i, size in enumerate(limits.sizes(texts)):
        if size > max_units:
            batches.append(Batch([i], size, too_long=True))
            continue
        if current and (len(current) >= max_items or units + size > max_units):
            batches.append(Batch(current, units))
            current, units = [], 0
        current.append(i)
        units += size
    if current:
        batches.append(Batch(current, units))
    return batches
