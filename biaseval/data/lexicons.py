"""Occupation lexicons: one row per occupation, with its labour-statistics female share, its
stereotype label and its forms per language (biaseval/data/lexicon/occupations.csv is biaseval's own; see
biaseval/data/lexicon/README.md). Users point a template suite, or a whole run, at their own file.

A bad row fails with the file and line named: a duplicate occupation, a share outside 0..100, an
unknown stereotype, a form missing for a language the suite needs.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from biaseval.errors import ConfigError

REQUIRED = ("occupation", "female_share", "stereotype")
STEREOTYPES = ("male", "female", "neutral")


@dataclass(frozen=True)
class Lexicon:
    path: str
    digest: str  # sha256 of the file: part of the suite's fingerprint
    rows: tuple[dict[str, str], ...]
    columns: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list[str]:
        return [row[name] for row in self.rows]

    def shares(self) -> list[float]:
        return [float(row["female_share"]) for row in self.rows]


def load_lexicon_header(path: str | Path) -> tuple[str, ...]:
    """The column names of a lexicon file (empty when it cannot be read; load_lexicon says why)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return tuple(c.strip() for c in next(csv.reader(fh), []))
    except (OSError, UnicodeDecodeError):
        return ()


def load_lexicon(path: str | Path, *, need: tuple[str, ...] = ()) -> Lexicon:
    """Read and validate a lexicon CSV; ``need`` lists columns that must be present and non-empty."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read lexicon ({exc.strerror})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: lexicon is not valid UTF-8") from None
    reader = csv.DictReader(text.splitlines())
    columns = tuple(c.strip() for c in (reader.fieldnames or ()))
    missing = [c for c in (*REQUIRED, *need) if c not in columns]
    if missing:
        raise ConfigError(f"{path}:1: lexicon lacks column(s) {', '.join(missing)} (has: {', '.join(columns)})")
    rows, seen = [], {}
    for raw in reader:
        line = reader.line_num
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        if not any(row.values()):
            continue
        name = row["occupation"].lower()
        if not name:
            raise ConfigError(f"{path}:{line}: occupation: empty")
        if name in seen:
            raise ConfigError(f"{path}:{line}: occupation: {name!r} is listed twice (first on line {seen[name]})")
        seen[name] = line
        try:
            share = float(row["female_share"])
        except ValueError:
            raise ConfigError(f"{path}:{line}: female_share: {row['female_share']!r} is not a number") from None
        if not 0 <= share <= 100:
            raise ConfigError(f"{path}:{line}: female_share: {share} is outside 0..100 (a percentage)")
        if row["stereotype"] not in STEREOTYPES:
            raise ConfigError(f"{path}:{line}: stereotype: {row['stereotype']!r} is not one of {', '.join(STEREOTYPES)}")
        for column in need:
            if not row.get(column):
                raise ConfigError(f"{path}:{line}: {column}: missing form for occupation {name!r}")
        rows.append({**row, "occupation": name})
    if not rows:
        raise ConfigError(f"{path}: lexicon has no occupations")
    return Lexicon(str(path), hashlib.sha256(data).hexdigest(), tuple(rows), columns)
