"""What a translation backend is, and the registry of backends.

A backend is built once per Ray actor from its system's config and then translates item batches.
Live backends implement ``translate(texts, src, tgt) -> list[str]`` (subclass TextTranslator);
backends that need to know which item they are translating (recorded outputs) implement
``translate_items`` directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar, Sequence

import polars as pl
from pydantic import BaseModel, ConfigDict

from ..registry import Registry


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Translator(ABC):
    """One MT system. ``Options`` validates the ``options:`` block of the system's config."""

    Options: ClassVar[type[BaseModel]] = NoOptions

    def __init__(self, system: str, options: BaseModel, *, config_dir: Path | None = None):
        self.system = system
        self.options = options
        self.config_dir = config_dir or Path.cwd()

    @classmethod
    def covers(cls, options: BaseModel, suite: str) -> bool:
        """Whether a system with these options can translate the suite (live systems translate anything)."""
        return True

    def check(self, items: pl.DataFrame) -> None:
        """Called once in the driver before anything runs; raise BiasevalError for bad input."""

    @abstractmethod
    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        """Translations of ``items`` (an item table), in its row order."""


class TextTranslator(Translator):
    """A backend that only needs the source text and the language pair."""

    @abstractmethod
    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        """Translate ``texts`` from ``src`` to ``tgt`` (ISO 639 codes); one output per input."""

    def translate_items(self, items: pl.DataFrame) -> list[str | None]:
        out: list[str | None] = [None] * items.height
        indexed = items.with_row_index("_row")
        for (src, tgt), group in indexed.group_by(["src_lang", "tgt_lang"], maintain_order=True):
            texts = group["source"].to_list()
            result = self.translate(texts, src, tgt)
            if len(result) != len(texts):
                raise RuntimeError(f"{self.system}: backend returned {len(result)} translations for {len(texts)} texts")
            for row, text in zip(group["_row"].to_list(), result):
                out[row] = text
        return out


TRANSLATORS: Registry[type[Translator]] = Registry("backend")
