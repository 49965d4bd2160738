"""Names that become paths, file names, table cells and chart labels: one rule, and the one way a
name is made into a path.

A *name* (a system, a system's condition, a suite, a template's variant, subset segment or language, a
config's ``name``, a run id) is accepted when it

- is not empty and at most ``MAX_BYTES`` bytes in UTF-8 (a run id: ``RUN_ID_BYTES``), so that every
  file or folder name built from names stays far below the 255 bytes file systems allow;
- starts with a letter or a digit (any script: ``गूगल`` is a name) and goes on with letters, combining
  marks, digits and the ASCII characters ``. _ - + =``: no ``/``, ``\\``, NUL or other control
  character, no space, no other ASCII punctuation (``| < > $ * [ ]`` and the rest: markup in a table
  or a chart), no Unicode format character (bidi overrides, zero-width joiners);
- holds no ``..`` and does not end with ``.``;
- is in Unicode normal form NFC (a file system that normalises names would otherwise give two
  different names one folder).

``problem`` says what is wrong with a name (or None); ``check`` raises the ``ConfigError``. A path is
made from names only through ``component``, ``key`` and ``under``: each part must be one path
component (not empty, not ``.`` or ``..``, no separator, no NUL, at most 255 bytes), so a path built
from names stays under its root whatever the names are — also for names that never met ``check``
(read back from a run.json or a history table).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from biaseval.errors import ConfigError

# 48: the longest file name made of names, an embedding plot's
# embedding-<suite>-<system>[<condition>]-<language>.png, is then at most 210 bytes, with room for a
# temporary name's suffix below the 255 bytes file systems allow
MAX_BYTES = 48
# a run id: the config's name, a UTC time stamp and six hex digits (run/driver.py new_run_id)
RUN_ID_BYTES = MAX_BYTES + 32
PUNCTUATION = frozenset("._-+=")
# letters, combining marks (Devanagari's vowel signs), decimal digits; not enclosing marks (Me)
_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Nd"})
RULE = "a name is letters, digits and . _ - + =, starting with a letter or a digit"
COMPONENT_BYTES = 255


def problem(name: object, max_bytes: int = MAX_BYTES) -> str | None:
    """What makes ``name`` unfit to be a name, or None when it is fine."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not text"
    if not name:
        return "is empty"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "holds a lone surrogate (not valid Unicode text)"
    if size > max_bytes:
        return f"is {size} bytes long in UTF-8; at most {max_bytes}"
    bad = next((c for c in name if not _allowed(c)), None)
    if bad is not None:
        return f"holds {_show(bad)}; {RULE}"
    if unicodedata.category(name[0]) not in _CATEGORIES - {"Mn", "Mc"}:
        return f"starts with {_show(name[0])}; {RULE}"
    if ".." in name:
        return "holds '..'"
    if name.endswith("."):
        return "ends with '.'"
    if unicodedata.normalize("NFC", name) != name:
        return f"is not in Unicode normal form NFC (write it as {unicodedata.normalize('NFC', name)!r})"
    return None


def check(name: object, what: str = "name", max_bytes: int = MAX_BYTES) -> str:
    """``name`` when it is a fit name, else a ``ConfigError`` saying why (``what``: e.g. "system name")."""
    reason = problem(name, max_bytes)
    if reason is not None:
        raise ConfigError(f"{what} {_quote(name)} {reason}")
    return name  # type: ignore[return-value]


def component(text: str, what: str = "path component") -> str:
    """``text`` when it can only be one file or folder name (in a local path or an object-store key)."""
    if not isinstance(text, str) or text in ("", ".", ".."):
        reason = "is not a file or folder name"
    elif any(c in text for c in "/\\\0"):
        reason = "holds a path separator or NUL"
    elif any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        reason = "holds a lone surrogate (not valid Unicode text)"
    elif (size := len(text.encode("utf-8"))) > COMPONENT_BYTES:
        reason = f"is {size} bytes long; a file name holds at most {COMPONENT_BYTES}"
    else:
        return text
    raise ConfigError(f"{what} {_quote(text)} {reason}: it cannot be made into a path")


def key(*parts: str) -> str:
    """A relative path (an object-store key, a file under a run directory) of one component per part."""
    return "/".join(component(p) for p in parts)


def under(root: str | Path, *parts: str) -> Path:
    """``root/part/...``, each part one path component: the path stays under ``root``."""
    path = Path(root)
    for part in parts:
        path = path / component(part)
    return path


def _allowed(c: str) -> bool:
    return c in PUNCTUATION or unicodedata.category(c) in _CATEGORIES


def _show(c: str) -> str:
    name = unicodedata.name(c, "")
    code = f"U+{ord(c):04X}" + (f" {name}" if name else "")
    return f"{c!r} ({code})" if c.isprintable() else code


def _quote(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}…({len(str(value))} characters)"


def _pydantic_name(value: str) -> str:
    reason = problem(value)
    if reason is not None:
        raise PydanticCustomError("name", "{name} {reason}", {"name": _quote(value), "reason": reason})
    return value


# the rule as a field's type (``name: Name``): a model's error names the file, line and field
Name = Annotated[str, AfterValidator(_pydantic_name)]
