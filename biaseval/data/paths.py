"""Paths written in a file (a config, a template suite): relative to that file's folder, never to the
directory biaseval runs from. One rule for every path a config names (docs/config.md):

- an object-store URI (``s3://…``, ``gs://…``), where a field takes one, stays as written;
- ``~`` or ``~/…`` is in your home folder;
- an absolute path is itself;
- anything else is relative to the folder of the file that wrote it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")  # a scheme of two letters or more: C:\x is a path


def is_uri(value: str) -> bool:
    return bool(_URI.match(value))


def from_file(value: str | Path, base: Path) -> Path:
    """A local path written in a file whose folder is ``base``."""
    path = Path(os.path.expanduser(str(value)))  # ~user stays as written when there is no such user
    return path if path.is_absolute() else base / path


def location_from_file(value: str, base: Path) -> str:
    """A folder that may also be an object-store URI: the URI as written, else ``from_file``."""
    return value if is_uri(value) else str(from_file(value, base))
