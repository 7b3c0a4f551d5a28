"""A short seeded slice of ``benchmarks/accuracy.py --series`` and its peers (``benchmarks/peers.py``).

Known answers from outside the code under test: the constants of the formulas that generate the
synthetic data (Pollux's and Optimus's own models), and the TF CNN table's own step-time column.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import approx_fprime

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402
import peers  # noqa: E402
import short_series  # noqa: E402

from perfmodel import Measurements  # noqa: E402
from perfmodel.data.datasets import DATA_DIR  # noqa: E402
from perfmodel.language import PRESETS  # noqa: E402

# Pollux's constants (α_c, β_c, α_n, β_n, α_r, β_r, γ): compute 0.02 s + 1 ms per sample,
# intra-node all-reduce 0.2 s + 0.05 s per replica beyond 2, inter-node 0.3 s + 0.08 s, γ = 1.5
POLLUX = (0.02, 0.001, 0.3, 0.08, 0.2, 0.05, 1.5)


def _pollux_meas(theta, Ks, ms, per_node: int | None = None, samples: float = 1.28e6) -> Measurements:
    """Runs of one epoch of ``samples`` at K GPUs x local batch m, timed by Pollux's formula."""
    K = np.repeat(np.asarray(Ks, float), len(ms))
    m = np.tile(np.asarray(ms, float), len(Ks))
    nodes = np.ceil(K / per_node) if per_node else np.ones_like(K)
    # Pollux's step time written out here independently of peers.py
    ac, bc, an, bn, ar, br, g = theta
    C = ac + bc * m
    net = np.where(
        nodes > 1, an + bn * np.maximum(K - 2, 1e-8), np.where(K > 1, ar + br * np.maximum(K - 2, 1e-8), 1e-8 + 1e-16)
    )
    step = (C**g + net**g) ** (1 / g)
    it = np.ceil(samples / (K * m))
    frame = pd.DataFrame({"gpus": K, "batch": m, "samples": samples, "nodes": nodes, "time": step * it})
    return Measurements.from_frame(frame, "time", {"p": "gpus", "b": "batch", "N": "samples"})


def test_pollux_ref_recovers_its_constants_on_one_node():
    meas = _pollux_meas(POLLUX, [1, 2, 3, 4, 6, 8], [32, 64, 128])
    fit = peers.fit_pollux(meas)
    assert fit.pinned == ("alpha_n", "beta_n")  # no multi-node run: AdaptDL pins the inter-node constants
    for name, want in zip(peers.PARAMS, POLLUX, strict=True):
        if name not in fit.pinned:
            assert fit.params[name] == pytest.approx(want, rel=1e-4), name
    assert fit.params["alpha_n"] == fit.params["beta_n"] == 1e-8


def test_pollux_ref_recovers_its_constants_across_nodes_and_extrapolates():
    meas = _pollux_meas(POLLUX, [1, 2, 4, 8, 16], [32, 64, 128], per_node=4)
    fit = peers.fit_pollux(meas)
    assert fit.pinned == ()
    got = np.array([fit.params[n] for n in peers.PARAMS])
    np.testing.assert_allclose(got, POLLUX, rtol=1e-3)
    big = _pollux_meas(POLLUX, [32, 64], [64], per_node=4)
    np.testing.assert_allclose(fit.predict(big), big.y, rtol=1e-3)


def test_pollux_ref_pins_what_one_batch_size_cannot_tell():
    # one local batch size: AdaptDL fixes α_c at half the compute time (here: the 1-GPU step time)
    meas = _pollux_meas(POLLUX, [1, 2], [64])
    fit = peers.fit_pollux(meas)
    step1 = POLLUX[0] + POLLUX[1] * 64
    assert fit.params["alpha_c"] == pytest.approx(step1 / 2, rel=1e-4)
    # K <= 2 and one node: β_r and the inter-node constants are pinned at their lower bound
    assert set(fit.pinned) == {"alpha_c", "alpha_n", "beta_n", "beta_r"}
    np.testing.assert_allclose(fit.predict(meas), meas.y, rtol=1e-3)


