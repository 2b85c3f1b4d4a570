"""The browser enforces it too (issue 19): every page carries a Content-Security-Policy
(``<meta http-equiv>``, overrides/main.html; verify/theme_scripts.py). In Chromium, on the
site served as a project site: no page of either language breaks the policy while loading
or while a reader uses it (search, the finder, copy buttons, the language switch); and an
inline script, a ``javascript:`` link and a load from another origin planted in a page (in
the HTML as served, or added after the page loaded: a delay, a click, an image, a fetch,
a stylesheet) do not run or load. Violations are read from the browser's own
``securitypolicyviolation`` events; requests that reach the network are recorded by routing."""

from __future__ import annotations

import pytest

from tests.browser.conftest import GUARDED_VIEWPORT, VIOLATIONS_LISTENER, guarded_context, reset_page, site_pages

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LISTEN = VIOLATIONS_LISTENER
OUTSIDE = "https://evil.example"


@pytest.fixture(scope="module")
def guarded_page(chromium, site_server):
    """One page for the module, recording policy violations and every request that left the
    site (aborted, appended to ``page.outside``)."""
    context, outside = guarded_context(chromium, site_server.origin)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.outside = outside
    yield page
    context.close()


@pytest.fixture
def guarded(guarded_page):
    """``guarded_page`` as a new page would be: no planted route, nothing recorded yet, on about:blank."""
    reset_page(guarded_page, GUARDED_VIEWPORT)
    guarded_page.outside.clear()
    yield guarded_page
    reset_page(guarded_page, GUARDED_VIEWPORT)


def violations(page) -> list[str]:
    return page.evaluate("window.__violations")


def reported(page, directive: str) -> list[str]:
    """The violations once one of ``directive`` was reported (the browser dispatches them as tasks)."""
    page.wait_for_function("d => window.__violations.some(v => v.startsWith(d))", arg=directive, timeout=5_000)
    return violations(page)


def plant(page, site_server, path: str, html: str):
    """Serve ``path`` with ``html`` added before ``</body>``, as if the build had written it."""
    url = site_server.url(path)

    def serve(route):
        response = route.fetch()
        route.fulfill(response=response, body=response.text().replace("</body>", html + "</body>", 1))

    page.route(url, serve)
    page.goto(url, wait_until="networkidle")


def test_no_page_breaks_the_policy(every_page, site_server):
    """Every page, loaded once with the violations listener (``every_page``, tests/browser/conftest.py)."""
    assert sorted(every_page) == sorted(site_pages(site_server.root))
    for path, load in every_page.items():
        assert load["csp_meta"] == 1, path
        assert load["csp_violations"] == [], path
    assert [url for load in every_page.values() for url in load["outside"]] == []


def test_a_planted_inline_script_does_not_run(guarded, site_server):
    plant(guarded, site_server, "", "<script>window.__planted = 'ran'</script>")
    assert guarded.evaluate("window.__planted") is None
    assert "script-src-elem inline" in reported(guarded, "script-src-elem inline")


def test_a_javascript_link_does_not_run(guarded, site_server):
    plant(guarded, site_server, "fr/", '<a id="planted" href="javascript:window.__planted=\'ran\'">x</a>')
    guarded.click("#planted")
    # the browser reports the blocked link (the event waited for), and it did not run
    assert "script-src-elem inline" in reported(guarded, "script-src-elem inline")
    assert guarded.evaluate("window.__planted") is None


def test_late_loads_from_another_origin_are_blocked(guarded, site_server):
    """After the page loaded (when a browser test has stopped looking): a delayed image, a
    fetch, a script, a stylesheet, and a planted handler attribute."""
    plant(
        guarded,
        site_server,
        "gpu-finder/",
        f'<img id="late" alt="" onerror="window.__planted=1" src="{OUTSIDE}/0.png">',
    )
    guarded.evaluate(f"""() => new Promise(done => setTimeout(() => {{
        const img = document.createElement('img'); img.src = '{OUTSIDE}/1.png'; document.body.append(img);
        const script = document.createElement('script'); script.src = '{OUTSIDE}/2.js'; document.body.append(script);
        const link = document.createElement('link'); link.rel = 'stylesheet'; link.href = '{OUTSIDE}/3.css'; document.head.append(link);
        fetch('{OUTSIDE}/4').catch(() => null).then(done);
    }}, 1500))""")
    for directive in ("img-src", "script-src-elem", "style-src-elem", "connect-src"):
        reported(guarded, directive)
    assert guarded.outside == [], "nothing reached another origin"
    directives = {v.split()[0] for v in violations(guarded)}
    assert {"img-src", "script-src-elem", "style-src-elem", "connect-src"} <= directives, violations(guarded)
    assert guarded.evaluate("window.__planted") is None


def test_search_finder_copy_and_language_switch_work_under_the_policy(guarded, site_server):
    page = guarded
    page.goto(site_server.url("fr/"), wait_until="networkidle")
    page.click("input.md-search__input")
    page.keyboard.type("NCCL")
    page.wait_for_selector(".md-search-result__item", timeout=10_000)
    # the copy button of the verified block copies that block
    block = page.locator("div.highlight:has(span.filename:text-is('nccl_check.py'))")
    page.keyboard.press("Escape")
    block.scroll_into_view_if_needed()
    block.hover()
    block.locator("button.md-code__button[data-md-type=copy]").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == block.locator("code").inner_text().strip() and "import" in copied
    # the language switch
    page.hover(".md-header__option .md-select")
    page.click('a.md-select__link[hreflang="it"]')
    page.wait_for_function(
        "document.documentElement !== null && document.documentElement.lang === 'it'"
    )  # null while the next page starts
    # the finder computes in the page
    page.goto(site_server.url("gpu-finder/"), wait_until="networkidle")
    page.focus("#finder-model")  # its reference answers load when the form is used
    page.wait_for_selector('#finder-form[data-ready="true"]', state="visible", timeout=10_000)
    before = page.inner_text("#finder-results")
    page.select_option("#finder-model", "llama-3.2-1b")
    page.wait_for_timeout(300)
    assert page.inner_text("#finder-results") != before
    assert violations(page) == [] and page.outside == []
    # The calculator itself (Pyodide in the site's Web Worker) runs under the policy in
    # test_finder_jobs.py, whose pages answer 312 jobs with no violation reported.


def test_only_the_finders_pages_allow_webassembly_and_blob_workers(built_site):
    """'wasm-unsafe-eval' was on every page and used on none of them: Pyodide compiles its
    WebAssembly in the worker, which inherits the policy of the finder's page only."""
    from selectolax.lexbor import LexborHTMLParser

    from verify.theme_scripts import hosts_finder

    pages = sorted(built_site.rglob("*.html"))
    finders = []
    for path in pages:
        text = path.read_text(encoding="utf-8")
        meta = LexborHTMLParser(text).css_first('meta[http-equiv="Content-Security-Policy"]')
        policy = {part.split()[0]: part.split()[1:] for part in meta.attributes["content"].split("; ")}
        finder = hosts_finder(text)
        finders += [path.relative_to(built_site).as_posix()] if finder else []
        assert ("'wasm-unsafe-eval'" in policy["script-src"]) == finder, path
        assert policy["worker-src"] == (["'self'", "blob:"] if finder else ["'self'"]), path
        assert "'unsafe-eval'" not in policy["script-src"], path
    assert finders == ["fr/gpu-finder/index.html", "gpu-finder/index.html"]
