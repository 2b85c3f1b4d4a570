"""A table from cells already rendered: the one table writer of the render layer (the data
tables, ``hooks/render/tables.py``, and the run cost table, ``hooks/render/timing.py``).

It writes HTML that Markdown still reads inside (md_in_html: ``markdown="span"`` on each
cell, so a cell may hold inline code, a link or a placeholder, as in a pipe table) and gives
every body cell its column's heading as ``data-label``: on a phone the guide's stylesheet
(``docs/assets/guide.css``) shows each row as a card, every figure under its heading,
instead of a table wider than the screen.
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
