"""The CLI contract: fit / predict / show, exit 2 with one line on bad input."""

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.cli_run import RCV1, run

ROOT = Path(__file__).resolve().parent.parent


def test_fit_predict_show_round_trip(tmp_path, capsys):
    model = tmp_path / "m.json"
    code, out, _ = run(
        [
            "fit",
            RCV1,
            "--time",
            "time_s",
            "--factor",
            "m=cores",
            "--factor",
            "s=input_fraction",
            "--terms",
            "1 + s/m + log(m) + m",
            "--loss",
            "absolute",
            "--lambda",
            "0",
            "--out",
            model,
        ],
        capsys,
    )  # Ernest's published NNLS fit: unpenalised
    assert code == 0 and "[[Variables]]" in out
    saved = json.loads(model.read_text())
    assert saved["coefficients"]["c1"] == pytest.approx(162.19821, rel=1e-5)
    new = tmp_path / "new.csv"
    new.write_text("cores,input_fraction\n4,1\n8,1\n")
    pred = tmp_path / "pred.csv"
    code, _, err = run(["predict", model, new, "--out", pred], capsys)
    assert code == 0
    frame = pd.read_csv(pred)
    assert list(frame.columns) == ["cores", "input_fraction", "predicted_time"]
    assert frame["predicted_time"].tolist() == pytest.approx([44.6516, 25.4777], rel=1e-5)
    assert "outside the measured range" in err
    code, out, _ = run(["show", model], capsys)
    assert code == 0 and out.startswith("T = 1.9 + 162.2·s/m + 1.588·log(m)") and "share" in out
    # --grid: the same configurations without a CSV, by symbol or by column, every combination
    code, out, _ = run(["predict", model, "--grid", "m=4,8", "--grid", "input_fraction=1"], capsys)
    assert code == 0
    grid = pd.read_csv(io.StringIO(out))
    assert list(grid.columns) == ["cores", "input_fraction", "predicted_time"]
    assert grid["predicted_time"].tolist() == pytest.approx([44.6516, 25.4777], rel=1e-5)
    assert (
        len(pd.read_csv(io.StringIO(run(["predict", model, "--grid", "m=4,8,16", "--grid", "s=0.5,1"], capsys)[1])))
        == 6
    )
    for args, fragment in (
        (["--grid", "m=4"], "missing s (column 'input_fraction')"),
        (["--grid", "m=4,x", "--grid", "s=1"], "--grid m: 'x' is not a number"),
        (["--grid", "m=4", "--grid", "s=1", "--grid", "q=2"], "'q' is not a factor of the model"),
        ([], "give either DATA"),
        ([new, "--grid", "m=4", "--grid", "s=1"], "give either DATA"),
    ):
        code, _, err = run(["predict", model, *args], capsys)
        assert code == 2 and fragment in err, (args, err)


def test_extrap_file_needs_no_time(tmp_path, capsys):
    model = tmp_path / "m.json"
    code, out, _ = run(
        [
            "fit",
            ROOT / "data" / "extrap" / "text_two_parameter_6.txt",
            "--terms",
            "1 + s^e*p",
            "--loss",
            "absolute",
            "--bounds",
            "e=0:2",
            "--lambda",
            "0",
            "--out",
            model,
        ],
        capsys,
    )
    assert code == 0
    assert json.loads(model.read_text())["params"]["e"] == pytest.approx(1.5, rel=1e-6)


def test_columns_not_given_are_guessed_and_said(tmp_path, capsys):
    """Without --time and --factor the columns are guessed from their names, the guess is said on stderr,
    and the fit is the one the flags give: T = 2 + 60/p exactly, from its generating formula."""
    data = tmp_path / "runs.csv"
    pd.DataFrame({"gpus": [1, 2, 4, 8], "time_s": [2 + 60 / p for p in (1, 2, 4, 8)]}).to_csv(data, index=False)
    fits = []
    for flags in ([], ["--time", "time_s", "--factor", "p=gpus"], ["--time", "time_s"]):
        model = tmp_path / f"m{len(fits)}.json"
        code, _, err = run(["fit", data, *flags, "--terms", "1 + 1/p", "--lambda", "0", "--out", model], capsys)
        assert code == 0, err
        assert ("guessed from the column names" in err) == (flags != ["--time", "time_s", "--factor", "p=gpus"])
        fits.append(json.loads(model.read_text())["coefficients"])
    assert "time = 'time_s', p = 'gpus'" in run(["fit", data, "--terms", "1", "--out", tmp_path / "x.json"], capsys)[2]
    for c in fits:
        assert c["c0"] == pytest.approx(2, rel=1e-6) and c["c1"] == pytest.approx(60, rel=1e-6)
    (tmp_path / "nofactor.csv").write_text("colour,time_s\n1,2\n2,3\n")
    code, _, err = run(["fit", tmp_path / "nofactor.csv", "--terms", "1", "--out", tmp_path / "x.json"], capsys)
    assert code == 2 and "no column looks like a factor" in err and "colour, time_s" in err
    (tmp_path / "notime.csv").write_text("gpus,colour\n1,2\n2,3\n")
    code, _, err = run(["fit", tmp_path / "notime.csv", "--terms", "1", "--out", tmp_path / "x.json"], capsys)
    assert code == 2 and "no column looks like a time" in err and "--time COL" in err


