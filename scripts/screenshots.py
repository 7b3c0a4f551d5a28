"""Full-page screenshots of dashboard pages on the bundled default dataset, for a closing note.

    python scripts/screenshots.py --out /work/screens --prefix after
    python scripts/screenshots.py --out docs/screens --prefix page --pages Data Model Export
    python scripts/screenshots.py --root /tmp/before --out /work/screens --prefix before

Starts ``streamlit run app.py`` in ``--root`` (default: this checkout) with the browser tests'
harness (tests/browser/harness.py) and headless Chromium, opens each page in one session by its
sidebar link, waits until the app is idle (its own script state, no sleeps) and writes
``<out>/<prefix>-<page>.png``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.harness import (  # noqa: E402 (after ROOT is put on sys.path above)
    CHROMIUM,
    CHROMIUM_ARGS,
    PLOT,
    go_to,
    new_page,
    open_app,
    running_app,
    wait_idle,
)

PAGES = ("Scaling", "Results", "Compare", "Groups")
#: Pages without a chart: nothing to wait for but the app's idle state.
CHARTLESS = {"Export"}


#: The height of the tallest scrolled element: Streamlit scrolls its main area, not the document,
#: so Playwright's ``full_page`` alone captures one screen.
SCROLL_HEIGHT = """() => Math.max(document.documentElement.scrollHeight,
    ...Array.from(document.querySelectorAll('*')).filter(e => e.scrollHeight > e.clientHeight + 1)
        .map(e => e.scrollHeight + e.getBoundingClientRect().top))"""


def full_page_screenshot(page, path: Path) -> None:
    """The whole page: the window made as tall as the scrolled content, then a screenshot."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": int(page.evaluate(SCROLL_HEIGHT)) + 40})
    page.wait_for_timeout(1500)  # the charts re-lay out to the taller window (Plotly has no idle state)
    wait_idle(page)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose app.py is run")
    ap.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    ap.add_argument("--prefix", default="shot", help="file-name prefix, e.g. before or after")
    ap.add_argument("--pages", nargs="+", default=list(PAGES), help="sidebar titles of the pages")
    ap.add_argument("--dataset", help="a bundled dataset to open instead of the default (added to the file names)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with (
        running_app(args.out / f"{args.prefix}-streamlit.log", root=args.root.resolve()) as url,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = new_page(browser, url)
        open_app(page, f"?dataset={args.dataset}" if args.dataset else "")
        for title in args.pages:
            go_to(page, title)
            if title not in CHARTLESS:
                page.locator(PLOT).first.wait_for(timeout=180_000)
            if title == "Groups":  # drawn as the groups finish: wait for the last
                page.get_by_text(re.compile(r"(\d+) of \1 groups fitted")).first.wait_for(timeout=300_000)
            wait_idle(page, timeout=180_000)
            path = args.out / f"{args.prefix}-{title.lower()}{'-' + args.dataset if args.dataset else ''}.png"
            full_page_screenshot(page, path)
            print(path)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
