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

from tests.browser.conftest import site_pages
from tests.conftest import REPO_ROOT
from tests.site.test_gates_spelling import misspelled, tokens

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}

# Text alternatives of images, <svg role=img>, <canvas> and role=img elements, as the
# accessibility tree names them (alt, aria-label, aria-labelledby, <title>).
ALTERNATIVES_JS = """() => {
  const hidden = el => el.closest('[aria-hidden="true"], [hidden]') ||
                       ['presentation', 'none'].includes(el.getAttribute('role'));
  const label = el => {
    if (el.getAttribute('aria-labelledby'))
      return el.getAttribute('aria-labelledby').split(/\\s+/)
        .map(id => (document.getElementById(id) || {}).textContent || '').join(' ');
    if (el.hasAttribute('aria-label')) return el.getAttribute('aria-label');
    if (el.tagName === 'IMG') return el.getAttribute('alt');
    const title = el.querySelector(':scope > title');
    return title ? title.textContent : null;
  };
  const images = document.querySelectorAll(
    'article img, article svg[role="img"], article canvas, article [role="img"]');
  return [...images].filter(el => !hidden(el)).map(el => ({
    tag: el.tagName.toLowerCase(),
    src: (el.getAttribute('src') || '').slice(0, 80),
    alt: label(el),
  }));
}"""


def page_language(path: str) -> str:
    return "fr" if path.startswith("fr/") else "it"


@pytest.fixture(scope="module")
def audits(chromium, site_server):
    """{page path: (axe violations, text alternatives of its images)} for every page."""
    if not AXE.exists():
        message = f"axe-core missing: run `npm ci` at the repository root ({AXE})"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # axe goes in as an inline script, which the pages' policy blocks (as it should: see
    # test_content_security_policy.py); the audit is of the page, not of the policy
    context = chromium.new_context(bypass_csp=True)
    page = context.new_page()
    results = {}
    for path in site_pages(site_server.root):
        page.goto(site_server.url(path), wait_until="networkidle")
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']}))
            .violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))""")
        results[path] = (violations, page.evaluate(ALTERNATIVES_JS))
    context.close()
    return results


def test_axe_finds_no_serious_or_critical_violation(audits):
    blocking = {path: [f"{v['impact']} {v['id']} ({v['help']}): {v['nodes']}" for v in violations if v["impact"] in BLOCKING]
                for path, (violations, _) in audits.items()}
    assert not {path: found for path, found in blocking.items() if found}


def test_axe_ran_on_every_page(audits):
    assert "" in audits and "fr/" in audits and all(isinstance(v, list) for v, _ in audits.values())


def test_images_have_a_text_alternative(audits):
    missing = {path: [i["src"] or i["tag"] for i in images if not (i["alt"] or "").strip()]
               for path, (_, images) in audits.items()}
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
