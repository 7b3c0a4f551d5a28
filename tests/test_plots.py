"""Figure builders on hand-made cases: the computed data first, then titles, traces and styling.

The measurements are generated from a known formula, T = 1 + 0.01·N/p + 0.5·log2(p), so the
expected numbers (predictions, contributions, crossover, speedup) come from that formula, not
from perfmodel's own output.
"""

import math

import numpy as np
import pandas as pd
import pytest

from perfmodel import Measurements, Model, plots

P = [1, 2, 4, 8]
NS = [1000, 2000]


def truth(p, n):
    return 1 + 0.01 * n / p + 0.5 * np.log2(p)


@pytest.fixture(scope="module")
def meas():
    rows = [{"workers": p, "samples": n, "time_s": truth(p, n), "rep": r} for p in P for n in NS for r in (1, 2)]
    return Measurements.from_frame(pd.DataFrame(rows), "time_s", {"p": "workers", "N": "samples"}, name="hand-made")


@pytest.fixture(scope="module")
def res(meas):
    return Model("1 + N/p + log2(p)", lam=0.0, seed=0, maxiter=50).fit(meas)


@pytest.fixture(scope="module")
def empty(meas):
    return meas.subset(np.zeros(meas.n_rows, bool))


def titles(fig):
    return [
        fig.layout[k].title.text for k in fig.layout if k.startswith(("xaxis", "yaxis")) and fig.layout[k].title.text
    ]


def test_the_fit_recovers_the_generating_formula(res):
    c = res.coefficients
    assert c["c0"] == pytest.approx(1, rel=1e-4)
    assert c["c1"] == pytest.approx(0.01, rel=1e-4)
    assert c["c2"] == pytest.approx(0.5, rel=1e-4)


def test_term_styles_name_library_terms_in_plain_words_and_colour_by_category(res):
    styles = plots.term_styles(res)
    assert [s.text for s in styles] == ["1", "N/p", "log2(p)"]
    assert styles[0].label == "Start-up (fixed)" and styles[0].category == "start-up"
    assert styles[1].label == "Data-parallel compute" and styles[1].category == "compute"
    # log2(p) is not a library term for these symbols: judged from its values, it grows with p
    assert styles[2].label == "log2(p)" and styles[2].category == "communication"
    for s in styles:
        assert s.color in plots.CATEGORY_COLORS[s.category]
    assert "Data-parallel compute" in styles[1].legend and "N/p" in styles[1].legend


def test_term_styles_match_library_terms_whatever_the_exponent_is_called():
    rows = [
        {"p": p, "b": b, "N": 1e5, "t": 1 + 1e5 / (p * b) * (0.01 * b**0.8 + 0.002 * np.log2(p))}
        for p in P
        for b in (16, 64, 256)
    ]
    m = Measurements.from_frame(pd.DataFrame(rows), "t", {"p": "p", "b": "b", "N": "N"})
    r = Model("1 + I*b^e1 + I*log2(p)", lam=0.0, seed=0, maxiter=50, bounds={"e1": (0, 2)}).fit(m)
    labels = [s.label for s in plots.term_styles(r)]
    assert labels == ["Start-up (fixed)", "Compute per batch", "All-reduce, tree (log p)"]
    formula = plots.term_styles(r)[1].formula
    assert formula.startswith("I·b^0.") and "e1" not in formula


def test_parity_data(res, meas):
    d = plots.parity_data(res, meas, color_by="p")
    np.testing.assert_allclose(d.measured, truth(meas.values("p"), meas.values("N")))
    np.testing.assert_allclose(d.predicted, d.measured, rtol=1e-4)
    assert d.within_band == 1.0
    assert d.lo < d.measured.min() and d.hi > d.measured.max()
    np.testing.assert_array_equal(d.color, meas.values("p"))
    assert "p = 1" in d.hover[0] and "N = 1000" in d.hover[0] and d.hover[0].startswith("row 1")


