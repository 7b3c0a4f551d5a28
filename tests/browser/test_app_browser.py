"""The dashboard as a person uses it: a real server, headless Chromium, clicks and downloads.

Every wait is on the app's own "script finished" state (see conftest.wait_for_run).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from perfmodel import FitResult
from perfmodel.data.datasets import DEFAULT_DATASET, load_dataset

from .harness import (
    IDLE as HARNESS_IDLE,
    PLOT,
    ROOT,
    chart_titled,
    figure,
    go_to,
    no_exception,
    open_app,
    screenshot,
    wait_for_run,
)

pytestmark = pytest.mark.browser


def chart(page, x_title: str):
    """The Plotly chart whose x-axis title contains ``x_title``, once it is drawn (a loaded machine
    draws the page's charts one after another)."""
    c = page.locator(PLOT).filter(has=page.locator(".xtitle", has_text=x_title)).first
    try:
        c.wait_for()
    except Exception:  # playwright's TimeoutError: say which chart was missing
        raise AssertionError(f"no chart with x-axis title containing {x_title!r}") from None
    return c


def sidebar_formula(page) -> str:
    """The fitted formula with its numbers, as the sidebar shows it."""
    box = page.locator('[data-testid="stSidebar"] .st-key-sidebar_formula')
    box.first.wait_for()
    return box.first.inner_text()


def test_opens_on_bundled_dataset_and_results_charts_draw(page):
    open_app(page)
    no_exception(page)
    assert page.get_by_text("Current data:").count() >= 1
    page.wait_for_selector(PLOT)  # the overview chart of the data page
    go_to(page, "Results")
    page.wait_for_selector(f"{PLOT} .scatterlayer .point")
    assert page.locator(PLOT).count() >= 3
    n_cfg = load_dataset(DEFAULT_DATASET).n_configurations
    # parity chart: a marker per configuration; contributions: a stacked bar per term and configuration
    assert chart(page, "measured time").locator(".scatterlayer .point").count() >= n_cfg
    assert chart(page, "configuration").locator(".barlayer .point").count() >= 2 * n_cfg
    assert page.get_by_text("MAPE, in-sample").count() == 1
    no_exception(page)
    assert not page.js_errors


def test_plotly_js_loads_with_the_first_message_from_a_hidden_element(page):
    """The Export page draws no chart, yet Streamlit's Plotly bundle is fetched: the hidden preload
    element imports it with the page's first message (ui/preload.py), and takes no room above the title."""
    from ui.preload import KEY, _chunk

    assert _chunk(), "no PlotlyChart chunk in the installed Streamlit: ui/preload.py sends nothing"
    open_app(page, "export")
    page.wait_for_selector('h1:has-text("Export")')
    assert page.locator(PLOT).count() == 0
    page.wait_for_function(
        "(name) => performance.getEntriesByType('resource').some(e => e.name.endsWith(name))",
        arg=_chunk(),
        timeout=30_000,
    )
    box = page.locator(f".st-key-{KEY}")
    assert box.count() == 1 and not box.is_visible()
    gap = page.evaluate("""() => {  // the title starts where the main block's content does: no gap above it
        const main = document.querySelector('[data-testid=stMainBlockContainer]');
        const title = document.querySelector('[data-testid=stMainBlockContainer] h1').closest('[data-testid=stElementContainer]');
        return title.getBoundingClientRect().top - main.getBoundingClientRect().top - parseFloat(getComputedStyle(main).paddingTop);
    }""")
    assert abs(gap) < 1, f"the hidden preload element leaves {gap:.0f} px above the page title"
    go_to(page, "Results")  # Streamlit's own import of the chunk finds the module loaded: one fetch
    page.wait_for_selector(f"{PLOT} .main-svg")
    assert (
        page.evaluate(
            "(name) => performance.getEntriesByType('resource').filter(e => e.name.endsWith(name)).length", _chunk()
        )
        == 1
    )
    no_exception(page)
    assert not page.js_errors


def test_upload_map_fit_and_see_metrics(page, tmp_path):
    # A data-parallel job from a known formula, written as a semicolon CSV with its own column names.
    rows = []
    for p in (1, 2, 4, 8, 16):
        for b in (32, 128):
            t = 3 + 2000 / (p * b) * b**0.9 * 1e-3 + 0.05 * np.log2(p)
            rows += [(p, b, 50000, t), (p, b, 50000, t * 1.01)]
    csv = tmp_path / "my_timings.csv"
    pd.DataFrame(rows, columns=["workers", "batch_size", "samples", "seconds"]).to_csv(csv, sep=";", index=False)

    open_app(page)
    wait_for_run(page, lambda: page.get_by_text("Upload a file").click())
    wait_for_run(page, lambda: page.locator('input[type="file"]').set_input_files(str(csv)))
    page.get_by_text("Read my_timings.csv as CSV").wait_for()
    wait_for_run(page, lambda: page.get_by_role("button", name="Use this data").click())
    no_exception(page)
    page.get_by_text(re.compile(r"Current data: .*my_timings\.csv")).wait_for()
    runs = page.locator('[data-testid="stMetric"]').filter(has_text="Runs (rows used)")
    assert runs.locator('[data-testid="stMetricValue"]').inner_text() == "20"
    go_to(page, "Results")
    value = (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text="MAPE, in-sample")
        .locator('[data-testid="stMetricValue"]')
        .inner_text()
    )
    assert re.fullmatch(r"\d+(\.\d+)? %", value), value
    assert float(value.split()[0]) < 5
    no_exception(page)


