"""Reference structures in the point and the band (issue #22, item 5 and 6).

The definitions are checked on members written by hand, with the numbers worked out from their
formulas: a model T = 10 measured at p = 1..8 and three reference structures, one agreeing with it and
two linear in p that fit it within 17–19 % where measured and reach 24 s and 40 s at p = 64.
"""

import json
import math

import numpy as np
import pytest
from scipy import stats

from perfmodel import Model, PerfModelError, compute_intervals
from perfmodel.data.datasets import load_dataset
from perfmodel.fitting.members import Member, Noise, Uncertainty
from perfmodel.uncertainty.references import REFERENCE_PRESETS


def member(expr, coefs, label="", weight=0.0):
    c = np.asarray(coefs, float)
    return Member(
        expression=expr,
        param_bounds={},
        factors=["p"],
        weight=weight,
        point_coefficients=c,
        point_params=np.zeros(0),
        coefficients=c[None, :],
        params=np.zeros((1, 0)),
        label=label,
    )


def hand_made(gamma=1.0):
    refs = [member("1", [10.0], "same"), member("1 + p", [8.0, 0.25], "slow"), member("1 + p", [8.0, 0.5], "slower")]
    # misfit where measured (p = 1..8): |log(r/10)| largest at p = 1
    misfit = [0.0, math.log(10 / 8.25), math.log(10 / 8.5)]
    return Uncertainty(
        members=[member("1", [10.0], "fit", 1.0)],
        noise=Noise(0.0, None, "residuals"),
        calibration=[],
        factor_ranges={"p": (1.0, 8.0)},
        prior={
            "kappa": {"same_nodes": 0.0, "crosses_nodes": 0.0, "unknown": 0.0},
            "pseudo_configurations": 1.0,
            "band_scale": 1.0,
            "level": 0.9,
            "structure_scale": gamma,
        },
        references=refs,
        reference_misfit=misfit,
    )


def test_structures_widen_the_band_and_never_move_the_point():
    """Issue 31: what you see predicts. Beyond the measurements the structures reach past the formula,
    and the band takes in γ of that reach; the point stays the formula's."""
    unc = hand_made()
    env = {"p": np.array([4.0, 64.0])}
    below, above = unc.structures(env, np.array([10.0, 10.0]))
    # at p = 64 the shifts are 0, 0, log(24/10) - log(10/8.25), log(40/10) - log(10/8.5): all above the formula
    b = math.log(4.0) - math.log(10 / 8.5)
    assert below == pytest.approx([0.0, 0.0]) and above == pytest.approx([0.0, b])
    point, low, high = unc.interval(env, 0.9)
    assert point == pytest.approx([10.0, 10.0])  # the formula's, at both
    # no noise, no κ: the band is the structures' reach (γ = 1) above the formula
    assert low == pytest.approx([10.0, 10.0]) and high == pytest.approx([10.0, 10.0 * math.exp(b)])


def test_gamma_zero_keeps_the_band():
    env = {"p": np.array([64.0])}
    t, low, high = hand_made(gamma=0.0).interval(env, 0.9)
    assert t == pytest.approx([10.0]) and low == pytest.approx([10.0]) and high == pytest.approx([10.0])
    widened = hand_made(gamma=1.0).interval(env, 0.9)
    assert widened[2][0] == pytest.approx(10.0 * 4.0 * 8.5 / 10)  # up to the slower structure, less its misfit


