"""The artifact check's refusal of a built site, as every artifact test asserts it."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from verify.artifact import ArtifactError, check_site


def refused(site, *match: str) -> str:
    """The one-line message ``check_site`` refuses ``site`` with; fails unless each of ``match`` is in it."""
    with pytest.raises(ArtifactError) as caught:
        check_site(site, REPO_ROOT / "snippets")
    message = str(caught.value)
    assert "\n" not in message
    for part in match:
        assert part in message, message
    return message
