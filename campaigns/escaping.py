"""How text from rows (names of targets, products, scenarios, specs; server settings; commands) goes into
the files benchapp exports: one rule per format, used by every export.

CSV (the API's `?format=csv` for results and comparisons, the comparison page's download, error bodies):
a text cell that a spreadsheet would run as a formula — starting with `=`, `+`, `-`, `@`, a tab or a
carriage return (OWASP "CSV injection": `=cmd|' /C calc'!A0`, `@SUM(…)`) — gets a leading `'`, so it
stays text. Numbers stay numbers: -3.5 is a value, not a formula.

Markdown (the comparison's `.md` download): `<`, `>` and `&` are HTML-escaped, so a name such as
`<script>…` is shown, never run, by whatever renders the file; backslashes and brackets are escaped so a
name cannot make a link or an image; line breaks become spaces so a name cannot start a line of its own;
in table cells pipes are escaped so a cell stays one cell. Code (sysbench commands) goes in a fence longer
than any run of backticks inside it.
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """`value`, or for text a spreadsheet would read as a formula, that text behind a `'`."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_row(values: Iterable[Any]) -> list[Any]:
    return [csv_cell(value) for value in values]


_MARKDOWN_PUNCTUATION = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "\r": " ", "\n": " "})


def markdown_text(value: Any) -> str:
    """Text from a row, safe in a Markdown line (heading, list item, paragraph)."""
    return html.escape(str(value), quote=False).replace("\r\n", " ").translate(_MARKDOWN_PUNCTUATION)


def markdown_cell(value: Any) -> str:
    """Text from a row, safe in a Markdown table cell."""
    return markdown_text(value).replace("|", "\\|")


def markdown_code_block(text: str) -> list[str]:
    """Lines of a fenced code block holding `text` verbatim (a Markdown renderer shows code as text)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


# Fields that name a row on pages, in lists and in logs.
NAME_FIELDS = ("name", "label")


def name_problem(field: str, value: object) -> str | None:
    """Why `value` cannot be a row's name: a control character (a newline, a terminal's escape sequence) or a
    formatting one (a right-to-left override that reverses what a page shows); None for plain text."""
    import unicodedata

    if not isinstance(value, str):
        return None
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is None:
        return None
    return f"{field} holds a control or formatting character (U+{ord(bad):04X}): a name is plain text on one line"
