"""Secrets: what they are, how they are read, and the one redactor that keeps them out of everything
biaseval records (docs/backends.md, "Credentials").

A secret is a value that grants access: a backend's API key, a cloud session's keys and tokens, a
webhook's auth header, and a webhook URL's path and query (a chat webhook's path is its token). They
come from the environment only (never from the config, which names the variable), and are read by
``read_secret``: stripped of surrounding whitespace (a key exported from ``$(cat key.txt)`` ends with
a newline that no HTTP client accepts in a header), refused if a control character remains inside,
handed out as a ``Secret``, which never prints its value, and remembered by the redactor.

``redact`` knows every secret of this process: those read here or handed to ``remember`` (a cloud
SDK's credentials, a webhook's path), and the value of every environment variable whose name says
it holds one (``..._KEY``, ``..._TOKEN``, ``..._SECRET``, ``..._PASSWORD``, ``..._CREDENTIAL...``). It
removes each in every form a message can give it: raw and stripped, escaped by ``repr`` of a str or
of its bytes (UTF-8 or Latin-1, as ``http.client`` reports a header), JSON-escaped, URL-encoded, these
nested two deep, and base64 (basic auth's ``user:secret``, at any alignment); and then the shapes of
secrets it was never told about (bearer tokens, auth headers, AWS key ids, OpenAI keys, signatures).
A secret shorter than ``MIN_SECRET_LENGTH`` characters once stripped is not looked for by value: it
would match ordinary words.

``describe`` is how an exception becomes text anywhere biaseval records it (a shard's error column,
the translation store, a task's failure, run and drift summaries, notifications, the command line):
its type and message, redacted, then cut — never cut first, which could leave half a secret behind.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import unicodedata
from functools import lru_cache
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

from biaseval.errors import ConfigError

MIN_SECRET_LENGTH = 8
MARK = "***"

_SECRET_NAME = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# Shapes of secrets that may appear without coming from this process's environment: (pattern, replacement).
_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+"), r"\1\2***"),  # tokens in auth headers
    (re.compile(r"(?i)\b(ocp-apim-subscription-key|x-goog-api-key|api-key|authorization|x-amz-security-token)"
                r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"), r"\1\2***"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MARK),  # AWS access key ids, long-term and temporary
    (re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"), MARK),  # OpenAI API keys
    (re.compile(r"(?i)(signature=)[0-9a-f]{16,}"), r"\1***"),  # SigV4 signatures
    (re.compile(r"(?i)([?&](?:key|sig|signature|token)=)[^&\s]+"), r"\1***"),
    (re.compile(r"(?i)\b(https?://)[^/\s@\"']+@"), r"\1***@"),  # user:password@ in a URL
]

_remembered: set[str] = set()
_lock = threading.Lock()


class Secret:
    """A credential's value. ``str``, ``repr`` and f-strings show where it came from, never the value;
    ``reveal`` is for the one place that sends it (a client's key, a header)."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str):
        self._value = value
        self.source = source

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self.source}: {MARK})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __bool__(self) -> bool:
        return bool(self._value)


def read_secret(variable: str, what: str, *, required: bool = True, where: str = "") -> Secret | None:
    """The credential in environment variable ``variable`` (``what``: what it is, and ``where``: who
    wants it, for the messages), stripped of surrounding whitespace and remembered by the redactor
    (as set and as stripped). Unset or blank: a ConfigError naming the variable, or None when not
    ``required``. A control character inside the value (no HTTP header can carry one): a ConfigError
    that does not show the value."""
    raw = os.environ.get(variable, "")
    value = raw.strip()
    remember(raw)
    prefix = f"{where}: " if where else ""
    if not value:
        if required:
            raise ConfigError(f"{prefix}environment variable {variable} ({what}) is not set")
        return None
    bad = next((c for c in value if unicodedata.category(c)[0] == "C"), None)
    if bad is not None:
        raise ConfigError(f"{prefix}environment variable {variable} ({what}) holds a control character "
                          f"(U+{ord(bad):04X}) inside its value; a credential is one line of printable characters")
    return Secret(value, variable)


def remember(*values: str | None) -> None:
    """Secrets this process holds that the environment's names do not give away (a variable named in
    the config, a cloud SDK's session credentials, a webhook's path): ``redact`` removes them too."""
    with _lock:
        _remembered.update(v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_LENGTH)


