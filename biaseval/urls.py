"""The one rule for every URL biaseval sends to (docs/backends.md, "Credentials"): a backend's
endpoint, base_url, server_url or azure_endpoint, an object store's endpoint, the monitor's webhook
and report link, a dataset mirror.

``check_url`` accepts ``https://HOST...``, and ``http://`` only to this host (``localhost``, an address
of 127.0.0.0/8 or ``::1``) unless the field's ``allow_insecure_http`` says the network is trusted:
credentials and texts never cross a network in clear text by default. It refuses what a client
library could read otherwise than it does — spaces and control characters (``urlsplit`` silently
drops some), backslashes, a host that is not plain ASCII letters, digits, dots and hyphens or a
bracketed IPv6 address, a bad port — and credentials in the URL (``user:password@``: they belong in
the environment). Its messages name the scheme and host, never the path or query, which may be a
token. Callers say which field: ``systems.S.options.base_url: ...`` (config validation, exit 2).

Redirects (``opener``): a request carrying a credential follows none (a redirect is an error naming
where it pointed, by scheme and host); one without follows a redirect only to a URL this rule accepts.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
import urllib.error
import urllib.request
from urllib.parse import urlsplit

INSECURE_HTTP_HINT = ("use https://, or set allow_insecure_http: true if the network to it is trusted "
                      "(a proxy or an emulator on a private network)")
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_NETLOC = re.compile(rf"(?:(?P<name>{_LABEL}(?:\.{_LABEL})*)|\[(?P<ipv6>[0-9a-f:.]+)\])(?::[0-9]{{1,5}})?",
                     re.IGNORECASE)


def is_loopback(host: str | None) -> bool:
    """``localhost``, an address of 127.0.0.0/8 or ``::1``, as written (a name is not resolved, and
    spellings a resolver may also take for these, such as ``127.1``, are not loopback here)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, allow_insecure_http: bool = False, carries: str = "credentials and texts") -> str:
    """``url`` when biaseval may send to it; else ValueError saying why (naming scheme and host at most).
    ``carries``: what the requests hold, for the message."""
    if not isinstance(url, str) or not url:
        raise ValueError("must be an https:// URL")
    if any(c.isspace() or unicodedata.category(c)[0] == "C" for c in url):
        raise ValueError("holds a space or a control character")
    if "\\" in url:
        raise ValueError("holds a backslash (libraries disagree on what it means)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("is not a well-formed URL (its host or port)") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not url[len(scheme):].startswith("://"):
        raise ValueError("must be an https:// URL (http:// only to this host)")
    if "@" in parts.netloc:
        raise ValueError("holds credentials (user:password@); give them in the environment instead")
    netloc = _NETLOC.fullmatch(parts.netloc)
    if netloc is None:
        raise ValueError("needs a host of ASCII letters, digits, dots and hyphens (an IDN in its xn-- form) or a "
                         "bracketed IPv6 address, then at most a port")
    host = parts.hostname or ""
    if netloc["ipv6"] is not None:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError("has a bracketed host that is not an IPv6 address") from None
    if port == 0:
        raise ValueError("has port 0")
    if scheme == "http" and not allow_insecure_http and not is_loopback(host):
        raise ValueError(f"http:// to {host!r}, which is not a loopback address, would send {carries} in clear "
                         f"text; {INSECURE_HTTP_HINT}")
    return url


def insecure_http(url: str | None) -> bool:
    """Whether ``url`` is plain ``http://`` to another host than this one."""
    return bool(url) and url.strip().lower().startswith("http://") and not is_loopback(_host_of(url))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: how logs and run.json name a URL whose path may be a token."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port is a malformed URL
    except ValueError:
        return "(malformed URL)"
    netloc = parts.netloc.rpartition("@")[2].lower()
    return f"{parts.scheme.lower()}://{netloc}" if parts.scheme and netloc else "(malformed URL)"


def _host_of(url: str) -> str | None:
    try:
        return urlsplit(url.strip()).hostname
    except ValueError:
        return None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A request with a credential on it: a redirect is an error, never a second request."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(req.full_url, code, f"{msg}: a redirect to {origin(newurl)}, not followed with "
                                                         f"the credential on; give the final URL", headers, fp)


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """A request without a credential: a redirect is followed only to a URL the rule accepts."""

    def __init__(self, allow_insecure_http: bool):
        self.allow_insecure_http = allow_insecure_http

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        try:
            check_url(newurl, allow_insecure_http=self.allow_insecure_http)
        except ValueError as exc:
            raise urllib.error.HTTPError(req.full_url, code, f"{msg}: a redirect to {origin(newurl)}, refused: {exc}",
                                         headers, fp) from None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def opener(*, credential: bool, allow_insecure_http: bool = False) -> urllib.request.OpenerDirector:
    """urllib's opener under the rule: with ``credential`` (an auth header), redirects are not followed."""
    handler = _NoRedirects() if credential else _CheckedRedirects(allow_insecure_http)
    return urllib.request.build_opener(handler)
