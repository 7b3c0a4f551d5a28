"""Issue 31: the displayed formula makes every number, and data made by a formula with the model's own
terms are predicted where that formula says, beyond the measurements.

The formula is read independently of the prediction path: the model's exported Python expression
(the Export page's, :meth:`FitResult.python_expression`) evaluated with numpy at each configuration.
Every printed number for a configuration — ``predict`` with and without an interval, ``plan``,
``advise``'s target, the app's headline range (:func:`range_at`), the Scaling curve, the CLI — must be
that value.
"""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import perfmodel
from perfmodel import Measurements, Model, compute_intervals
from perfmodel.advise import advise
from perfmodel.fitting.result import FitResult
from perfmodel.language.terms import PRESETS
from perfmodel.plots.scaling import scaling_data
from perfmodel.search import auto_select, plausible
from perfmodel.uncertainty.prior import with_topology
from perfmodel.uncertainty.ranges import range_at
from tests.cli_run import run


def formula_at(result: FitResult, frame: pd.DataFrame) -> np.ndarray:
    """The exported expression evaluated at each row of ``frame`` (columns named by symbol; a target's
    nodes follow from p as the model says)."""
    env = result._env(frame)  # the values by symbol, nodes made from p where the model does that
    code = result.python_expression()
    n = len(frame)
    ns = {"np": np, **{s: np.asarray(v, float) for s, v in env.items()}}
    if "I" in code or "N" in code:
        ns.setdefault("N", np.ones(n))
    out = eval(compile(code, "<exported formula>", "eval"), {"__builtins__": {}}, ns)  # the product's own export
    return np.broadcast_to(np.asarray(out, float), (n,))


def synthetic(seed: int = 0, noise: float = 0.02, gpus=(1, 2, 4, 8, 16), batches=(32, 64)) -> pd.DataFrame:
    """Runs of a data-parallel job: T = 20 + 0.004·N/(p·b)·b^0.9 + 0.02·N/(p·b)·log2(p) + 0.3·p, 2 % noise."""
    rng = np.random.default_rng(seed)
    rows = []
    N = 200_000
    for p in gpus:
        for b in batches:
            it = math.ceil(N / (p * b))
            t = 20 + 0.004 * it * b**0.9 + 0.02 * it * math.log2(p) + 0.3 * p
            for _ in range(2):
                rows.append({"gpus": p, "batch": b, "samples": N, "time_s": t * (1 + noise * rng.standard_normal())})
    return pd.DataFrame(rows)


FACTORS = {"p": "gpus", "b": "batch", "N": "samples"}
TARGETS = pd.DataFrame({"p": [16, 32, 64, 128], "b": [64, 64, 32, 64], "N": [200_000] * 4})


def fitted(kind: str, seed: int = 0) -> tuple[FitResult, Measurements]:
    meas = with_topology(Measurements.from_frame(synthetic(seed), "time_s", FACTORS), 8)
    if kind == "auto":
        sel = auto_select(meas, workers=1, validate=False)
        res, _, averaging = plausible(sel)
    else:
        model = Model(preset=kind) if kind in PRESETS else Model(kind)
        res, averaging = model.fit(meas), {}
    compute_intervals(res, meas, replicates=40, **averaging)
    return res, meas


