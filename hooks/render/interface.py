"""Interface strings that extensions write in English, in the page's language.

Python-Markdown's ``toc`` extension writes ``title="Permanent link"`` on the ¶ of every
heading, and its settings are one for the whole site, not per language: after a page is
rendered, each English attribute value listed in ``hooks/render/interface.yaml`` becomes the page
language's text. Only exact ``attribute="English"`` pairs change; text is never touched.

Pure: no MkDocs import; the data file is read again when it changes.
"""

from __future__ import annotations

import html as html_lib
from pathlib import Path
from typing import Any

from hooks.cache import Memo, file_stamp
from hooks.data.load import parse_yaml, relative, validate

STRINGS_FILE = Path(__file__).with_name("interface.yaml")
_loaded = Memo()  # path -> its strings, while the file is unchanged


def interface_strings(path: Path = STRINGS_FILE) -> list[dict[str, Any]]:
    """The listed attribute strings (``attribute``, ``en`` and a text per language of the
    site), validated by ``InterfaceFile`` of hooks/data/schemas.py and read again when the file
    changes. Raises RenderError naming the file and key."""

    def parse() -> list[dict[str, Any]]:
        where = relative(path)
        text = path.read_text(encoding="utf-8")
        return [entry.model_dump() for entry in validate(parse_yaml(text, where), "interface", where, text).attributes]

    return _loaded.get(str(path), file_stamp(path), parse)


def translate_interface(html: str, lang: str) -> str:
    """``html`` with every listed ``attribute="English"`` in ``lang``."""
    for entry in interface_strings():
        english = f'{entry["attribute"]}="{html_lib.escape(entry["en"])}"'
        if english in html:
            html = html.replace(english, f'{entry["attribute"]}="{html_lib.escape(entry[lang])}"')
    return html
