"""Reliability, second pass (issue 20): the stored intervals, advise, groups, Dask, plans and the
interval step handle bad input, extreme sizes and hostile text with one line naming the problem."""

import json

import numpy as np
import pandas as pd
import pytest

from perfmodel import FitResult, PerfModelError
from perfmodel.cli import main
from tests.cli_run import RCV1, run


def one_line_error(code, err, fragment):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert fragment in err, err


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "m.json"
    code = main(["fit", str(RCV1), "--time", "time_s", "--factor", "m=cores", "--factor", "s=input_fraction",
                 "--terms", "1 + s/m + log(m) + m", "--loss", "absolute", "--replicates", "40", "--out", str(path)])
    assert code == 0
    return path


@pytest.fixture
def model_dict(model_path):
    return json.loads(model_path.read_text())


# -- 1. interval levels ---------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["nan", "-1", "1e-300", "1e-17", "0", "1", "0.9999999", "inf", "90"])
def test_advise_interval_level_outside_the_range_is_refused(model_path, capsys, level):
    code, _, err = run(["advise", model_path, "--target", "m=64,s=1", "--grid", "m=4,8", "--interval", level], capsys)
    one_line_error(code, err, "--interval must be a number between 0 and 1, from 0.01 to 0.999")


@pytest.mark.parametrize("level", ["nan", "1e-300", "1e-17", "1"])
def test_predict_and_show_interval_level_outside_the_range_is_refused(model_path, tmp_path, capsys, level):
    csv = tmp_path / "x.csv"
    csv.write_text("cores,input_fraction\n8,0.1\n")
    code, _, err = run(["predict", model_path, csv, "--out", tmp_path / "o.csv", "--interval", level], capsys)
    one_line_error(code, err, "--interval must be a number")
    code, _, err = run(["show", model_path, "--interval", level], capsys)
    one_line_error(code, err, "--interval must be a number")


@pytest.mark.parametrize("level", ["0.01", "0.5", "0.999"])
def test_levels_in_the_range_give_finite_intervals(model_path, tmp_path, capsys, level):
    csv = tmp_path / "x.csv"
    csv.write_text("cores,input_fraction\n8,0.1\n64,1\n")
    out = tmp_path / "o.csv"
    code, _, err = run(["predict", model_path, csv, "--out", out, "--interval", level], capsys)
    assert code == 0, err
    frame = pd.read_csv(out)
    assert np.isfinite(frame[["predicted_low", "predicted_high"]].to_numpy()).all()
    code, text, err = run(["advise", model_path, "--target", "m=64,s=1", "--grid", "m=4,8", "--interval", level], capsys)
    assert code == 0 and "nan" not in text.lower(), text + err


def test_library_level_range():
    from perfmodel.fitting.members import check_level

    assert check_level(0.9) == 0.9
    for bad in (float("nan"), 1e-300, 1.0, -1, "x", None):
        with pytest.raises(PerfModelError, match="from 0.01 to 0.999"):
            check_level(bad)


# -- 2. configurations where the model does not hold -------------------------------------------------
@pytest.mark.parametrize("row, fragment", [("0,1", "row 2: term 's/m' is undefined"),
                                           ("-4,1", "row 2: term 'log(m)' is undefined"),
                                           ("8,-8000", "row 2: the predicted time is"),
                                           ("1e999,1", "row 2, column 'cores'")])
@pytest.mark.parametrize("interval", [[], ["--interval", "0.9"]])
def test_predict_refuses_rows_where_a_term_is_undefined(model_path, tmp_path, capsys, row, fragment, interval):
    csv = tmp_path / "x.csv"
    csv.write_text(f"cores,input_fraction\n8,1\n{row}\n")
    code, _, err = run(["predict", model_path, csv, "--out", tmp_path / "o.csv", *interval], capsys)
    one_line_error(code, err, fragment)
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("grid, fragment", [("m=0,4", "configuration m=0, s=1: term 's/m' is undefined"),
                                            ("m=-1,4", "configuration m=-1, s=1: term 'log(m)' is undefined"),
                                            ("m=1e999,4", "--grid m: '1e999' is not a finite number"),
                                            ("s=-8000,1", "the predicted time is")])
def test_advise_refuses_grid_configurations_where_the_model_does_not_hold(model_path, capsys, grid, fragment):
    code, _, err = run(["advise", model_path, "--target", "m=64,s=1", "--grid", grid], capsys)
    one_line_error(code, err, fragment)


@pytest.mark.parametrize("target, fragment", [("m=0,s=1", "the target: term 's/m'"),
                                              ("m=1e999,s=1", "--target: '1e999' (m) is not a finite number")])
def test_advise_refuses_a_target_where_the_model_does_not_hold(model_path, capsys, target, fragment):
    code, _, err = run(["advise", model_path, "--target", target, "--grid", "m=4,8"], capsys)
    one_line_error(code, err, fragment)
