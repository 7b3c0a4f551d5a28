"""The pollux and optimus presets recover their constants from data made by their own formulas,
adapt to the mapped factors, and fit real bundled datasets from the API and the CLI."""

import json

import numpy as np
import pandas as pd
import pytest
from cli_run import run

import perfmodel
from perfmodel.data import guess_roles
from perfmodel.data.datasets import load_dataset
from perfmodel.language import PRESETS, preset_spec

# Pollux's PerfParams (alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma): made-up but plausible.
POLLUX = dict(alpha_c=0.02, beta_c=0.0015, alpha_n=0.05, beta_n=0.004, alpha_r=0.01, beta_r=0.002, gamma=3.0)


def pollux_frame(noise=0.0, repeats=1, seed=0) -> pd.DataFrame:
    """Step time by AdaptDL's goodput._predict (no accumulation), times the iterations of one epoch."""
    rows = [
        (p, nodes, b)
        for nodes, ps in ((1, [1, 2, 4]), (2, [8, 16]), (4, [16, 32]))
        for p in ps
        for b in (16, 32, 64, 128)
        for _ in range(repeats)
    ]
    p, nodes, b = (np.array(v, float) for v in zip(*rows, strict=True))
    q = POLLUX
    t_acc = q["alpha_c"] + q["beta_c"] * b
    t_net = np.where(
        nodes > 1,
        q["alpha_n"] + q["beta_n"] * np.maximum(p - 2, 0),
        np.where(p > 1, q["alpha_r"] + q["beta_r"] * np.maximum(p - 2, 0), 0.0),
    )
    g = q["gamma"]
    n = np.full(len(p), 1.28e6)
    t = np.ceil(n / (p * b)) * (t_acc**g + t_net**g) ** (1 / g)
    t = t * np.exp(np.random.default_rng(seed).normal(0, noise, len(t)))
    return pd.DataFrame({"gpus": p, "machines": nodes, "batch": b, "samples": n, "time_s": t})


POLLUX_FACTORS = {"p": "gpus", "nodes": "machines", "b": "batch", "N": "samples"}
# the preset's coefficients in term order: α_c, β_c, α_r, β_r, α_n, β_n
POLLUX_ORDER = ["alpha_c", "beta_c", "alpha_r", "beta_r", "alpha_n", "beta_n"]

OPTIMUS = dict(a=0.002, b=0.05, c=0.03, d=0.004, e=0.01)


def optimus_frame(servers=True, noise=0.0, seed=0) -> pd.DataFrame:
    """1/speed of Optimus's __sync_speed_fit_func with B/w the per-worker batch, times the iterations."""
    rows = [(w, s, b) for w in (1, 2, 4, 8) for s in ((1, 2, 4) if servers else (0,)) for b in (32, 64)]
    w, s, b = (np.array(v, float) for v in zip(*rows, strict=True))
    q = OPTIMUS
    step = q["a"] * b + q["b"] + q["d"] * w
    if servers:
        step = step + q["c"] * w / s + q["e"] * s
    n = np.full(len(w), 5e5)
    t = np.ceil(n / (w * b)) * step * np.exp(np.random.default_rng(seed).normal(0, noise, len(w)))
    frame = pd.DataFrame({"workers": w, "batch": b, "samples": n, "time_s": t})
    if servers:
        frame["ps"] = s
    return frame


def test_both_presets_are_listed_and_documented():
    assert {"pollux", "optimus"} <= set(PRESETS)
    assert "goodput.py" in PRESETS["pollux"] and "estimator.py" in PRESETS["optimus"]


def test_pollux_recovers_its_constants_noise_free():
    r = perfmodel.Model(preset="pollux", lam=0).fit(pollux_frame(), time="time_s", factors=POLLUX_FACTORS)
    assert r.expression.startswith("overlap(I + I*b, ")
    got = list(r.coefficients.values())
    assert np.allclose(got, [POLLUX[k] for k in POLLUX_ORDER], rtol=1e-6)
    assert r.params["g"] == pytest.approx(POLLUX["gamma"], rel=1e-6)


def test_pollux_recovers_its_constants_with_noise():
    df = pollux_frame(noise=0.02, repeats=3, seed=5)
    r = perfmodel.Model(preset="pollux").fit(df, time="time_s", factors=POLLUX_FACTORS)
    got = dict(zip(POLLUX_ORDER, r.coefficients.values(), strict=True))
    for key in ("alpha_c", "beta_c", "alpha_n"):
        assert got[key] == pytest.approx(POLLUX[key], rel=0.15), key
    assert r.params["g"] == pytest.approx(POLLUX["gamma"], rel=0.3)
    assert r.metrics["mape"] < 3.0
    contrib = r.contributions(df).to_numpy()
    assert np.allclose(contrib.sum(axis=1), r.predict(df), rtol=1e-12)


