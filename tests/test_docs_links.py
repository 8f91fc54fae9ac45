"""The README and docs/ hold together: every relative link and image points to a file that exists and, with a
`#fragment`, to a heading of that file (GitHub's anchors); no line is over 300 characters; the README stays a front
door (under 200 lines). Markdown is read with markdown-it-py, so links inside code are not links."""
from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_LINE = 300

_md = MarkdownIt("commonmark").enable("table")


def github_anchor(text: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped (letters, digits, `_`, `-` and spaces kept),
    spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _heading_text(inline: object) -> str:
    return "".join(child.content for child in (inline.children or []))  # type: ignore[attr-defined]


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading's anchor, with GitHub's -1, -2 … suffixes for repeated ones (a page's, parsed once per test
    process: 46 pages link to a few)."""
    tokens = _md.parse(path.read_text())
    seen: Counter[str] = Counter()
    found = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            slug = github_anchor(_heading_text(tokens[i + 1]))
            found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
            seen[slug] += 1
    return frozenset(found)


def links(path: Path) -> list[str]:
    """The targets of the page's links and images."""
    found = []
    for token in _md.parse(path.read_text()):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
            elif child.type == "image":
                found.append(str(child.attrs["src"]))
    return found


def _relative(href: str) -> bool:
    return not urlsplit(href).scheme and not href.startswith("//")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_and_heading_that_exist(page: Path):
    broken = []
    for href in filter(_relative, links(page)):
        parts = urlsplit(href)
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not target.exists():
            broken.append(f"{href}: no such file")
        elif parts.fragment and target.suffix == ".md" and parts.fragment not in anchors(target):
            broken.append(f"{href}: no heading #{parts.fragment} in {target.relative_to(ROOT)}")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_line_is_over_300_characters(page: Path):
    long = [n for n, line in enumerate(page.read_text().splitlines(), 1) if len(line) > MAX_LINE]
    assert long == [], f"lines over {MAX_LINE} characters in {page.name}"


def test_the_readme_stays_a_front_door_under_200_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) < 200


def test_the_checks_catch_a_broken_link_and_anchor(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("# A title: `with code`, and punctuation!\n\n## Again\n\n## Again\n\n"
                    "[ok](#a-title-with-code-and-punctuation) [dup](#again-1) [missing](#nowhere) "
                    "[file](other.md) `[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n")
    assert anchors(page) == {"a-title-with-code-and-punctuation", "again", "again-1"}
    assert links(page) == ["#a-title-with-code-and-punctuation", "#again-1", "#nowhere", "other.md"]
