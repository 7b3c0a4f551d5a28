"""The choice sees the standard horizon: a term the data cannot see must not carry the prediction there
(perfmodel.search.horizon; issue 22 item 6)."""

import numpy as np
import pandas as pd

from perfmodel import Measurements
from perfmodel.fitting.model import SEARCH_DE
from perfmodel.search.candidates import Candidate
from perfmodel.search.horizon import HORIZON_FACTOR, horizon_env, term_shares, unseen_dominant
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
