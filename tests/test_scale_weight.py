"""Weighting the larger measured worker counts (``Model(scale_weight=...)``) and the weighted power law
of the scaling laws: the fit is the weighted least squares a textbook computes, it survives a file,
the bands use it, and ``fit --auto`` prints the weighted formula's own prediction."""

import numpy as np
import pandas as pd
import pytest

import perfmodel
from perfmodel import Measurements, Model, PerfModelError
from perfmodel.fitting.problem import scale_weights
from perfmodel.search import auto_select
from perfmodel.search.laws import LAWS, WEIGHTED_SCALE, law_spec

P = np.array([1, 2, 4, 8, 1, 2, 4, 8], float)


def bent_series(seed: int = 0) -> pd.DataFrame:
    """A near power law whose largest scale runs 15 % slower: where the weighting shows."""
    rng = np.random.default_rng(seed)
    t = 100 / P**0.9 * np.exp(0.02 * rng.standard_normal(P.size))
    t[P == 8] *= 1.15
    return pd.DataFrame({"gpus": P, "time_s": t})


def test_weights_grow_by_the_ratio_per_measured_worker_count_and_average_one():
    meas = Measurements.from_frame(pd.DataFrame({"p": [4, 1, 2, 4, 16], "t": [1.0] * 5}), "t", {"p": "p"})
    w = scale_weights(meas, 3.0)
    assert np.allclose(w / w[1], [9, 1, 3, 9, 27]) and w.mean() == pytest.approx(1.0)
    assert np.array_equal(scale_weights(meas, 1.0), np.ones(5))
    no_p = Measurements.from_frame(pd.DataFrame({"N": [1, 2], "t": [1.0, 2.0]}), "t", {"N": "N"})
    assert np.array_equal(scale_weights(no_p, 4.0), np.ones(2))


@pytest.mark.parametrize("ratio", [1.0, 4.0])
def test_a_weighted_log_loss_power_law_is_numpys_weighted_least_squares(ratio):
    df = bent_series()
    res = Model("p^e1", loss="log", lam=0, scale_weight=ratio, bounds={"e1": (-3, 3)}).fit(df, "time_s", {"p": "gpus"})
    rank = np.searchsorted(np.unique(P), P)
    slope, intercept = np.polyfit(np.log(P), np.log(df["time_s"]), 1, w=np.sqrt(ratio**rank))
    assert res.params["e1"] == pytest.approx(slope, abs=2e-3)
    assert res.coefficients["c0"] == pytest.approx(np.exp(intercept), rel=2e-3)


def test_weighting_follows_the_largest_scale_and_survives_a_file(tmp_path):
    df = bent_series()
    meas = Measurements.from_frame(df, "time_s", {"p": "gpus"})
    plain = Model("p^e1").fit(meas)
    weighted = Model("p^e1", scale_weight=4).fit(meas)
    at8 = df.loc[df["gpus"] == 8, "time_s"].mean()
    assert abs(weighted.predict({"gpus": [8.0]})[0] / at8 - 1) < abs(plain.predict({"gpus": [8.0]})[0] / at8 - 1)
    assert "fitted with each larger measured p weighing 4x the one before" in weighted.report()
    assert "weighing" not in plain.report()
    perfmodel.compute_intervals(weighted, meas)
    path = tmp_path / "m.json"
    weighted.save(path)
    back = perfmodel.FitResult.load(path)
    assert back.settings["scale_weight"] == 4
    want = weighted.predict({"gpus": [32.0]}, interval=0.9)
    got = back.predict({"gpus": [32.0]}, interval=0.9)
    assert np.allclose(got.to_numpy(float), want.to_numpy(float))
    lo, t, hi = (float(got[c].iloc[0]) for c in ("predicted_low", "predicted_time", "predicted_high"))
    assert lo < t < hi


@pytest.mark.parametrize("bad", [0, -1, float("nan"), 1e6, "four"])
def test_a_scale_weight_out_of_range_is_refused_by_name(bad):
    with pytest.raises(PerfModelError, match="scale_weight"):
        Model("p^e1", scale_weight=bad).fit(bent_series(), "time_s", {"p": "gpus"})


def test_the_weighted_power_law_is_the_power_law_formula_with_its_scales_weighted():
    meas = Measurements.from_frame(bent_series(), "time_s", {"p": "gpus"})
    assert "weighted-power-law" in LAWS
    assert law_spec("weighted-power-law", meas) == {**law_spec("power-law", meas), "scale_weight": WEIGHTED_SCALE}


def test_the_rule_s_weighted_power_law_prints_its_own_formula():
    """A cell whose rule is the weighted power law: the chosen fit carries the weight, and what it
    prints beyond the data is the displayed formula's value there."""
    df = bent_series()
    meas = Measurements.from_frame(df[df["gpus"] <= 4], "time_s", {"p": "gpus"})
    rule = {"law_rule": {f"{c}|3+": {"law": "weighted-power-law"} for c in ("ideal", "well", "partly", "stopped")}}
    sel = auto_select(meas, prior=rule, validate=False, workers=1)
    best = sel.candidates[0]
    assert best.origin == "law: weighted-power-law" and best.scale_weight == WEIGHTED_SCALE
    res = best.result
    c, e = res.coefficients["c0"], res.params["e1"]
    assert res.predict({"gpus": [16.0]})[0] == pytest.approx(c * 16.0**e, rel=1e-9)


def test_the_corpus_s_inter_node_term_keeps_the_weighted_law_s_weighting():
    """A one-node series whose law gets the corpus's inter-node cost is refitted with it: the refit
    weighs the scales as the law did (it once fell back to every row alike)."""
    from perfmodel.uncertainty.prior import with_topology

    df = bent_series()
    meas = with_topology(Measurements.from_frame(df[df["gpus"] <= 4], "time_s", {"p": "gpus"}), 8)
    rule = {f"{c}|3+": {"law": "weighted-power-law"} for c in ("ideal", "well", "partly", "stopped")}
    prior = {"law_rule": rule, "internode": {"rho": 0.1, "n_splits": 1}}
    best = auto_select(meas, prior=prior, validate=False, workers=1).candidates[0]
    assert "min(nodes - 1, 1)" in best.result.expression and best.scale_weight == WEIGHTED_SCALE
