"""Apertium, the rule-based MT engine, run offline from its Debian packages (apertium, apertium-eng-spa, ...).

One ``apertium`` process translates a whole request. The texts go in as HTML paragraphs
(``-f html``), which Apertium keeps as unbreakable blocks, so every text comes back in its own
paragraph, in order — plain lines are not safe: some pairs join or split them. Line breaks inside a
text are kept (Apertium carries them through a paragraph as formatting), each line's spaces
normalised: a two-line text comes back as two lines. A ``pair`` of
several modes joined by ``|`` (``eng-spa|spa-ita``) pipes one into the next: a pivot through
Spanish gives English→Italian offline. The version recorded on every row is the installed
language-pair packages' versions.
"""

from __future__ import annotations

import hashlib
import html
import re
import shutil
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from biaseval.errors import ConfigError
from biaseval.system_packages import APERTIUM_MODES, MissingPackages
from biaseval.translate.base import (
    TRANSLATORS,
    BatchLimits,
    BatchOutput,
    Retry,
    TextTranslator,
    language_pairs,
)

_PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.DOTALL)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _lines(text: str) -> str:
    """``text`` with each line's white space collapsed to single spaces, blank lines dropped."""
    return "\n".join(line for line in (" ".join(part.split()) for part in _LINE_BREAK.split(text)) if line)

# ISO 639-1 -> the ISO 639-3 codes Apertium's pair names use.
ISO3 = {"en": "eng", "es": "spa", "ca": "cat", "fr": "fra", "pt": "por", "it": "ita", "de": "deu",
        "gl": "glg", "eu": "eus", "oc": "oci", "ro": "ron", "nl": "nld", "sv": "swe", "da": "dan",
        "nb": "nob", "nn": "nno", "hi": "hin", "ur": "urd"}


class ApertiumOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pair: str | None = Field(default=None, description="mode name, e.g. eng-spa, or a pivot chain such as "
                                                       "eng-spa|spa-ita (default: from the language pair)")
    command: str = Field(default="apertium", description="the apertium executable (or a wrapper)")
    data_dir: str | None = Field(default=None, description="apertium -d: a pair's directory instead of the installed modes")
    mark_unknown: bool = Field(default=False, description="keep Apertium's * marks on unknown words")
    max_texts: int = Field(default=2000, ge=1, description="texts per process")


def mode_package(mode: str) -> str:
    """The Debian package that installs an Apertium mode (by its language pair's name when not known)."""
    return APERTIUM_MODES.get(mode, f"apertium-{mode}")


def _mode_installed(mode: str, executable: str | None) -> bool:
    places = [Path("/usr/share/apertium/modes")]
    if executable:
        places.append(Path(executable).resolve().parent.parent / "share" / "apertium" / "modes")
    return any((place / f"{mode}.mode").exists() for place in places)