def test_parity_figure(res, meas):
    fig = plots.parity_figure(res, meas, color_by="p")
    assert fig.layout.xaxis.title.text == "measured time (s)"
    assert fig.layout.yaxis.title.text == "predicted time (s)"
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    assert "y = x (perfect)" in names and "±10 %" in names
    assert [n for n in names if n and n.startswith("p = ")] == ["p = 1", "p = 2", "p = 4", "p = 8"]
    # the band is y = 0.9x .. 1.1x
    lower, upper = fig.data[0], fig.data[1]
    np.testing.assert_allclose(np.asarray(lower.y) / np.asarray(lower.x), 0.9)
    np.testing.assert_allclose(np.asarray(upper.y) / np.asarray(upper.x), 1.1)
    assert upper.fill == "tonexty"


def test_parity_colour_by_a_factor_with_many_values_uses_a_colour_scale(res, meas):
    many = meas.frame.copy()
    many["noise"] = np.arange(len(many), dtype=float)
    m = Measurements.from_frame(many.reset_index(drop=True), "time_s", {"p": "workers", "N": "samples"})
    fig = plots.parity_figure(res, m, color_by="noise")
    pts = [t for t in fig.data if t.name == "in-sample prediction"][0]
    assert pts.marker.showscale and pts.marker.colorbar.title.text == "noise"


def test_parity_with_cross_validated_predictions(res, meas):
    cv = meas.y * 1.05
    fig = plots.parity_figure(res, meas, cv_predicted=cv)
    tr = [t for t in fig.data if t.name == "cross-validated prediction"][0]
    np.testing.assert_allclose(tr.y, cv)
    np.testing.assert_allclose(tr.customdata, 5.0)


def test_contribution_data_per_configuration(res, meas):
    d = plots.contribution_data(res, meas)
    assert len(d.labels) == len(P) * len(NS) == meas.n_configurations
    p, n = d.factors["p"].to_numpy(), d.factors["N"].to_numpy()
    np.testing.assert_allclose(d.contributions["N/p"], 0.01 * n / p, rtol=1e-4)
    np.testing.assert_allclose(d.contributions["log2(p)"], 0.5 * np.log2(p), rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(d.contributions.sum(axis=1), truth(p, n), rtol=1e-4)
    np.testing.assert_allclose(d.measured_mean, truth(p, n))
    assert d.labels[0] == "p = 1, N = 1000"


def test_contributions_figure(res, meas):
    fig = plots.contributions_figure(res, meas)
    assert fig.layout.barmode == "relative"
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 3
    assert bars[1].marker.color == plots.CATEGORY_COLORS["compute"][0]
    assert bars[2].marker.color == plots.CATEGORY_COLORS["communication"][0]
    assert fig.layout.yaxis.title.text == "time per run (s)"
    assert list(fig.layout.xaxis.ticktext)[0] == "1 · 1000"
    assert fig.layout.xaxis.title.text == "configuration (p · N)"
    assert bars[0].text is None  # labels go in the hover, not on the bars


def test_share_data(res, meas):
    d = plots.share_data(res)
    total = truth(meas.values("p"), meas.values("N")).sum()
    expected = {
        "Data-parallel compute": (0.01 * meas.values("N") / meas.values("p")).sum() / total * 100,
        "log2(p)": (0.5 * np.log2(meas.values("p"))).sum() / total * 100,
        "Start-up (fixed)": meas.n_rows / total * 100,
    }
    assert dict(zip(d.labels, d.shares, strict=True)) == pytest.approx(expected, rel=1e-3)
    assert list(d.shares) == sorted(d.shares, reverse=True)
    fig = plots.shares_figure(res)
    assert fig.layout.xaxis.title.text == "share of total predicted time (%)"


def test_residuals(res, meas):
    d = plots.residual_data(res, meas)
    assert d.symbols == ["p", "N"]
    np.testing.assert_allclose(d.residual_pct, 0, atol=1e-2)
    fig = plots.residuals_figure(res, meas)
    assert sorted(titles(fig)) == ["data size N (samples)", "residual (% of measured)", "workers p"]
    assert fig.layout.xaxis.type == "log"  # p spans 8x
    assert len(fig.layout.shapes) >= 4  # ±10 % band and zero line in each panel
    lo, hi = fig.layout.yaxis.range
    assert lo <= -10 and hi >= 10


def test_overview(meas):
    d = plots.overview_data(meas)
    assert d.symbols == ["p", "N"]
    fig = plots.overview_figure(meas)
    assert fig.layout.yaxis.title.text == "measured time (s)"
    assert fig.layout.xaxis.title.text == "workers p"
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 4, 8]


