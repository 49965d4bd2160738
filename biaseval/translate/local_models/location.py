"""Where a local model's files are, and what pins them: a directory (relative to the config file)
or a hub id resolved in the Hugging Face cache (``locate_model``), the hub commit it resolved to
(``commit_of``), and a hash of the files that decide its outputs (``sha256_of_files``,
``weight_files``) for the model version recorded with every translation.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from biaseval.data.paths import from_file
from biaseval.errors import ConfigError

# Files whose bytes decide a local model's outputs (hashed into its version string).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5")
_CONFIG_FILES = ("config.json", "generation_config.json")
_COMMIT = re.compile(r"(?:^|/)snapshots/([0-9a-f]{40})(?:/|$)")


def sha256_of_files(paths: Sequence[Path]) -> str:
    """One SHA-256 over the names and bytes of ``paths`` (sorted by name)."""
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def weight_files(directory: Path) -> list[Path]:
    """The files of a local model directory that decide its outputs: weights and configs."""
    return [p for p in directory.iterdir()
            if p.is_file() and (p.name.endswith(_WEIGHT_SUFFIXES) or p.name in _CONFIG_FILES)]


def commit_of(resolved: str | Path) -> str | None:
    """The hub commit of a file resolved in the hub cache (``.../snapshots/<commit>/...``)."""
    match = _COMMIT.search(Path(resolved).as_posix())
    return match.group(1) if match else None


@dataclass(frozen=True)
class ModelLocation:
    """Where a model's files are: a local directory, or a hub id pinned to a commit of the cache."""

    ref: str  # what to pass to from_pretrained: the directory or the hub id
    local: Path | None
    revision: str | None  # the commit (hub) or None (local)
    config: dict[str, Any]

    def describe(self) -> str:
        return f"{self.ref}@{self.revision}" if self.revision else self.ref


def locate_model(model: str, config_dir: Path, revision: str | None, local_files_only: bool,
                 config_name: str = "config.json") -> ModelLocation:
    """Find a model directory (relative paths are relative to the config file) or its hub cache
    entry, and read its ``config_name``. Raises ConfigError when neither exists."""
    candidate = from_file(model, config_dir)
    if candidate.is_dir():
        cfg_file = candidate / config_name
        config = json.loads(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
        return ModelLocation(str(candidate), candidate.resolve(), None, config)
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ConfigError(f"model {model!r}: no such directory (relative paths are relative to {config_dir})")
    try:
        resolved = _cached(model, config_name, revision) if local_files_only else _fetched(model, config_name, revision)
    except (OSError, ValueError) as exc:
        where = "the local hub cache (local_files_only: true)" if local_files_only else "the hub"
        raise ConfigError(f"model {model!r}: not a directory and not found in {where}: "
                          f"{str(exc).splitlines()[0]}") from None
    if resolved is None:
        raise ConfigError(f"model {model!r}: no {config_name} in its hub repository")
    config = json.loads(Path(resolved).read_text(encoding="utf-8"))
    return ModelLocation(model, None, commit_of(resolved) or revision, config)


def _cached(model: str, name: str, revision: str | None) -> str:
    """A file of a hub model from the local cache alone: no request of any kind (transformers'
    ``cached_file`` still asks the hub for other things with ``local_files_only``)."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model, name, revision=revision)
    if not isinstance(found, str):
        raise OSError(f"{name} of {model!r} is not in the local hub cache")
    return found


def _fetched(model: str, name: str, revision: str | None) -> str | None:
    from transformers.utils import cached_file

    return cached_file(model, name, revision=revision, local_files_only=False)


def require_trust(loc: ModelLocation, trusted: bool, system: str) -> None:
    """ConfigError when the model ships its own code (``auto_map``, e.g. IndicTrans2) and the config
    does not say to run it."""
    if loc.config.get("auto_map") and not trusted:
        raise ConfigError(f"systems.{system}.options.trust_remote_code: {loc.ref!r} ships its own code (auto_map "
                          f"in its config); set trust_remote_code: true to run it")
