"""Exports: the model JSON round-trips, tables and CSV hold the right numbers, the Python and
LaTeX snippets are usable, and the HTML report is standalone (plotly.js inlined, no external script)."""

import io
import re

import numpy as np
import pandas as pd
import pytest

from perfmodel import FitResult, Measurements, Model, report
from perfmodel.data.datasets import load_dataset


def truth(p, n):
    return 1 + 0.01 * n / p + 0.5 * np.log2(p)


@pytest.fixture(scope="module")
def meas():
    rows = [{"workers": p, "samples": n, "time_s": truth(p, n)} for p in (1, 2, 4, 8) for n in (1000, 2000)]
    return Measurements.from_frame(
        pd.DataFrame(rows), "time_s", {"p": "workers", "N": "samples"}, name="<b>hand</b> & made"
    )


@pytest.fixture(scope="module")
def res(meas):
    return Model("1 + N/p + log2(p)", lam=0.0, seed=0, maxiter=50).fit(meas)


@pytest.fixture(scope="module")
def tf():
    """A real dataset whose model uses I = E·ceil(N/(p·b)) without E being a factor."""
    m = load_dataset("tf-cnn-resnet50-dgx1")
    return m, Model("1 + I*b^e1 + I*log2(p)", lam=0.01, seed=0, maxiter=100).fit(m)


def test_model_json_loads_back_and_predicts_the_same(res, meas):
    text = report.model_json(res)
    back = FitResult.from_json(text)
    np.testing.assert_array_equal(back.predict(meas), res.predict(meas))
    assert back.coefficients == res.coefficients and back.settings["lam"] == res.settings["lam"]


def test_constants_table(res):
    t = report.constants_table(res)
    assert list(t["name"]) == ["c0", "c1", "c2"]
    np.testing.assert_allclose(t["value"], [1, 0.01, 0.5], rtol=1e-4)
    assert list(t["unit"]) == ["s", "s / (N/p)", "s / (log2(p))"]
    assert list(t["meaning"])[:2] == ["Start-up (fixed)", "Data-parallel compute"]
    assert t["share (%)"].sum() == pytest.approx(100)


def test_constants_table_lists_exponents_with_bounds(tf):
    _, r = tf
    t = report.constants_table(r).set_index("name")
    assert t.loc["e1", "bounds"] == "[-3, 3]" and t.loc["e1", "unit"] == "–"
    assert t.loc["e1", "value"] == pytest.approx(r.params["e1"])
    assert t.loc["c1", "meaning"] == "Compute per batch"


def test_metrics_table_labels_in_sample_and_validation(res):
    t = report.metrics_table(res, {"5-fold cross-validation": {"mape": 2.5, "r2": 0.9}})
    assert list(t.columns) == ["in-sample", "5-fold cross-validation"]
    assert t.loc["MAPE (%)", "5-fold cross-validation"] == 2.5
    assert t.loc["MAPE (%)", "in-sample"] == pytest.approx(res.metrics["mape"])
    assert np.isnan(t.loc["RMSE (s)", "5-fold cross-validation"])


def test_metrics_table_has_no_adjusted_r2_out_of_sample(res):
    """Walk defect: the cross-validated "adjusted R²" equalled the cross-validated R² (nothing adjusted);
    it is blank, also for a model file written before that holds the copy."""
    old_file = {"5-fold cross-validation": {"mape": 2.5, "r2": 0.9, "adj_r2": 0.9}}
    t = report.metrics_table(res, old_file)
    assert t.loc["R²", "5-fold cross-validation"] == 0.9
    assert np.isnan(t.loc["adjusted R²", "5-fold cross-validation"])
    assert t.loc["adjusted R²", "in-sample"] == pytest.approx(res.metrics["adj_r2"])