def test_the_band_stops_at_the_best_measured_efficiency():
    """Item 4: the band's low end implies no parallel efficiency above the best measured by more than the
    noise of one run and the slack. Measured: 80 GPU-seconds at p = 8 (T = 10); at p = 64 the floor is
    80 / 64 · exp(−q) / (1 + slack), q the 90 % quantile of one run's noise (σ · t_df)."""
    from perfmodel.fitting.extrapolation import efficiency_floor, efficiency_reference

    ref = efficiency_reference({"p": np.array([1.0, 2.0, 8.0])}, np.array([100.0, 45.0, 10.0]), ["p"])
    assert ref == {"symbols": [], "rows": [[80.0]]}  # the least of 100, 90, 80 GPU-seconds
    assert efficiency_floor(ref, {"p": np.array([64.0])}) == pytest.approx([1.25])
    unc = hand_made(gamma=0.0)
    unc.prior["kappa"] = {"same_nodes": 1.0, "crosses_nodes": 1.0, "unknown": 1.0}  # a band 5× wide per doubling
    unc.efficiency_ref = ref
    env = {"p": np.array([64.0])}
    assert unc.interval(env, 0.9)[1][0] < 1.0  # without a slack in the prior: no bound
    unc.prior["efficiency_slack"] = 0.1
    unc.noise = Noise(0.02, 4.0, "residuals")  # 2 % per run, on 4 degrees of freedom
    t, low, high = unc.interval(env, 0.9)
    q = unc.noise.sigma * stats.t.ppf(0.95, unc.noise.df) if unc.noise.df else unc.noise.sigma * 1.6448536
    assert q > 0 and t[0] == pytest.approx(10.0) and low[0] == pytest.approx(80 / 64 * np.exp(-q) / 1.1)
    again = Uncertainty.from_dict(json.loads(json.dumps(unc.to_dict())))
    assert again.interval(env, 0.9)[1][0] == pytest.approx(low[0])
    d = unc.to_dict()
    d["efficiency_ref"]["rows"] = [[-1.0]]
    with pytest.raises(PerfModelError, match="efficiency_ref"):
        Uncertainty.from_dict(d)


def test_the_speedup_and_efficiency_bands_stop_at_the_best_measured_efficiency():
    """Item 4 on the charts: the Scaling page's speedup band at p = 32 on ResNet-50 measured at 1-8 P100s
    reached 54x (an efficiency of 170 %). Its high end now stops where the time's low end does: the
    best measured efficiency (from the runs themselves) times the noise of one run and 1 + the prior's slack."""
    from perfmodel.plots.speedup import speedup_data
    from perfmodel.uncertainty.prior import load_prior

    meas = load_dataset("tf-cnn-resnet50-dgx1")
    res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=50)
    fixed = {s: float(meas.values(s).max()) for s in meas.factors if s not in ("p", "nodes")}
    sd = speedup_data(res, fixed, meas, x_max=32.0)
    rows = np.all([np.isclose(meas.values(s), v) for s, v in fixed.items()], axis=0)
    p, t = meas.values("p")[rows], meas.y[rows]
    best = max(t[p == p.min()].mean() * p.min() / (t[p == v].mean() * v) for v in np.unique(p))
    q = res._uncertainty().noise.quantile(0.9)
    bound = best * np.exp(q) * (1 + load_prior()["efficiency_slack"])
    t0 = float(res.predict({"p": [sd.p0], **{s: [v] for s, v in fixed.items()}})[0])
    measured_t0 = t[p == sd.p0].mean()
    # the chart's speedup is over the model's T(p0); the bound is over the measured one
    assert np.all(sd.speedup_high / sd.ideal <= bound * t0 / measured_t0 + 1e-9)
    assert np.all(sd.speedup_low <= sd.speedup) and np.all(sd.speedup <= sd.speedup_high + 1e-12)
    assert sd.speedup_high[-1] < 1.2 * 32


