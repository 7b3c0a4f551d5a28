"""The stakeholder's walk (issue 33) on the command line and in the library: the defaults a user expects,
the poor-fit verdict wherever a number is printed, `perfmodel report`, and the defects the walk found in
the group fits and the Extra-P-like peer. Data: NVIDIA's published tables in data/nvidia_dle/."""

from pathlib import Path

import pandas as pd
import pytest

from perfmodel import FitResult, Measurements, Model, fit_groups
from perfmodel.data import read_csv
from perfmodel.data.throughput import time_from_throughput
from perfmodel.search.pmnf import pmnf_search
from tests.cli_run import run

ROOT = Path(__file__).resolve().parent.parent
A100 = ROOT / "data" / "nvidia_dle" / "a100_efficientnet_throughput.csv"
BERT = ROOT / "data" / "nvidia_dle" / "bert_large_v100_time_to_train.csv"
IMAGENET = 1_281_167


@pytest.fixture(scope="module")
def b4_csv(tmp_path_factory) -> Path:
    """One model of the A100 table: efficientnet-b4 at 1-64 GPUs, its per-GPU batch fixed at 128."""
    path = tmp_path_factory.mktemp("walk") / "b4.csv"
    frame = read_csv(A100)
    frame[frame["model"] == "efficientnet-b4"].drop(columns=["model", "framework"]).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def b4_model(b4_csv, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("walk") / "b4.json"
    from perfmodel.cli import main

    assert main(["fit", str(b4_csv), "--work", str(IMAGENET), "--replicates", "40", "--out", str(out)]) == 0
    return out


def test_fit_without_a_model_fits_the_apps_first_model(b4_csv, tmp_path, capsys):
    # before: "error: choose the model: --terms 'SPEC', --preset NAME or --auto"
    code, _, err = run(["fit", b4_csv, "--work", IMAGENET, "--replicates", 0, "--out", tmp_path / "m.json"], capsys)
    assert code == 0, err
    assert "note: no model given: fitting" in err and "data-parallel" in err
    r = FitResult.load(tmp_path / "m.json")
    from perfmodel.fitting.defaults import default_spec

    frame, time = time_from_throughput(read_csv(b4_csv), "images_per_sec", IMAGENET)
    meas = Measurements.from_frame(frame, time, {"p": "gpus", "b": "batch_per_gpu"})
    assert r.settings["terms"] == default_spec(meas)  # the spec the app's Model page starts from
    assert r.param_bounds == {}  # b has one value: no exponent of b (the preset's I*b^e_b -> I)


def test_predict_plan_and_advise_take_a_single_valued_factor_at_its_value(b4_model, capsys):
    # before: predict refused until --grid b=128 was given
    code, out, err = run(["predict", b4_model, "--grid", "p=16,32", "--interval", "0.9"], capsys)
    assert code == 0, err
    assert "note: b = 128 taken at its only measured value" in err
    frame = pd.read_csv(pd.io.common.StringIO(out))
    assert list(frame["batch_per_gpu"]) == [128, 128] and list(frame["gpus"]) == [16, 32]
    code, out, err = run(["plan", b4_model, "--grid", "p=16,32", "--deadline", "10m"], capsys)
    assert code == 0, err
    assert "note: b = 128 taken at its only measured value" in err
    code, out, err = run(["advise", b4_model, "--target", "p=128", "--grid", "p=8,16,32,64,128"], capsys)
    assert code == 0, err
    assert "note: b = 128 taken at its only measured value" in err and "target p=128, b=128: predicted" in out


def test_the_same_number_in_the_same_words_in_predict_plan_and_advise(b4_model, capsys):
    from perfmodel import wording
    from perfmodel.uncertainty.ranges import range_at

    r = FitResult.load(b4_model)
    today = range_at(r, {"p": 128, "b": 128})
    _, out, _ = run(["advise", b4_model, "--target", "p=128", "--grid", "p=8,16,32,64,128"], capsys)
    # the band as it is (before: "± 14 %" for a band of −10 %/+14 %)
    assert (
        f"predicted {wording.fmt_time(today.point, today.low, today.high)}, "
        f"{wording.fmt_band(today.point, today.low, today.high)} (90% interval) today" in out
    )
    _, out, _ = run(["plan", b4_model, "--grid", "p=128"], capsys)
    assert wording.fmt_time(today.point, today.low, today.high) in out


def test_a_poor_fit_is_called_poor_where_its_numbers_are_printed(tmp_path, capsys):
    # the six A100 models pooled in one fit, without --cv: `predict --interval` said nothing
    model = tmp_path / "pooled.json"
    code, _, err = run(
        ["fit", A100, "--preset", "data-parallel", "--work", IMAGENET, "--replicates", 20, "--out", model], capsys
    )
    assert code == 0 and "too poor to quote a prediction" in err
    for args in (
        ["predict", model, "--grid", "p=32", "--grid", "b=128", "--interval", "0.9"],
        ["plan", model, "--at", "b=128", "--grid", "p=16,32"],
        ["advise", model, "--target", "p=32,b=128", "--grid", "p=8,16,32"],
    ):
        code, _, err = run(args, capsys)
        assert code == 0, err
        assert "warning: this fit is too poor to quote a prediction: " in err, args[0]


def test_report_writes_the_export_pages_html(b4_model, b4_csv, tmp_path, capsys):
    out = tmp_path / "report.html"
    code, text, err = run(
        ["report", b4_model, "--data", b4_csv, "--out", out, "--deadline", "10m", "--gpu-hour-price", "2"], capsys
    )
    assert code == 0, err
    assert "wrote" in text and "with the plan" in text
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count("plotly.js v") <= 2  # plotly.js inlined once
    assert "<p class='headline'>At the largest measured p = 64 the model predicts <strong>" in html
    assert "Predicted against measured" in html or "parity" in html.lower()  # the charts of the measured runs
    assert "<h2>Plan</h2>" in html and "Cheapest meeting the deadline (10 min)" in html
    # the model alone (no data at hand): the model's own charts, and a note that says so
    code, _, err = run(["report", b4_model, "--out", tmp_path / "alone.html"], capsys)
    assert code == 0 and "not at hand" in err
    assert "<p class='headline'>" in (tmp_path / "alone.html").read_text()


def test_report_of_a_poor_fit_opens_with_the_verdict(tmp_path, capsys):
    model = tmp_path / "pooled.json"
    run(["fit", A100, "--preset", "data-parallel", "--work", IMAGENET, "--replicates", 0, "--out", model], capsys)
    code, _, err = run(["report", model, "--data", A100, "--out", tmp_path / "r.html"], capsys)
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "<div class='warn verdict'><strong>This fit is too poor to quote a prediction: " in html
    assert "<p class='headline'>" not in html


def test_linear_group_fits_are_not_said_to_miss_convergence():
    # every A100 group said "differential evolution did not converge: Maximum number of iterations has
    # been exceeded.." although a model linear in its constants is solved exactly (its DE runs one generation)
    frame, time = time_from_throughput(read_csv(A100), "images_per_sec", IMAGENET)
    summary, _ = fit_groups(
        frame,
        by="model",
        time=time,
        factors={"p": "gpus", "b": "batch_per_gpu"},
        terms="1 + b^e_b/(p*b) + log2(p)/(p*b) + p",  # the data-parallel preset without N
        cv=0,
        executor="serial",
    )
    assert (summary["status"] == "ok").all()
    assert not summary["notes"].str.contains("did not converge").any()
    # a model with a free exponent that DE really stops short on still says so, with one full stop
    meas = Measurements.from_frame(frame, time, {"p": "gpus", "b": "batch_per_gpu"})
    r = Model("1 + b^e/(p*b) + log2(p)/(p*b)", maxiter=1, lam=0).fit(meas)
    [w] = [w for w in r.warnings if "did not converge" in w]
    assert not w.endswith(".")


def test_extrap_peer_models_p_when_nodes_follow_it():
    # BERT on 16-512 GPUs, 16 per node: nodes = p / 16, so no measurement line runs along p with the nodes
    # fixed; the Extra-P-like search chose the constant `1` (CV MAPE 140 %)
    frame = read_csv(BERT)
    meas = Measurements.from_frame(frame, "time_to_train_h", {"p": "gpus", "nodes": "nodes"})
    s = pmnf_search(meas)
    assert s.spec != "1" and "p" in s.spec and s.strong_scaling == ["p"]
    r = Model(s.spec, nonneg=False, lam=0).fit(meas)
    assert r.metrics["mape"] < 5
