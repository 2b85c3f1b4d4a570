"""The site's languages, defined once: the ``languages`` of the i18n plugin in ``mkdocs.yml``.

Both the render layer (``hooks/``) and the verification pipeline (``verify/``) read them
from here, so ``verify/`` never imports ``hooks/`` and adding a language is one edit of
``mkdocs.yml``. ``LANGUAGES`` lists the locales in the order of ``mkdocs.yml``, the
default one first; ``DEFAULT_LANGUAGE`` is the one marked ``default: true`` (the site's
root, and the language the snippets' comments are written in); ``check_languages`` is the
one check that a per-language text has exactly these languages.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

MKDOCS_YML = Path(__file__).resolve().parent.parent / "mkdocs.yml"


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it


class _ConfigLoader(_SafeLoader):
    """Reads mkdocs.yml without resolving the tags MkDocs resolves (``!ENV``, ``!relative``,
    ``!!python/name:``): any value with a tag PyYAML's safe loader does not know becomes None."""


_ConfigLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def read_mkdocs_yml(path: Path = MKDOCS_YML) -> dict[str, Any]:
    """``path`` (mkdocs.yml) as a dict, read with a safe loader: a value with a tag MkDocs
    resolves itself (``!ENV``, ``!relative``, ``!!python/name:``) reads as None, and nothing in
    the file is executed. Raises OSError when it cannot be read, yaml.YAMLError when it is not YAML."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_ConfigLoader) or {}  # noqa: S506 (a SafeLoader)


def site_languages(path: Path = MKDOCS_YML) -> tuple[tuple[str, ...], str]:
    """(every locale, default first; the default locale) of the i18n plugin in ``path``.

    Raises ValueError naming ``path`` when the plugin, its languages or exactly one
    default language are missing.
    """
    plugins = read_mkdocs_yml(path).get("plugins") or []
    i18n = next((entry["i18n"] for entry in plugins if isinstance(entry, dict) and "i18n" in entry), None)
    entries = (i18n or {}).get("languages") or []
    locales = [entry.get("locale") for entry in entries if isinstance(entry, dict)]
    defaults = [entry.get("locale") for entry in entries if isinstance(entry, dict) and entry.get("default")]
    if not locales or not all(isinstance(locale, str) and locale for locale in locales) or len(defaults) != 1:
        raise ValueError(f"{path}: plugins.i18n.languages must list each locale, exactly one with default: true")
    default = str(defaults[0])  # strings, checked above
    return (default, *[str(locale) for locale in locales if locale != default]), default


LANGUAGES, DEFAULT_LANGUAGE = site_languages()


def check_languages(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` (language -> text) if it has exactly the site's languages; raises ValueError
    naming the missing ones, or the first key that is not a language of the site. The one
    check that every language is present (the data schemas and ``hooks.data.load.text`` call it)."""
    missing = [lang for lang in LANGUAGES if lang not in value]
    if missing:
        raise ValueError(f"missing translation for {', '.join(missing)}")
    unknown = [key for key in value if key not in LANGUAGES]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a language of the site ({', '.join(LANGUAGES)}, mkdocs.yml)")
    return value
