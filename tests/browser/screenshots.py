"""``make screenshots``: every page of both languages at 1280×800 and 390×844, as PNG files.

Builds the site (strict) as a project site under ``/REPO/``, serves it like GitHub Pages,
and saves one full-page screenshot per page and size into ``screenshots/`` (gitignored),
so a reviewer can look at the pages without a browser of their own::

    python -m tests.browser.screenshots [--out screenshots] [--site DIR]

The finder page is shown with its default choice and with one that has a price
(8 × H100, ZeRO-1), as chosen through its URL.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.browser.conftest import LAUNCH_ARGS, serve_site, site_pages
from tests.conftest import CHROMIUM, REPO_ROOT, build_site
from tests.site.test_gates_common import SUBPATH_SITE_URL

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
EXTRA = {
    "gpu-finder/?model=llama-3.1-8b&task=full-adamw&cards=8&method=zero1": "gpu-finder-8xh100",
    "fr/gpu-finder/?model=llama-3.1-8b&task=full-adamw&cards=8&method=zero1": "fr-gpu-finder-8xh100",
}


def name_of(path: str) -> str:
    return path.strip("/").replace("/", "-").removesuffix(".html") or "index"


def take(site: Path, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = []
    pages = {path: name_of(path) for path in site_pages(site)} | EXTRA
    with serve_site(site, "/REPO/") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        try:
            for size, (width, height) in SIZES.items():
                context = browser.new_context(viewport={"width": width, "height": height})
                page = context.new_page()
                for path, name in pages.items():
                    page.goto(server.url(path), wait_until="networkidle")
                    if "gpu-finder" in path:
                        page.focus("#finder-model")  # the reference answers load when the form is used
                        page.wait_for_selector('#finder-form[data-ready="true"]', timeout=10_000)
                    target = out / f"{name}-{size}.png"
                    page.screenshot(path=str(target), full_page=True)
                    shots.append(target)
                context.close()
        finally:
            browser.close()
    return shots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "screenshots")
    parser.add_argument("--site", type=Path, help="an already built site (built with SITE_URL=.../REPO/)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            result = build_site(site, env={"SITE_URL": SUBPATH_SITE_URL})
            if result.returncode != 0:
                print(result.stderr[-4000:], file=sys.stderr)
                return 1
        shots = take(site, args.out)
    print(f"{len(shots)} screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
