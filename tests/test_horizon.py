"""The choice sees the standard horizon: a term the data cannot see must not carry the prediction there
(perfmodel.search.horizon; issue 22 item 6)."""

import numpy as np
import pandas as pd

from perfmodel import Measurements
from perfmodel.fitting.model import SEARCH_DE
from perfmodel.search import auto_select
from perfmodel.search.candidates import Candidate
from perfmodel.search.horizon import (
    HORIZON_FACTOR,
    fell_at_the_end,
    horizon_env,
    rise_beyond,
    term_shares,
    unseen_dominant,
)
from perfmodel.search.screening import validation_splits
from perfmodel.search.select import _choose, _HorizonCheck

SETTINGS = {"lam": 0.0, "loss": "relative", "penalty": "l1", "seed": 0, **SEARCH_DE}


def series(c_p=0.03, batch_grows=False):
    """T = 100/p + c_p·p at p = 1 ... 16 (noise-free): the p term is ~2 % of the measured time and
    55 % of the time at 64 GPUs (c_p = 0.03)."""
    p = np.array([1, 2, 4, 8, 16], float)
    frame = pd.DataFrame({"gpus": p, "time_s": 100 / p + c_p * p})
    factors = {"p": "gpus"}
    if batch_grows:
        frame["batch"] = 32 * p
        factors["B"] = "batch"
    return Measurements.from_frame(frame, "time_s", factors)


def cand(spec, score, n_params, cv_mape, se=0.1):
    return Candidate(spec, None, {"mape": cv_mape}, {}, score, n_params, se)


def test_horizon_is_four_times_the_largest_scale_and_trending_factors_follow():
    env = horizon_env(series(batch_grows=True))
    assert env["p"].tolist() == [16 * HORIZON_FACTOR]
    assert np.allclose(env["B"], 32 * 16 * HORIZON_FACTOR)  # B = 32·p grows with p
    assert horizon_env(Measurements.from_frame(pd.DataFrame({"n": [1.0, 2.0], "t": [1.0, 2.0]}), "t", {"N": "n"}))[
        "N"
    ].tolist() == [2 * HORIZON_FACTOR]


def test_unseen_dominant_needs_both_a_share_below_the_error_and_a_majority_at_the_horizon():
    assert unseen_dominant([0.98, 0.02], [0.45, 0.55], 0.05) == [1]
    assert unseen_dominant([0.98, 0.02], [0.55, 0.45], 0.05) == []  # not a majority at the horizon
    assert unseen_dominant([0.9, 0.1], [0.3, 0.7], 0.05) == []  # the data sees it
    assert np.allclose(term_shares([[1.0, -1.0], [3.0, 1.0]]), [0.625, 0.375])


def test_a_term_negligible_in_the_data_and_dominant_beyond_is_set_aside():
    meas = series()
    check = _HorizonCheck(meas, SETTINGS, workers=1)
    bad, good = cand("1/p + p", 1.0, 2, cv_mape=5.0), cand("1/p", 1.5, 1, cv_mape=5.0)
    assert check.bad([bad, good]) == {id(bad)}
    assert "p carries" in check.set_aside["1/p + p"]
    # the same term above the fit's error is seen by the data: kept
    seen = cand("1/p + p", 1.0, 2, cv_mape=1.0)
    assert check.bad([seen]) == set()


def test_choose_takes_the_best_of_the_others_when_the_best_is_set_aside():
    meas = series()
    splits = validation_splits(meas, 5, 0, "p > 4")
    bad, good = cand("1/p + p", 1.0, 2, cv_mape=5.0), cand("1 + 1/p", 1.5, 2, cv_mape=5.0)
    assert _choose(meas, splits, [bad, good], 3)[3][0] is bad  # without the horizon: within noise alone
    check = _HorizonCheck(meas, SETTINGS, workers=1)
    noise, _, _, chosen = _choose(meas, splits, [bad, good], 3, check)
    assert chosen == [good] and noise == 0.1
    # when every candidate would be set aside, none is
    assert _choose(meas, splits, [bad], 3, _HorizonCheck(meas, SETTINGS, workers=1))[3] == [bad]


def test_a_fall_at_each_of_the_last_two_steps_and_the_rise_beyond():
    assert fell_at_the_end(series())  # 100/p + 0.03·p falls at every step up to 16
    assert not fell_at_the_end(series(c_p=3.0))  # 100/p + 3·p: its minimum is at p = 5.8
    two = Measurements.from_frame(pd.DataFrame({"gpus": [1.0, 2.0], "time_s": [2.0, 1.0]}), "time_s", {"p": "gpus"})
    assert not fell_at_the_end(two)  # one step is not two
    assert rise_beyond([2.0, 4.0], [3.0, 4.0]) == 1.25
    assert np.isnan(rise_beyond([0.0], [1.0]))


# InternEVO's published throughput of InternLM-7B on A100s (tokens/s/GPU, InternLM/InternEvo
# doc/en/train_performance.md, commit c628a8c, "Throughput Measurement", tp=1, zero1=-1), as seconds per
# 10^9 tokens; 8 GPUs per node.
INTERNEVO_TGS = {8: 4062, 16: 3842, 32: 3752, 64: 3690, 128: 3571, 256: 3209, 512: 2861, 1024: 2271}


def test_a_fitted_reversal_the_data_do_not_show_is_not_chosen():
    """Measured at 8-256 GPUs, the term search fitted 1/p + (p-1)/p^2 + p^1.5·log2(p) within 1.1 % and
    printed 1,771 s at 1,024 GPUs (the published 430 s): a time that rises again beyond the data, where
    every measured doubling fell. The choice sets such candidates aside."""
    p = np.array([k for k in INTERNEVO_TGS if k <= 256], float)
    t = 1e9 / (np.array([INTERNEVO_TGS[k] for k in p]) * p)
    meas = Measurements.from_frame(pd.DataFrame({"gpus": p, "time_s": t}), "time_s", {"p": "gpus"})
    sel = auto_select(meas, workers=1, validate=False)
    res = sel.best.result
    pred = res.predict({"p": np.array([256.0, 512.0, 1024.0])})
    assert pred[2] < pred[1] < pred[0]
    for k, got in zip((512, 1024), pred[1:], strict=True):
        assert abs(got / (1e9 / (INTERNEVO_TGS[k] * k)) - 1) < 0.2
    assert any("fell at each of the last two steps" in why for why in sel.set_aside.values())


def test_a_reversal_the_data_show_in_some_configurations_is_kept():
    """T = 1 + 16·N/p + 0.1·p at N = 1 and 64, p = 2 ... 32: the small job's time rises from 3.6 at p = 16
    to 4.7 at 32 (its minimum is at p = 12.6), the large one's falls; the reversal is measured, not
    guessed."""
    p = np.tile([2.0, 4.0, 8.0, 16.0, 32.0], 2)
    n = np.repeat([1.0, 64.0], 5)
    meas = Measurements.from_frame(
        pd.DataFrame({"gpus": p, "n": n, "time_s": 1 + 16 * n / p + 0.1 * p}), "time_s", {"p": "gpus", "N": "n"}
    )
    assert not fell_at_the_end(meas)
    one = Measurements.from_frame(
        pd.DataFrame({"gpus": p[5:], "n": n[5:], "time_s": (1 + 16 * n / p + 0.1 * p)[5:]}),
        "time_s",
        {"p": "gpus", "N": "n"},
    )
    assert fell_at_the_end(one)
