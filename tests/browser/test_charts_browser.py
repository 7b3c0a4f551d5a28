"""The charts as a stakeholder reads them, checked on the Plotly figures the browser drew.

Each test reads the figure plotly.js holds in the page (computed axis ranges, tick labels, pixel
sizes; see harness.figure), not the Python object, so it checks what is on screen.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from .harness import PLOT, chart_titled, go_to, no_exception, open_app, wait_for_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def comm_csv(tmp_path_factory):
    """A data-parallel job whose all-reduce (I·log2 p) overtakes its compute past the measured p,
    with three varying factors (workers, per-worker batch, samples)."""
    rows = []
    for p in (1, 2, 4, 8, 16):
        for b in (32, 128):
            for n in (25_000, 50_000):
                it = np.ceil(n / (p * b))
                t = 3 + 2e-3 * it * b**0.9 + 0.05 * it * np.log2(p)
                rows += [(p, b, n, t), (p, b, n, t * 1.01)]
    path = tmp_path_factory.mktemp("charts") / "allreduce_bound.csv"
    pd.DataFrame(rows, columns=["workers", "batch_size", "samples", "seconds"]).to_csv(path, index=False)
    return path


def upload(page, path) -> None:
    open_app(page)
    wait_for_run(page, lambda: page.get_by_text("Upload a file").click())
    wait_for_run(page, lambda: page.locator('input[type="file"]').set_input_files(str(path)))
    wait_for_run(page, lambda: page.get_by_role("button", name="Use this data").click())
    page.get_by_text(re.compile(r"Current data: .*allreduce_bound\.csv")).wait_for()


def log_range(values) -> tuple[float, float]:
    v = np.asarray(values, float)
    return math.log10(v.min()), math.log10(v.max())


def test_scaling_charts_fill_their_axes_and_read_at_a_glance(page, comm_csv):
    upload(page, comm_csv)
    go_to(page, "Scaling")
    no_exception(page)
    headline = page.locator('[data-testid="stAlert"]').filter(has_text="Communication overtakes compute")
    headline.first.wait_for()
    # stacked areas: the x-axis spans the curve, not 10^crossover (no empty right half)
    stack = chart_titled(page, "What the time is spent on")
    xs = [x for t in stack["data"] for x in t["x"]]
    lo, hi = log_range(xs)
    x_axis = stack["axes"]["xaxis"]
    assert x_axis["type"] == "log"
    assert x_axis["range"][0] >= lo - 0.1 and x_axis["range"][1] <= hi + 0.1, (x_axis["range"], lo, hi)
    assert any("communication > compute" in a["text"] for a in stack["layout"]["annotations"])
    # every log axis has at least four tick labels
    curve = chart_titled(page, "Run time as")
    for fig in (stack, curve):
        assert len([t for t in fig["axes"]["xaxis"]["labels"] if t]) >= 4, fig["axes"]["xaxis"]["labels"]
    # speedup on a log x-axis is log-log: the ideal line p/p0 is straight, not an exponential
    speed = chart_titled(page, "Speedup and parallel efficiency")
    assert speed["axes"]["xaxis"]["type"] == "log" and speed["axes"]["yaxis"]["type"] == "log"
    ideal = next(t for t in speed["data"] if t.get("name") == "ideal (linear)")
    lx, ly = np.log10(ideal["x"]), np.log10(ideal["y"])
    assert np.allclose(np.diff(ly) / np.diff(lx), 1.0)
    assert len([t for t in speed["axes"]["yaxis"]["labels"] if t]) >= 4
    assert not page.js_errors


def test_extend_slider_value_is_the_one_drawn_after_switching_the_factor(page):
    open_app(page, "scaling")
    page.locator(PLOT).first.wait_for()
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Extend the curve").locator('input[type="range"]')
    slider.focus()
    wait_for_run(page, lambda: page.keyboard.press("ArrowRight"))  # 4 × -> 8 ×
    assert slider.input_value() == "4"  # the option index: [1, 1.5, 2, 4, 8, ...]
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Factor on the x-axis")
    box.click()
    wait_for_run(page, lambda: page.get_by_role("option", name=re.compile(r"^b: ")).click())
    no_exception(page)
    shown = (
        page.locator('[data-testid="stSlider"]')
        .filter(has_text="Extend the curve")
        .locator('[data-testid="stSliderThumbValue"]')
        .inner_text()
    )
    assert shown.strip() == "8 ×"
    curve = chart_titled(page, "Run time as")
    x_max = max(x for t in curve["data"] for x in t["x"] if x is not None)
    assert x_max == pytest.approx(64 * 8)  # b measured up to 64, 8 × that
    headline = page.locator('[data-testid="stAlert"]').filter(has_text="At the largest measured b").inner_text()
    assert "b = 512" in headline
    # the speedup chart is still along p, on p's own log scale: the points are not squashed in a corner
    speed = chart_titled(page, "Speedup and parallel efficiency")
    assert speed["axes"]["xaxis"]["type"] == "log"
    pts = next(t for t in speed["data"] if t.get("name") == "measured (mean)")
    r = speed["axes"]["xaxis"]["range"]
    spread = (math.log10(max(pts["x"])) - math.log10(min(pts["x"]))) / (r[1] - r[0])
    assert spread > 0.4, spread


def test_parity_charts_are_square_with_enough_ticks(page):
    open_app(page, "results")
    page.locator(PLOT).first.wait_for()
    parity = chart_titled(page, "Predicted against measured")
    x, y = parity["axes"]["xaxis"], parity["axes"]["yaxis"]
    assert x["range"] == pytest.approx(y["range"]) and x["length"] == pytest.approx(y["length"], abs=2)
    assert len([t for t in x["labels"] if t]) >= 4 and len([t for t in y["labels"] if t]) >= 4
    # the legend sits inside the plot area (its empty top-left corner), not over the axis title
    legend, plot_left = parity["boxes"]["legend"], x["offset"]
    chart_left = (
        page.locator(PLOT)
        .filter(has=page.locator(".gtitle", has_text="Predicted against measured"))
        .first.bounding_box()["x"]
    )
    assert legend["left"] >= chart_left + plot_left - 1
    go_to(page, "Compare")
    page.locator(PLOT).first.wait_for(timeout=60_000)
    no_exception(page)
    cmp = chart_titled(page, "Predicted against measured, all models")
    x, y = cmp["axes"]["xaxis"], cmp["axes"]["yaxis"]
    assert x["range"] == pytest.approx(y["range"]) and x["length"] == pytest.approx(y["length"], abs=2)
    line = next(t for t in cmp["data"] if t.get("name") == "y = x (perfect)")
    assert line["x"] == line["y"]


def markers_under_legend(page, title: str) -> list:
    """The drawn markers of the chart titled ``title`` that its legend box covers."""
    chart = page.locator(PLOT).filter(has=page.locator(".gtitle", has_text=title)).first
    chart.locator(".legend").wait_for()
    lg = chart.locator(".legend").bounding_box()
    hidden = []
    for point in chart.locator(".scatterlayer .point").all():
        b = point.bounding_box()
        if (
            b
            and b["width"] > 2
            and b["x"] < lg["x"] + lg["width"]
            and lg["x"] < b["x"] + b["width"]
            and b["y"] < lg["y"] + lg["height"]
            and lg["y"] < b["y"] + b["height"]
        ):
            hidden.append(b)
    return hidden


@pytest.mark.parametrize("dataset", ["mlperf-resnet-a100", "deepbench-allreduce-p100"])
def test_no_parity_marker_hides_under_its_legend(page, dataset):
    """The Model page's small parity chart beside the λ slider had its legend inside, over the
    points near the top of the diagonal (4 of 5 bundled datasets); the Results page's is wider."""
    open_app(page, f"model?dataset={dataset}")
    page.locator(".st-key-live_formula .katex").wait_for()
    assert not markers_under_legend(page, "Predicted against measured")
    go_to(page, "Results")
    assert not markers_under_legend(page, "Predicted against measured")