def test_upload_a_throughput_and_fit_the_time_it_gives(page, tmp_path):
    """images/s from T = 2 + 60/p seconds per run of 1200 images: the form takes the column as a
    throughput, the work per run typed in makes the time 1200 / rate, and the fit finds the formula."""
    csv = tmp_path / "rates.csv"
    pd.DataFrame(
        {
            "gpus": [1, 1, 2, 2, 4, 4, 8, 8],
            "images_per_sec": [1200 / (2 + 60 / p) * f for p in (1, 2, 4, 8) for f in (1, 1.001)],
        }
    ).to_csv(csv, index=False)
    open_app(page)
    wait_for_run(page, lambda: page.get_by_text("Upload a file").click())
    wait_for_run(page, lambda: page.locator('input[type="file"]').set_input_files(str(csv)))
    page.get_by_text("Read rates.csv as CSV").wait_for()
    box = page.locator('[data-testid="stCheckbox"]').filter(has_text="It is a throughput")
    assert box.locator("input").is_checked()
    work = page.locator('input[aria-label="Work per run (units, with a throughput)"]')
    work.fill("1200")
    work.press("Tab")  # inside a form the value is sent with the button
    wait_for_run(page, lambda: page.get_by_role("button", name="Use this data").click())
    no_exception(page)
    page.get_by_text("1200 / images_per_sec").first.wait_for()
    screenshot(page, "data-throughput")
    go_to(page, "Results")
    value = (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text="MAPE, in-sample")
        .locator('[data-testid="stMetricValue"]')
        .inner_text()
    )
    assert float(value.split()[0]) < 1, value
    go_to(page, "Scaling")  # the headline gives the rate beside the time: 1200 / (2 + 60/8) = 126 images/s
    page.locator('[data-testid="stAlert"]').filter(has_text=re.compile(r"that is 126(\.\d+)? ")).first.wait_for()
    no_exception(page)
    # the chart draws the rate when asked: the measured runs are the uploaded rates
    radio = page.locator('[data-testid="stRadio"]').filter(has_text="Show on the chart")
    wait_for_run(page, lambda: radio.get_by_text("throughput (images_per_sec)").click())
    no_exception(page)
    fig = chart_titled(page, "Throughput as workers grow")
    [runs] = [t for t in fig["data"] if t.get("name") == "measured runs"]
    assert sorted(runs["y"]) == pytest.approx(sorted(1200 / (2 + 60 / p) * f for p in (1, 2, 4, 8) for f in (1, 1.001)))
    assert fig["layout"]["yaxis"]["title"]["text"] == "predicted images_per_sec"
    screenshot(page, "scaling-throughput")


