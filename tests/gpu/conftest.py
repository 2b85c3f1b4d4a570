from tests.snippets.conftest import extracted  # noqa: F401  (the scripts as extracted from the built site)