def test_results_residual_panels_share_one_row(page, comm_csv):
    upload(page, comm_csv)
    go_to(page, "Results")
    res = chart_titled(page, "Residuals against each factor")
    xs = [a for name, a in res["axes"].items() if name.startswith("xaxis")]
    ys = [a for name, a in res["axes"].items() if name.startswith("yaxis")]
    assert len(xs) == 3  # p, b and N vary
    assert len({tuple(a["domain"]) for a in ys}) == 1, "a panel sits below the others"
    # the parity chart above them does not sit alone in half the page: its largest errors are beside it
    parity = page.locator(PLOT).filter(has=page.locator(".gtitle", has_text="Predicted against measured")).first
    worst = page.locator('[data-testid="stDataFrame"]').last
    p_box, w_box = parity.bounding_box(), worst.bounding_box()
    assert w_box["x"] >= p_box["x"] + p_box["width"] - 1 and w_box["y"] < p_box["y"] + p_box["height"]
    assert page.get_by_text("Largest errors").count() == 1


def test_candidates_legend_clears_the_subtitle(page):
    open_app(page, "model")
    page.get_by_text("Find terms for me (automatic search)").click()
    wait_for_run(page, lambda: page.get_by_role("button", name="Find terms for me").click(), timeout=120_000)
    page.get_by_text("How the candidates compare").click()
    fig = chart_titled(page, "Candidates: validation score against size")
    legend, sub = fig["boxes"]["legend"], fig["boxes"]["subtitle"]
    assert sub is not None and legend is not None
    assert legend["top"] >= sub["bottom"] - 1 or legend["bottom"] <= sub["top"] + 1, (legend, sub)


