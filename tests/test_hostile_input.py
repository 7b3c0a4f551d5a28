"""Hostile and malformed input, one test per defect found by trying it: the CLI exits 2 with one
line naming the problem (or gives the right result), generated code never runs data, numbers near
the float limits are fitted or refused with a message."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel import FitResult, Measurements, Model, PerfModelError, report
from perfmodel.data import read_csv, read_extrap
from tests.cli_run import RCV1, fit_rcv1, one_line_error, run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rcv1_model(tmp_path_factory):
    return json.loads(fit_rcv1(tmp_path_factory.mktemp("model") / "m.json").read_text())


def linear_frame(n_scale=1.0, t_scale=1.0):
    """T = (2 + 3·N/p)·t_scale at every p in 1..16 and N in 1..8 (times n_scale)."""
    rows = [(p, n) for p in (1, 2, 4, 8, 16) for n in (1, 2, 4, 8)]
    return pd.DataFrame(
        {
            "p": [p for p, _ in rows],
            "N": [n * n_scale for _, n in rows],
            "time": [(2 + 3 * n / p) * t_scale for p, n in rows],
        }
    )


# -- 1. code from data --------------------------------------------------------------------------
HOSTILE_HEADER = 'cores""" + __import__("pathlib").Path("PWNED").write_text("ran") + """'


def test_exported_python_never_runs_a_column_name(tmp_path):
    frame = read_csv(RCV1)
    frame = frame.rename(columns={"cores": HOSTILE_HEADER})
    csv = tmp_path / "hostile.csv"
    frame.to_csv(csv, index=False)
    meas = Measurements.from_frame(read_csv(csv), "time_s", {"m": HOSTILE_HEADER, "s": "input_fraction"})
    res = Model("1 + s/m + log(m) + m", loss="absolute", maxiter=50).fit(meas)
    script = tmp_path / "predict_model.py"
    script.write_text(report.python_snippet(res))
    call = "import json, predict_model as pm; print(json.dumps([list(pm.predict([4, 8], [1, 1])), pm.COLUMNS]))"
    proc = subprocess.run([sys.executable, "-c", call], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "PWNED").exists()
    got, columns = json.loads(proc.stdout)
    np.testing.assert_allclose(got, res.predict({"m": [4, 8], "s": [1, 1]}), rtol=1e-12)
    assert columns == {"m": HOSTILE_HEADER, "s": "input_fraction"}  # the name survives as a string
    page = report.html_report(res, meas, figures={})
    assert "__import__(&quot;pathlib&quot;)" in page and '__import__("pathlib")' not in page


@pytest.mark.parametrize("symbol", ['p=0) or __import__("os").system("true") or (0', "lambda", "np ", "log2", "_x"])
def test_model_file_with_a_hostile_factor_key_is_refused(rcv1_model, symbol):
    d = json.loads(json.dumps(rcv1_model))
    d["factors"][symbol] = "cores"
    with pytest.raises(PerfModelError, match="field 'factors' has the name"):
        FitResult.from_dict(d)


def test_python_export_refuses_a_result_with_an_invalid_symbol(rcv1_model):
    res = FitResult.from_dict(rcv1_model)
    res.factors = {**res.factors, "x):\n    import os\n    (": "cores"}
    with pytest.raises(PerfModelError):
        report.python_snippet(res)


def test_python_export_with_a_symbol_named_np_still_runs(tmp_path):
    frame = linear_frame().rename(columns={"p": "np"})
    res = Model("1 + N/np", maxiter=30, lam=0).fit(frame, time="time", factors={"np": "np", "N": "N"})
    ns = {}
    exec(compile(report.python_snippet(res), "m.py", "exec"), ns)  # our generated file, run as a user would
    np.testing.assert_allclose(ns["predict"]([2.0], [4.0]), 2 + 3 * 4 / 2, rtol=1e-9)


# -- 3. numbers near the float limits ----------------------------------------------------------
@pytest.mark.parametrize("n_scale, t_scale", [(1e307, 1.0), (1.0, 1e306), (1.0, 1e-300), (1e-300, 1e-300)])
def test_extreme_magnitudes_are_fitted_exactly(n_scale, t_scale):
    frame = linear_frame(n_scale, t_scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        res = Model("1 + N/p", lam=0).fit(frame, time="time", factors={"p": "p", "N": "N"})  # exact: λ = 0
    assert res.coefficients["c0"] == pytest.approx(2 * t_scale, rel=1e-9)
    assert res.coefficients["c1"] == pytest.approx(3 * t_scale / n_scale, rel=1e-9)
    assert res.metrics["mape"] < 1e-9 and res.metrics["r2"] == pytest.approx(1.0)
    assert np.isfinite(res.metrics["rmse"])


def fit_csv(text, terms, tmp_path, capsys, name="t.csv"):
    """``fit`` on a CSV of ``text`` with columns p and time: (path, exit code, stdout, stderr)."""
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run(
        ["fit", path, "--time", "time", "--factor", "p=p", "--terms", terms, "--out", tmp_path / "m.json"], capsys
    )
    return path, code, out, err


@pytest.mark.parametrize("times", [["1e308", "1.5e308", "1.7e308", "1e308"], ["1e-300", "2e-300", "3e-300", "5e-300"]])
def test_cli_fits_times_near_the_float_limits(times, tmp_path, capsys):
    text = "p,time\n" + "".join(f"{p},{t}\n" for p, t in zip((1, 2, 4, 8), times, strict=True))
    _, code, out, err = fit_csv(text, "1 + p", tmp_path, capsys)
    # nothing but the guardrail's verdict (1e308-scale times fitted by 1 + p: R² < 0.5) on stderr
    assert code == 0 and not [x for x in err.splitlines() if "too poor to quote" not in x], err
    saved = json.loads((tmp_path / "m.json").read_text())
    assert saved["metrics"]["mape"] < 40 and np.isfinite(saved["coefficients"]["c0"])


def test_times_spanning_too_many_orders_are_refused(tmp_path, capsys):
    _, code, _, err = fit_csv("p,time\n1,1e-300\n2,1\n4,1e300\n", "1 + p", tmp_path, capsys)
    one_line_error(code, err, "orders of magnitude")


BIG_INT = "9" * 400


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--terms", f"1 + {BIG_INT}*m"], "number out of range"),
        (["--terms", f"1 + m^{BIG_INT}"], "exponent too large"),
        (["--terms", "1 + m", "--holdout", f"m > {BIG_INT}"], "number out of range"),
        (["--terms", "1/0 + m"], "not a finite number in '1/0'"),
        (["--terms", "1 + m", "--lambda", "1e308"], "too large"),
        (["--terms", "1 + m", "--seed", "-1"], "outside [0, 4294967295]"),
        (["--terms", "1 + m", "--seed", str(2**32)], "outside [0, 4294967295]"),
    ],
)
def test_cli_bad_numbers_exit_2_with_one_line(args, fragment, tmp_path, capsys):
    code, _, err = run(
        ["fit", RCV1, "--time", "time_s", "--factor", "m=cores", *args, "--out", tmp_path / "m.json"], capsys
    )
    one_line_error(code, err, fragment)


def test_library_refuses_seeds_outside_32_bits():
    frame = linear_frame()
    for seed in (-1, 2**32):
        with pytest.raises(PerfModelError, match="seed must be within"):
            Model("1 + N/p", seed=seed).fit(frame, time="time", factors={"p": "p", "N": "N"})


# -- 3. Extra-P parameter names --------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, fragment",
    [
        ("time", "'time' is reserved"),
        ("region", "'region' is reserved"),
        ("p p", "'p' is declared twice"),
        ("p if", "'if' is not an identifier"),
    ],
)
def test_extrap_parameter_names(params, fragment, tmp_path, capsys):
    n = len(params.split())
    points = " ".join("(" + " ".join([str(i)] * n) + ")" for i in (1, 2, 3))
    path = tmp_path / "e.txt"
    path.write_text(f"PARAMETER {params}\nPOINTS {points}\nDATA 1\nDATA 2\nDATA 3\n")
    code, _, err = run(["fit", path, "--terms", "1", "--out", tmp_path / "m.json"], capsys)
    one_line_error(code, err, fragment)
    assert str(path) in err  # the file is named by its path


# -- 3. model files of the wrong shape ---------------------------------------------------------------
def _mutations(d):
    yield "coefficients null", {**d, "coefficients": None}, "field 'coefficients' must be object"
    yield "coefficients strings", {**d, "coefficients": {k: "1" for k in d["coefficients"]}}, "must be number"
    yield "params list", {**d, "params": []}, "field 'params' must be object"
    yield "factors list", {**d, "factors": ["m", "s"]}, "field 'factors' must be object"
    yield "metrics string", {**d, "metrics": "good"}, "field 'metrics' must be object"
    yield "signs", {**d, "signs": [1]}, "signs [1] do not match"
    yield "signs flipped", {**d, "signs": [1, -1, 1, 1]}, "do not match"
    yield "seed", {**d, "settings": {**d["settings"], "seed": -1}}, "field 'settings.seed'"
    yield "uncertainty list", {**d, "uncertainty": [1]}, "field 'uncertainty' must be object"
    yield "rate without work", {**d, "rate": {"column": "images/s"}}, "field 'rate'"
    yield "rate work negative", {**d, "rate": {"column": "images/s", "work": -1}}, "field 'rate.work'"
    yield "rate column number", {**d, "rate": {"column": 3, "work": 1}}, "field 'rate.column' must be string"


@pytest.mark.parametrize("case", range(12))
def test_cli_model_file_of_the_wrong_shape(case, rcv1_model, tmp_path, capsys):
    name, d, fragment = list(_mutations(rcv1_model))[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    for cmd in (["show", path], ["predict", path, RCV1, "--out", tmp_path / "p.csv"]):
        code, _, err = run(cmd, capsys)
        one_line_error(code, err, fragment)


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"\xff\xfe{\x00}", "not UTF-8"),
        (b'{"format": "perfmodel.fit/1", "n_rows": ' + b"9" * 5000 + b"}", "not a perfmodel model file"),
    ],
)
def test_cli_model_file_bytes(content, fragment, tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, _, err = run(["show", path], capsys)
    if "n_rows" in content.decode("latin-1"):
        fragment = "lacks field(s)"
    one_line_error(code, err, fragment)


def test_model_file_accepts_an_ensemble_object_and_validates_the_uncertainty_at_load(rcv1_model):
    res = FitResult.from_dict({**rcv1_model, "ensemble": {"any": {"thing": 1}}})
    assert res.coefficients == rcv1_model["coefficients"]
    # the uncertainty block is checked when the file is loaded, not when an interval is first asked for
    d = {**rcv1_model, "uncertainty": {"members": [[1, 2]], "weights": [1]}}
    with pytest.raises(PerfModelError, match="intervals are not in the format"):
        FitResult.from_dict(d)


def test_huge_integers_in_a_model_file(rcv1_model, tmp_path, capsys):
    text = json.dumps(rcv1_model).replace('"n_rows": 7', '"n_rows": ' + "9" * 5000)
    path = tmp_path / "big.json"
    path.write_text(text)
    code, _, err = run(["show", path], capsys)
    one_line_error(code, err, "field 'n_rows' must be integer")


# -- 4. silently wrong or ignored ---------------------------------------------------------------------
def test_duplicate_csv_column_names_are_refused(tmp_path, capsys):
    path, code, _, err = fit_csv("p,p,time\n1,2,3\n2,3,4\n", "1", tmp_path, capsys, name="dup.csv")
    one_line_error(code, err, "duplicate column name(s): 'p'")
    assert f"{path}:" in err  # named by its path, not "upload"


def test_keyword_symbol_is_refused(tmp_path, capsys):
    code, _, err = run(
        ["fit", RCV1, "--time", "time_s", "--factor", "if=cores", "--terms", "1 + if", "--out", tmp_path / "m.json"],
        capsys,
    )
    one_line_error(code, err, "symbol 'if' is a Python keyword")


def test_auto_keeps_cv_and_holdout(tmp_path, capsys):
    out = tmp_path / "m.json"
    code, _, err = run(
        [
            "fit",
            RCV1,
            "--time",
            "time_s",
            "--factor",
            "p=cores",
            "--factor",
            "N=input_fraction",
            "--auto",
            "--max-terms",
            "2",
            "--cv",
            "3",
            "--holdout",
            "p > 16",
            "--maxiter",
            "30",
            "--out",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    validation = json.loads(out.read_text())["validation"]
    assert {"3-fold", "hold-out (p > 16)"} <= set(validation)
    assert "note: --cv/--holdout with --auto" in err


def test_predict_accepts_a_single_factor_column(tmp_path, capsys):
    model = tmp_path / "m.json"
    code, _, _ = run(
        ["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--terms", "1 + 1/m", "--out", model], capsys
    )
    assert code == 0
    new = tmp_path / "new.csv"
    new.write_text("cores\n4\n8\n")
    code, _, err = run(["predict", model, new, "--out", tmp_path / "p.csv"], capsys)
    assert code == 0, err
    res = FitResult.load(model)
    frame = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(
        frame["predicted_time"], res.coefficients["c0"] + res.coefficients["c1"] / np.array([4, 8])
    )


# -- 6. smaller -----------------------------------------------------------------------------------
def test_messages_name_the_path(tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_text("\n")
    code, _, err = run(["fit", path, "--time", "t", "--terms", "1", "--out", tmp_path / "m.json"], capsys)
    one_line_error(code, err, f"{path}: the file is empty")


@pytest.mark.parametrize("args", [["--terms", "1/0 + m"], ["--terms", "1 + m", "--lambda", "1e308"]])
def test_an_error_is_one_line_without_warnings_from_a_real_process(args, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfmodel",
            "fit",
            str(RCV1),
            "--time",
            "time_s",
            "--factor",
            "m=cores",
            *args,
            "--out",
            str(tmp_path / "m.json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr


def test_extrap_reader_names_the_file(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("PARAMETER p\nPOINTS 1 2\nDATA 1\n")
    with pytest.raises(PerfModelError) as info:
        read_extrap(path)
    assert str(info.value).startswith(f"{path}:")


def test_bare_carriage_returns_in_a_csv_are_line_ends_or_a_clear_error():
    """Inputs found by scripts/fuzz.py (the header check once raised csv.Error on them)."""
    frame = read_csv(b"a,b\r1,2\r3,4\r")
    assert list(frame.columns) == ["a", "b"] and frame.to_numpy().tolist() == [[1, 2], [3, 4]]
    try:
        read_csv(b"1e-5|\r|region\n\\|3.\n1e308|0\n|1")
    except PerfModelError as exc:
        assert str(exc).startswith("upload: ")
    with pytest.raises(PerfModelError, match="no columns to read"):  # scripts/fuzz.py once got pandas' own error
        read_csv(b"\r;\r")


def test_numerical_warnings_of_a_successful_run_are_one_line_each(monkeypatch, capsys):
    import perfmodel.cli as cli

    def noisy(args):
        for _ in range(3):
            warnings.warn("overflow encountered in square\n  x = um.square(x, out=x)", RuntimeWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(cli, "_cmd_datasets", noisy)
    code, _, err = run(["datasets"], capsys)
    assert code == 0 and err == "warning: RuntimeWarning: overflow encountered in square\n"
