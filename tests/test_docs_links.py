"""Every relative link in README.md and docs/ leads to a file that exists, and to a heading there."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO


def _anchors(path: Path) -> set[str]:
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#+\s+(.*)", line)
        if heading:  # GitHub's rule: lower case, punctuation dropped, spaces to hyphens
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


def test_relative_links_resolve():
    broken = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://|mailto:", link):
                continue
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {link} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(REPO)}: {link} (no such heading)")
    assert not broken, "\n".join(broken)
