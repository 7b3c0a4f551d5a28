"""perfmodel.plan (issue 19): a plan computed by hand, probabilities that agree with the intervals and
are calibrated on simulated data, recommendations that agree with the table, and the CLI's errors."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import perfmodel
from perfmodel import Measurements, Model, PerfModelError
from perfmodel.plan import efficient, parse_duration, plan, recommend


def exact():
    """T = 5 + 100/p seconds per epoch, measured without noise at p = 1..8."""
    p = np.array([1.0, 2, 4, 8])
    frame = pd.DataFrame({"p": p, "t": 5 + 100 / p})
    return Model("1 + 1/p", lam=0).fit(Measurements.from_frame(frame, "t", {"p": "p"}))


def test_a_plan_computed_by_hand():
    f = plan(exact(), grid={"p": [2, 4, 16]}, repeat=10, price=2.0)
    t = 10 * (5 + 100 / np.array([2.0, 4, 16]))
    assert f["time_s"].to_numpy() == pytest.approx(t, rel=1e-6)
    assert f["gpu_hours"].to_numpy() == pytest.approx(t * [2, 4, 16] / 3600, rel=1e-6)
    assert f["cost"].to_numpy() == pytest.approx(2 * t * [2, 4, 16] / 3600, rel=1e-6)
    assert f["efficiency"].to_numpy() == pytest.approx(t[0] * 2 / (t * [2, 4, 16]), rel=1e-6)
    assert list(f["p"]) == [2, 4, 16] and f["p"].dtype.kind == "i"
    nodes = plan(exact(), grid={"p": [2, 16]}, node_price=10.0, gpus_per_node=8)
    assert nodes["cost"].to_numpy() == pytest.approx((5 + 100 / np.array([2.0, 16])) / 3600 * [1, 2] * 10, rel=1e-6)


def noisy(seed, sigma=0.05):
    rng = np.random.default_rng(seed)
    p = np.repeat([1.0, 2, 4, 8], 3)
    frame = pd.DataFrame({"p": p, "t": (5 + 100 / p) * np.exp(rng.normal(0, sigma, p.size))})
    meas = Measurements.from_frame(frame, "t", {"p": "p"})
    return perfmodel.compute_intervals(Model("1 + 1/p", lam=0, seed=seed).fit(meas), meas, replicates=100)


def test_probabilities_agree_with_the_intervals():
    r = noisy(1)
    base = plan(r, grid={"p": [4, 16]}, repeat=3)
    for col, expect in (("time_low", 0.05), ("time_s", 0.5), ("time_high", 0.95)):
        for i in range(2):
            f = plan(r, grid={"p": [4, 16]}, repeat=3, deadline=float(base[col].iloc[i]), draws=20000)
            assert f["p_deadline"].iloc[i] == pytest.approx(expect, abs=0.04), (col, i)


def test_p_deadline_is_calibrated_on_simulated_data():
    # a deadline at the true time of the run: about half of the simulated measurements campaigns meet it
    truth = 3 * (5 + 100 / 16)
    probs = [
        plan(noisy(seed), grid={"p": [16]}, repeat=3, deadline=truth, draws=2000)["p_deadline"].iloc[0]
        for seed in range(30)
    ]
    assert 0.35 < np.mean(probs) < 0.65


def test_recommendations_agree_with_the_table():
    r = noisy(2)
    for deadline in (200.0, 60.0, 40.0, 30.0):
        f = plan(r, grid={"p": [1, 2, 4, 8, 16, 32]}, repeat=2, price=3.0, deadline=deadline, budget=0.2)
        lines = recommend(f)
        ok = f[f["p_deadline"] >= 0.9]
        if len(ok):
            best = ok.loc[ok["cost"].idxmin()]
            assert lines[0].startswith("cheapest meeting the deadline") and f"p = {best['p']:g} —" in lines[0]
        else:
            assert lines[0].startswith("no configuration meets the deadline")
        within = f[f["p_budget"] >= 0.9]
        if len(within):
            fast = within.loc[within["time_s"].idxmin()]
            assert any(x.startswith("fastest within the budget") and f"p = {fast['p']:g} —" in x for x in lines)
    front = efficient(f)
    t, c = f["time_s"].to_numpy(), f["cost"].to_numpy()
    for i in np.flatnonzero(front):
        assert not np.any((t < t[i]) & (c < c[i]))


@pytest.mark.parametrize(
    "text, seconds", [("90m", 5400), ("12h", 43200), ("2d", 172800), ("3600", 3600), ("1.5h", 5400), (45, 45)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["12x", "-5h", "0", "h", "", "1e999h", "nan"])
def test_bad_durations_are_refused(text):
    with pytest.raises(PerfModelError, match="--deadline"):
        parse_duration(text)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--grid", "q=1,2"], "'q' is not a factor"),
        (["--grid", "p=8,16", "--deadline", "12x"], "--deadline: '12x' is not a duration"),
        (["--grid", "p=8,16", "--gpu-hour-price", "-2"], "--gpu-hour-price must be a positive number"),
        (["--grid", "p=8,16", "--node-hour-price", "3"], "needs the GPUs per node"),
        (["--grid", "p=8,16", "--budget", "-1"], "--budget must be a positive number"),
        (["--grid", "p=8,16", "--repeat", "0"], "--repeat must be a positive number"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, extra, message):
    path = tmp_path / "m.json"
    exact().save(path)
    out = subprocess.run([sys.executable, "-m", "perfmodel", "plan", str(path), *extra], capture_output=True, text=True)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and out.stderr.strip().count("\n") == 0, out.stderr


def test_cli_plan_end_to_end_on_a_bundled_dataset(tmp_path):
    model = tmp_path / "m.json"
    run = subprocess.run(
        [sys.executable, "-m", "perfmodel", "fit", "tf-cnn-resnet50-dgx1", "--out", str(model)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfmodel",
            "plan",
            str(model),
            "--at",
            "N=1281167,b=64",
            "--grid",
            "p=8,16,32,64",
            "--repeat",
            "90",
            "--gpu-hour-price",
            "2.5",
            "--deadline",
            "12h",
            "--budget",
            "500",
            "--out",
            str(tmp_path / "plan.csv"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "Cheapest meeting the deadline" in out.stdout or "No configuration meets the deadline" in out.stdout
    f = pd.read_csv(tmp_path / "plan.csv")
    assert list(f["p"]) == [8, 16, 32, 64]
    assert {"time_low", "time_high", "gpu_hours_low", "cost_high", "p_deadline", "p_budget", "efficiency"} <= set(f)


def test_advise_ranks_by_resources_by_default():
    from perfmodel.advise import advise

    r = noisy(3)
    grid = {"p": [1, 2, 4, 8, 16, 32]}
    by_gpu = advise(r, {"p": 64}, grid)
    by_wall = advise(r, {"p": 64}, grid, rank_by="wall-time")
    assert by_gpu.attrs["rank_column"] == "gain_per_gpu_hour"
    g = by_gpu["gain_pct"] / (by_gpu["predicted_time"] * by_gpu["p"] / 3600)
    assert np.all(np.diff(g.to_numpy()) <= 1e-9)  # best first, per GPU-hour (p × time)
    w = by_wall["gain_pct"] / (by_wall["predicted_time"] / 3600)
    assert np.all(np.diff(w.to_numpy()) <= 1e-9)
    assert by_gpu["gpu_hours"].to_numpy() == pytest.approx((by_gpu["predicted_time"] * by_gpu["p"] / 3600).to_numpy())
    priced = advise(r, {"p": 64}, grid, rank_by="cost", gpu_hour_price=3.0)
    assert priced["cost"].to_numpy() == pytest.approx(3.0 * priced["gpu_hours"].to_numpy())
    with pytest.raises(PerfModelError, match="needs a price"):
        advise(r, {"p": 64}, grid, rank_by="cost")
