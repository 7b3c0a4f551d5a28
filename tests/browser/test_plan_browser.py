"""The Plan page in a real browser: clicked to from the sidebar, a deadline typed in, both charts
drawn (waited on the app's state and the charts' own elements, never on time), a screenshot kept."""

from __future__ import annotations

import re

import pytest

from .harness import IDLE, PLOT, figure, go_to, no_exception, open_app, wait_for_run

pytestmark = pytest.mark.browser

SHOT = "/tmp/plan_page.png"


def chart_titled(page, title: str):
    return page.locator(PLOT).filter(has=page.locator(".gtitle", has_text=re.compile("^" + re.escape(title))))


def type_into(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    wait_for_run(page, lambda: box.press("Enter"))


def inside(inner: dict, outer: dict, slack: float = 1.0) -> bool:
    return (
        inner["left"] >= outer["left"] - slack
        and inner["right"] <= outer["right"] + slack
        and inner["top"] >= outer["top"] - slack
        and inner["bottom"] <= outer["bottom"] + slack
    )


def shoot(page, path: str) -> None:
    """The whole page: Streamlit scrolls inside its own container, so the viewport is made as tall as it."""
    height = page.evaluate("document.querySelector('[data-testid=stMain]')?.scrollHeight || 1000")
    page.set_viewport_size({"width": 1400, "height": int(height) + 40})
    page.wait_for_function(IDLE)
    page.screenshot(path=path, full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_plan_page_draws_both_charts_and_a_recommendation(page):
    open_app(page)
    go_to(page, "Plan")
    no_exception(page)
    type_into(page, "Deadline", "30m")
    headline = page.locator('[data-testid="stAlert"]').filter(has_text="Cheapest meeting the deadline (30 min)")
    headline.first.wait_for()
    frontier, deadline = chart_titled(page, "Time against cost"), chart_titled(page, "Time against workers")
    # both drawn: the frontier's points with their error bars, the probabilities as text above the points
    frontier.locator(".scatterlayer .point").first.wait_for()
    deadline.locator(".scatterlayer .textpoint").first.wait_for()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    no_exception(page)
    f, d = figure(frontier), figure(deadline)
    assert f["axes"]["xaxis"]["type"] == "log" and d["axes"]["xaxis"]["type"] == "log"
    assert f["layout"]["xaxis"]["title"]["text"] == "time (min)"
    assert f["layout"]["yaxis"]["title"]["text"] == "cost (GPU-hours)"
    assert d["layout"]["yaxis"]["title"]["text"] == "time (min)"
    # p's ticks are the powers of two, all labelled
    assert [t for t in d["axes"]["xaxis"]["labels"] if t] == ["1", "2", "4", "8", "16", "32", "64"]
    # every point's label and every probability is drawn inside the plot area (not cut off at its edge)
    for loc, fig in ((frontier, f), (deadline, d)):
        box = loc.first.bounding_box()
        xa, ya = fig["axes"]["xaxis"], fig["axes"]["yaxis"]
        outer = {
            "left": box["x"] + xa["offset"],
            "right": box["x"] + xa["offset"] + xa["length"],
            "top": box["y"] + ya["offset"],
            "bottom": box["y"] + ya["offset"] + ya["length"],
        }
        texts = loc.locator(".scatterlayer .textpoint")
        drawn = [i for i in range(texts.count()) if texts.nth(i).bounding_box()["width"] > 0]
        # a label that would cover another is left out (its hover names the point): issue 33
        assert len(drawn) >= (7 if loc is deadline else 4)
        for i in drawn:
            r = texts.nth(i).bounding_box()
            assert inside(
                {"left": r["x"], "right": r["x"] + r["width"], "top": r["y"], "bottom": r["y"] + r["height"]}, outer
            ), (i, r, outer)
    # the legend does not sit on the title
    for fig in (f, d):
        leg, title = fig["boxes"]["legend"], fig["boxes"]["title"]
        assert leg["top"] >= title["bottom"] - 1 or leg["left"] >= title["right"]
    shoot(page, SHOT)
    # a price per GPU-hour and a budget: the cost axis in money, the budget line on the frontier chart
    wait_for_run(page, lambda: page.get_by_text("per GPU-hour", exact=True).click())
    type_into(page, "Budget", "4.2")
    page.locator('[data-testid="stAlert"]').filter(has_text="Cheapest meeting the deadline").first.wait_for()
    page.get_by_text("Fastest within the budget", exact=False).first.wait_for()
    frontier.locator(".legend").filter(has_text="budget").first.wait_for()
    f = figure(frontier)
    assert f["layout"]["yaxis"]["title"]["text"] == "cost (in the price's currency)"
    no_exception(page)
    assert not page.js_errors
    shoot(page, "/tmp/plan_page_budget.png")
