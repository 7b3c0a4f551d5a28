"""Browser-test fixtures: a real `streamlit run app.py` and headless Debian Chromium.

Tests wait on the app's own state (the `data-test-script-state` attribute that Streamlit
puts on its root element), never on sleeps: `wait_for_run(page, action)` performs an action
and returns once a script run it caused has finished.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("PERFMODEL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

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
IDLE = ("document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'"
        " && !document.querySelector('[data-testid=stSkeleton]')")


def _chromium_or_fail():
    if shutil.which(CHROMIUM) or Path(CHROMIUM).exists():
        return CHROMIUM
    msg = f"Chromium not found at {CHROMIUM}; install Debian's chromium (scripts/test.sh does)"
    if os.environ.get("CI"):
        pytest.fail(msg)  # in CI a missing browser is a failure, not a skip
    pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url():
    port = _free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
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
            proc.kill()
            log.close()
            pytest.fail(f"streamlit did not become healthy; see {ARTIFACTS / 'streamlit.log'}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def browser():
    exe = _chromium_or_fail()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.call_failed = report.failed
    return report


@pytest.fixture
def page(request, browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.add_init_script(RUN_COUNTER)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.app_url = app_url
    pg.js_errors = errors
    yield pg
    if getattr(request.node, "call_failed", False):  # keep what the browser showed for the failure
        screenshot(pg, f"failed-{request.node.name}")
    context.close()


def wait_idle(page, timeout: float = 90_000) -> None:
    page.wait_for_function(IDLE, timeout=timeout)


def wait_for_run(page, action, timeout: float = 90_000) -> None:
    """Do ``action()`` and wait until a script run started after it has finished."""
    before = page.evaluate("window.__perfmodelRuns || 0")
    action()
    page.wait_for_function(f"(window.__perfmodelRuns || 0) > {before} && {IDLE}", timeout=timeout)


def open_app(page, path: str = "") -> None:
    """Load the app (optionally a page path such as 'scaling') and wait for its first run."""
    wait_for_run(page, lambda: page.goto(f"{page.app_url}/{path}"))


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