def test_the_speedup_band_is_the_reference_time_over_the_time_band_at_32x():
    """A user walk on the default dataset at 32× the measured p: the headline's range at p = 256 (up to
    7.35 min, with T(1) = 98.6 min a speedup of at least 13×) contradicted the caption's "243× (5–282×)";
    here the headline gave 0.41 min (0.35–1.96 min), at least 50×, against "243× (44–282×)". The speedup
    band came from the members' own ratios without the time band's calibration (band scale, one run's
    noise). One convention now: speedup = T(p0) / T(p) with T(p0) the model's point, and its band that
    reference over the time band the headline quotes at the same configuration."""
    from perfmodel.data.datasets import get_dataset
    from perfmodel.plots.scaling import scaling_data, typical_value
    from perfmodel.plots.speedup import speedup_data
    from perfmodel.uncertainty.ranges import range_at

    ds = get_dataset("tf-cnn-resnet50-dgx1")  # the app's default dataset, fitted as the app does
    meas = load_dataset(ds.name)
    res = compute_intervals(Model(ds.terms).fit(meas), meas, gpus_per_node=8)
    fixed = {s: typical_value(res, s, meas) for s in res.target_factors() if s != "p"}
    x_end = res.factor_ranges["p"][1] * 32  # "Extend the curve to 32 ×"
    sd = speedup_data(res, fixed, meas, data=scaling_data(res, "p", fixed, meas, x_max=x_end))
    t0 = float(res.predict({"p": [sd.p0], **{s: [v] for s, v in fixed.items()}})[0])
    # along the whole curve: the chart's speedup band is T(p0) over the chart's time band
    np.testing.assert_allclose(sd.speedup_low, t0 / sd.scaling.high, rtol=0.01)
    np.testing.assert_allclose(sd.speedup_high, t0 / sd.scaling.low, rtol=0.01)
    np.testing.assert_allclose(sd.efficiency_low, t0 / sd.scaling.high / sd.ideal * 100, rtol=0.01)
    # at the curve's end, where the caption quotes the best speedup: the headline's range
    assert sd.p[-1] == pytest.approx(x_end) and int(np.argmax(sd.speedup)) == sd.p.size - 1
    r = range_at(res, {"p": x_end, **fixed})
    assert r.point == pytest.approx(sd.scaling.total[-1], rel=1e-9)
    assert sd.speedup[-1] == pytest.approx(t0 / r.point, rel=1e-9)
    assert sd.speedup_low[-1] == pytest.approx(t0 / r.high, rel=0.01)
    assert sd.speedup_high[-1] == pytest.approx(t0 / r.low, rel=0.01)


def test_references_are_fitted_stored_and_used_alike_everywhere():
    meas = load_dataset("tf-cnn-resnet50-dgx1")
    res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=30)
    unc = res._uncertainty()
    assert [m.label for m in unc.references] == list(REFERENCE_PRESETS)
    assert len(unc.reference_misfit) == len(REFERENCE_PRESETS) and all(v >= 0 for v in unc.reference_misfit)
    # where measured, every structure agrees within its misfit: the prediction is the formula's
    env = meas.env()
    assert np.allclose(unc.reference_shifts(env, unc.point(unc.point_predictions(env))), 0.0)
    far = {"p": np.array([64.0, 256.0]), **{k: np.full(2, v[0]) for k, v in env.items() if k != "p"}}
    out = res.predict(far, interval=0.9)
    assert np.allclose(res.predict(far), out["predicted_time"])  # with and without an interval
    assert np.all(out["predicted_low"] <= out["predicted_time"]) and np.all(
        out["predicted_time"] <= out["predicted_high"]
    )
    again = Uncertainty.from_dict(json.loads(json.dumps(unc.to_dict())))
    assert np.allclose(again.interval(far, 0.9), unc.interval(far, 0.9))


def test_malformed_references_are_refused():
    d = hand_made().to_dict()
    d["reference_misfit"] = [0.0]
    with pytest.raises(PerfModelError, match="reference_misfit"):
        Uncertainty.from_dict(d)
    d = hand_made().to_dict()
    d["prior"]["structure_scale"] = float("nan")
    with pytest.raises(PerfModelError, match="structure_scale"):
        Uncertainty.from_dict(d)
    d = hand_made().to_dict()
    d["references"][1]["point"]["coefficients"] = [1.0]
    with pytest.raises(PerfModelError, match="malformed|do not match"):
        Uncertainty.from_dict(d)