def test_scaling_data(res, meas):
    d = plots.scaling_data(res, "p", {"N": 2000}, meas)
    assert d.x[0] == 1 and d.x[-1] == 32  # 4x the largest measured p
    np.testing.assert_array_equal(d.x, np.arange(1, 33))  # integers for an integer factor
    np.testing.assert_allclose(d.total, truth(d.x, 2000), rtol=1e-4)
    np.testing.assert_array_equal(d.inside, d.x <= 8)
    assert d.measured_range == (1, 8)
    np.testing.assert_allclose(np.sort(d.points_y), np.sort(truth(meas.values("p"), 2000)[meas.values("N") == 2000]))
    # communication (0.5·log2 p) overtakes compute (20/p) first at the smallest integer p where it is larger
    x = np.arange(1, 33)
    assert d.crossover == x[np.argmax(0.5 * np.log2(x) > 20 / x)]
    assert d.others_outside == []


def test_scaling_data_defaults_and_outside_values(res, meas):
    d = plots.scaling_data(res, "N", {"p": 64}, meas, x_max=8000)
    assert d.x[-1] == 8000 and d.fixed == {"p": 64.0}
    assert d.others_outside == ["p"]
    assert d.points_x.size == 0  # nothing was measured at p = 64
    with pytest.raises(Exception, match="not a factor"):
        plots.scaling_data(res, "b", {}, meas)


def test_scaling_figure(res, meas):
    fig = plots.scaling_figure(res, "p", {"N": 2000}, meas, log_x=True)
    assert fig.layout.xaxis.title.text == "workers p" and fig.layout.yaxis.title.text == "predicted time (s)"
    names = [t.name for t in fig.data]
    assert names == ["model (measured range)", "model (extrapolated)", "measured runs"]
    assert fig.data[1].line.dash == "dash"
    # the dashed part starts where the solid one ends (continuous line), and is NaN inside the range
    ys = np.asarray(fig.data[1].y, float)
    assert np.isfinite(ys[7]) and np.isnan(ys[:7]).all() and np.isfinite(ys[8:]).all()
    (zone,) = fig.layout.shapes
    assert (zone.x0, zone.x1) == (8, 32) and zone.fillcolor == plots.EXTRAP_FILL
    label = [a for a in fig.layout.annotations if "extrapolation" in a.text][0]
    assert label.x == pytest.approx(math.log10(8))  # annotations use log10 units on a log axis
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 4, 8, 16, 32]
    assert "N = 2000" in fig.layout.title.subtitle.text


def test_scaling_contributions_figure(res, meas):
    fig = plots.scaling_contributions_figure(res, "p", {"N": 2000}, meas)
    areas = [t for t in fig.data if t.stackgroup == "terms"]
    assert len(areas) == 3
    assert [a.fillcolor for a in areas] == [
        plots.CATEGORY_COLORS["start-up"][0],
        plots.CATEGORY_COLORS["compute"][0],
        plots.CATEGORY_COLORS["communication"][0],
    ]
    assert any("communication > compute" in a.text for a in fig.layout.annotations)


def test_a_dropped_term_is_not_stacked(meas):
    """A term the fit set to zero (its bound, or the penalty) adds no area and no legend entry: the
    time along p is T = c0 + c1·N/p exactly, so the p² term is pinned at its bound 0."""
    frame = meas.frame.assign(t=3.0 + 0.01 * meas.frame["samples"] / meas.frame["workers"])
    exact = Measurements.from_frame(frame, "t", dict(meas.factors))
    fit = Model("1 + N/p + p^2", lam=0.0, seed=0, maxiter=50).fit(exact)
    assert fit.coefficients["c2"] == 0 and "p^2" in fit.dropped_terms
    for share in (False, True):
        fig = plots.scaling_contributions_figure(fit, "p", {"N": 2000}, exact, share=share)
        names = [t.name for t in fig.data if t.stackgroup == "terms"]
        assert len(names) == 2 and not any("p^2" in n or "p²" in n for n in names), names


