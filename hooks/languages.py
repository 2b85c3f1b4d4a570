"""The site's languages, as the render layer imports them: defined once in ``mkdocs.yml``
and read by ``verify.languages`` (Italian by default, the language of the code comments)."""

from typing import Any

from verify.languages import DEFAULT_LANGUAGE, LANGUAGES

__all__ = ["DEFAULT_LANGUAGE", "LANGUAGES", "check_languages"]


def check_languages(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` (language -> text) if it has exactly the site's languages; raises ValueError
    naming the missing ones, or the first key that is not a language of the site. The one
    check that every language is present (the schemas and ``hooks.data.text`` call it)."""
    missing = [lang for lang in LANGUAGES if lang not in value]
    if missing:
        raise ValueError(f"missing translation for {', '.join(missing)}")
    unknown = [key for key in value if key not in LANGUAGES]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a language of the site ({', '.join(LANGUAGES)}, mkdocs.yml)")
    return value