KINDS = [*PRESETS, "1 + N/p + log2(p) + p", "auto"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_printed_number_is_the_displayed_formulas(kind):
    res, meas = fitted(kind)
    want = formula_at(res, TARGETS)
    assert np.all(np.isfinite(want)) and np.all(want > 0)
    assert res.predict(TARGETS) == pytest.approx(want, rel=1e-9)
    band = res.predict(TARGETS, interval=0.9)
    assert band["predicted_time"].to_numpy() == pytest.approx(want, rel=1e-9)
    assert np.all(band["predicted_low"] <= band["predicted_time"] * (1 + 1e-12))
    assert np.all(band["predicted_high"] >= band["predicted_time"] * (1 - 1e-12))
    # the app's headline and advise's target quote range_at
    for i in range(len(TARGETS)):
        r = range_at(res, TARGETS.iloc[i].to_dict())
        assert r.point == pytest.approx(want[i], rel=1e-9)
    # plan: each configuration's predicted time
    plan = perfmodel.plan(res, at={"b": 64, "N": 200_000}, grid={"p": [16, 32, 64, 128]})
    frame = pd.DataFrame({"p": [16, 32, 64, 128], "b": 64, "N": 200_000})
    assert plan["time_s"].to_numpy(float) == pytest.approx(formula_at(res, frame), rel=1e-9)
    # the Scaling page's curve
    data = scaling_data(res, "p", fixed={"b": 64, "N": 200_000}, meas=meas, x_max=128, n=20)
    frame = pd.DataFrame({"p": data.x, "b": 64, "N": 200_000})
    assert data.total == pytest.approx(formula_at(res, frame), rel=1e-9)
    # advise's target
    out = advise(res, {"p": 64, "b": 64, "N": 200_000}, {"p": [1, 2, 4, 8, 16, 32]}, level=0.9)
    target = pd.DataFrame({"p": [64], "b": [64], "N": [200_000]})
    assert out.attrs["target_time"] == pytest.approx(float(formula_at(res, target)[0]), rel=1e-9)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    kind=st.sampled_from(["data-parallel", "pollux", "1 + 1/p + p", "p^e + 1"]),
    p=st.sampled_from([24, 48, 100, 1000]),
)
def test_the_formula_predicts_at_any_configuration(seed, kind, p):
    """A seeded slice of models and data: the interval's point is the formula's everywhere."""
    meas = Measurements.from_frame(synthetic(seed, noise=0.05, gpus=(1, 2, 4, 8)), "time_s", FACTORS)
    model = Model(preset=kind) if kind in PRESETS else Model(kind)
    res = model.fit(meas)
    compute_intervals(res, meas, replicates=20, calibrate=False)
    frame = pd.DataFrame({"p": [p], "b": [48], "N": [300_000]})
    assert res.predict(frame, interval=0.9)["predicted_time"].to_numpy() == pytest.approx(
        formula_at(res, frame), rel=1e-9
    )


def test_the_cli_prints_the_formula(tmp_path, capsys):
    """fit --auto, then predict, plan and advise on the command line: the formula's numbers."""
    csv = tmp_path / "runs.csv"
    synthetic().to_csv(csv, index=False)
    model = tmp_path / "m.json"
    assert run(["fit", str(csv), "--auto", "--gpus-per-node", "8", "--out", str(model)], capsys)[0] == 0
    res = FitResult.load(model)
    code, out, err = run(
        ["predict", str(model), "--grid", "p=32,64", "--grid", "b=64", "--grid", "N=200000", "--interval", "0.9"],
        capsys,
    )
    assert code == 0, err
    printed = pd.read_csv(pd.io.common.StringIO(out))
    frame = pd.DataFrame({"p": [32, 64], "b": 64, "N": 200_000})
    assert printed["predicted_time"].to_numpy() == pytest.approx(formula_at(res, frame), rel=1e-9)
    plan_csv = tmp_path / "plan.csv"
    code, out, err = run(
        ["plan", str(model), "--at", "b=64,N=200000", "--grid", "p=32,64", "--out", str(plan_csv)], capsys
    )
    assert code == 0, err
    plan = pd.read_csv(plan_csv)
    assert plan["time_s"].to_numpy(float) == pytest.approx(formula_at(res, frame), rel=1e-6)


# -- known formulas ------------------------------------------------------------------------------
def _known(spec_of, coefs, seed=0):
    """Runs at p = 1-16 (b = 32, 64) of the formula ``Σ coefs_k·term_k`` (``spec_of``'s terms), 2 % noise."""
    rows = []
    rng = np.random.default_rng(seed)
    for p in (1, 2, 4, 8, 16):
        for b in (32, 64):
            rows.append({"gpus": p, "batch": b, "samples": 500_000})
    frame = pd.DataFrame(rows)
    res0 = Model(spec_of).fit(
        Measurements.from_frame(frame.assign(time_s=1.0 + frame.gpus), "time_s", FACTORS)
    )  # only to evaluate the terms for these factors
    terms = res0.term_values(frame)
    t = np.asarray(coefs, float) @ terms
    frame["time_s"] = t * (1 + 0.02 * rng.standard_normal(len(t)))
    return frame, res0


KNOWN = {
    # the example: 30 + 0.002·N/p + 1.5·log2(p) + 0.05·p
    "1 + N/p + log2(p) + p": [30.0, 0.002, 1.5, 0.05],
    # the paper's data-parallel structure with the batch exponent fixed (start-up, compute, all-reduce, per worker)
    "1 + I*b + I*log2(p) + p": [20.0, 0.004, 0.02, 0.3],
    # Ernest's terms
    "1 + N/p + log(p) + p": [5.0, 0.01, 3.0, 0.2],
    # Amdahl and the USL
    "1 + 1/p": [12.0, 400.0],
    "1/p + (p-1)/p + max(p-1, 0)": [400.0, 10.0, 0.05],
}


