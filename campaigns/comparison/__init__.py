"""The comparison page laid out as the seed white papers do, with conclusions written from the numbers.

One module per concern, built on campaigns.comparison.query.comparison_build (the geometric mean over repetitions
of each cell with its spread, from one grouped query), whose shapes (cell, row, table) rows.py types once:
selection, formatting, significance, conclusions, published, layout, html, exports, report, and histogram (one
cell's merged latency histogram, on demand). Every part runs a constant number of queries, whatever the number of jobs. The names
the views, template tags and tests use are re-exported here.
"""
from __future__ import annotations

from campaigns.comparison.exports import table_header, to_csv, to_markdown
from campaigns.comparison.formatting import fmt_delta, fmt_ms, fmt_number, is_number
from campaigns.comparison.html import column_choices, table_parts
from campaigns.comparison.layout import comparison_layout, comparison_layout_cached
from campaigns.comparison.report import report_sections
from campaigns.comparison.selection import Selection
from campaigns.comparison.significance import SIGNIFICANCE_NOTE

__all__ = [
    "SIGNIFICANCE_NOTE",
    "Selection",
    "column_choices",
    "comparison_layout",
    "comparison_layout_cached",
    "fmt_delta",
    "fmt_ms",
    "fmt_number",
    "is_number",
    "report_sections",
    "table_header",
    "table_parts",
    "to_csv",
    "to_markdown",
]
