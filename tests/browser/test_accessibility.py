"""Accessibility, in Chromium, on every page of both languages (served under /REPO/):

- axe-core (npm, pinned in package.json; ``npm ci`` puts it in node_modules/) finds no
  serious or critical violation;
- every image and plot has a text alternative, written in the page's language:
  hunspell accepts it in that language, and a translated page does not reuse the
  other language's alternative.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.browser.conftest import AXE, site_pages
from tests.site.test_gates_spelling import misspelled, tokens

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BLOCKING = {"serious", "critical"}


def page_language(path: str) -> str:
    return "fr" if path.startswith("fr/") else "it"


@pytest.fixture(scope="module")
def audits(every_page):
    """{page path: (axe violations, text alternatives of its images)} for every page, from its
    one load (``every_page``, tests/browser/conftest.py: axe runs on the page as served, its
    Content-Security-Policy enforced, after the policy's own checks were read)."""
    if not AXE.exists():
        message = f"axe-core missing: run `npm ci` at the repository root ({AXE})"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return {path: (load["axe"], load["alternatives"]) for path, load in every_page.items()}


def test_axe_finds_no_serious_or_critical_violation(audits):
    blocking = {
        path: [f"{v['impact']} {v['id']} ({v['help']}): {v['nodes']}" for v in violations if v["impact"] in BLOCKING]
        for path, (violations, _) in audits.items()
    }
    assert not {path: found for path, found in blocking.items() if found}


def test_axe_ran_on_every_page(audits, site_server):
    assert sorted(audits) == sorted(site_pages(site_server.root))
    assert "" in audits and "fr/" in audits and all(isinstance(v, list) for v, _ in audits.values())


def test_images_have_a_text_alternative(audits):
    missing = {
        path: [i["src"] or i["tag"] for i in images if not (i["alt"] or "").strip()]
        for path, (_, images) in audits.items()
    }
    assert not {path: m for path, m in missing.items() if m}


@pytest.mark.spelling
def test_text_alternatives_are_in_the_page_language(audits):
    wrong = {}
    with tempfile.TemporaryDirectory() as workdir:
        for path, (_, images) in audits.items():
            lang = page_language(path)
            words = {w for image in images for w in tokens(image["alt"] or "")}
            if bad := misspelled(words, lang, Path(workdir)):
                wrong[path] = sorted(bad)
    assert not wrong, "image alternatives with words not in the page's language"


def test_translated_pages_do_not_reuse_alternatives(audits):
    reused = {}
    for path, (_, images) in audits.items():
        if page_language(path) != "fr" or path[3:] not in audits:
            continue
        italian = {(i["alt"] or "").strip() for i in audits[path[3:]][1]} - {""}
        if same := italian & {(i["alt"] or "").strip() for i in images}:
            reused[path] = sorted(same)
    assert not reused