LIVE_FORMULA = (
    "() => { const k = document.querySelector('.st-key-live_formula .katex-html'); return k ? k.textContent : null; }"
)


def test_moving_lambda_refits_and_redraws_with_no_other_click(page):
    open_app(page, "model?lam=0.001")  # from here each step right changes the formula's digits
    page.locator(".st-key-live_formula .katex").wait_for()
    before, sidebar_before = page.evaluate(LIVE_FORMULA), sidebar_formula(page)
    parity_before = sum(
        len(t["x"])
        for t in figure(page.locator(".st-key-live_chart .js-plotly-plot"))["data"]
        if t.get("mode") == "markers"
    )
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="λ").locator('input[type="range"]')
    old = slider.input_value()
    for _ in range(2):  # 1e-3 -> 3e-3 -> 0.01: a larger λ, nothing else pressed
        formula = page.evaluate(LIVE_FORMULA)
        slider.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"(old) => {{ const v = ({LIVE_FORMULA})(); return v && v !== old; }}", arg=formula)
    assert slider.input_value() != old
    # the link and the sidebar follow (a full run after the fragment's; under load the run after the
    # first step can finish before the second step's, so wait for the last λ, not for any change)
    page.wait_for_function("() => window.location.href.includes('lam=0.01')")
    page.wait_for_function(
        "(old) => { const e = document.querySelector('[data-testid=stSidebar] .st-key-sidebar_formula');"
        " return e && e.innerText !== old; }",
        arg=sidebar_before,
    )
    page.wait_for_function(HARNESS_IDLE)
    no_exception(page)
    assert page.evaluate(LIVE_FORMULA) != before
    assert "lam=0.01" in page.url
    # the chart beside the formula is drawn again (once)
    page.wait_for_function("document.querySelectorAll('.st-key-live_chart .js-plotly-plot').length === 1")
    fig = figure(page.locator(".st-key-live_chart .js-plotly-plot"))
    assert sum(len(t["x"]) for t in fig["data"] if t.get("mode") == "markers") == parity_before > 0
    assert page.locator('[data-testid="stMain"]').get_by_text("λ = 0.01").count() >= 1
    # the λ strip under the slider marks the current λ among the values tried
    strip = figure(page.locator(".st-key-live_strip .js-plotly-plot"))
    assert sorted(strip["data"][-1]["customdata"]) == pytest.approx([1e-3, 3e-3, 0.01])
    assert strip["layout"]["shapes"][0]["x0"] == pytest.approx(0.01)
    assert not page.js_errors


def test_scaling_page_draws_curves_and_extrapolation_zone(page):
    open_app(page, "scaling")
    no_exception(page)
    page.wait_for_selector(f"{PLOT} .scatterlayer .trace")
    first = page.locator(PLOT).first
    assert first.locator(".scatterlayer .trace").count() >= 2  # predicted curve and measured points
    assert first.locator(".scatterlayer .point").count() > 0  # measured points drawn
    # the extrapolation zone is a shaded rectangle (a layout shape) with its label
    assert first.locator(".shapelayer path").count() >= 1
    assert first.get_by_text(re.compile("extrapolat", re.I)).count() >= 1
    assert page.locator(PLOT).count() >= 2  # the stacked contributions (and speedup) charts too
    shot = screenshot(page, "scaling")
    assert shot.stat().st_size > 10_000
    if os.environ.get("PERFMODEL_UPDATE_DOCS"):  # the README's picture, the page as first seen: on request
        page.screenshot(path=str(ROOT / "docs" / "scaling.png"))  # only, so a test run leaves the tree clean


