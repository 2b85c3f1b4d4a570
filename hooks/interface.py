"""Interface strings that extensions write in English, in the page's language.

Python-Markdown's ``toc`` extension writes ``title="Permanent link"`` on the ¶ of every
heading, and its settings are one for the whole site, not per language: after a page is
rendered, each English attribute value listed in ``hooks/interface.yaml`` becomes the page
language's text. Only exact ``attribute="English"`` pairs change; text is never touched.

Pure: no MkDocs import; the data file is read again when it changes.
"""

from __future__ import annotations

import html as html_lib
from pathlib import Path
from typing import Any

from .data import file_stamp, parse_yaml, relative, validate

STRINGS_FILE = Path(__file__).with_name("interface.yaml")
_loaded: dict[str, tuple[tuple[int, int], list[dict[str, Any]]]] = {}


def interface_strings(path: Path = STRINGS_FILE) -> list[dict[str, Any]]:
    """The listed attribute strings (``attribute``, ``en`` and a text per language of the
    site), validated by ``InterfaceFile`` of hooks/schemas.py and read again when the file
    changes. Raises RenderError naming the file and key."""
    stamp = file_stamp(path)
    memo = str(path)
    if (cached := _loaded.get(memo)) and cached[0] == stamp:
        return cached[1]
    where = relative(path)
    text = path.read_text(encoding="utf-8")
    strings = validate(parse_yaml(text, where), "interface", where, text)["attributes"]
    _loaded[memo] = (stamp, strings)
    return strings


def translate_interface(html: str, lang: str) -> str:
    """``html`` with every listed ``attribute="English"`` in ``lang``."""
    for entry in interface_strings():
        english = f'{entry["attribute"]}="{html_lib.escape(entry["en"])}"'
        if english in html:
            html = html.replace(english, f'{entry["attribute"]}="{html_lib.escape(entry[lang])}"')
    return html