def test_the_learning_script_computes_the_structures_as_the_product():
    import importlib.util
    import sys
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("learn_prior_structures", root / "scripts" / "learn_prior.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["learn_prior_structures"] = mod
    spec.loader.exec_module(mod)
    unc = hand_made()
    env = {"p": np.array([2.0, 16.0, 64.0, 512.0])}
    t = np.full(4, 10.0)
    shifts = unc.reference_shifts(env, t)
    rec = pd.DataFrame({f"shift_{m.label}": a for m, a in zip(unc.references, shifts, strict=True)})
    for g, w in zip(mod.structures(rec), unc.structures(env, t), strict=True):
        assert np.allclose(g, w)


def test_the_product_gives_the_intervals_the_learning_script_emulates():
    """scripts/learn_prior.py learns on records made without the prior and emulates the product's
    intervals with it; the product, given the shipped prior, must give those very intervals."""
    import importlib.util
    import sys
    from pathlib import Path

    import pandas as pd

    from perfmodel.fitting.extrapolation import efficiency_floor
    from perfmodel.fitting.members import distance, series_evidence
    from perfmodel.uncertainty.prior import load_prior

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("learn_prior_fidelity", root / "scripts" / "learn_prior.py")
    lp = importlib.util.module_from_spec(spec)
    sys.modules["learn_prior_fidelity"] = lp
    spec.loader.exec_module(lp)
    meas = load_dataset("tf-cnn-resnet50-dgx1")
    train = meas.subset(meas.values("p") <= 2)
    far = {"p": np.array([4.0, 8.0, 64.0]), **{k: np.full(3, meas.values(k)[0]) for k in meas.factors if k != "p"}}
    prior = load_prior()
    base = compute_intervals(Model(preset="data-parallel").fit(train), train, replicates=40, prior=False)
    unc = base._uncertainty()
    t, lo0, hi0 = unc.interval(far, 0.9, widen=False)
    S, n = series_evidence(unc.calibration)
    from perfmodel.fitting.members import crossings

    cross = crossings(unc.topology, far)  # 8 GPUs guessed per node: 64 GPUs is a first run across nodes
    assert list(cross) == ["same_nodes", "same_nodes", "crosses_nodes"] and unc.topology["max_nodes"] == 1
    rec = pd.DataFrame(
        {
            "source": "s",
            "family": "f",
            "series": "x",
            "cut": 2.0,
            "n_train_configs": 2,
            "y_true": t,
            "pred": t,
            "low": np.nan,
            "high": np.nan,
            "band_low": np.log(t / lo0),
            "band_high": np.log(hi0 / t),
            "d_model": distance(unc.factor_ranges, far),
            "evidence": S,
            "n_evidence": n,
            "distance": 1.0,
            "crossing": cross,
            "bucket": "",
            "shortfall": unc.scaling_shortfall,
            "max_train_nodes": unc.topology["max_nodes"],
            "noise_source": unc.noise.source,
            "noise_sigma": unc.noise.sigma,
            "noise_df": np.nan if unc.noise.df is None else unc.noise.df,
        }
    )
    for m, a in zip(unc.references, unc.reference_shifts(far, t), strict=True):
        rec[f"shift_{m.label}"] = a
    rec["efficiency_bound"] = efficiency_floor(unc.efficiency_ref, far)
    name = lp.prepare(rec)["scaling_class"].iloc[0]  # the series' scaling class as the script tells it
    c = next(c for c in prior["classes"] if c["name"] == name)
    r = lp.prepare(rec)
    slack = prior.get("efficiency_slack")
    r["floor_s"] = lp.prior_laws.noise_floor(rec) / (1 + slack) if slack is not None else np.nan
    r = lp.apply_noise_prior(r, prior.get("noise"))  # none in the shipped file
    with_prior = compute_intervals(Model(preset="data-parallel").fit(train), train, replicates=40, prior=True)
    got = with_prior.predict(far, interval=0.9)
    # the product's class is the script's, and the class's fields are the shipped file's
    assert name and name == with_prior._uncertainty().prior["scaling_class"]["name"]
    # κ as the script computes it: the class's, a first run across nodes at least the whole corpus's
    pop = [c["kappa"]["same_nodes"]] * 2 + [max(c["kappa"]["crosses_nodes"], prior["kappa"]["crosses_nodes"])]
    kappa = with_prior._uncertainty().kappas(far, 0.9)
    assert np.allclose(kappa, lp.kappas(r, pop, c["pseudo_configurations"], c.get("shortfall_scale", 0.0)))
    # two GPU counts, one run each: the noise is the stated prior, whose band the class scales apart
    assert unc.noise.source == "prior" and r["few_dof"].all()
    few = c.get("few_dof_band_scale", c["band_scale"])  # the shipped file's is fixed (learn_prior.FEW_DOF_BAND_SCALE)
    assert with_prior._uncertainty().band_scale() == few
    lo, hi = lp.halves(r, kappa, (c["band_scale"], few), c["structure_scale"])
    fit = {
        "kappa": prior["kappa"],
        "n0": prior["pseudo_configurations"],
        "classes": {
            k["name"]: {
                "kappa": k["kappa"],
                "n0": k["pseudo_configurations"],
                "band_scale": k["band_scale"],
                "few_dof_band_scale": k.get("few_dof_band_scale", k["band_scale"]),
                "structure_scale": k["structure_scale"],
                "shortfall_scale": k["shortfall_scale"],
            }
            for k in prior["classes"]
        },
    }
    assert np.allclose(lp.class_halves(r, fit), (lo, hi))  # the script's LOSO emulation: the same
    tp = r["pred"].to_numpy(float)
    assert np.allclose(got["predicted_time"], tp, rtol=1e-9)
    assert np.allclose(got["predicted_low"], tp * np.exp(-lo), rtol=1e-9)
    assert np.allclose(got["predicted_high"], tp * np.exp(hi), rtol=1e-9)


def test_the_ernest_reference_keeps_a_term_for_each_other_varying_factor():
    from perfmodel.uncertainty.references import ernest_spec

    # the corpus's prior was learned with this structure: Ernest's four terms and the batch size
    assert ernest_spec(load_dataset("tf-cnn-resnet50-dgx1")) == "1 + N/p + log(p) + p + b"


def test_the_structures_speak_only_beyond_the_measured_workers():
    """The corpus learned them on targets with more workers than measured; a larger data size alone,
    or data without a workers factor (Ernest's rcv1: cores and input fraction), keeps the formula."""
    meas = load_dataset("tf-cnn-resnet50-dgx1")
    res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=30)
    unc = res._uncertainty()
    env = meas.env()
    bigger_data = {k: (np.asarray(v, float) * 16 if k == "N" else np.asarray(v, float)) for k, v in env.items()}
    formula = unc.point(unc.point_predictions(bigger_data))
    assert np.allclose(res.predict(bigger_data), formula)
    assert not unc.reference_shifts(bigger_data, formula).any()
    rcv1 = load_dataset("ernest-rcv1")
    assert "p" not in rcv1.factors
    fit = compute_intervals(Model("1 + x/m + log(m) + m", lam=0).fit(rcv1), rcv1, replicates=20)
    assert fit._uncertainty().references is None