def test_speedup(res, meas):
    d = plots.speedup_data(res, {"N": 2000}, meas)
    assert d.p0 == 1
    np.testing.assert_allclose(d.speedup, truth(1, 2000) / truth(d.p, 2000), rtol=1e-4)
    np.testing.assert_allclose(d.efficiency, d.speedup / d.p * 100)
    np.testing.assert_allclose(d.ideal, d.p)
    np.testing.assert_allclose(d.measured_speedup, truth(1, 2000) / truth(np.array(P), 2000))
    fig = plots.speedup_figure(res, {"N": 2000}, meas)
    assert fig.layout.yaxis.title.text == "speedup (×)" and fig.layout.yaxis2.title.text == "efficiency (%)"
    assert len(fig.layout.shapes) == 2  # the extrapolation zone in both panels


def test_empty_measurements_give_empty_figures_with_axis_titles(res, empty):
    for fig, x_title, y_title in [
        (plots.parity_figure(res, empty), "measured time (s)", "predicted time (s)"),
        (plots.contributions_figure(res, empty), "configuration", "time per run (s)"),
        (plots.residuals_figure(res, empty), "factor", "residual (% of measured)"),
        (plots.overview_figure(empty), "factor", "measured time (s)"),
        (plots.overview_figure(None), "factor", "measured time (s)"),
    ]:
        assert len(fig.data) == 0
        assert fig.layout.xaxis.title.text == x_title and fig.layout.yaxis.title.text == y_title
        assert fig.layout.annotations[0].text == "No measurements to show"
    assert plots.parity_data(res, empty).measured.size == 0
    assert plots.contribution_data(res, empty).labels == []
    # the scaling view needs no measurements: the model alone draws it
    d = plots.scaling_data(res, "p", {"N": 1000}, empty)
    assert d.points_x.size == 0 and d.total.size == d.x.size


def test_log_ticks():
    assert plots.log_ticks(1, 32, [1, 2, 4, 8]) == [1, 2, 4, 8, 16, 32]
    assert plots.log_ticks(700, 7000) == [1000, 2000, 3000, 5000]
    # never just two labels: a short range gets finer mantissas, a very short one round linear steps
    assert plots.log_ticks(1, 4, [1, 2, 4]) == [1, 2, 4]
    assert plots.log_ticks(0.8, 1.6) == [0.8, 0.9, 1.0, 1.2, 1.5]
    assert plots.log_ticks(100, 130) == [100, 110, 120, 130]
    for lo, hi in ((3, 40), (0.02, 0.5), (480, 8200), (1.1, 9.0), (5e-5, 3e-3)):
        ticks = plots.log_ticks(lo, hi)
        assert 4 <= len(ticks) <= 10 and all(lo <= t <= hi for t in ticks), (lo, hi, ticks)
    assert plots.log_ticks(0.01, 1e6) == [10.0**k for k in range(-2, 7)]
    assert plots.log_ticks(0, 10) == []


def test_formatters():
    assert plots.fmt_num(64) == "64" and plots.fmt_num(1281167) == "1.28M" and plots.fmt_num(25000) == "25k"
    assert plots.fmt_num(0.125) == "0.125"
    assert plots.fmt_seconds(0.25) == "250 ms" and plots.fmt_seconds(750) == "12.5 min"
    # one unit per sentence: the unit of the larger time
    unit = plots.time_unit(114, 238)
    assert (plots.fmt_seconds(114, unit), plots.fmt_seconds(238, unit)) == ("1.9 min", "3.97 min")
    assert plots.factor_title("N", "samples") == "data size N (samples)"
    assert plots.factor_title("m", "size_mib") == "size_mib, m"


