"""Named datasets, each pinned to an upstream commit with the SHA-256 of every file biaseval reads.

Where a dataset is looked for, in order:
1. ``$BIASEVAL_DATA_DIR/<dir>`` — a directory laid out like the upstream repositories
   (``Gender-Bias-Hi-En-Eval/``, ``mt_gender/``, ...).
2. The user cache, ``$BIASEVAL_CACHE_DIR`` (default ``~/.cache/biaseval``), under ``datasets/<dir>@<commit>``.
3. A download of the upstream archive at the pinned commit (``$BIASEVAL_ARCHIVE_MIRROR`` replaces
   ``https://github.com``), verified file by file before it is unpacked into the cache. The URL, and
   any redirect it answers, is held to ``biaseval.urls.check_url`` (https, or http to this host).
   ``BIASEVAL_OFFLINE=1`` forbids the download.

Every file is checked against its SHA-256 before it is used, wherever it came from.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import urllib.error
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping

from biaseval.data.yamlio import package_yaml
from biaseval.errors import DataError
from biaseval.registry import Registry
from biaseval.urls import check_url, opener

GITHUB = "https://github.com"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    dir: str
    repo: str
    commit: str
    files: Mapping[str, str]
    license: str = ""
    cite: str = ""

    @property
    def short(self) -> str:
        return f"{self.repo}@{self.commit[:7]}"

    def archive_url(self, mirror: str | None = None) -> str:
        base = (mirror or GITHUB).rstrip("/")
        return f"{base}/{self.repo}/archive/{self.commit}.tar.gz"


@cache
def registry() -> Registry[DatasetSpec]:
    reg: Registry[DatasetSpec] = Registry("dataset")
    for name, entry in package_yaml("data/datasets.yaml").items():
        reg.add(name, DatasetSpec(name=name, **entry))
    return reg


def get_spec(name: str, where: str = "") -> DatasetSpec:
    return registry().get(name, where)


def cache_root() -> Path:
    if os.environ.get("BIASEVAL_CACHE_DIR"):
        return Path(os.environ["BIASEVAL_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "biaseval"


def cache_dir(spec: DatasetSpec) -> Path:
    return cache_root() / "datasets" / f"{spec.dir}@{spec.commit[:12]}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class LocalDataset:
    """A dataset found on disk. ``path()`` hands out only registered, checksum-verified files."""

    spec: DatasetSpec
    root: Path
    origin: str  # "BIASEVAL_DATA_DIR", "cache" or "download"
    _verified: set = field(default_factory=set, compare=False, repr=False)

    def path(self, rel: str) -> Path:
        self.verify([rel])
        return self.root / rel

    def verify(self, rels: Iterable[str] | None = None) -> None:
        """Check files against the registry; raise DataError naming the first bad one."""
        for rel in self.spec.files if rels is None else rels:
            if rel in self._verified:
                continue
            expected = self.spec.files.get(rel)
            if expected is None:
                raise DataError(
                    f"{self.spec.name}: {rel!r} is not a registered file of this dataset "
                    f"(biaseval/data/datasets.yaml lists the files it may read)"
                )
            full = self.root / rel
            if not full.is_file():
                raise DataError(
                    f"{full}: missing file of dataset {self.spec.name} ({self.spec.short}); "
                    f"{_how_to_provide(self.spec)}"
                )
            actual = sha256_file(full)
            if actual != expected:
                raise DataError(
                    f"{full}: checksum mismatch for dataset {self.spec.name} ({self.spec.short}): "
                    f"expected sha256 {expected}, got {actual}. The file is corrupt or from another "
                    f"commit; restore it or run `biaseval data fetch {self.spec.name}`"
                )
            self._verified.add(rel)


def _how_to_provide(spec: DatasetSpec) -> str:
    return (
        f"provide it by setting BIASEVAL_DATA_DIR to a directory that contains {spec.dir}/ "
        f"(a checkout of https://github.com/{spec.repo} at commit {spec.commit}), or run "
        f"`biaseval data fetch {spec.name}` where the network is reachable, or unpack "
        f"{spec.archive_url()} into {cache_dir(spec)}"
    )


def resolve(name: str | DatasetSpec, *, download: bool | None = None) -> LocalDataset:
    """Find a dataset locally, or download it into the cache; raise DataError saying what is missing."""
    spec = get_spec(name) if isinstance(name, str) else name
    tried: list[str] = []
    data_dir = os.environ.get("BIASEVAL_DATA_DIR")
    if data_dir:
        root = Path(data_dir).expanduser() / spec.dir
        if root.is_dir():
            return LocalDataset(spec, root, "BIASEVAL_DATA_DIR")
        tried.append(f"BIASEVAL_DATA_DIR={data_dir} has no {spec.dir}/")
    else:
        tried.append("BIASEVAL_DATA_DIR is not set")
    cached = cache_dir(spec)
    if cached.is_dir():
        return LocalDataset(spec, cached, "cache")
    tried.append(f"not in the cache ({cached})")
    if download is None:
        download = os.environ.get("BIASEVAL_OFFLINE", "") in ("", "0")
    if not download:
        tried.append("downloads are off (BIASEVAL_OFFLINE)")
        raise DataError(f"dataset {spec.name} ({spec.short}) is not available: {'; '.join(tried)}. {_how_to_provide(spec)}")
    try:
        return fetch(spec)
    except DataError as exc:
        raise DataError(
            f"dataset {spec.name} ({spec.short}) is not available: {'; '.join(tried)}; {exc}. "
            f"{_how_to_provide(spec)}"
        ) from None


def fetch(spec: DatasetSpec, *, timeout: float = 60.0) -> LocalDataset:
    """Download the pinned archive, verify every registered file, unpack them into the cache atomically."""
    target = cache_dir(spec)
    if target.is_dir():
        return LocalDataset(spec, target, "cache")
    url = spec.archive_url(os.environ.get("BIASEVAL_ARCHIVE_MIRROR"))
    try:
        check_url(url, carries="the request")
    except ValueError as exc:
        raise DataError(f"BIASEVAL_ARCHIVE_MIRROR: {exc}") from None
    try:  # a redirect (GitHub answers one, to codeload) is followed only to a URL the same rule accepts
        with opener(credential=False).open(url, timeout=timeout) as response:
            payload = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"download of {url} failed: {reason}") from None

    members = _archive_members(payload, url)
    missing = sorted(set(spec.files) - set(members))
    if missing:
        raise DataError(f"{url}: archive lacks {len(missing)} registered file(s), first {missing[0]!r}")
    for rel, expected in spec.files.items():
        actual = hashlib.sha256(members[rel]).hexdigest()
        if actual != expected:
            raise DataError(f"{url}: {rel}: checksum mismatch, expected sha256 {expected}, got {actual}")

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.dir}.", dir=target.parent))
    try:
        for rel in spec.files:
            out = staging / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(members[rel])
        (staging / ".biaseval-dataset.json").write_text(
            json.dumps({"name": spec.name, "repo": spec.repo, "commit": spec.commit, "url": url}, indent=2)
        )
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():  # another process may have won the race; that copy is as good
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return LocalDataset(spec, target, "download")


def _archive_members(payload: bytes, url: str) -> dict[str, bytes]:
    """Regular files of a GitHub-style tarball, keyed by path without the top-level folder."""
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:*") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                parts = PurePosixPath(member.name).parts
                if len(parts) < 2 or ".." in parts or parts[0].startswith("/"):
                    continue
                fh = tar.extractfile(member)
                if fh is not None:
                    out["/".join(parts[1:])] = fh.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DataError(f"{url}: not a readable tar.gz archive ({exc})") from None
    return out


def checksums_yaml(root: Path) -> str:
    """The ``files:`` block for a registry entry, from the files under ``root``."""
    lines = ["  files:"]
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file() and not p.name.startswith(".")):
        rel = path.relative_to(root).as_posix()
        lines.append(f"    {json.dumps(rel)}: {sha256_file(path)}")
    return "\n".join(lines) + "\n"