def test_an_empty_column_is_not_guessed_as_a_factor(tmp_path, capsys):
    """A collection's table whose ``global_batch`` only other series fill in (as the LLM throughput
    tables): guessed as B it would drop every row; it is left out, the note says so, and the fit is the
    generating formula's, T = 2 + 60/p. An error a guess leads to says the guess, on its one line."""
    data = tmp_path / "runs.csv"
    pd.DataFrame(
        {"gpus": [1, 2, 4, 8], "global_batch": [None] * 4, "time_s": [2 + 60 / p for p in (1, 2, 4, 8)]}
    ).to_csv(data, index=False)
    model = tmp_path / "m.json"
    code, _, err = run(["fit", data, "--terms", "1 + 1/p", "--lambda", "0", "--out", model], capsys)
    assert code == 0, err
    assert "p = 'gpus', 'global_batch' (no value on most rows, not guessed as B)" in err
    c = json.loads(model.read_text())["coefficients"]
    assert c["c0"] == pytest.approx(2, rel=1e-6) and c["c1"] == pytest.approx(60, rel=1e-6)
    (tmp_path / "gone.csv").write_text("gpus,time_s\none,3\ntwo,2\n")  # the guess stands; no row has a number of GPUs
    code, _, err = run(["fit", tmp_path / "gone.csv", "--terms", "1", "--out", tmp_path / "x.json"], capsys)
    assert code == 2 and err.count("\n") == 1 and "no usable rows" in err and "guessed from the column names" in err


def test_a_time_in_milliseconds_is_read_in_seconds(tmp_path, capsys):
    """step_time_ms from T = 2 + 60/p seconds: the unit from the name (said), the constants of the formula
    in seconds; --time-unit s takes the values as they are; a unit with a throughput is refused."""
    data = tmp_path / "ms.csv"
    pd.DataFrame({"gpus": [1, 2, 4, 8], "step_time_ms": [1000 * (2 + 60 / p) for p in (1, 2, 4, 8)]}).to_csv(
        data, index=False
    )
    for flags, scale in (([], 1), (["--time-unit", "ms"], 1), (["--time-unit", "s"], 1000)):
        model = tmp_path / "m.json"
        code, _, err = run(["fit", data, *flags, "--terms", "1 + 1/p", "--lambda", "0", "--out", model], capsys)
        assert code == 0, err
        assert ("'step_time_ms' in ms" in err) == (scale == 1)
        c = json.loads(model.read_text())["coefficients"]
        assert c["c0"] == pytest.approx(2 * scale, rel=1e-6) and c["c1"] == pytest.approx(60 * scale, rel=1e-6)
    code, _, err = run(
        [
            "fit",
            data,
            "--throughput",
            "step_time_ms",
            "--time-unit",
            "ms",
            "--terms",
            "1",
            "--out",
            tmp_path / "x.json",
        ],
        capsys,
    )
    assert code == 2 and "--time-unit is for a measured time" in err
    code, _, err = run(
        [
            "fit",
            ROOT / "data" / "extrap" / "text_two_parameter_6.txt",
            "--time-unit",
            "ms",
            "--terms",
            "1",
            "--out",
            tmp_path / "x.json",
        ],
        capsys,
    )
    assert code == 2 and "an Extra-P file's values are taken as they are" in err
    code, _, err = run(["fit", "--dataset", "ernest-rcv1", "--time-unit", "ms", "--out", tmp_path / "x.json"], capsys)
    assert code == 2 and "--time-unit: the bundled dataset 'ernest-rcv1'" in err


