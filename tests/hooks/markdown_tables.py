"""Read pipe tables back out of rendered Markdown, for assertions."""

from __future__ import annotations


def parse_tables(markdown: str) -> list[list[list[str]]]:
    """Every pipe table of ``markdown`` as rows of cells (header first, separator dropped)."""
    tables, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip().replace("\u00a0", " ").replace("\u202f", " ") for c in line.strip().strip("|").split(" | ")]
            if not all(set(c) <= {"-", ":"} for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables
