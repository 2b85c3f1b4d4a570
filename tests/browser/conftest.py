"""Shared browser fixtures: the built site served over HTTP, and one headless Chromium.

What the tests here get (all generic; other browser tests may use them):

- ``subpath_site`` (session): the whole site built once with
  ``SITE_URL=https://example.github.io/REPO/``, i.e. as a GitHub *project* site.
- ``site_server`` (session): a :class:`SiteServer` serving ``subpath_site`` under
  ``/REPO/`` on 127.0.0.1, like GitHub Pages: a missing file answers 404 with the
  site's root ``404.html``; every request it answers is kept in ``server.log``.
  ``site_server.url("fr/")`` -> ``http://127.0.0.1:PORT/REPO/fr/``.
- ``serve_site(root, prefix="/")``: a context manager for any other folder or prefix.
- ``chromium`` (session): one Playwright ``Browser`` (Debian's /usr/bin/chromium,
  headless, no network of its own) for the whole session; tests open a context each.
- ``page`` (function): the worker's one reused page (``reused_page``: its cache and scripts
  stay warm), reset before and after each test (``reset_page``: about:blank, 1280x720, no
  routes, storage and cookies cleared); ``page.set_viewport_size`` for another width.
- ``measured_in_turn(pages, jobs, measure)``: many URLs loaded and measured by two (or more)
  pages in turn, one loading while another is measured.
- ``recorded(page)``: start recording every request of ``page`` (URL, resource type,
  status, failure); read ``recorder.requests`` after navigating.
- ``site_pages(root)``: every HTML page of a built site as a URL path relative to its
  root (``""``, ``"memory-formulas/"``, ``"fr/"``, ``"404.html"``, ...).
- ``browser_type_launch_args``: the same launch options, for pytest-playwright's own
  fixtures should that plugin be installed.
- ``every_page`` (session): what one load of every page of ``site_server`` showed (its
  requests, links, requests to other origins, Content-Security-Policy violations, axe-core's
  findings, its images' text alternatives), loaded once per run and shared by the xdist
  workers (test_requests.py, test_content_security_policy.py, test_accessibility.py).

Every test that needs Chromium carries ``@pytest.mark.browser`` (skipped without
Chromium and Playwright, a failure with ``REQUIRE_BROWSER=1``; see tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.conftest import CHROMIUM, REPO_ROOT, run_root
from tests.site.test_gates_common import SUBPATH_SITE_URL, html_files, page_url, subpath_site as build_subpath_site

SUBPATH = urlsplit(SUBPATH_SITE_URL).path  # "/REPO/"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# --------------------------------------------------------------------------- site
def site_pages(root: Path) -> list[str]:
    """Every HTML page of a built site, as URL paths relative to the site root."""
    return [page_url(root, page) for page in html_files(root)]


@pytest.fixture(scope="session")
def subpath_site(tmp_path_factory) -> Path:
    """The site built as a project site (``site_url`` under ``/REPO/``), once per session."""
    return build_subpath_site(tmp_path_factory)


# ------------------------------------------------------------------------- server
@dataclass
class SiteServer:
    """A static server for a built site under ``prefix``; ``log`` holds (path, status)."""

    root: Path
    prefix: str
    port: int = 0
    log: list[tuple[str, int]] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        """Absolute URL of ``path`` (relative to the site root, no leading slash)."""
        return f"{self.origin}{self.prefix}{path.lstrip('/')}"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves ``server.site.root`` under ``server.site.prefix``; a miss is a 404 with 404.html."""

    def translate_path(self, path: str) -> str:
        site: SiteServer = self.server.site  # type: ignore[attr-defined]
        url_path = unquote(urlsplit(path).path)
        if not url_path.startswith(site.prefix):
            return str(site.root / "\0outside-prefix")  # never exists
        return super().translate_path("/" + url_path[len(site.prefix) :])

    def send_error(self, code, message=None, explain=None):
        site: SiteServer = self.server.site
        page = site.root / "404.html"
        if code != 404 or not page.exists():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_request(self, code="-", size="-"):
        self.server.site.log.append((self.path, int(code) if str(code).isdigit() else 0))

    def log_message(self, format, *args):  # quiet: the log list is the record
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    """A browser that drops a connection (a cancelled prefetch) is not an error worth a traceback."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_site(root: Path, prefix: str = "/"):
    """Serve ``root`` under ``prefix`` on 127.0.0.1 (a free port) in a thread."""
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    site = SiteServer(root=root, prefix=prefix)
    handler = functools.partial(_Handler, directory=str(root))
    httpd = _QuietServer(("127.0.0.1", 0), handler)
    httpd.site = site  # type: ignore[attr-defined]
    site.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, name=f"site-server-{site.port}", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def site_server(subpath_site):
    """``subpath_site`` served under ``/REPO/``, as GitHub Pages serves a project site."""
    with serve_site(subpath_site, SUBPATH) as server:
        yield server


# ------------------------------------------------------------------------ browser
@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict:
    """Launch options for Debian's Chromium (also read by pytest-playwright, if installed)."""
    return {"executable_path": CHROMIUM, "args": LAUNCH_ARGS, "headless": True}


@pytest.fixture(scope="session")
def chromium(browser_type_launch_args):
    """One headless Chromium for the whole session (tests that use it are marked ``browser``)."""
    if not Path(CHROMIUM).exists() and os.environ.get("REQUIRE_BROWSER") != "1":
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**browser_type_launch_args)
        try:
            yield browser
        finally:
            browser.close()


DEFAULT_VIEWPORT = {"width": 1280, "height": 720}  # Playwright's default for a new context


@pytest.fixture(scope="session")
def reused_page(chromium):
    """One page, in one context, for the worker's whole session: its renderer, HTTP cache and
    compiled scripts stay warm from test to test (a fresh context per test cost more than the
    test's own work). Take it through ``page``, or reset it with ``reset_page`` after use."""
    context = chromium.new_context(viewport=DEFAULT_VIEWPORT)
    page = context.new_page()
    yield page
    context.close()


def reset_page(page, viewport: dict = DEFAULT_VIEWPORT) -> None:
    """Leave ``page`` as a new one would be: no routes of its own, the site's storage (the
    finder's pasted config.json, Material's settings) and cookies cleared, at ``viewport``, on
    about:blank (the next ``goto`` is a full load even to the same URL and fragment)."""
    page.unroute_all(behavior="ignoreErrors")
    if page.url.startswith("http"):
        with contextlib.suppress(Exception):  # a page that is still navigating: about:blank below
            page.evaluate("() => { sessionStorage.clear(); localStorage.clear(); }")
    page.context.clear_cookies()
    page.goto("about:blank")
    page.set_viewport_size(viewport)


@pytest.fixture
def page(reused_page):
    """The worker's reused page (``reused_page``), reset before and after the test: on
    about:blank at 1280x720, no routes, no storage. A test that adds a listener removes it."""
    reset_page(reused_page)
    try:
        yield reused_page
    finally:
        reset_page(reused_page)


def measured_in_turn(pages: list, jobs: list[tuple], measure) -> dict:
    """``{key: measure(page, key)}`` for each ``(key, url, viewport)`` of ``jobs``, each URL loaded
    once at that viewport (``wait_until="networkidle"``) by one of ``pages`` (open, each in a
    context of its own or not), which take the jobs in turn: one loads its next URL while another
    is measured. After each measure the page's storage is cleared (a page reset, as ``reset_page``)."""
    queue, results, loading = list(jobs), {}, {}

    def start(index: int) -> None:
        if queue:
            key, url, viewport = queue.pop(0)
            pages[index].set_viewport_size(viewport)
            pages[index].goto(url, wait_until="commit")
            loading[index] = key

    for index in range(len(pages)):
        start(index)
    while loading:
        for index in range(len(pages)):
            if index in loading:
                page, key = pages[index], loading.pop(index)
                page.wait_for_load_state("networkidle")
                results[key] = measure(page, key)
                page.evaluate("() => { sessionStorage.clear(); localStorage.clear(); }")
                start(index)
    return results


@dataclass
class Request:
    url: str
    resource_type: str
    status: int | None = None  # None: no response (blocked, failed)
    failure: str | None = None


@dataclass
class Recorder:
    requests: list[Request] = field(default_factory=list)
    detach: Callable[[], None] | None = None  # call to stop recording
    unanswered: Callable[[], int] = lambda: 0  # call: how many recorded requests have neither finished nor failed yet

    def failed(self) -> list[Request]:
        """Requests without a successful answer (4xx/5xx, or none at all)."""
        return [r for r in self.requests if r.failure or r.status is None or r.status >= 400]


