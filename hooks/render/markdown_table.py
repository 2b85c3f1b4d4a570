"""A Markdown pipe table from cells already rendered: the one table writer of the render
layer (the data tables, ``hooks/render/tables.py``, and the run cost table,
``hooks/render/timing.py``)."""

from __future__ import annotations


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A pipe table; ``|`` in a cell is escaped."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *(line(row) for row in rows)])
