"""One registry per extensible kind (suites, translators, detectors): register by decorator, look up by name."""

from __future__ import annotations

import difflib
from contextlib import contextmanager
from typing import Callable, Generic, Iterator, TypeVar

from biaseval.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            self.add(name, obj)
            return obj

        return add

    def add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = obj

    def put(self, name: str, obj: T) -> None:
        """Add or replace (for entries loaded from files, which may be reloaded)."""
        self._items[name] = obj

    @contextmanager
    def kept(self) -> Iterator[None]:
        """Inside, entries may be added and replaced (a config's suites with its targets); on leaving,
        the registry is as it was on entering."""
        saved = dict(self._items)
        try:
            yield
        finally:
            self._items.clear()
            self._items.update(saved)

    def get(self, name: str, where: str = "") -> T:
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(self.unknown_message(name, where)) from None

    def unknown_message(self, name: str, where: str = "") -> str:
        close = difflib.get_close_matches(name, self._items, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(sorted(self._items))
        prefix = f"{where}: " if where else ""
        return f"{prefix}unknown {self.kind} {name!r}{hint}; known: {known}"

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())