@TRANSLATORS.register("apertium")
class ApertiumTranslator(TextTranslator):
    """Apertium rule-based MT, offline, one process per batch of texts."""

    Options = ApertiumOptions
    options: ApertiumOptions
    provider = "Apertium"
    OPERATIONAL = frozenset({"command", "max_texts"})

    def __init__(self, system, options, *, config_dir=None):
        super().__init__(system, options, config_dir=config_dir)
        self.executable = shutil.which(options.command)
        if self.executable is None:
            raise MissingPackages(["apertium"], f"systems.{system}: {options.command!r} not found (or set options.command)")
        self._versions: dict[str, str] = {}

    @classmethod
    def preflight(cls, system, options, suites, targets, config_dir) -> None:
        """Every language pair has a mode: one ``pair`` serves a single language pair; without one,
        both languages need an Apertium code. (The executable and modes may be on the workers only.)"""
        pairs = language_pairs(suites, targets)
        if options.pair and len(pairs) > 1:
            shown = ", ".join(f"{s}->{t}" for s, t in sorted(pairs))
            raise ConfigError(f"systems.{system}.options.pair: {options.pair!r} would translate every language pair "
                              f"({shown}); limit the system's targets to one, or leave pair unset")
        for (src, tgt), suite in sorted(pairs.items()):
            if not options.pair and (src not in ISO3 or tgt not in ISO3):
                raise ConfigError(f"systems.{system}: no Apertium code for {src!r} or {tgt!r} (suite {suite}); "
                                  f"set options.pair, or leave {tgt} out of the system's targets")

    def mode(self, src: str, tgt: str) -> str:
        if self.options.pair:
            return self.options.pair
        try:
            return f"{ISO3[src]}-{ISO3[tgt]}"
        except KeyError:
            raise ConfigError(f"systems.{self.system}: no Apertium code for {src!r} or {tgt!r}; set options.pair") from None

    @classmethod
    def limits_for(cls, options) -> BatchLimits:
        return BatchLimits(max_items=options.max_texts, max_units=1_000_000)

    def version(self, mode: str) -> str:
        """``apertium-<mode> <package version>`` (per mode of a chain), or a digest of the mode file
        when dpkg does not know it."""
        if "|" in mode:
            return " | ".join(self.version(m) for m in mode.split("|"))
        if mode not in self._versions:
            package = f"apertium-{mode}"
            try:
                out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                                     capture_output=True, text=True, timeout=10)
                version = out.stdout.strip() if out.returncode == 0 else ""
            except (OSError, subprocess.TimeoutExpired):
                version = ""
            if not version:
                modes = Path(self.options.data_dir or "/usr/share/apertium/modes") / f"{mode}.mode"
                version = "mode sha256:" + hashlib.sha256(modes.read_bytes()).hexdigest()[:12] if modes.exists() else "unknown"
            self._versions[mode] = f"{package} {version}"
        return self._versions[mode]

    def translate_batch(self, texts, src, tgt, *, timeout):
        chain = self.mode(src, tgt)
        document = "".join(f"<p>{html.escape(_lines(t))}</p>\n" for t in texts)
        deadline = time.monotonic() + timeout
        for mode in chain.split("|"):
            self._check_mode(mode)
            command = [self.executable]
            if self.options.data_dir:
                command += ["-d", self.options.data_dir]
            if not self.options.mark_unknown:
                command.append("-u")
            command += ["-f", "html", mode]
            done = subprocess.run(command, input=document, capture_output=True, text=True,
                                  timeout=max(deadline - time.monotonic(), 0.1))
            if done.returncode != 0:
                raise RuntimeError(f"apertium {mode} exited with {done.returncode}: {done.stderr.strip()[:500]}")
            document = done.stdout
        out = _PARAGRAPH.findall(document)
        if len(out) != len(texts):
            raise RuntimeError(f"apertium {chain} returned {len(out)} paragraphs for {len(texts)} texts")
        return BatchOutput([_lines(html.unescape(o)) for o in out], model=self.version(chain))

    def _check_mode(self, mode: str) -> None:
        """A mode that is not installed fails its texts naming its Debian package (Apertium's own exit
        says only that the mode does not exist)."""
        if self.options.data_dir or _mode_installed(mode, self.executable):
            return
        raise MissingPackages([mode_package(mode)], f"systems.{self.system}: the Apertium mode {mode!r} is not installed")

    @classmethod
    def missing_system_packages(cls, options, pairs):
        """Apertium itself, and the package of each mode these pairs need that is not installed."""
        executable = shutil.which(options.command)
        modes = {m for src, tgt in pairs for m in (options.pair or f"{ISO3.get(src, src)}-{ISO3.get(tgt, tgt)}").split("|")}
        needed = [] if executable else ["apertium"]
        if not options.data_dir:
            needed += [mode_package(m) for m in sorted(modes) if not _mode_installed(m, executable)]
        return tuple(dict.fromkeys(needed))

    def classify(self, exc):
        if isinstance(exc, subprocess.TimeoutExpired):
            return Retry()
        return super().classify(exc)