def test_a_throughput_is_fitted_as_work_over_the_rate_and_predicted_back(tmp_path, capsys):
    """Rates from T = 2 + 60/p seconds per run of 1200 images: --throughput/--work fits the time 1200 / rate,
    which gives the formula's constants, and predict gives the rate back, its interval's ends swapped."""
    data = tmp_path / "rates.csv"
    pd.DataFrame({"gpus": [1, 2, 4, 8], "images/s": [1200 / (2 + 60 / p) for p in (1, 2, 4, 8)]}).to_csv(
        data, index=False
    )
    model = tmp_path / "m.json"
    code, _, err = run(
        [
            "fit",
            data,
            "--throughput",
            "images/s",
            "--work",
            "1200",
            "--terms",
            "1 + 1/p",
            "--lambda",
            "0",
            "--out",
            model,
        ],
        capsys,
    )
    assert code == 0, err
    saved = json.loads(model.read_text())
    assert saved["time"] == "1200 / images/s" and saved["rate"] == {"column": "images/s", "work": 1200.0}
    assert saved["coefficients"]["c0"] == pytest.approx(2, rel=1e-6)
    assert saved["coefficients"]["c1"] == pytest.approx(60, rel=1e-6)
    assert "made from the throughput 'images/s'" in run(["show", model], capsys)[1]
    at = tmp_path / "at.csv"
    at.write_text("gpus\n16\n")
    out = tmp_path / "pred.csv"
    assert run(["predict", model, at, "--interval", "0.9", "--out", out], capsys)[0] == 0
    pred = pd.read_csv(out).iloc[0]
    assert pred["predicted images/s"] == pytest.approx(1200 / pred["predicted_time"])
    assert pred["predicted images/s low"] == pytest.approx(1200 / pred["predicted_high"])
    assert pred["predicted images/s high"] == pytest.approx(1200 / pred["predicted_low"])
    # without flags the rate is guessed from its name, and said
    code, _, err = run(["fit", data, "--terms", "1 + 1/p", "--out", tmp_path / "g.json"], capsys)
    assert code == 0 and "throughput = 'images/s', p = 'gpus'" in err and "'1 / images/s'" in err
    for flags, fragment in (
        (["--throughput", "nope"], "throughput column 'nope' not found"),
        (["--throughput", "images/s", "--work", "0"], "must be a positive number or a column"),
        (["--throughput", "images/s", "--work", "batch"], "work column 'batch' not found"),
        (["--throughput", "images/s", "--time", "gpus"], "either --time or --throughput"),
    ):
        code, _, err = run(["fit", data, *flags, "--terms", "1", "--out", tmp_path / "x.json"], capsys)
        assert code == 2 and fragment in err, (flags, err)