def test_structures_that_predict_otherwise_are_named_with_their_numbers():
    """The formula's number stands; a structure that departs from it by more than 10 % beyond the
    measurements is named in a warning with its own prediction there, and where measured none is."""
    from perfmodel.fitting.diagnostics import STRUCTURE_NOTE, _structure_warnings

    meas = load_dataset("tf-cnn-resnet50-dgx1")
    res = compute_intervals(Model("1 + N/p", lam=0).fit(meas), meas, replicates=20)
    unc = res._uncertainty()
    env = meas.env()
    far = {"p": np.array([1024.0]), **{k: np.full(1, v[0]) for k, v in env.items() if k != "p"}}
    formula = unc.point(unc.point_predictions(far))
    assert res.predict(far) == pytest.approx(formula)  # the number is the formula's
    ratios = np.exp(unc.reference_logratios(far, formula))[:, 0]
    shifts = unc.reference_shifts(far, formula)[:, 0]
    named = [m.label for m, a in zip(unc.references, shifts, strict=True) if abs(math.expm1(a)) > STRUCTURE_NOTE]
    got = _structure_warnings(res, far)
    assert named and got  # Ernest's and the data-parallel structure grow with p where 1 + N/p cannot
    for m, r in zip(unc.references, ratios, strict=True):
        if m.label in named:
            assert f"{m.label} {formula[0] * r:.4g} s ({r:.2f}×)" in got[0]
    assert f"the formula gives {formula[0]:.4g} s" in got[0]
    # in the unit of the page's headline and charts (the Scaling page's minutes): one unit on one page
    [in_min] = [w for w in res.prediction_warnings(far, unit="min") if "the formula gives" in w]
    assert f"the formula gives {formula[0] / 60:.4g} min" in in_min
    assert _structure_warnings(res, env) == []  # where measured the structures agree within their misfit


