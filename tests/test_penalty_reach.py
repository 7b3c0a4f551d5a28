"""The penalty weighs a term's effect where the model predicts (issue #22, item 6).

``Model(penalty_reach="horizon")`` weighs each term by the larger of its mean magnitude over the
measured rows and at the standard horizon (4× the largest scale): numbers worked out by hand, and
an underdetermined fit in which the two reaches choose different solutions of the same data.
"""

import numpy as np
import pandas as pd
import pytest

from perfmodel import Measurements, Model, PerfModelError
from perfmodel.fitting.reach import HORIZON_FACTOR, horizon_env, reach_weights


def series(p, t):
    return Measurements.from_frame(pd.DataFrame({"p": p, "time": t}), time="time", factors={"p": "p"})


def test_reach_weights_by_hand():
    # a term of mean 2 where measured and values 4 and 8 at the horizon: (4 + 8) / 2 / 2 = 3
    assert reach_weights(np.array([2.0]), np.array([[4.0, 8.0]])).tolist() == [3.0]
    # shrinking beyond the data (1/p), or not finite there: weighs as where measured
    assert reach_weights(np.array([2.0, 1.0]), np.array([[1.0, 1.0], [np.inf, 1.0]])).tolist() == [1.0, 1.0]


def test_the_penalty_is_the_measured_one_times_the_reach_weights():
    p = np.array([1.0, 2.0, 4.0, 8.0])
    meas = series(p, 10 + 80 / p + 0.5 * p)
    measured = Model("1 + 1/p + p", lam=1e-3, penalty_reach="measured").fit(meas)
    horizon = Model("1 + 1/p + p", lam=1e-3, penalty_reach="horizon").fit(meas)
    assert horizon.settings["penalty_reach"] == "horizon" and measured.settings["penalty_reach"] == "measured"
    assert horizon_env(meas)["p"].tolist() == [8 * HORIZON_FACTOR]
    # the p term: mean |p| over the rows 15/4, at p = 32 it is 32: weight 32 / 3.75; 1/p shrinks: 1
    c = horizon.coefficients
    s = np.array([np.mean(1 / p), np.mean(p)])
    u = np.array([c["c1"], c["c2"]]) * s / np.mean(meas.y)
    want = np.sum(np.abs(u) * np.array([1.0, 32 / 3.75]))
    assert horizon.penalty == pytest.approx(want, rel=1e-6)


def test_the_horizon_fit_minimises_the_horizon_weighted_cost():
    """Three GPU counts, four constants (many near-exact fits): the fit weighed at the horizon has a
    cost, loss + λ·Σ|c_k|·max(mean |term_k| measured, at p = 64)/mean time, computed here by hand, no
    larger than the fit weighed where measured has under the same cost (the horizon fit's optimum)."""
    p = np.array([1.0, 8.0, 16.0])
    t = 100 / p + 1 + 0.5 * np.log2(p) + 0.05 * p
    meas = series(p, t)
    lam = 1e-2
    fits = {
        reach: Model("1 + 1/p + log2(p) + p", lam=lam, penalty_reach=reach).fit(meas)
        for reach in ("measured", "horizon")
    }
    terms = lambda x: np.array([1 / x, np.log2(x), x])  # noqa: E731 - the penalised terms

    def cost(res):
        c = np.array([res.coefficients[k] for k in ("c1", "c2", "c3")])
        pred = res.coefficients["c0"] + c @ terms(p)
        weight = np.maximum(np.abs(terms(p)).mean(axis=1), np.abs(terms(np.array([64.0])))[:, 0])
        return np.mean((pred / t - 1) ** 2) + lam * np.sum(np.abs(c) * weight) / t.mean()

    assert cost(fits["horizon"]) <= cost(fits["measured"]) + 1e-9
    assert fits["horizon"].loss + lam * fits["horizon"].penalty == pytest.approx(cost(fits["horizon"]), rel=1e-6)


def test_an_unknown_reach_is_refused():
    with pytest.raises(PerfModelError, match="penalty reach 'far'"):
        Model("1 + 1/p", penalty_reach="far").fit(series(np.array([1.0, 2.0, 4.0]), np.array([3.0, 2.0, 1.5])))
