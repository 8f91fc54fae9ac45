"""Text from the API (names of products, scenarios, specs; regression texts; run labels) in the files the client
writes: the same rules as the server's exports (benchapp's campaigns/escaping.py, which this package cannot
import; tests/test_cli_escaping.py keeps the two in step).

CSV: a text cell a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage
return) gets a leading `'`; numbers stay numbers. Markdown (`--format markdown`, `--summary` for CI): `<`, `>`
and `&` are HTML-escaped, backslashes and brackets escaped so that no link or image can be made, line breaks
become spaces, and in table cells pipes are escaped.
"""
from __future__ import annotations

import html
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_MARKDOWN_PUNCTUATION = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "\r": " ", "\n": " "})


def csv_cell(value: Any) -> Any:
    """`value`, or for text a spreadsheet would read as a formula, that text behind a `'`."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def markdown_text(value: Any) -> str:
    """Text safe in a Markdown line (heading, list item, paragraph)."""
    return html.escape(str(value), quote=False).replace("\r\n", " ").translate(_MARKDOWN_PUNCTUATION)


def markdown_cell(value: Any) -> str:
    """Text safe in a Markdown table cell."""
    return markdown_text(value).replace("|", "\\|")
