"""The artifact tests' fixtures (tests/verify/artifact_refusal.py): a module's copy of the built site."""

from tests.verify.artifact_refusal import copied, site  # noqa: F401 (fixtures)