def test_many_configurations_are_ordered_by_predicted_time():
    rows = [{"p": p, "n": n, "t": 1 + n / p} for p in range(1, 8) for n in range(1, 8)]
    m = Measurements.from_frame(pd.DataFrame(rows), "t", {"p": "p", "n": "n"})
    r = Model("1 + n/p", lam=0.0, seed=0, maxiter=50).fit(m)
    d = plots.contribution_data(r, m, sort_above=40)
    assert d.sorted_by_time and len(d.labels) == 49
    totals = d.contributions.sum(axis=1).to_numpy()
    assert np.all(np.diff(totals) >= -1e-12)
    np.testing.assert_allclose(d.measured_mean, 1 + d.factors["n"] / d.factors["p"])
    fig = plots.contributions_figure(r, m)
    assert fig.layout.xaxis.title.text.startswith("49 configurations, ordered by predicted time")
    assert list(fig.layout.xaxis.tickvals) == []


def test_speedup_starts_at_the_smallest_positive_p():
    rows = [{"p": p, "t": 5 + 10 / max(p, 1) + p} for p in (0, 1, 2, 4, 8)]
    m = Measurements.from_frame(pd.DataFrame(rows), "t", {"p": "p"})
    r = Model("1 + p", lam=0.0, seed=0, maxiter=50).fit(m)
    d = plots.speedup_data(r, meas=m)
    assert d.p0 == 1 and d.p[0] == 1
    assert np.all(np.isfinite(d.efficiency)) and d.efficiency[0] == pytest.approx(100)
    np.testing.assert_array_equal(d.measured_p, [1, 2, 4, 8])


def test_typical_value_is_the_most_frequent_measured_value(res, meas):
    assert plots.typical_value(res, "N", meas) == 2000  # 1000 and 2000 tie: the larger
    assert plots.typical_value(res, "N") == pytest.approx(math.sqrt(1000 * 2000))  # no data: geometric middle
    d = plots.scaling_data(res, "p", None, meas)
    assert d.fixed == {"N": 2000} and d.points_x.size == 8


def test_report_stacked_areas_span_the_curve_when_communication_overtakes_compute():
    rows = []
    for p in (1, 2, 4, 8, 16):
        for b in (32, 128):
            it = np.ceil(50000 / (p * b))
            rows.append({"p": p, "b": b, "N": 50000, "t": 3 + 2e-3 * it * b**0.9 + 0.05 * it * np.log2(p)})
    meas = Measurements.from_frame(pd.DataFrame(rows), "t", {"p": "p", "b": "b", "N": "N"})
    res = Model("1 + I*b^e1 + I*log2(p)", lam=0.0, seed=0).fit(meas)
    fig = plots.report_figures(res, meas, symbol="p", x_max=64, log_x=True)["Scaling: term contributions"]
    d = plots.scaling_data(res, "p", None, meas, x_max=64)
    assert d.crossover is not None and 1 < d.crossover < 64
    pad = plots.scaling.X_MARGIN * np.log10(64)  # a margin so the end markers are whole, no empty right half
    assert list(fig.layout.xaxis.range) == pytest.approx([-pad, np.log10(64) + pad])
    [label] = [a for a in fig.layout.annotations if "communication > compute" in a.text]
    assert label.x == pytest.approx(np.log10(d.crossover))  # log units on a log axis, not 10^crossover


def test_ranges_are_rounded_to_what_they_support():
    from perfmodel.plots.style import fmt_range

    assert fmt_range(31.17, 27.4, 34.2, "×") == "31× (27–34×)"
    assert fmt_range(4.963, 4.91, 5.02, "×") == "4.96× (4.91–5.02×)"
    assert fmt_range(98.4, 97.9, 98.9, " %") == "98.4 % (97.9–98.9 %)"
    assert fmt_range(31.17, unit="×") == "31.2×"


