"""Reading line-aligned text files the way upstream datasets ship them."""

from __future__ import annotations

from pathlib import Path

from biaseval.errors import DataError


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file: CRLF or LF, a leading BOM dropped, trailing empty lines ignored.

    Lines keep their inner whitespace except the line ending; empty lines inside the file are kept
    (they are items too, and a misalignment must show up in the counts).
    """
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not valid UTF-8 ({exc.reason})") from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