def test_a_throughput_that_is_not_a_positive_number_is_reported_by_row(tmp_path, capsys):
    data = tmp_path / "rates.csv"
    data.write_text("gpus,tokens_per_sec\n1,100\n2,0\n4,fast\n8,-5\n16,1500\n")
    code, _, err = run(["fit", data, "--terms", "1 + 1/p", "--out", tmp_path / "m.json"], capsys)
    assert code == 0
    assert (
        "row 2, column '1 / tokens_per_sec'" in err
        and "row 3, column '1 / tokens_per_sec': non-numeric value 'fast'" in err
    )
    assert "row 4, column '1 / tokens_per_sec'" in err


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["fit", "missing.csv", "--terms", "1", "--out", "x.json"], "is neither a file nor a bundled dataset"),
        (
            ["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--terms", "__import__('os')", "--out", "x.json"],
            "'__import__' is not allowed",
        ),
        (["fit", RCV1, "--time", "secs", "--terms", "1", "--out", "x.json"], "time column 'secs' not found"),
        (
            [
                "fit",
                RCV1,
                "--time",
                "time_s",
                "--factor",
                "m=cores",
                "--terms",
                "1+m",
                "--lambda",
                "abc",
                "--out",
                "x.json",
            ],
            "invalid float value: 'abc'",
        ),
        (
            [
                "fit",
                RCV1,
                "--time",
                "time_s",
                "--factor",
                "m=cores",
                "--terms",
                "1+log2(m)+m+m^2+m^3+m^4+m^5+m^6+m^7",
                "--lambda",
                "0",
                "--out",
                "x.json",
            ],
            "cannot determine 9 fitted parameters",
        ),
        (["show", RCV1], "not valid JSON"),
        (["predict", "nothere.json", RCV1, "--out", "x.csv"], "model file not found"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(args, capsys)
    assert code == 2
    assert err.count("\n") == 1 and fragment in err and "Traceback" not in err


def test_module_entry_point_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "perfmodel", "show", str(tmp_path / "none.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: model file not found")


def test_bundled_dataset_by_name_or_option(tmp_path, capsys):
    out = tmp_path / "m.json"
    code, text, _ = run(["fit", "--dataset", "ernest-rcv1", "--preset", "ernest", "--out", out], capsys)
    assert code == 0 and json.loads(out.read_text())["dataset"] == "ernest-rcv1"
    code, _, err = run(["fit", "--dataset", "nope", "--preset", "ernest", "--out", out], capsys)
    assert code == 2 and "'nope' is neither a bundled dataset" in err
    code, _, err = run(["fit", "ernest-rcv1", "--dataset", "ernest-rcv1", "--out", out], capsys)
    assert code == 2 and "either DATA" in err


def _ernest_model(tmp_path, capsys):
    model = tmp_path / "m.json"
    code, _, err = run(
        [
            "fit",
            RCV1,
            "--time",
            "time_s",
            "--factor",
            "m=cores",
            "--factor",
            "s=input_fraction",
            "--terms",
            "1 + s/m + log(m) + m",
            "--lambda",
            "0",
            "--replicates",
            "20",
            "--out",
            model,
        ],
        capsys,
    )
    assert code == 0, err
    return model


@pytest.mark.parametrize("out", [[], ["--out", "-"]])
def test_predict_prints_the_csv_to_stdout(out, tmp_path, capsys, monkeypatch):
    """Without --out (or with --out -) the CSV goes to stdout and nothing else does: it pipes."""
    model = _ernest_model(tmp_path, capsys)
    new = tmp_path / "new.csv"
    new.write_text("cores,input_fraction\n4,1\n8,0.5\n")
    monkeypatch.chdir(tmp_path)
    code, text, err = run(["predict", model, new, *out], capsys)
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(text))
    assert list(frame.columns) == ["cores", "input_fraction", "predicted_time"] and len(frame) == 2
    assert [r.split(",")[:2] for r in text.splitlines()[1:]] == [["4", "1.0"], ["8", "0.5"]]
    assert "outside the measured range" in err and not (tmp_path / "-").exists()