def test_the_scaling_shortfall_of_the_last_doubling_widens_kappa():
    from perfmodel.fitting.extrapolation import scaling_shortfall

    p = np.array([1.0, 2.0, 4.0, 4.0])
    assert scaling_shortfall(p, 8 / p) == pytest.approx(0.0)  # the time halved: perfect scaling
    assert scaling_shortfall(p, np.array([8.0, 4.0, 4.0, 4.0])) == pytest.approx(1.0)  # flat over 2 -> 4
    assert scaling_shortfall(p, np.array([8.0, 4.0, 2.0 * 2**0.3, 2.0 * 2**0.3])) == pytest.approx(0.3)
    assert scaling_shortfall(p, np.array([8.0, 1.0, 100.0, 100.0])) == 2.0  # clipped
    assert scaling_shortfall(np.array([4.0, 4.0]), np.array([1.0, 2.0])) is None  # one worker count
    unc = hand_made()
    unc.prior["kappa"] = {"same_nodes": 0.2, "crosses_nodes": 0.2, "unknown": 0.2}
    unc.prior["pseudo_configurations"] = 1.0
    base = unc.kappa(0.9)[0]
    unc.prior["shortfall_scale"] = 4.0
    unc.scaling_shortfall = 0.25
    k, how = unc.kappa(0.9)
    assert k == pytest.approx(base * (1 + 4.0 * 0.25)) and "25 % short" in how
    d = unc.to_dict()
    assert Uncertainty.from_dict(json.loads(json.dumps(d))).scaling_shortfall == 0.25
    d["scaling_shortfall"] = 3.0
    with pytest.raises(PerfModelError, match="scaling_shortfall"):
        Uncertainty.from_dict(d)


def test_a_formula_faster_than_the_best_measured_efficiency_is_warned_with_the_bound():
    """Item 4 for the point: a super-linear series (efficiency 1.00, 1.04, 1.09, 1.14 at p = 1-8) fitted
    by a power law predicts beyond p = 8 faster than its best measured efficiency allows. The number stays
    the formula's; the warning gives the bound: 100·1 / (8·11) -> 88 GPU-seconds, / p, less the noise."""
    import pandas as pd

    from perfmodel import Measurements
    from perfmodel.fitting.diagnostics import prediction_warnings

    p = np.array([1.0, 2.0, 4.0, 8.0] * 2)
    t = np.array([100.0, 48.0, 23.0, 11.0] * 2) * np.repeat([0.995, 1.005], 4)
    meas = Measurements.from_frame(pd.DataFrame({"workers": p, "t": t}), "t", {"p": "workers"})
    res = compute_intervals(Model(terms="p^e1").fit(meas), meas, replicates=40)
    unc = res._uncertainty()
    env = {"p": np.array([64.0])}
    point = float(res.predict(env)[0])
    q = unc.noise.quantile(0.9)
    bound = 88.0 / 64 * math.exp(-q) / (1 + unc.prior["efficiency_slack"])
    assert point < bound  # the formula runs faster than the measured work allows
    assert unc.efficiency_bound(env)[0] == pytest.approx(bound, rel=1e-9)
    [warning] = [w for w in prediction_warnings(res, env) if "super-linear" in w]
    assert f"predicts {point:.4g} s" in warning and f"{88.0 / 64:.4g} s" in warning
    assert "the noise of one run" in warning
    # the band's low end reaches no lower than the formula there
    assert res.predict(env, interval=0.9)["predicted_low"].iloc[0] == pytest.approx(point)
    # and how the intervals were made says what stops it, with the noise's share
    low_end = dict(res.interval_facts())["low end"]
    assert "best parallel efficiency measured" in low_end and f"({100 * (1 - math.exp(-q)):.2g} % at 90%)" in low_end
