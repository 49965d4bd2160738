"""The names of a run config (its systems, their conditions, its suites) checked against the names
rule (``biaseval/names.py``), each refusal naming the file, line and field; the config's own ``name``
is checked by its model (``RunConfig.name``)."""

from __future__ import annotations

from typing import Iterable

from biaseval.data.yamlio import YamlDoc
from biaseval.errors import ConfigError
from biaseval.names import problem


def check_system_names(systems: Iterable[str], doc: YamlDoc) -> None:
    """Each system's name, as written in the config (conditions are checked as ``expand`` makes them)."""
    for name in systems:
        if (reason := problem(name)) is not None:
            hint = " (brackets are for the systems that conditions: makes)" if "[" in name else ""
            raise name_error(doc, ("systems", name), f"a system's name {reason}{hint}")


def check_run_names(systems: Iterable[str], suites: tuple[str, ...], doc: YamlDoc) -> None:
    """The suites' names (a template suite's file gives it), and no two systems or suites that a file
    system ignoring case (macOS, Windows) would give one folder."""
    for i, suite in enumerate(suites):
        if (reason := problem(suite)) is not None:
            raise name_error(doc, ("suites", i), f"the suite's name {suite!r} {reason}")
    for field, names in (("systems", list(systems)), ("suites", list(suites))):
        seen: dict[str, str] = {}
        for name in names:
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                raise doc.fail((field,), f"{other!r} and {name!r} differ only in case: on a file system that "
                                         f"ignores case they would share a folder; rename one")


def name_error(doc: YamlDoc, field: tuple, message: str) -> ConfigError:
    """``doc.fail`` for a field whose path holds a name that may be anything: a name with control
    characters, or a long one, is shown quoted, escaped and shortened."""
    shown = ".".join(_shown(k) if isinstance(k, str) and problem(k) is not None else str(k) for k in field)
    return ConfigError(f"{doc.where(field)}: {shown}: {message}")


def _shown(name: str) -> str:
    if name.isprintable() and 0 < len(name) <= 60:
        return name
    text = ascii(name) if not name.isprintable() else repr(name)
    return text if len(text) <= 60 else f"{text[:50]}…'"
