"""Browser-test fixtures: a real `streamlit run app.py` and headless Debian Chromium.

The helpers that drive the page (waiting on the app's own state, never on sleeps) live in
harness.py, shared with benchmarks/app_speed.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .harness import CHROMIUM, CHROMIUM_ARGS, new_page, running_app, screenshot


def _chromium_or_fail():
    if shutil.which(CHROMIUM) or Path(CHROMIUM).exists():
        return CHROMIUM
    msg = f"Chromium not found at {CHROMIUM}; install Debian's chromium (scripts/test.sh does)"
    if os.environ.get("CI"):
        pytest.fail(msg)  # in CI a missing browser is a failure, not a skip
    pytest.skip(msg)


@pytest.fixture(scope="session")
def app_url():
    try:
        with running_app() as url:
            yield url
    except RuntimeError as exc:
        pytest.fail(str(exc))


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
    pg = new_page(browser, app_url)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.js_errors = errors
    yield pg
    if getattr(request.node, "call_failed", False):  # keep what the browser showed for the failure
        screenshot(pg, f"failed-{request.node.name}")
    pg.context.close()