def test_scaling_shows_the_interval_band_its_range_and_what_to_measure_next(page):
    """The intervals are computed after the page is first drawn; then the curve gains its band (the point
    prediction inside it), the headline its range, and the advise panel its recommendation."""
    open_app(page, "scaling")
    page.get_by_text("Ranges are 90 % intervals").wait_for(timeout=60_000)
    page.wait_for_function(HARNESS_IDLE)
    no_exception(page)
    fig = figure(page.locator(PLOT).first)
    names = [t.get("name") for t in fig["data"]]
    assert "90 % interval" in names
    band = [t for t in fig["data"] if t.get("name") == "90 % interval"]
    high, low = np.array(band[0]["y"], float), np.array(band[1]["y"], float)
    line = [t for t in fig["data"] if t.get("name") == "model (extrapolated)"][0]
    y = np.array([v if v is not None else np.nan for v in line["y"]], float)
    ok = np.isfinite(y)
    assert np.all(low[ok] < y[ok]) and np.all(y[ok] < high[ok])
    width = (high - low) / (high + low)
    assert width[-1] > width[0]  # wider at the far end of the extrapolation than at the smallest p
    headline = page.locator('[data-testid="stAlert"]').filter(has_text="the model predicts").inner_text()
    assert re.search(r"\(\d[\d.]*–\d[\d.]* (s|min|h)\)", headline), headline
    assert page.get_by_text("What to measure next").count() == 1
    assert page.get_by_text(re.compile(r"Measure p = \d+ next")).count() == 1
    assert not page.js_errors


def test_downloads_parse(page, tmp_path):
    open_app(page, "export")
    no_exception(page)
    with page.expect_download() as info:
        page.get_by_role("button", name="Download model JSON").click()
    model_path = tmp_path / "model.json"
    info.value.save_as(model_path)
    res = FitResult.load(model_path)
    meas = load_dataset(DEFAULT_DATASET)
    assert res.n_rows == meas.n_rows
    pred = res.predict(meas)
    assert np.all(np.isfinite(pred)) and np.all(pred > 0)
    assert res.metrics["mape"] == pytest.approx(float(np.mean(np.abs(pred - meas.y) / meas.y) * 100), rel=1e-9)

    with page.expect_download() as info:
        page.get_by_role("button", name="Download HTML report").click()
    html_path = tmp_path / "report.html"
    info.value.save_as(html_path)
    html = html_path.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") or "<html" in html[:200].lower()
    assert "plotly" in html and "Plotly.newPlot" in html
    assert not re.search(r"<script[^>]+src=[\"']https?://", html), "the report needs the network"
    data = json.loads(json.dumps(res.to_dict()))
    assert data["expression"] in html or res.formula().split("=")[1].strip()[:10] in html


def test_malformed_upload_shows_error_and_app_keeps_working(page, tmp_path):
    bad = tmp_path / "broken.csv"
    bad.write_bytes(b"PARAMETER p\nPOINTS ( 1 ) ( 2 )\nREGION r\nDATA 1.0 abc\n")
    open_app(page)
    wait_for_run(page, lambda: page.get_by_text("Upload a file").click())
    wait_for_run(page, lambda: page.locator('input[type="file"]').set_input_files(str(bad)))
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="abc")
    alert.first.wait_for()
    assert "line 4" in alert.first.inner_text()
    no_exception(page)
    # the bundled data is still in use and the other pages still work
    go_to(page, "Results")
    page.wait_for_selector(f"{PLOT} .scatterlayer .point")
    no_exception(page)


def test_lambda_path_keeps_its_expander_open_with_the_result_and_use_button(page):
    open_app(page, "model")
    page.locator(".st-key-live_formula .katex").wait_for()
    wait_for_run(page, lambda: page.get_by_text("Choose λ by validation (λ path)").click())
    wait_for_run(page, lambda: page.get_by_role("button", name="Compute the λ path").click(), timeout=120_000)
    no_exception(page)
    use = page.get_by_role("button", name=re.compile(r"^Use λ = "))
    assert use.is_visible()
    assert page.locator(PLOT).filter(has=page.locator(".gtitle", has_text="Regularisation path")).first.is_visible()
    label = use.inner_text()
    wait_for_run(page, lambda: use.click())
    # λ is set and refitted at once; the message shows beside the button, which stays in view
    page.get_by_text("picked by cross-validation").first.wait_for()
    assert page.get_by_role("button", name=re.compile(r"^Use λ = ")).is_visible()
    page.wait_for_function("(v) => location.search.includes('lam=' + v)", arg=f"{float(label.split('= ')[1]):g}")
    no_exception(page)
