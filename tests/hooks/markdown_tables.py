"""Read the tables of rendered Markdown back out, for assertions: the render layer's tables
(hooks/render/markdown_table.py: HTML that Markdown reads inside, each cell's Markdown as written)."""

from __future__ import annotations

from bs4 import BeautifulSoup


def parse_tables(markdown: str) -> list[list[list[str]]]:
    """Every table of ``markdown`` as rows of cells (header first), each cell's text as the
    page source writes it (Markdown kept), no-break spaces as plain ones."""
    soup = BeautifulSoup(markdown, "html.parser")
    return [
        [
            [
                cell.get_text().strip().replace("\u00a0", " ").replace("\u202f", " ")
                for cell in row.find_all(["th", "td"])
            ]
            for row in table.find_all("tr")
        ]
        for table in soup.find_all("table")
    ]