def remember_url(url: str | None) -> None:
    """A URL whose path and query may be a credential (a webhook's): remembered, the host is not."""
    if not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        remember(url)
        return
    tail = urlunsplit(("", "", parts.path, parts.query, parts.fragment))  # path?query#fragment
    remember(tail, parts.path, parts.query, parts.fragment, parts.password)


def forget() -> None:
    """Drop the remembered secrets (a test's, between cases)."""
    with _lock:
        _remembered.clear()


def known_secrets() -> frozenset[str]:
    """Every secret ``redact`` looks for now: remembered ones and the environment's."""
    found = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v.strip()) >= MIN_SECRET_LENGTH}
    with _lock:
        return frozenset(found | _remembered)


def redact(text: str) -> str:
    """``text`` with every form of every known secret, and every secret-shaped token, replaced by ``***``."""
    if not text:
        return text
    pattern = _pattern(known_secrets())
    if pattern is not None:
        # until nothing is found: a replacement could complete a form with what surrounds it
        while True:
            cleaned = pattern.sub(MARK, text)
            if cleaned == text:
                break
            text = cleaned
    for shape, replacement in _PATTERNS:
        text = shape.sub(replacement, text)
    return text


def describe(exc: BaseException, limit: int = 2000) -> str:
    """An exception as biaseval records it: ``Type: message``, redacted, then cut to ``limit``."""
    return redact(f"{type(exc).__name__}: {exc}".strip())[:limit]


# --- the forms a secret takes in a message ----------------------------------------------------------

def _str_reprs(value: str) -> set[str]:
    """``repr``'s escaping of ``value`` inside a longer repr: either quote may be the escaped one."""
    plain = repr(value)[1:-1]
    single = repr("'\"" + value)[1:-1][3:]  # both quotes present: ' is the delimiter, escaped inside
    return {plain, single, single.replace("\\'", "'")}


def _bytes_reprs(value: str) -> set[str]:
    found = set()
    for encoding in ("utf-8", "latin-1"):
        try:
            data = value.encode(encoding)
        except UnicodeEncodeError:
            continue
        plain = repr(data)[2:-1]
        single = repr(b"'\"" + data)[2:-1][3:]
        found |= {plain, single, single.replace("\\'", "'")}
    return found


def _escapes(value: str) -> set[str]:
    """One level of escaping, as a message can quote a value."""
    return ({value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
             value.encode("unicode_escape").decode("ascii")}
            | _str_reprs(value) | _bytes_reprs(value))


def _base64_cores(value: str) -> set[str]:
    """The base64 characters that only ``value``'s bytes decide, wherever it starts in the encoded
    bytes (offset 0, 1 or 2 in a group of three), in both alphabets."""
    data = value.encode("utf-8", "backslashreplace")
    cores = set()
    for offset in range(3):
        skip = (3 - offset) % 3  # bytes of the value that share a group with what precedes it
        whole = data[skip:]
        whole = whole[:len(whole) - len(whole) % 3]
        if len(whole) >= 6:
            encoded = base64.b64encode(whole).decode()
            cores |= {encoded, encoded.replace("+", "-").replace("/", "_")}
    return cores


def forms(secret: str) -> set[str]:
    """Every spelling of ``secret`` that ``redact`` removes."""
    found: set[str] = set()
    for value in {secret, secret.strip()}:
        if len(value.strip()) < MIN_SECRET_LENGTH:
            continue
        escaped = {twice for once in _escapes(value) for twice in _escapes(once)}
        for text in escaped:
            found |= {text, quote(text, safe=""), quote(text), quote_plus(text)}
        found |= _base64_cores(value)
    return {f for f in found if len(f) >= MIN_SECRET_LENGTH}


@lru_cache(maxsize=32)
def _pattern(secrets: frozenset[str]) -> re.Pattern | None:
    spelled = sorted({f for s in secrets for f in forms(s)}, key=len, reverse=True)
    if not spelled:
        return None
    # longest first, so the longest spelling at a place is the one removed; case does not matter
    # (hex escapes come in both cases, and removing a few more characters costs nothing)
    return re.compile("|".join(map(re.escape, spelled)), re.IGNORECASE)