def test_messages_name_the_program_as_invoked(tmp_path):
    """`perfmodel ...` says perfmodel; `python -m perfmodel ...` says python -m perfmodel."""
    from perfmodel.cli import program_name

    assert program_name("/usr/local/bin/perfmodel") == "perfmodel"
    assert program_name("/site-packages/perfmodel/__main__.py") == "python -m perfmodel"
    script = tmp_path / "perfmodel"  # what pip's console script is: a file named perfmodel calling main
    script.write_text("import sys\nfrom perfmodel.cli import main\nsys.exit(main())\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    as_script = subprocess.run(
        [sys.executable, str(script), "fit", "--bogus"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    as_module = subprocess.run(
        [sys.executable, "-m", "perfmodel", "fit", "--bogus"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert as_script.returncode == as_module.returncode == 2
    assert as_script.stderr.startswith("error: perfmodel fit: "), as_script.stderr
    assert as_module.stderr.startswith("error: python -m perfmodel fit: "), as_module.stderr


def test_every_csv_writes_integers_as_integers(tmp_path, capsys):
    """advise's plan (a grid parsed as floats), plan --out and a group summary: `32`, never `32.0`
    (sweep --plan would pass `--gpus 32.0` to the job)."""
    model = tmp_path / "m.json"
    code, _, err = run(
        ["fit", "tf-cnn-resnet50-dgx1", "--preset", "data-parallel", "--replicates", "20", "--out", model], capsys
    )
    assert code == 0, err
    plan = tmp_path / "plan.csv"
    code, text, err = run(
        [
            "advise",
            model,
            "--target",
            "p=32,b=64,N=1281167",
            "--grid",
            "p=1,2,4,8,16,32",
            "--grid",
            "b=32,64",
            "--out",
            plan,
        ],
        capsys,
    )
    assert code == 0, err
    rows = plan.read_text().splitlines()
    head = rows[0].split(",")
    first = dict(zip(head, rows[1].split(","), strict=True))
    assert first["p"] in {"1", "2", "4", "8", "16", "32"} and first["b"] in {"32", "64"} and first["N"] == "1281167"
    assert first["rank"] == "1"
    assert "python -m perfmodel sweep --plan" in text or "perfmodel sweep --plan" in text
    out = tmp_path / "p.csv"
    code, _, err = run(["plan", model, "--at", "N=1281167,b=64", "--grid", "p=8,16,32", "--out", out], capsys)
    assert code == 0, err
    first = dict(zip(*[r.split(",") for r in out.read_text().splitlines()[:2]], strict=True))
    assert first["p"] == "8" and first["N"] == "1281167"


def test_integers_as_integers_keeps_what_is_not_whole():
    from perfmodel.spreadsheet import integers_as_integers, to_csv

    frame = pd.DataFrame(
        {
            "p": [1.0, 32.0, float("nan")],
            "t": [1.5, 2.0, 3.0],
            "big": [1e300, 2.0, 3.0],
            "inf": [1.0, float("inf"), 2.0],
            "name": ["a", "b", "c"],
        }
    )
    text = to_csv(frame)
    assert text.splitlines()[1:] == ["1,1.5,1e+300,1.0,a", "32,2.0,2.0,inf,b", ",3.0,3.0,2.0,c"]
    assert integers_as_integers(frame)["p"].dtype == "Int64" and frame["p"].dtype == float  # a copy


def test_group_fit_prints_a_table_per_group(tmp_path, capsys):
    code, text, err = run(
        [
            "fit",
            "tf-cnn-all",
            "--group-by",
            "model",
            "--replicates",
            "0",
            "--cv",
            "2",
            "--workers",
            "1",
            "--min-configurations",
            "6",
            "--out",
            tmp_path / "g",
        ],
        capsys,
    )
    assert code == 0, err
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("group"))
    assert lines[head].split()[:4] == ["group", "status", "MAPE", "%"] and "CV MAPE %" in lines[head]
    table = {line.split()[0]: line for line in lines[head + 1 : head + 6]}
    assert set(table) == {"InceptionV3", "ResNet-50", "ResNet-152", "AlexNet", "VGG16"}
    assert "skipped" in table["AlexNet"] and "fewer than the 6 required" in table["AlexNet"]
    assert (
        " ok, poor fit " in table["VGG16"]
        and "T = " in table["VGG16"]
        and re.search(r"\d+\.\d\d\s+\d+\.\d\d", table["VGG16"])
    )


def test_dask_local_prints_its_dashboard_not_a_port_warning(tmp_path, capsys):
    """Port 8787 taken (a shared machine): no 'already in use' warning; the dashboard's address."""
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as busy:
        try:
            busy.bind(("127.0.0.1", 8787))
            busy.listen()
        except OSError:
            pass  # already taken by someone else: the same situation
        code, _, err = run(
            [
                "fit",
                "tf-cnn-all",
                "--group-by",
                "model",
                "--replicates",
                "0",
                "--cv",
                "0",
                "--dask",
                "local",
                "--workers",
                "1",
                "--out",
                tmp_path / "g",
            ],
            capsys,
        )
    assert code == 0, err
    assert "already in use" not in err and re.search(r"Dask dashboard: http://127\.0\.0\.1:\d+/status", err), err


def test_a_poor_fit_is_called_poor_on_the_command_line(tmp_path, capsys):
    """tf-cnn-all as one model (MAPE 60 %, R² 0.04) warns and points to --group-by; grouped by model
    only, every group (42-57 % CV error) is marked a poor fit in the table."""
    code, _, err = run(
        ["fit", "tf-cnn-all", "--replicates", "0", "--maxiter", "300", "--out", tmp_path / "m.json"], capsys
    )
    assert code == 0 and "warning: this fit is too poor to quote a prediction" in err and "--group-by" in err
    code, text, err = run(
        [
            "fit",
            "tf-cnn-all",
            "--group-by",
            "model",
            "--replicates",
            "0",
            "--cv",
            "3",
            "--workers",
            "1",
            "--out",
            tmp_path / "g",
        ],
        capsys,
    )
    assert code == 0, err
    rows = [line for line in text.splitlines() if line.split()[:1] in (["VGG16"], ["AlexNet"])]
    assert len(rows) == 2 and all("ok, poor fit" in r for r in rows) and "(poor fit: CV MAPE above 25 %" in text
    code, text, _ = run(
        [
            "fit",
            "tf-cnn-all",
            "--group-by",
            "model",
            "--group-by",
            "platform",
            "--replicates",
            "0",
            "--cv",
            "3",
            "--workers",
            "1",
            "--out",
            tmp_path / "g2",
        ],
        capsys,
    )
    assert code == 0 and "poor fit" not in text  # one model per model and platform fits within a few %
