"""The Groups page in headless Chromium: first visit, the bundled models × platforms table compared."""

from __future__ import annotations

import re

import pytest

from perfmodel.data.datasets import load_frame

from .harness import open_app, screenshot, wait_for_run

pytestmark = pytest.mark.browser

PLOT = ".js-plotly-plot"


def test_groups_page_compares_the_bundled_groups_on_first_visit(page):
    open_app(page, "groups")
    page.wait_for_selector('h1:has-text("Groups")')
    page.wait_for_selector(f"{PLOT} .barlayer .point", timeout=90_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    expected = load_frame("tf-cnn-all").groupby(["model", "platform"]).ngroups
    assert page.get_by_text(f"{expected} of {expected} groups fitted").count() == 1
    # the headline's best speedup with its 90 % range, e.g. "scales best (7.9× (7.6–8.0×) speedup"
    assert page.get_by_text(re.compile(r"scales best \(\d+(\.\d+)?× \(\d+(\.\d+)?–\d+(\.\d+)?×\) speedup")).count() == 1
    curves, bars = page.locator(PLOT).nth(0), page.locator(PLOT).nth(1)
    assert "workers p" in curves.locator(".xtitle").first.text_content()
    # shown at first: every model on the first group's platform, one legend entry each
    frame = load_frame("tf-cnn-all")
    n_models = frame[frame["platform"] == frame["platform"].iloc[0]]["model"].nunique()
    assert curves.locator(".legendtext").filter(has_text="/").count() == n_models
    traces = bars.locator(".barlayer .trace")
    assert traces.count() >= 2  # start-up / compute / communication stacks
    assert traces.first.locator(".point").count() == n_models
    screenshot(page, "groups_page")
    # switching to speedup redraws the curves with the ideal line
    wait_for_run(page, lambda: page.get_by_text("speedup", exact=True).first.click())
    page.locator(PLOT).nth(0).locator(".legendtext").filter(has_text="ideal").first.wait_for()
    screenshot(page, "groups_page_speedup")
