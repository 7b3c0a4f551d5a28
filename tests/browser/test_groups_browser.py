"""The Groups page in headless Chromium: first visit, the bundled models × platforms table compared."""

from __future__ import annotations

import re

import pytest

from perfmodel.data.datasets import load_frame

from .harness import chart_titled, no_exception, open_app, screenshot, wait_for_run, wait_idle

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


#: Per table: (width of its content, width shown) in pixels; content wider than shown hides columns.
TABLE_WIDTHS = """() => Array.from(document.querySelectorAll('[data-testid=stDataFrame]')).map(df => {
    const sc = df.querySelector('.dvn-scroller');
    return [sc.scrollWidth, sc.clientWidth, sc.scrollHeight, sc.clientHeight];
})"""


def test_groups_tables_show_every_column_and_row_and_the_page_speaks_one_unit(page):
    """Issue 21 item 7: the Groups table hid its columns off the right edge at the default width, and the
    time chart was in seconds; now every column and every group is in view without scrolling, and the
    time chart, the split chart and the constants' headers share one unit."""
    open_app(page, "groups")
    page.get_by_text(re.compile(r"(\d+) of \1 groups fitted")).first.wait_for(timeout=300_000)
    wait_idle(page, 300_000)
    no_exception(page)
    widths = page.evaluate(TABLE_WIDTHS)
    assert len(widths) == 2
    for content_w, shown_w, content_h, shown_h in widths:
        assert content_w <= shown_w + 1, widths  # no column hidden off the right edge
        assert content_h <= shown_h + 1, widths  # no group hidden below
    curves = chart_titled(page, "Run time of each group as it scales")
    unit = re.fullmatch(r"predicted time \((h|min|s|ms)\)", curves["layout"]["yaxis"]["title"]["text"]).group(1)
    split = chart_titled(page, "Where each group's time goes")
    assert split["layout"]["xaxis"]["title"]["text"] == f"predicted time ({unit})"
    assert page.get_by_text(f"Constants in {unit} per unit of their term").count() == 1
    screenshot(page, "groups_tables")
