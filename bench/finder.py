"""The finder's budgets in Chromium (issue 20): what a reader downloads before touching the
form (the default answer is in the page; no Python), then how long the calculator takes to
answer a job that is not precomputed: the first (Pyodide started cold in its worker, the
site's own files, a fresh browser context with an empty cache) and the later ones."""

from __future__ import annotations

import statistics

from bench.weight import requested_bytes
from tests.browser.conftest import LAUNCH_ARGS, recorded, serve_site
from tests.conftest import CHROMIUM

# Set the form's inputs, then time from the change event to the answer on the page.
TIMED_CHANGE = """async (values) => {
    const form = document.getElementById('finder-form');
    const ready = new Promise((resolve) => {
        const watch = new MutationObserver(() => {
            if (form.getAttribute('data-state') === 'ready') { watch.disconnect(); resolve(); }
        });
        watch.observe(form, {attributes: true, attributeFilter: ['data-state']});
    });
    const start = performance.now();
    for (const [name, value] of Object.entries(values)) document.getElementById('finder-' + name).value = value;
    form.removeAttribute('data-state');
    form.dispatchEvent(new Event('change', {bubbles: true}));
    await ready;
    if (!document.getElementById('finder-results').hasAttribute('data-answer')) throw new Error('no answer');
    return performance.now() - start;
}"""
LATER = [{"seq_len": str(n)} for n in (1024, 3000, 8192, 16384, 6000)]


def typed_first_answer_s(browser, url: str) -> float:
    """A reader in a fresh context who enters the sequence length (the worker starts on that
    focus) and types 4096 at 4 keys per second: seconds from the last key to the answer."""
    import time

    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url, wait_until="networkidle")
        page.focus("#finder-model")
        page.wait_for_selector('#finder-form[data-ready="true"]', timeout=60_000)
        page.click("#finder-seq_len")
        page.fill("#finder-seq_len", "")
        page.keyboard.type("4096", delay=250)
        start = time.perf_counter()
        page.wait_for_function(
            """() => document.getElementById('finder-form').getAttribute('data-state') === 'ready'
            && document.getElementById('finder-results').hasAttribute('data-answer')""",
            timeout=120_000,
            polling=20,
        )
        return time.perf_counter() - start
    finally:
        context.close()


def finder_timings(site, page_path: str = "gpu-finder/") -> dict:
    """``first_s``: the first job that is not precomputed, from a cold start (the change made
    at once, so the worker starts with it); ``boot_ms``: the worker's phases in that start
    (Pyodide loaded, vram.zip.zst fetched and unpacked, vram.job imported; ms since the worker started);
    ``first_use``: every file the page, its form and that first answer loaded, bytes as served
    (gzip where GitHub Pages compresses, a packed .zst as it is), by path; ``later_ms``: the median of ``LATER`` jobs
    after it (each a new sequence length); ``typed_s``: a reader typing the length
    (``typed_first_answer_s``)."""
    from playwright.sync_api import sync_playwright

    with serve_site(site, "/") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            context = browser.new_context()
            page = context.new_page()
            recorder = recorded(page)  # the worker's requests are the page's
            page.goto(server.url(page_path), wait_until="networkidle")
            page.focus("#finder-model")
            page.wait_for_selector('#finder-form[data-ready="true"]', timeout=60_000)
            first = page.evaluate(TIMED_CHANGE, {"seq_len": "4096"}) / 1000
            boot = page.evaluate("document.getElementById('finder-form').bootTimes")
            first_use = requested_bytes(site, server.origin, list(recorder.requests))
            later = [page.evaluate(TIMED_CHANGE, values) for values in LATER]
            context.close()
            typed = typed_first_answer_s(browser, server.url(page_path))
        finally:
            browser.close()
    return {
        "finder_first_s": first,
        "finder_boot_ms": boot,
        "finder_typed_s": typed,
        "finder_first_use": first_use,
        "finder_later_ms": statistics.median(later),
        "finder_later_all": later,
    }