FAR = pd.DataFrame({"gpus": [32, 64, 128], "batch": [64] * 3, "samples": [500_000] * 3})


@pytest.mark.parametrize("spec", list(KNOWN))
def test_known_formulas_lie_in_the_band_2_to_8x_beyond(spec):
    """2 % noise on five worker counts: the generating formula's time at 2-8x the largest p lies in the
    displayed model's 90 % band (the point itself cannot be held to 5 % for four terms: see below)."""
    frame, _ = _known(spec, KNOWN[spec])
    meas = Measurements.from_frame(frame, "time_s", FACTORS)
    res = Model(spec).fit(meas)
    compute_intervals(res, meas, replicates=40)
    truth = np.asarray(KNOWN[spec], float) @ res.term_values(FAR)
    got = res.predict(FAR, interval=0.9)
    assert np.all((got["predicted_low"] <= truth) & (truth <= got["predicted_high"]))
    assert got["predicted_time"].to_numpy() == pytest.approx(res.predict(FAR), rel=1e-12)  # the formula's


@pytest.mark.parametrize("spec, coefs", [("1 + 1/p", KNOWN["1 + 1/p"]), ("1 + N/p", [60.0, 0.004])])
def test_known_formulas_the_runs_identify_are_predicted_within_5_percent_2_to_8x_beyond(spec, coefs):
    """Two terms, each a fair share of the measured time (start-up 9-40 %): 2 % noise, three seeds."""
    for seed in range(3):
        frame, _ = _known(spec, coefs, seed)
        res = Model(spec).fit(Measurements.from_frame(frame, "time_s", FACTORS))
        truth = np.asarray(coefs, float) @ res.term_values(FAR)
        assert res.predict(FAR) == pytest.approx(truth, rel=0.05)


def test_four_terms_on_five_worker_counts_are_not_identified_at_2_percent_noise():
    """Why the issue's example (30 + 0.002·N/p + 1.5·log2(p) + 0.05·p) has a band test, not a 5 % one: on
    its five worker counts with 2 % noise, plain weighted least squares (numpy, not perfmodel) puts the
    time at p = 128 over 50 % off: the data cannot tell the log2(p) and p terms apart."""
    spec = "1 + N/p + log2(p) + p"
    frame, res0 = _known(spec, KNOWN[spec], seed=3)
    X, y = res0.term_values(frame).T, frame["time_s"].to_numpy(float)
    coef = np.linalg.lstsq(X / y[:, None], np.ones_like(y), rcond=None)[0]
    far = res0.term_values(FAR)
    truth = np.asarray(KNOWN[spec], float) @ far
    assert abs(coef @ far[:, -1] / truth[-1] - 1) > 0.5


def test_the_data_parallel_preset_recovers_its_own_formula_beyond_the_data():
    """Data made by the preset's expansion for these factors (I·b^0.8 compute), 2 % noise, fitted by the
    preset: the generating formula lies in the 90 % band at 2-8× the largest measured p (five constants on
    five worker counts: the point is 4-17 % off, beyond what 2 % noise identifies, as above)."""
    rows = []
    rng = np.random.default_rng(3)
    N = 500_000
    for p in (1, 2, 4, 8, 16):
        for b in (32, 64, 128):
            it = math.ceil(N / (p * b))
            t = 25 + 0.003 * it * b**0.8 + 0.015 * it * math.log2(p) + 0.2 * p
            rows.append({"gpus": p, "batch": b, "samples": N, "time_s": t * (1 + 0.02 * rng.standard_normal())})
    meas = Measurements.from_frame(pd.DataFrame(rows), "time_s", FACTORS)
    res = Model(preset="data-parallel").fit(meas)
    compute_intervals(res, meas, replicates=40)
    for p in (32, 64, 128):
        it = math.ceil(N / (p * 64))
        truth = 25 + 0.003 * it * 64**0.8 + 0.015 * it * math.log2(p) + 0.2 * p
        got = res.predict({"gpus": [p], "batch": [64], "samples": [N]}, interval=0.9).iloc[0]
        assert got["predicted_low"] <= truth <= got["predicted_high"]


def test_a_model_file_is_the_formula_after_a_round_trip(tmp_path):
    res, _ = fitted("auto")
    again = FitResult.from_json(res.to_json())
    assert again.predict(TARGETS, interval=0.9)["predicted_time"].to_numpy() == pytest.approx(
        formula_at(res, TARGETS), rel=1e-9
    )
