"""The plan's charts and report section, from a plan table made by hand (no fit): what they draw is
what the table says."""

import numpy as np
import pandas as pd
import pytest

from perfmodel.plots.plan import plan_deadline_figure, plan_frontier_figure, plan_time_unit


def hand_plan(deadline=None, budget=None, cost_unit="GPU-hours") -> pd.DataFrame:
    p = np.array([8, 16, 32, 64])
    t = np.array([4 * 3600, 2.2 * 3600, 1.3 * 3600, 1.2 * 3600])  # 64 is slower per GPU-hour than 32
    f = pd.DataFrame({"p": p, "b": 32, "time_s": t, "time_low": t * 0.9, "time_high": t * 1.1})
    for k, s in (("gpu_hours", 1.0), ("gpu_hours_low", 0.9), ("gpu_hours_high", 1.1)):
        f[k] = t * s / 3600 * p
    for k in ("", "_low", "_high"):
        f["cost" + k] = f["gpu_hours" + k]
    f["efficiency"] = (t[0] * p[0]) / (t * p)
    f["p_deadline"] = [0.0, 0.2, 0.95, 0.97] if deadline else np.nan
    f["p_budget"] = np.nan
    f.attrs.update(
        level=0.9, deadline=deadline, budget=budget, repeat=1.0, cost_unit=cost_unit, at={"b": 32}, factors=["p", "b"]
    )
    return f


def test_frontier_figure_marks_the_frontier_and_both_intervals():
    f = hand_plan(deadline=2 * 3600, budget=60.0)
    fig = plan_frontier_figure(f)
    assert plan_time_unit(f) == "h" and fig.layout.xaxis.title.text == "time (h)"
    assert fig.layout.yaxis.title.text == "cost (GPU-hours)"
    by_name = {t.name: t for t in fig.data}
    line = by_name["efficient frontier"]
    # every configuration is faster than the one before it, and each costs more: all on the frontier
    np.testing.assert_allclose(line.x, np.sort(f["time_s"] / 3600))
    pts = by_name["on the frontier"]
    assert list(pts.text) == ["p=8", "p=16", "p=32", "p=64"]
    np.testing.assert_allclose(pts.error_x.array, f["time_s"] / 3600 * 0.1)
    np.testing.assert_allclose(pts.error_y.arrayminus, f["cost"] * 0.1)
    assert "deadline 2 h" in by_name and "budget 60.00 GPU-h" in by_name
    assert {s.line.dash for s in fig.layout.shapes} == {"dash", "dot"}


def test_a_dominated_configuration_is_drawn_apart():
    f = hand_plan()
    f.loc[3, ["time_s", "time_low", "time_high"]] = [
        1.4 * 3600,
        1.3 * 3600,
        1.5 * 3600,
    ]  # 64: slower and dearer than 32
    for k in ("cost", "gpu_hours"):
        f.loc[3, k] = f.loc[3, "time_s"] / 3600 * 64
    fig = plan_frontier_figure(f)
    names = [t.name for t in fig.data]
    assert "another is faster and no dearer" in names
    [other] = [t for t in fig.data if t.name == "another is faster and no dearer"]
    assert list(other.text) == ["p=64"]


def test_deadline_figure_draws_the_deadline_and_the_probabilities():
    f = hand_plan(deadline=2 * 3600)
    fig = plan_deadline_figure(f, measured_max=16)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.title.text == "time (h)"
    [deadline] = [s for s in fig.layout.shapes if s.line.dash == "dash"]
    assert deadline.y0 == deadline.y1 == pytest.approx(2.0)
    [probs] = [t for t in fig.data if t.mode == "text"]
    assert list(probs.text) == ["0%", "20%", "95%", "97%"]
    assert len(set(probs.textfont.color)) == 2  # met (>= 90 %) and missed in two colours
    assert any(s.type == "rect" for s in fig.layout.shapes)  # beyond the measured p = 16


def test_without_a_deadline_no_line_and_no_probabilities():
    fig = plan_deadline_figure(hand_plan())
    assert not [t for t in fig.data if t.mode == "text"]
    assert not [s for s in fig.layout.shapes if s.line.dash == "dash"]


def test_report_plan_section_only_with_a_plan():
    from perfmodel.report import plan_table

    t = plan_table(hand_plan(deadline=2 * 3600))
    assert list(t.columns[:2]) == ["p", "time (interval)"]
    # each time with its interval in one unit, as `perfmodel plan` prints it (perfmodel.wording)
    assert list(t["time (interval)"][:2]) == ["4.0 h (3.6–4.4 h)", "2.2 h (2.0–2.4 h)"]
    assert list(t["P(deadline)"]) == ["0%", "20%", "95%", "97%"]
    assert t["GPU-hours"].iloc[0] == "32.00"


def test_deadline_chances_are_not_written_on_the_deadline_line():
    # the deadline just above p = 64's band: its label moves above the line; the others stay on their band
    f = hand_plan(deadline=1.35 * 3600)
    fig = plan_deadline_figure(f)
    [probs] = [t for t in fig.data if t.mode == "text"]
    assert probs.textposition == "top right"
    np.testing.assert_allclose(probs.y, [4 * 1.1, 2.2 * 1.1, 1.3 * 1.1, 1.35])


def test_frontier_labels_keep_off_the_deadline_line():
    from perfmodel.plots.plan import place_labels

    # one point left of a vertical line at 0.5, its label would reach across it on the right
    kept, where = place_labels(np.array([0.48]), np.array([0.5]), ["p=16"], x_lines=(0.5,))
    assert kept == ["p=16"] and "left" in where[0]
    kept, where = place_labels(np.array([0.52]), np.array([0.5]), ["p=16"], x_lines=(0.5,))
    assert kept == ["p=16"] and "right" in where[0]
    # a horizontal line (the budget) just above the point: the label goes below
    kept, where = place_labels(np.array([0.5]), np.array([0.5]), ["p=16"], y_lines=(0.53,))
    assert "bottom" in where[0]