def test_speedup_and_efficiency_carry_bands_from_the_members():
    import perfmodel
    from perfmodel.plots.speedup import speedup_data, speedup_figure

    rng = np.random.default_rng(0)
    p = np.repeat([1.0, 2, 4, 8], 3)
    frame = pd.DataFrame({"p": p, "t": (5 + 100 / p) * np.exp(rng.normal(0, 0.03, p.size))})
    meas = Measurements.from_frame(frame, "t", {"p": "p"})
    res = perfmodel.compute_intervals(Model("1 + 1/p", lam=0).fit(meas), meas, replicates=80)
    d = speedup_data(res, {}, meas, x_max=64)
    # T(p0) (the model's point) over the time's band at each p: at p0 that band holds 1, one run's noise wide
    assert d.speedup_low[0] < 1.0 < d.speedup_high[0] and d.speedup_high[0] / d.speedup_low[0] < 1.2
    np.testing.assert_allclose(d.speedup_low, d.speedup * d.scaling.total / d.scaling.high, rtol=1e-9)
    np.testing.assert_allclose(d.speedup_high, d.speedup * d.scaling.total / d.scaling.low, rtol=1e-9)
    assert np.all(d.speedup_low <= d.speedup + 1e-9) and np.all(d.speedup <= d.speedup_high + 1e-9)
    width = (d.speedup_high - d.speedup_low) / d.speedup
    assert width[-1] > width[len(width) // 4]  # wider beyond the measured range
    fig = speedup_figure(res, {}, meas, x_max=64)
    fills = [tr for tr in fig.data if tr.fill == "tonexty"]
    assert [tr.name for tr in fills] == ["90 % interval"] * 2 and not any(tr.showlegend for tr in fills)
    # one legend entry for both panels: a square swatch strong enough to be seen (the band itself is pale)
    [swatch] = [tr for tr in fig.data if tr.name == "90 % interval" and tr.mode == "markers"]
    assert swatch.marker.symbol == "square" and float(swatch.marker.color.rsplit(",", 1)[1].rstrip(")")) >= 0.4


def test_parity_interval_legend_swatch_is_visible(res, meas):
    """The error bars' own legend entry is an invisible 1 px marker: a vertical-bar swatch stands for them."""
    from perfmodel.uncertainty import compute_intervals

    r = compute_intervals(type(res).from_dict(res.to_dict()), meas, replicates=20)
    fig = plots.parity_figure(r, meas)
    bars = [t for t in fig.data if t.name == "90 % interval"]
    assert [t.showlegend for t in bars] == [False, None] and bars[0].error_y.array is not None
    assert bars[1].marker.symbol == "line-ns-open" and bars[1].marker.line.width >= 2


def test_a_fit_made_from_a_throughput_draws_the_rate_back_along_the_curve(res, meas):
    """Work per run in the column of N (samples per run): the rate along p is N / T and along N too,
    from the generating formula; the band's ends swap; a fit without a rate has none to draw."""
    import copy

    from perfmodel.errors import PerfModelError
    from perfmodel.plots.scaling import as_throughput

    rated = copy.copy(res)
    rated.rate = {"column": "samples/s", "work": "samples"}
    along_p = plots.scaling_data(rated, "p", {"N": 2000}, meas)
    r = as_throughput(rated, along_p)
    assert np.allclose(r.total, 2000 / truth(along_p.x, 2000), rtol=1e-4)
    assert np.allclose(np.sort(r.points_y), np.sort(2000 / truth(r.points_x, 2000)), rtol=1e-9)
    along_n = plots.scaling_data(rated, "N", {"p": 4}, meas)
    assert np.allclose(as_throughput(rated, along_n).total, along_n.x / truth(4, along_n.x), rtol=1e-4)
    fig = plots.scaling_figure(rated, "p", data=along_p, throughput=True)
    assert fig.layout.yaxis.title.text == "predicted samples/s"
    assert fig.layout.title.text.startswith("Throughput as workers grow")
    banded = copy.copy(along_p)
    banded.low, banded.high = along_p.total * 0.9, along_p.total * 1.2
    b = as_throughput(rated, banded)
    assert np.allclose(b.low, 2000 / (along_p.total * 1.2)) and np.allclose(b.high, 2000 / (along_p.total * 0.9))
    rated.rate = {"column": "samples/s", "work": "tokens"}  # a work column the model has no factor for
    assert as_throughput(rated, along_p) is None
    assert as_throughput(res, along_p) is None
    with pytest.raises(PerfModelError, match="not made from a throughput"):
        plots.scaling_figure(res, "p", data=along_p, throughput=True)
