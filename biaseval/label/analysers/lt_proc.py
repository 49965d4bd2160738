"""Apertium's morphological analysers through ``lt-proc`` (lttoolbox): one process for a whole
list of words (``run_analyser``), its output stream parsed into ``Analysis`` (lemma and tags), and
the analyser files found on disk (``find_automorf``).

The stream: each word is written on its own line followed by a line holding "." (so that no
multiword entry joins two words), with the stream's special characters escaped; lt-proc answers
with units ``^surface/lemma<tag><tag>/...$`` (no analysis: unknown, ``*`` prefix). A word that
comes back as several units (a hyphenated one) is read by its last unit with letters.

Analyser files are looked for in ``/usr/share/apertium/<package>/``,
``/usr/local/share/apertium/<package>/`` and ``<lt-proc's prefix>/share/apertium/<package>/``, or
only in ``$BIASEVAL_APERTIUM_DIR`` (directly or in its ``<package>/`` subdirectory) when that is
set.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

APERTIUM_DIR_ENV = "BIASEVAL_APERTIUM_DIR"
DEFAULT_DIRS = (Path("/usr/share/apertium"), Path("/usr/local/share/apertium"))
LT_PROC_TIMEOUT_S = 600

_STREAM_SPECIAL = set("\\^$/<>@*[]{}#+~")
_UNIT = re.compile(r"\^((?:\\.|[^\\$])*)\$")
_TAG = re.compile(r"<([^<>]+)>")
_SEPARATOR = "."  # written between words so that no multiword entry joins two of them


@dataclass(frozen=True)
class Analysis:
    """One analysis of a word: its lemma and tags (of the first part of a multi-part analysis)."""

    lemma: str
    tags: tuple[str, ...]

    @property
    def pos(self) -> str:
        return self.tags[0] if self.tags else ""

    @property
    def genders(self) -> set[str]:
        return {t for t in self.tags if t in ("m", "f", "mf")}

    @property
    def singular(self) -> bool:
        return "sg" in self.tags or "sp" in self.tags


def _escape(word: str) -> str:
    return "".join("\\" + c if c in _STREAM_SPECIAL else c for c in word)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text) if "\\" in text else text


def _split_unescaped(text: str, sep: str) -> list[str]:
    if "\\" not in text:  # nothing escaped (nearly every unit): a plain split is the same
        return text.split(sep)
    parts, current, k = [], [], 0
    while k < len(text):
        c = text[k]
        if c == "\\" and k + 1 < len(text):
            current.append(text[k:k + 2])
            k += 2
            continue
        if c == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        k += 1
    parts.append("".join(current))
    return parts


def parse_unit(content: str) -> tuple[str, tuple[Analysis, ...]]:
    """The surface form and analyses of one ``^surface/analysis/...$`` unit (no analyses: unknown)."""
    surface, *readings = _split_unescaped(content, "/")
    analyses = []
    for reading in readings:
        if reading.startswith(("*", "@", "#")):
            continue
        first = _split_unescaped(reading, "+")[0]
        lemma = _unescape(first.split("<", 1)[0])
        analyses.append(Analysis(lemma, tuple(_TAG.findall(first))))
    return _unescape(surface), tuple(analyses)


def run_analyser(lt_proc: str, automorf: Path, words: Sequence[str]) -> dict[str, tuple[Analysis, ...]]:
    """Analyses of ``words`` from one ``lt-proc`` process. Each word goes on its own line followed
    by a line holding ".", so that no multiword entry spans two words; a hyphenated word that comes
    back as several units is read by its last unit with letters."""
    words = list(dict.fromkeys(words))
    if not words:
        return {}
    text = "".join(f"{_escape(w)}\n{_SEPARATOR}\n" for w in words)
    try:
        done = subprocess.run([lt_proc, str(automorf)], input=text, capture_output=True, text=True,
                              encoding="utf-8", timeout=LT_PROC_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"lt-proc {automorf} failed: {exc}") from None
    if done.returncode != 0:
        raise RuntimeError(f"lt-proc {automorf} exited with {done.returncode}: {done.stderr.strip()[:500]}")
    groups: list[list[tuple[str, tuple[Analysis, ...]]]] = [[]]
    for match in _UNIT.finditer(done.stdout):
        surface, analyses = parse_unit(match.group(1))
        if surface == _SEPARATOR:
            groups.append([])
        else:
            groups[-1].append((surface, analyses))
    if groups and not groups[-1]:
        groups.pop()
    if len(groups) != len(words):
        raise RuntimeError(f"lt-proc {automorf} returned {len(groups)} words for {len(words)}: "
                           f"the output does not line up with the input")
    out = {}
    for word, units in zip(words, groups):
        lettered = [u for u in units if any(c.isalpha() for c in u[0])]
        out[word] = lettered[-1][1] if lettered else ()
    return out


def find_automorf(package: str, filename: str, lt_proc: str | None) -> tuple[Path | None, list[Path]]:
    """The analyser file and the places looked in."""
    override = os.environ.get(APERTIUM_DIR_ENV)
    if override:
        places = [Path(override) / filename, Path(override) / package / filename]
    else:
        bases = list(DEFAULT_DIRS)
        if lt_proc:
            bases.append(Path(lt_proc).resolve().parent.parent / "share" / "apertium")
        places = list(dict.fromkeys(b / package / filename for b in bases))
    return next((p for p in places if p.is_file()), None), places