def test_pollux_gradient_matches_finite_differences():
    meas = _pollux_meas(POLLUX, [1, 2, 4, 8, 16], [32, 64], per_node=4)
    tab = peers.step_table(meas, 1.0)
    rows = tab.replicas == 1
    theta = np.array([0.05, 0.002, 0.2, 0.03, 0.1, 0.02, 2.0])
    for compute_rows in (rows, np.zeros_like(rows)):
        obj, grad = peers._pollux_objective(theta, tab, compute_rows, tab.step_time[compute_rows])
        num = approx_fprime(
            theta, lambda t, rows=compute_rows: peers._pollux_objective(t, tab, rows, tab.step_time[rows])[0], 1e-8
        )
        np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-5)


def test_optimus_ref_recovers_its_constants():
    # 1/speed = a·B/w + b + d·w with a = 2 ms per sample, b = 0.05 s, d = 0.01 s per worker
    w = np.repeat([1.0, 2, 4, 8], 2)
    b = np.tile([32.0, 128], 4)
    step = 0.002 * (w * b) / w + 0.05 + 0.01 * w
    frame = pd.DataFrame({"gpus": w, "batch": b, "samples": 1e5, "time": step * np.ceil(1e5 / (w * b))})
    meas = Measurements.from_frame(frame, "time", {"p": "gpus", "b": "batch", "N": "samples"})
    fit = peers.fit_optimus(meas)
    assert fit.params == pytest.approx({"a": 0.002, "b": 0.05, "d": 0.01}, rel=1e-5)


def test_step_time_is_the_tf_cnn_tables_own_column():
    # the table derives step_time_s = global_batch / images_per_sec; time / iterations must match it
    tf = pd.read_csv(DATA_DIR / "tf_cnn" / "tf_cnn_benchmarks_2017.csv")
    meas = Measurements.from_frame(tf, "epoch_time_s", {"p": "gpus", "b": "batch_per_gpu", "N": "samples"})
    it, absolute = peers.iterations(meas)
    assert absolute
    np.testing.assert_allclose(meas.y / it, meas.frame["step_time_s"], rtol=1e-3)


def test_splits_never_leak_test_gpu_counts_into_training():
    cases = short_series.splits()
    assert len(cases) >= 60
    by_name = dict(short_series.series(sweep=True))
    for name, k, train, test in cases:
        ps = np.unique(by_name[name].values("p"))
        tr, te = np.unique(train.values("p")), np.unique(test.values("p"))
        assert 3 <= k <= 6 and 1 <= len(te) <= 2
        np.testing.assert_array_equal(tr, ps[:k])  # the first k measured counts ...
        np.testing.assert_array_equal(te, ps[k : k + 2])  # ... predicting the next one or two
        assert tr.max() < te.min()
        assert not set(train.rows) & set(test.rows)


def test_series_slice_runs_every_model_seeded():
    models = accuracy.series_models()
    assert set(PRESETS) <= set(models)  # presets are iterated, new ones appear by themselves
    assert {"auto", "ernest-lsq", "PMNF", "pollux-ref", "optimus-ref"} <= set(models)
    cases = [
        c for c in short_series.splits() if c[0] in ("dgx1-p100/ResNet-50/real/64", "mlperf-resnet-gaudi") and c[1] == 3
    ]
    assert len(cases) == 2
    rows = accuracy.run_series(workers=1, cases=cases)
    again = accuracy.run_series(workers=1, cases=cases, models=["auto", "pollux-ref"])
    for r, r2 in zip(rows, again, strict=True):
        assert all(np.isfinite(v) for v in r["mape"].values()), r
        assert r2["mape"]["auto"] == r["mape"]["auto"]  # seeded
        assert r2["mape"]["pollux-ref"] == r["mape"]["pollux-ref"]
    table = accuracy.series_table(rows, models)
    assert "| **median** |" in table and "| **worst** |" in table and "n > 20 %" in table
    summ = accuracy.summary(rows, models)
    texts = [t for t, _, _ in accuracy.targets(summ)]
    assert any("pollux-ref" in t for t in texts) and any("3x better than ernest" in t for t in texts)
