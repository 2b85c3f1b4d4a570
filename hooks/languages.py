"""The site's languages, as the render layer imports them: defined once in ``mkdocs.yml``
and read by ``verify.languages`` (Italian by default, the language of the code comments)."""

from verify.languages import DEFAULT_LANGUAGE, LANGUAGES

__all__ = ["DEFAULT_LANGUAGE", "LANGUAGES"]