def test_the_scaling_band_is_visible_and_the_page_speaks_one_unit(page):
    """Issue 21: on the default dataset (98 min at p = 1 to 3 min at p = 32) the time axis is
    logarithmic at first, so the 90 % band at p = 8-32 is tens of pixels tall (about 2 px on the old
    linear axis); the headline, both time axes and the legend swatch agree with what is drawn."""
    open_app(page, "scaling")
    page.get_by_text("Ranges are 90 % intervals").wait_for(timeout=90_000)
    page.wait_for_function(
        "document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'"
    )
    no_exception(page)
    fig = chart_titled(page, "Run time as workers grow")
    y = fig["axes"]["yaxis"]
    assert y["type"] == "log" and fig["layout"]["yaxis"]["title"]["text"] == "predicted time (min)"
    high, low = (
        np.array(t["y"], float)
        for t in fig["data"]
        if t.get("name") == "90 % interval" and t.get("fill") != "none" and t.get("mode") == "lines"
    )
    px_per_decade = y["length"] / (y["range"][1] - y["range"][0])
    x = np.array(next(t for t in fig["data"] if t.get("name") == "90 % interval")["x"], float)
    at8 = int(np.argmin(np.abs(x - 8)))
    tall = np.abs(np.log10(high) - np.log10(low)) * px_per_decade
    assert tall[at8:].max() > 40, tall[at8:].max()  # pixels at p = 32
    swatch = [t for t in fig["data"] if t.get("name") == "90 % interval" and t.get("mode") == "markers"]
    assert swatch and swatch[0]["marker"]["symbol"] == "square"
    contrib = chart_titled(page, "What the time is spent on")
    # on a log time axis, the split is read as shares of the time (its far end was a sliver: issue 33)
    assert contrib["layout"]["yaxis"]["title"]["text"] == "share of the predicted time (%)"
    headline = page.locator('[data-testid="stAlert"]').filter(has_text="the model predicts").inner_text()
    assert set(re.findall(r"\d (ms|s|min|h)\b", headline)) == {"min"}, headline
    assert not page.js_errors
