"""The CLI contract: fit / predict / show, exit 2 with one line on bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.cli_run import RCV1, run

ROOT = Path(__file__).resolve().parent.parent




def test_fit_predict_show_round_trip(tmp_path, capsys):
    model = tmp_path / "m.json"
    code, out, _ = run(["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--factor", "s=input_fraction",
                        "--terms", "1 + s/m + log(m) + m", "--loss", "absolute", "--lambda", "0", "--out", model],
                       capsys)  # Ernest's published NNLS fit: unpenalised
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


def test_extrap_file_needs_no_time(tmp_path, capsys):
    model = tmp_path / "m.json"
    code, out, _ = run(["fit", ROOT / "data" / "extrap" / "text_two_parameter_6.txt", "--terms", "1 + s^e*p",
                        "--loss", "absolute", "--bounds", "e=0:2", "--lambda", "0", "--out", model], capsys)
    assert code == 0
    assert json.loads(model.read_text())["params"]["e"] == pytest.approx(1.5, rel=1e-6)


@pytest.mark.parametrize("args,fragment", [
    (["fit", "missing.csv", "--terms", "1", "--out", "x.json"], "is neither a file nor a bundled dataset"),
    (["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--terms", "__import__('os')", "--out", "x.json"],
     "'__import__' is not allowed"),
    (["fit", RCV1, "--time", "secs", "--terms", "1", "--out", "x.json"], "time column 'secs' not found"),
    (["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--terms", "1+m", "--lambda", "abc",
      "--out", "x.json"], "invalid float value: 'abc'"),
    (["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--terms", "1+log2(m)+m+m^2+m^3+m^4+m^5+m^6+m^7",
      "--lambda", "0", "--out", "x.json"], "cannot determine 9 fitted parameters"),
    (["show", RCV1], "not valid JSON"),
    (["predict", "nothere.json", RCV1, "--out", "x.csv"], "model file not found"),
])
def test_bad_input_exits_2_with_one_line(args, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(args, capsys)
    assert code == 2
    assert err.count("\n") == 1 and fragment in err and "Traceback" not in err


def test_module_entry_point_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "perfmodel", "show", str(tmp_path / "none.json")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.startswith("error: model file not found")


def test_bundled_dataset_by_name_or_option(tmp_path, capsys):
    out = tmp_path / "m.json"
    code, text, _ = run(["fit", "--dataset", "ernest-rcv1", "--preset", "ernest", "--out", out], capsys)
    assert code == 0 and json.loads(out.read_text())["dataset"] == "ernest-rcv1"
    code, _, err = run(["fit", "--dataset", "nope", "--preset", "ernest", "--out", out], capsys)
    assert code == 2 and "'nope' is neither a bundled dataset" in err
    code, _, err = run(["fit", "ernest-rcv1", "--dataset", "ernest-rcv1", "--out", out], capsys)
    assert code == 2 and "either DATA" in err
