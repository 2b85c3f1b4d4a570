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

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from .data import file_stamp, relative
from .errors import RenderError
from .languages import LANGUAGES

STRINGS_FILE = Path(__file__).with_name("interface.yaml")


class AttributeString(BaseModel):
    model_config = ConfigDict(extra="allow")
    attribute: str
    en: str


class InterfaceStrings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    attributes: list[AttributeString]


_loaded: dict[str, tuple[tuple[int, int], InterfaceStrings]] = {}


def interface_strings(path: Path = STRINGS_FILE) -> InterfaceStrings:
    """The strings, each with a text for every language of the site (read again when the
    file changes). Raises RenderError naming the file and key."""
    stamp = file_stamp(path)
    if (cached := _loaded.get(str(path))) and cached[0] == stamp:
        return cached[1]
    try:
        strings = InterfaceStrings.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except yaml.YAMLError as exc:
        raise RenderError(f"{relative(path)}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        raise RenderError(f"{relative(path)}: {'.'.join(str(p) for p in error['loc'])}: {error['msg']}") from None
    for i, entry in enumerate(strings.attributes):
        missing = [lang for lang in LANGUAGES if not isinstance(getattr(entry, lang, None), str)]
        if missing:
            raise RenderError(f"{relative(path)}: attributes.{i} ({entry.en!r}): missing translation for {', '.join(missing)}")
    _loaded[str(path)] = (stamp, strings)
    return strings


def translate_interface(html: str, lang: str) -> str:
    """``html`` with every listed ``attribute="English"`` in ``lang``."""
    for entry in interface_strings().attributes:
        english = f'{entry.attribute}="{html_lib.escape(entry.en)}"'
        if english in html:
            html = html.replace(english, f'{entry.attribute}="{html_lib.escape(getattr(entry, lang))}"')
    return html
