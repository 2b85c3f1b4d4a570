"""A table from cells already rendered: the one table writer of the render layer (the data
tables, ``hooks/render/tables.py``, and the run cost table, ``hooks/render/timing.py``).

It writes HTML that Markdown still reads inside (md_in_html: ``markdown="span"`` on each
cell, so a cell may hold inline code, a link or a placeholder, as in a pipe table) and gives
every body cell its column's heading as ``data-label``: on a phone the guide's stylesheet
(``docs/assets/guide.css``) shows each row as a card, every figure under its heading,
instead of a table wider than the screen. ``label_cells`` labels the pages' own pipe tables
(the formulas page's) the same way, in the built page.
"""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"`([^`]*)`")


def _label(heading: str) -> str:
    """A heading as attribute text: inline code as its text, escaped."""
    return html.escape(_CODE.sub(r"\1", heading), quote=True)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of ``header`` and ``rows`` (cells in Markdown), each body cell labelled with its heading."""

    def cells(tag: str, row: list[str], labelled: bool) -> str:
        return "".join(
            f'<{tag}{f" data-label={chr(34)}{_label(h)}{chr(34)}" if labelled else ""} markdown="span">{cell}</{tag}>'
            for h, cell in zip(header, row, strict=False)
        )

    body = "\n".join(f'<tr markdown="1">{cells("td", row, True)}</tr>' for row in rows)
    return (
        f'<table markdown="1">\n<thead markdown="1"><tr markdown="1">{cells("th", header, False)}</tr></thead>\n'
        f'<tbody markdown="1">\n{body}\n</tbody>\n</table>'
    )


_TABLE = re.compile(r"<table>(.*?)</table>", re.DOTALL)
_HEAD = re.compile(r"<thead>(.*?)</thead>", re.DOTALL)
_HEADING = re.compile(r"<th\b[^>]*>(.*?)</th>", re.DOTALL)
_BODY_ROW = re.compile(r"<tr>(.*?)</tr>", re.DOTALL)
_BODY_CELL = re.compile(r"<td(\s[^>]*)?>")
_TAG = re.compile(r"<[^>]+>")


def label_cells(page_html: str) -> str:
    """``page_html`` with each body cell of its Markdown pipe tables (``<table>`` without
    attributes, as Python-Markdown writes them) labelled with its column's heading, like the
    tables of ``markdown_table``: a formulas table is a card per row on a phone too."""

    def label(table: re.Match[str]) -> str:
        inner = table.group(1)
        head = _HEAD.search(inner)
        if not head or "data-label=" in inner:
            return table.group(0)
        headings = [_label(html.unescape(_TAG.sub("", h)).strip()) for h in _HEADING.findall(head.group(1))]

        def row(match: re.Match[str]) -> str:
            cells = iter(headings)
            return _BODY_CELL.sub(lambda c: f'<td{c.group(1) or ""} data-label="{next(cells, "")}">', match.group(0))

        body_start = head.end()
        return "<table>" + inner[:body_start] + _BODY_ROW.sub(row, inner[body_start:]) + "</table>"

    return _TABLE.sub(label, page_html)