def recorded(page) -> Recorder:
    """Record every request ``page`` makes from now on (blocked or failed ones too).

    Read ``recorder.requests`` after the page has loaded (``wait_until="networkidle"``);
    ``recorder.detach()`` stops recording.
    """
    recorder = Recorder()
    pending: dict[object, Request] = {}

    def on_request(request):
        entry = Request(request.url, request.resource_type)
        pending[request] = entry
        recorder.requests.append(entry)

    def on_response(response):  # the status as it arrives (requestfinished follows it)
        entry = pending.get(response.request)
        if entry:
            entry.status = response.status

    def on_finished(request):
        entry = pending.pop(request, None)
        response = request.response() if entry and entry.status is None else None
        if entry and response is not None:
            entry.status = response.status

    def on_failed(request):
        entry = pending.pop(request, None)
        if entry:
            entry.failure = request.failure or "failed"

    handlers = {
        "request": on_request,
        "response": on_response,
        "requestfinished": on_finished,
        "requestfailed": on_failed,
    }
    for event, handler in handlers.items():
        page.on(event, handler)

    def detach():
        for event, handler in handlers.items():
            page.remove_listener(event, handler)

    recorder.detach = detach
    recorder.unanswered = lambda: len(pending)
    return recorder


def settle(page, recorder: Recorder, limit_ms: int = 120_000) -> None:
    """Let ``page`` deliver the outcome of every request ``recorder`` saw start (a worker's
    request can report its end after the page's network went idle), for at most ``limit_ms`` (a bound no healthy run reaches, even on a loaded machine; it waits only while a request is unanswered):
    one still unanswered then is read as a request without an answer."""
    for _ in range(limit_ms // 50):
        if not recorder.unanswered():
            return
        page.wait_for_timeout(50)


# -------------------------------------------------------------- every page, once
AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"

# The page's own Content-Security-Policy violations, as the browser reports them.
VIOLATIONS_LISTENER = """window.__violations = [];
document.addEventListener('securitypolicyviolation',
  e => window.__violations.push(e.effectiveDirective + ' ' + (e.blockedURI || '')));"""


GUARDED_VIEWPORT = {"width": 1280, "height": 800}


def guarded_context(chromium, origin: str):
    """A 1280x800 browser context that records the page's policy violations
    (``VIOLATIONS_LISTENER``) and aborts every request to another origin than ``origin``,
    returning (context, the list those requests' URLs are appended to)."""
    context = chromium.new_context(viewport=GUARDED_VIEWPORT)
    context.add_init_script(VIOLATIONS_LISTENER)
    outside: list[str] = []

    def guard(route):
        if urlsplit(route.request.url)[:2] == urlsplit(origin)[:2]:
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    return context, outside


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

AXE_RUN_JS = """async () => (await axe.run(document, {resultTypes: ['violations']}))
    .violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))"""


def load_every_page(chromium, server: SiteServer, lanes: int = 2, take=None, done=None) -> dict:
    """Load every page of ``server`` once, each in a desktop-width page under the site's own
    Content-Security-Policy, and return ``{"origin": server.origin, "pages": {path: {...}}}``
    where each page has ``requests`` ([url, resource type, status, failure] of every request
    of its load), ``links`` (every ``a[href]`` of the rendered DOM, absolute), ``outside``
    (requests to another origin: recorded and aborted, so nothing leaves the machine),
    ``csp_meta`` (how many ``<meta http-equiv="Content-Security-Policy">``), ``csp_violations``
    (the browser's ``securitypolicyviolation`` events while loading), ``axe`` (axe-core's
    violations, or None without node_modules/axe-core) and ``alternatives`` (its images' text
    alternatives, ``ALTERNATIVES_JS``). axe runs after the rest was read, evaluated through
    the DevTools protocol, which the policy does not govern (an inline script would be blocked).

    ``lanes`` pages, each in its own ``guarded_context``, take the pages in turn: one loads
    its next page while the others are read and audited (what each records is its own).
    ``take(path)``, when given, says whether to load ``path`` (False: another loads it; it is
    then left out of the result), and ``done(path, loaded)`` receives each page once read."""
    axe = AXE.read_text(encoding="utf-8") if AXE.exists() else None
    todo = site_pages(server.root)
    pages: dict[str, dict] = {}
    opened = []
    for _ in range(min(lanes, len(todo)) or 1):
        context, outside = guarded_context(chromium, server.origin)
        opened.append({"context": context, "outside": outside, "page": context.new_page(), "path": None})
    queue = list(todo)

    def start(lane: dict) -> None:
        """Begin loading the next page to take in ``lane`` (returns once its response arrived)."""
        lane["path"] = None
        while queue and lane["path"] is None:
            path = queue.pop(0)
            lane["path"] = path if take is None or take(path) else None
        if lane["path"] is not None:
            lane["outside"].clear()
            lane["recorder"] = recorded(lane["page"])
            lane["page"].goto(server.url(lane["path"]), wait_until="commit")

    def finish(lane: dict) -> None:
        """Wait for ``lane``'s page to load (no request for 500 ms) and read it."""
        page, recorder = lane["page"], lane["recorder"]
        page.wait_for_load_state("networkidle")
        links = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
        settle(page, recorder)
        recorder.detach()
        loaded = {
            "requests": [[r.url, r.resource_type, r.status, r.failure] for r in recorder.requests],
            "links": links,
            "outside": list(lane["outside"]),
            "csp_meta": page.locator('meta[http-equiv="Content-Security-Policy"]').count(),
            "csp_violations": page.evaluate("window.__violations"),
        }
        if axe is not None:
            page.evaluate(axe)
        loaded["axe"] = page.evaluate(AXE_RUN_JS) if axe is not None else None
        loaded["alternatives"] = page.evaluate(ALTERNATIVES_JS)
        pages[lane["path"]] = loaded
        if done is not None:
            done(lane["path"], loaded)

    try:
        for lane in opened:
            start(lane)
        while any(lane["path"] is not None for lane in opened):
            for lane in opened:
                if lane["path"] is not None:
                    finish(lane)
                    start(lane)
    finally:
        for lane in opened:
            lane["context"].close()
    return {"origin": server.origin, "pages": {path: pages[path] for path in todo if path in pages}}


@pytest.fixture(scope="session")
def every_page(chromium, site_server, tmp_path_factory) -> dict:
    """``load_every_page`` of ``site_server``, once per run, shared by the xdist workers page by
    page: a worker loads each page nobody has loaded or is loading (its file lock taken without
    waiting), then waits for the other's lock on each page it left and reads what was written
    (loading it itself if nothing was). URLs of the loading worker's server are given as this
    worker's (both serve the same built site)."""
    from filelock import FileLock, Timeout

    folder = run_root(tmp_path_factory) / "every-page"
    folder.mkdir(exist_ok=True)
    paths = site_pages(site_server.root)
    saved = {path: folder / f"{index}.json" for index, path in enumerate(paths)}
    locks = {path: FileLock(str(folder / f"{index}.lock")) for index, path in enumerate(paths)}
    held: set[str] = set()

    def take(path: str, wait: bool = False) -> bool:
        try:
            locks[path].acquire(timeout=-1 if wait else 0)
        except Timeout:
            return False  # another worker is loading it
        if saved[path].exists():
            locks[path].release()
            return False
        held.add(path)
        return True

    def done(path: str, loaded: dict) -> None:
        partial = saved[path].with_suffix(".partial")
        partial.write_text(json.dumps({"origin": site_server.origin, "load": loaded}), encoding="utf-8")
        partial.replace(saved[path])
        held.discard(path)
        locks[path].release()

    try:
        load_every_page(chromium, site_server, take=take, done=done)  # what nobody else is loading
        if not all(file.exists() for file in saved.values()):
            # what another worker took: wait for it, page by page, in one lane (a worker that waits
            # holds no lock then, so two workers never wait for each other), loading what it left
            load_every_page(chromium, site_server, lanes=1, take=functools.partial(take, wait=True), done=done)
    finally:
        for path in held:
            locks[path].release()

    pages = {}
    for path in paths:
        written = json.loads(saved[path].read_text(encoding="utf-8"))
        origin, load = written["origin"], written["load"]

        def here(url: str, origin=origin) -> str:
            return site_server.origin + url[len(origin) :] if url.startswith(origin + "/") else url

        load["requests"] = [
            Request(here(url), kind, status, failure) for url, kind, status, failure in load["requests"]
        ]
        load["links"] = [here(url) for url in load["links"]]
        pages[path] = load
    return pages
