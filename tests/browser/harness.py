"""Drive the dashboard in a real browser: start `streamlit run app.py`, wait on its own state.

Shared by the browser tests (tests/browser/conftest.py) and benchmarks/app_speed.py.
Waits are on the app's "script finished" state (the ``data-test-script-state`` attribute that
Streamlit puts on its root element), never on sleeps: ``wait_for_run(page, action)`` performs an
action and returns once a script run it caused has finished.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("PERFMODEL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# Counts finished script runs: running -> notRunning transitions of Streamlit's root element.
RUN_COUNTER = """
window.__perfmodelRuns = 0;
new MutationObserver((mutations) => {
  for (const m of mutations) {
    if (m.oldValue === 'running' && m.target.getAttribute('data-test-script-state') === 'notRunning') {
      window.__perfmodelRuns += 1;
    }
  }
}).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
"""
# Idle: the last run finished and no placeholder skeleton is left (a page still being laid out).
IDLE = (
    "document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'"
    " && !document.querySelector('[data-testid=stSkeleton]')"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(log_path: Path | None = None, root: Path = ROOT):
    """Start the dashboard of the checkout ``root`` (default: this one) on a free port, wait for
    /_stcore/health, yield its URL, stop it."""
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log_path = log_path or ARTIFACTS / "streamlit.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 90
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                        if r.read().decode().strip() == "ok":
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not become healthy; see {log_path}")
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def new_page(browser, app_url: str):
    """A fresh browser context (a new Streamlit session) with the run counter installed."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.add_init_script(RUN_COUNTER)
    pg = context.new_page()
    pg.app_url = app_url
    return pg


def wait_idle(page, timeout: float = 90_000) -> None:
    page.wait_for_function(IDLE, timeout=timeout)


def wait_for_run(page, action, timeout: float = 90_000) -> None:
    """Do ``action()`` and wait until a script run started after it has finished."""
    before = page.evaluate("window.__perfmodelRuns || 0")
    action()
    page.wait_for_function(f"(window.__perfmodelRuns || 0) > {before} && {IDLE}", timeout=timeout)


#: Every drawn Plotly chart in the page.
PLOT = ".js-plotly-plot"


def go_to(page, title: str, timeout: float = 180_000) -> None:
    """Click a page in the sidebar navigation (same session) and wait until its title is shown and the
    run has finished (the title, not a run count: under load the click's run can finish before the
    count is read, and a CI run once waited on it in vain)."""
    link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=re.compile(f"^{title}$"))
    link.first.click()
    shown = f"[...document.querySelectorAll('h1')].some((h) => h.textContent.trim().startsWith({title!r}))"
    page.wait_for_function(f"{shown} && {IDLE}", timeout=timeout)


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, "a traceback is shown"


def open_app(page, path: str = "") -> None:
    """Load the app (optionally a page path such as 'scaling') and wait for its first run."""
    wait_for_run(page, lambda: page.goto(f"{page.app_url}/{path}"))


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def figure(locator) -> dict:
    """The Plotly figure drawn in a chart element, as plotly.js holds it.

    Returns {"data": traces, "layout": the layout as given, "axes": {axis name: {range, type,
    domain, labels (the tick labels drawn), length and offset (pixels)}}, "boxes": {"legend",
    "title", "subtitle": their bounding boxes on the page, or None}}."""
    locator.first.wait_for()
    return locator.first.evaluate("""(el) => {
        const plain = (v) => JSON.parse(JSON.stringify(v, (k, x) =>
            (ArrayBuffer.isView(x) ? Array.from(x) : (x && x._inputArray ? Array.from(x._inputArray) : x))));
        const axes = {};
        for (const [k, ax] of Object.entries(el._fullLayout)) {
            if (/^[xy]axis\\d*$/.test(k)) axes[k] = {range: ax.range, type: ax.type, domain: ax.domain,
                labels: (ax._vals || []).map(v => v.text), length: ax._length, offset: ax._offset};
        }
        const box = (sel) => { const e = el.querySelector(sel); if (!e) return null;
            const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
        return {data: plain(el.data), layout: plain(el.layout), axes: axes,
                boxes: {legend: box('.legend'), title: box('.gtitle'), subtitle: box('.gtitle-subtitle')}};
    }""")


def chart_titled(page, title: str) -> dict:
    """The figure (:func:`figure`) of the chart whose title starts with ``title``."""
    loc = page.locator(PLOT).filter(has=page.locator(".gtitle", has_text=re.compile("^" + re.escape(title))))
    return figure(loc)