def test_pollux_pins_what_the_data_cannot_identify():
    one_node = {"p": np.array([1, 2, 4, 8]), "nodes": np.ones(4), "b": np.array([8, 16, 8, 16])}
    spec = preset_spec("pollux", ["p", "b", "N", "nodes"], env=one_node)
    assert "min(nodes - 1, 1)" not in spec and "max(2 - nodes, 0)" in spec  # no inter-node rows
    assert (
        preset_spec("pollux", ["p", "b", "N"], env={"p": np.array([1, 2]), "b": np.array([8, 16])})
        == "I*overlap(1 + b, min(p - 1, 1); g)"
    )  # no p > 2: no β_r
    assert preset_spec("pollux", ["p", "b", "N"], env={"p": np.ones(3), "b": np.array([8, 16, 32])}) == "I + I*b"
    assert preset_spec("pollux", ["p", "b", "N"], varying=["p"]) == "I*overlap(1, min(p - 1, 1) + max(p - 2, 0); g)"
    # without nodes every worker is on one machine; with the global batch B, b = B/p
    assert preset_spec("pollux", ["p", "B", "N"]) == "I*overlap(1 + b, min(p - 1, 1) + max(p - 2, 0); g)"


def test_optimus_recovers_its_constants_noise_free_with_and_without_servers():
    factors = {"p": "workers", "servers": "ps", "b": "batch", "N": "samples"}
    r = perfmodel.Model(preset="optimus", lam=0).fit(optimus_frame(), time="time_s", factors=factors)
    assert r.expression == "I*b + I + I*p/servers + I*p + I*servers"
    q = OPTIMUS
    assert np.allclose(list(r.coefficients.values()), [q["a"], q["b"], q["c"], q["d"], q["e"]], rtol=1e-6)
    factors.pop("servers")
    r = perfmodel.Model(preset="optimus", lam=0).fit(optimus_frame(False), time="time_s", factors=factors)
    assert r.expression == "I*b + I + I*p"
    assert np.allclose(list(r.coefficients.values()), [q["a"], q["b"], q["d"]], rtol=1e-6)


def test_optimus_leaves_out_terms_of_factors_with_one_value():
    syms = ["p", "b", "N", "servers"]
    assert preset_spec("optimus", syms, varying=["p", "b"]) == "I*b + I + I*p"  # one server count: c·p/s is d·p
    assert preset_spec("optimus", syms, varying=["servers"]) == "I + I*p/servers + I*servers"
    assert preset_spec("optimus", ["p", "B", "N"]) == "I*b + I + I*p"  # b = B/p


def test_optimus_with_noise():
    factors = {"p": "workers", "servers": "ps", "b": "batch", "N": "samples"}
    r = perfmodel.Model(preset="optimus").fit(optimus_frame(noise=0.01, seed=2), time="time_s", factors=factors)
    q = OPTIMUS
    got = list(r.coefficients.values())
    assert got[0] == pytest.approx(q["a"], rel=0.1) and got[1] == pytest.approx(q["b"], rel=0.2)
    assert r.metrics["mape"] < 2.0


def test_mapping_guess_finds_nodes_and_servers():
    assert guess_roles(["gpus", "machines", "batch", "time_s"])["nodes"] == "machines"
    assert guess_roles(["workers", "ps", "time_s"])["servers"] == "ps"
    assert guess_roles(["nodes", "t"]) == {"p": "nodes"}  # alone, "nodes" is the worker count


@pytest.mark.parametrize("preset", ["pollux", "optimus"])
def test_presets_fit_a_real_dataset(preset):
    meas = load_dataset("tf-cnn-resnet50-k80-cluster")
    r = perfmodel.Model(preset=preset).fit(meas)
    assert r.metrics["mape"] < 6.0
    assert np.allclose(r.contributions(meas).to_numpy().sum(axis=1), r.predict(meas), rtol=1e-12)
    back = perfmodel.FitResult.from_json(r.to_json())
    assert np.allclose(back.predict(meas), r.predict(meas))


def test_cli_fits_the_pollux_preset(tmp_path, capsys):
    out = tmp_path / "m.json"
    code, text, err = run(["fit", "tf-cnn-resnet50-dgx1", "--preset", "pollux", "--out", out], capsys)
    assert code == 0, err
    assert "overlap(" in text and "g:" in text
    model = json.loads(out.read_text())
    assert model["settings"]["preset"] == "pollux" and "g" in model["params"]
    code, text, err = run(["show", out], capsys)
    assert code == 0 and "overlap(" in text
