"""Looking for a secret in what biaseval wrote: every form a secret can take in a message (raw,
stripped, escaped by ``repr`` of a str or of its bytes, JSON-escaped, URL-encoded), and every file
of a folder read as text (Parquet files by their values and metadata, not their compressed bytes).

Written independently of ``biaseval.credentials``: these are the forms a reader could find, not the
ones the redactor happens to know."""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from urllib.parse import quote, quote_plus

import pyarrow.parquet as pq


def forms(secret: str) -> set[str]:
    """The ways ``secret`` (or its stripped value) can be spelt in a message."""
    found = set()
    for value in {secret, secret.strip()}:
        if not value:
            continue
        encoded = value.encode("utf-8", "surrogatepass")
        found |= {
            value,
            repr(value)[1:-1],
            repr(encoded)[2:-1],
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            quote(value, safe=""),
            quote(value),
            quote_plus(value),
        }
        try:
            found.add(repr(value.encode("latin-1"))[2:-1])  # http.client encodes header values as latin-1
        except UnicodeEncodeError:
            pass
    return found


def leaked_forms(secret: str, text: str) -> list[str]:
    """The forms of ``secret`` found in ``text`` (of secrets long enough to be looked for)."""
    return sorted(f for f in forms(secret) if len(f) >= 8 and f in text)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{4,}={0,2}")


def in_base64(secret: str, text: str) -> bool:
    """Whether some run of base64 characters in ``text`` decodes (at any alignment, either alphabet)
    to bytes holding ``secret``."""
    wanted = secret.encode("utf-8", "surrogatepass")
    for run in _BASE64_RUN.findall(text):
        run = run.rstrip("=")
        for start in range(4):
            chunk = run[start:]
            chunk = chunk[:len(chunk) - len(chunk) % 4]
            for alphabet in (None, b"-_"):
                try:
                    decoded = base64.b64decode(chunk.encode(), altchars=alphabet) if alphabet else \
                        base64.b64decode(chunk.encode())
                except (binascii.Error, ValueError):
                    continue
                if wanted in decoded:
                    return True
    return False


def file_text(path: Path) -> str:
    """A file as text: a Parquet file's values (every column, as JSON lines) and key-value metadata
    beside its raw bytes; any other file's bytes."""
    raw = path.read_bytes().decode("latin-1")
    if path.suffix != ".parquet":
        return raw + "\n" + path.read_bytes().decode("utf-8", errors="replace")
    table = pq.read_table(path)
    metadata = {k.decode("latin-1"): v.decode("latin-1") for k, v in (table.schema.metadata or {}).items()}
    rows = "\n".join(json.dumps(row, default=str, ensure_ascii=False) for row in table.to_pylist())
    return "\n".join([raw, json.dumps(metadata), rows])


def leaks_in_folder(folder: Path, secrets: list[str]) -> dict[str, list[str]]:
    """``{file: [forms found]}`` over every file under ``folder``."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = file_text(path)
        hits = [f"{secret!r}: {form!r}" for secret in secrets for form in leaked_forms(secret, text)]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found
