"""The site's languages: Italian (default, source of the code comments) and French."""

LANGUAGES = ("it", "fr")
DEFAULT_LANGUAGE = "it"