def test_predictions_csv(res, meas):
    cv = meas.y * 1.1
    frame = pd.read_csv(io.StringIO(report.predictions_csv(res, meas, cv)))
    assert list(frame.columns[:7]) == [
        "row",
        "workers",
        "samples",
        "measured_s",
        "predicted_s",
        "error_pct",
        "cv_predicted_s",
    ]
    np.testing.assert_allclose(frame["measured_s"], meas.y, rtol=1e-5)
    np.testing.assert_allclose(frame["predicted_s"], truth(frame["workers"], frame["samples"]), rtol=1e-4)
    np.testing.assert_allclose(frame["cv_error_pct"], 10, rtol=1e-4)
    contrib = frame[[c for c in frame.columns if c.startswith("contribution: ")]]
    assert list(contrib.columns) == ["contribution: constant", "contribution: N/p", "contribution: log2(p)"]
    np.testing.assert_allclose(contrib.sum(axis=1), frame["predicted_s"], rtol=1e-5)


@pytest.mark.parametrize("which", ["hand", "tf"])
def test_python_snippet_runs_and_predicts_the_same(which, res, meas, tf):
    m, r = (meas, res) if which == "hand" else tf
    code = report.python_snippet(r)
    namespace = {}
    exec(compile(code, "snippet.py", "exec"), namespace)  # the exported file, run as a user would
    got = namespace["predict"](*[m.values(s) for s in r.factors])
    np.testing.assert_allclose(got, r.predict(m), rtol=1e-12)


def test_latex_snippet(res):
    tex = report.latex_snippet(res)
    assert tex.startswith("\\begin{equation}") and tex.rstrip().endswith("\\end{equation}")
    assert "\\frac{N}{p}" in tex and "\\log_2" in tex


def test_html_report_is_standalone(res, meas):
    page = report.html_report(res, meas)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I), "no external script may be loaded"
    assert not re.search(r"<link[^>]*\bhref\s*=\s*['\"]https?:", page, re.I)
    assert page.count('class="plotly-graph-div"') == 7  # parity, shares, contributions, residuals, 3 scaling
    assert len(page) > 3_000_000  # plotly.js is inlined
    assert "T = 1 + 0.01·N/p + 0.5·log2(p)" in page
    assert "&lt;b&gt;hand&lt;/b&gt; &amp; made" in page and "<b>hand</b>" not in page
    assert "MAPE (%)" in page and "Start-up (fixed)" in page


def test_html_report_with_given_figures(res, meas):
    from perfmodel.plots.parity import parity_figure

    page = report.html_report(res, meas, figures={"only": parity_figure(res, meas)}, title="Custom")
    assert page.count('class="plotly-graph-div"') == 1 and "<title>Custom</title>" in page


def test_html_report_intervals_are_a_table_and_its_scaling_axes_are_the_apps(tf):
    """Issue 21: no 8-digit text dump; log x as on the Scaling page (1-8 GPUs), log y where the curve
    spans a decade, one time unit for both scaling charts."""
    from perfmodel.plots import report_figures
    from perfmodel.uncertainty import compute_intervals

    m, fitted = tf
    res = FitResult.from_dict(fitted.to_dict())
    compute_intervals(res, m, replicates=40)
    page = report.html_report(res, m, figures={})
    section = page[page.index("<h2>Intervals</h2>") : page.index("<h2>", page.index("<h2>Intervals</h2>") + 5)]
    assert "<pre>" not in section and "<table" in section and "per doubling" in section
    assert not re.search(r"\d\.\d{6,}", section)  # nothing printed to 7+ decimals
    figs = report_figures(res, m)
    assert (
        figs["Scaling"].layout.xaxis.type == "log"
        and figs["Speedup and parallel efficiency"].layout.xaxis.type == "log"
    )
    assert figs["Scaling"].layout.yaxis.type == "log"  # 98 min at p = 1 to 3 min at p = 32
    assert figs["Scaling"].layout.yaxis.title.text == "predicted time (min)"
    # a curve that spans a decade: its split as shares of the time, as on the Scaling page (issue 33)
    assert figs["Scaling: term contributions"].layout.yaxis.title.text == "share of the predicted time (%)"
    flat = report_figures(res, m, log_y=False)["Scaling: term contributions"]
    assert flat.layout.yaxis.title.text == "predicted time (min)"  # one time unit for both scaling charts
