"""Text from a run (names, subsets, occupations, translations, providers' error messages) in Markdown,
shown as written: it never splits a table row, opens a code span or a formula, or lands as raw HTML.

Every table row of report.md and drift.md is made by ``row`` (each cell escaped by ``md``); other
lines escape what they interpolate with ``md``, or quote it with ``code``. In a table cell a ``|``
ends the cell even inside a code span (GitHub-flavoured Markdown), so it is escaped everywhere.
"""

from __future__ import annotations

import re

# what would be read as Markdown or HTML rather than shown: a backslash (it escapes), | (a table's
# cell border), ` (code), $ (math on GitHub), < (raw HTML: tags, comments, autolinks) and a & that
# starts a character reference (&lt;). A > or a & elsewhere is shown as it is ("a -> b", "R&D").
_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "$": "\\$", "<": "&lt;", "&": "&amp;"}
_SPECIAL = re.compile(r"[\\|`$<]|&(?=#?[0-9A-Za-z]+;)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # line breaks and other controls: a space


def md(value: object) -> str:
    """``value`` as Markdown text on one line, shown as written."""
    return _SPECIAL.sub(lambda m: _ESCAPES[m.group()], _CONTROL.sub(" ", str(value)))


def row(*cells: object) -> str:
    """One Markdown table row; each cell escaped (``md``)."""
    return "| " + " | ".join(md(c) for c in cells) + " |"


def code(value: object) -> str:
    """``value`` as a code span: fenced by more backticks than it holds in a row (CommonMark), on one line."""
    text = _CONTROL.sub(" ", str(value))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    # a space each side: kept off a backtick at either end, or stripped by the reader (CommonMark
    # strips one space each side of a span that begins and ends with one)
    pad = " " if text.startswith("`") or text.endswith("`") or (text[:1] == text[-1:] == " " and text.strip(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"
