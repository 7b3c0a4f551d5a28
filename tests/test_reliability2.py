"""Reliability, second pass (issue 20), the rest: plan files, work-list limits, non-finite fits, unknown
term names, group file names, hostile text in the app and in CSV files, signals and worker imports."""

import sys

import pandas as pd
import pytest

from tests.cli_run import RCV1, one_line_error, run
from tests.test_reliability import _limited_run, model_path  # noqa: F401 (a fixture)

PY = sys.executable


# -- sweep --plan files --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "the file is empty"),
        (b"\n\n  \n", "the file is empty"),
        (b"p,b\n1,2\n3\n", "row 2 (line 3) has 1 fields, the header has 2"),
        (b"p,b\n1,2\n3,4,5\n", "row 2 (line 3) has 3 fields, the header has 2"),
        (b'p,b\n1,"2\n', "line 2: not valid CSV (unexpected end of data)"),
        (b"p,b\n\xff\n", "not a UTF-8 text file"),
    ],
)
def test_an_empty_or_ragged_plan_is_one_line_naming_the_file(tmp_path, capsys, content, fragment):
    plan = tmp_path / "plan.csv"
    plan.write_bytes(content)
    code, _, err = run(
        ["sweep", "--command", f"{PY} -c pass {{p}} {{b}}", "--plan", plan, "--out", tmp_path / "t.csv"], capsys
    )
    one_line_error(code, err, f"--plan {plan}: ")
    assert fragment in err, err
    assert not (tmp_path / "t.csv").exists()


def test_a_plan_with_blank_lines_and_advise_columns_runs_the_planned_rows(tmp_path, capsys):
    plan = tmp_path / "plan.csv"
    plan.write_text("p,b,in_plan\n1,2.0,True\n\n3,4,False\n5,6,true\n")
    code, _, err = run(
        ["sweep", "--command", f"{PY} -c pass {{p}} {{b}}", "--plan", plan, "--out", tmp_path / "t.csv"], capsys
    )
    assert code == 0, err
    rows = (tmp_path / "t.csv").read_text().splitlines()[1:]
    assert [r.split(",")[:2] for r in rows] == [["1", "2"], ["5", "6"]]


# -- work lists are counted before they are built -------------------------------------------------------
CAP = 1_200_000_000  # bytes of address space: the lists these would build need several GB


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--grid", "p=1,2", "--repeat", "99999999999999999999"], "the sweep lists 199,999,999,999,999,999,998 runs"),
        (
            [
                "--grid",
                "p=" + ",".join(map(str, range(1000))),
                "--grid",
                "b=" + ",".join(map(str, range(1000))),
                "--grid",
                "n=" + ",".join(map(str, range(1000))),
            ],
            "the sweep lists 1,000,000,000 runs",
        ),
    ],
)
def test_sweep_refuses_huge_work_lists_before_building_them(tmp_path, args, fragment):
    command = f"{PY} -c pass " + " ".join("{" + a.split("=")[0] + "}" for a in args[1::2] if "=" in a)
    proc = _limited_run(["sweep", "--command", command, *args, "--out", tmp_path / "t.csv"], CAP, timeout=60)
    one_line_error(proc.returncode, proc.stderr, fragment)
    assert "at most 1,000,000" in proc.stderr


def test_advise_counts_the_grid_before_building_it(model_path):  # noqa: F811
    values = ",".join(str(v) for v in range(1, 10_001))
    proc = _limited_run(
        ["advise", model_path, "--target", "m=64,s=1", "--grid", f"m={values}", "--grid", f"s={values}"],
        CAP,
        timeout=60,
    )
    one_line_error(proc.returncode, proc.stderr, "the grid has 100,000,000 configurations; at most 100,000")


# -- a fit without a finite error is refused -------------------------------------------------------------
FIT = ["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--factor", "s=input_fraction", "--replicates", "0"]


@pytest.mark.parametrize("bounds", ["g=0:1e-300", "g=1e-310:1e-200"])
def test_a_fit_whose_error_is_not_finite_is_refused_and_not_saved(tmp_path, capsys, bounds):
    out = tmp_path / "m.json"
    code, text, err = run([*FIT, "--terms", "overlap(s/m, log(m); g)", "--bounds", bounds, "--out", out], capsys)
    one_line_error(code, err, "has no finite error (MAPE inf")
    assert "check the terms and the bounds (g in [" in err
    assert not out.exists() and "saved" not in text


def test_a_fit_that_predicts_no_positive_time_is_refused_and_not_saved(tmp_path, capsys):
    # found by scripts/fuzz_reliability.py: T = 0 was saved with noise.sigma inf, a file that cannot be loaded
    out = tmp_path / "m.json"
    code, _, err = run(
        [*FIT[:-2], "--replicates", "40", "--terms", "-max(16, s)", "--bounds", "c0=0:1", "--out", out], capsys
    )
    one_line_error(code, err, "the fit of T = 0 predicts a time that is not positive at 7 of 7 measured rows (row 1")
    assert not out.exists()


def test_the_library_refuses_a_fit_without_a_finite_error():
    import pandas as pd

    from perfmodel import PerfModelError, fit
    from tests.cli_run import RCV1 as path

    frame = pd.read_csv(path)
    with pytest.raises(PerfModelError, match="no finite error"):
        fit(
            frame,
            "overlap(s/m, log(m); g)",
            time="time_s",
            factors={"m": "cores", "s": "input_fraction"},
            bounds={"g": (0, 1e-300)},
        )


# -- a name that is not a factor ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, names",
    [
        ("1 + q*m", ["q"]),
        ("1 + s/m + m^e1", []),
        ("1 + log(m)*k + s^e1*z", ["k", "z"]),
        ("overlap(s/m, log(m); g)", []),
        ("1 + s/(m + h)", ["h"]),
    ],
)
def test_unmapped_names_are_free_parameters_standing_where_a_factor_would(spec, names):
    from perfmodel.language.expression import parse_expression, unmapped_names

    expr, _ = parse_expression(spec, ["m", "s"])
    assert unmapped_names(expr) == names


def test_a_term_name_that_is_not_a_factor_is_warned_on_stderr(tmp_path, capsys):
    code, text, err = run([*FIT, "--terms", "1 + q*m + s/m", "--out", tmp_path / "m.json"], capsys)
    assert code == 0
    assert err == "warning: q is not a factor; fitted as a free parameter\n"
    assert "q is not a factor" in text  # and in the report's [[Warnings]]
    code, text, err = run([*FIT, "--terms", "1 + s/m + m^e1", "--out", tmp_path / "m.json"], capsys)
    assert code == 0 and "not a factor" not in err + text  # an exponent is a free parameter by design


def grouped_csv(tmp_path, groups=("a", "b")):
    rows = [(g, p, 1 + i + 8 / p) for i, g in enumerate(groups) for p in (1, 2, 4, 8, 16)]
    path = tmp_path / "groups.csv"
    pd.DataFrame(rows, columns=["fw", "p", "time"]).to_csv(path, index=False)
    return path


def test_group_fits_warn_once(tmp_path, capsys):
    code, _, err = run(
        [
            "fit",
            grouped_csv(tmp_path),
            "--time",
            "time",
            "--factor",
            "p=p",
            "--terms",
            "1 + q/p",
            "--group-by",
            "fw",
            "--workers",
            "1",
            "--replicates",
            "0",
            "--out",
            tmp_path / "g",
        ],
        capsys,
    )
    assert code == 0, err
    assert err.count("q is not a factor; fitted as a free parameter") == 1, err


# -- group model file names ------------------------------------------------------------------------------
def test_group_keys_that_join_to_the_same_text_get_different_files():
    from perfmodel.groups import file_names

    names = file_names([("a__b", "c"), ("a", "b__c")])
    assert len(set(names)) == 2 and all(n.startswith("a__b__c-") for n in names), names
    assert len(set(file_names([(1, "x"), ("1", "x")]))) == 2  # equal labels: still two files


def test_two_such_groups_are_saved_as_two_model_files(tmp_path, capsys):
    rows = ["g1,g2,p,time"] + [
        f"{a},{b},{p},{k + 8 / p:.4f}"
        for k, (a, b) in enumerate([("a__b", "c"), ("a", "b__c")])
        for p in (1, 2, 4, 8, 16)
    ]
    csv = tmp_path / "g.csv"
    csv.write_text("\n".join(rows) + "\n")
    code, _, err = run(
        [
            "fit",
            csv,
            "--time",
            "time",
            "--factor",
            "p=p",
            "--terms",
            "1 + 1/p",
            "--group-by",
            "g1",
            "--group-by",
            "g2",
            "--workers",
            "1",
            "--replicates",
            "0",
            "--out",
            tmp_path / "out",
        ],
        capsys,
    )
    assert code == 0, err
    assert len(list((tmp_path / "out").glob("*.json"))) == 2


# -- spreadsheet formulas in the CSV files ---------------------------------------------------------------
PAYLOADS = ['=HYPERLINK("https://evil.example","x")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3*cmd", "\t=1+1"]


def test_formula_cells_get_an_apostrophe_and_numbers_stay_numbers():
    from perfmodel.spreadsheet import read_cell, safe_cell

    for text in PAYLOADS + ["\r=1", "'=x", "''=x"]:
        assert safe_cell(text) == "'" + text and read_cell(safe_cell(text)) == text
    for value in ["-2.5", "+1e3", "-7", "abc", "", "'abc", "a=b", -2.5, 3, None]:
        assert safe_cell(value) == value and read_cell(safe_cell(value)) == value


def _cells(path):
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return [c for row in csv.reader(fh) for c in row]


def test_group_summary_and_predictions_neutralise_formulas(tmp_path, capsys):
    path = grouped_csv(tmp_path, PAYLOADS)
    code, _, err = run(
        [
            "fit",
            path,
            "--time",
            "time",
            "--factor",
            "p=p",
            "--terms",
            "1 + 1/p",
            "--group-by",
            "fw",
            "--workers",
            "1",
            "--replicates",
            "0",
            "--out",
            tmp_path / "g",
        ],
        capsys,
    )
    assert code == 0, err
    cells = _cells(tmp_path / "g" / "summary.csv")
    for text in (t.strip() for t in PAYLOADS):  # the reader strips the tab of "\t=1+1"
        assert "'" + text in cells and text not in cells, text
    assert not any(c.startswith(("=", "+", "@", "\t")) for c in cells)
    for c in cells:
        if c.startswith("-"):
            float(c)  # a cell beginning with '-' is a number
    # predict keeps the input's columns: the same payloads, and a negative number stays a number
    model = next(p for p in (tmp_path / "g").glob("*.json"))
    rows = tmp_path / "rows.csv"
    pd.DataFrame({"p": [2, 4, 8, 16, 32], "note": PAYLOADS, "delta": [-2.5] * 5}).to_csv(rows, index=False)
    code, _, err = run(["predict", model, rows, "--out", tmp_path / "pred.csv"], capsys)
    assert code == 0, err
    cells = _cells(tmp_path / "pred.csv")
    assert all("'" + t.strip() in cells for t in PAYLOADS) and "-2.5" in cells


def test_sweep_writes_formula_values_inert_and_resumes_from_them(tmp_path, capsys):
    out = tmp_path / "t.csv"
    args = ["sweep", "--command", f"{PY} -c pass {{p}}", "--grid", "p=@SUM(1+1),-2.5", "--out", out]
    code, _, err = run(args, capsys)
    assert code == 0, err
    cells = _cells(out)
    assert "'@SUM(1+1)" in cells and "-2.5" in cells
    plan = tmp_path / "plan.csv"
    plan.write_text("p\n'@SUM(1+1)\n-2.5\n")  # the values as a CSV of ours holds them
    code, _, err = run(["sweep", "--command", f"{PY} -c pass {{p}}", "--plan", plan, "--out", out], capsys)
    assert code == 0 and "2 of 2 runs already recorded, 0 to go" in err, err
    code, _, err = run(args, capsys)  # everything already recorded: nothing runs again
    assert code == 0 and "2 of 2 runs already recorded, 0 to go" in err, err
    from perfmodel.sweep import read_timings

    assert sorted(read_timings(out)["p"].astype(str)) == ["-2.5", "@SUM(1+1)"]


def test_every_csv_writer_goes_through_the_helper():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    files = [
        *root.joinpath("perfmodel").rglob("*.py"),
        *root.joinpath("ui").glob("*.py"),
        *root.joinpath("pages").glob("*.py"),
        root / "app.py",
    ]
    direct = []
    for f in files:
        if f.name == "spreadsheet.py":
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to_csv":
                direct.append(f"{f.relative_to(root)}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "writerow":
                arg = ast.unparse(node.args[0])
                if "safe_cell" not in arg and arg != "columns":  # the sweep's header: identifiers only
                    direct.append(f"{f.relative_to(root)}:{node.lineno}")
    assert not direct, f"CSV written without perfmodel.spreadsheet: {direct}"


# -- signals: fit --group-by --workers 2 ends every process it started -------------------------------------
def _marked(mark):
    """Live processes whose environment carries ``mark`` (the command and all it started, wherever
    they were reparented)."""
    import psutil

    out = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("PERFMODEL_TEST_MARK") == mark and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return out


@pytest.mark.parametrize("signum, when", [("SIGTERM", "starting"), ("SIGTERM", "running"), ("SIGINT", "running")])
def test_a_signal_to_fit_group_by_with_workers_ends_every_process_it_started(tmp_path, signum, when):
    """``starting``: as soon as the forkserver is up, while ``submit`` starts the workers (the handler
    used to deadlock on the executor's lock there, and a half-started worker printed a traceback);
    ``running``: once both workers run."""
    import os
    import signal
    import subprocess
    import time
    import uuid
    from pathlib import Path

    import psutil

    path = grouped_csv(tmp_path, [f"g{k}" for k in range(3000)])
    mark = uuid.uuid4().hex
    env = {**os.environ, "PERFMODEL_TEST_MARK": mark, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "perfmodel",
            "fit",
            str(path),
            "--time",
            "time",
            "--factor",
            "p=p",
            "--terms",
            "1 + 1/p + p^e1",
            "--maxiter",
            "5",
            "--cv",
            "0",
            "--group-by",
            "fw",
            "--workers",
            "2",
            "--replicates",
            "0",
            "--out",
            str(tmp_path / "g"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        # the command, the resource tracker and the forkserver; then the two workers
        while len(_marked(mark)) < (3 if when == "starting" else 5):
            assert proc.poll() is None, "the command ended before it was signalled: " + proc.stderr.read()[-500:]
            assert time.monotonic() < deadline, "the pool never started"
            time.sleep(0.05)
        started = _marked(mark)
        proc.send_signal(getattr(signal, signum))
        proc.wait(timeout=30)
        _, alive = psutil.wait_procs([p for p in started if p.pid != proc.pid], timeout=15)
        left = _marked(mark)
        assert not alive and not left, f"left running after {signum}: {[p.cmdline()[:3] for p in left]}"
        assert proc.returncode == {"SIGTERM": 143, "SIGINT": 130}[signum]
        err = proc.stderr.read()
        assert "Traceback" not in err, err
    finally:
        for p in _marked(mark):
            p.kill()


def test_advise_shows_rows_outside_the_plan_without_nan(model_path, capsys):  # noqa: F811
    # found by scripts/fuzz_reliability.py: cumulative_s printed NaN for the rows not in the plan
    code, text, err = run(
        ["advise", model_path, "--target", "m=64,s=1", "--grid", "m=4,8,16", "--budget", "60"], capsys
    )
    assert code == 0, err
    assert "nan" not in text.lower() and any(line.split()[-2:] == ["False", "-"] for line in text.splitlines())


# -- the app's worker processes do not import Streamlit --------------------------------------------------
SERVER_LIKE = """
import threading
import streamlit  # the server's __main__ (the `streamlit` script) imports Streamlit

if __name__ == "__main__":
    from perfmodel import parallel

    threading.Thread(target=threading.Event().wait, args=(60,), daemon=True).start()  # a threaded host
    assert parallel.pool_context().get_start_method() == "forkserver"
    probe = "'streamlit' in __import__('sys').modules or 'ui' in __import__('sys').modules"
    print(parallel.run_tasks(eval, [probe] * 4, 2, None, None, adaptive=False))
"""


def test_pool_workers_of_a_streamlit_server_do_not_import_streamlit(tmp_path):
    import os
    import subprocess
    from pathlib import Path

    script = tmp_path / "server_like.py"
    script.write_text(SERVER_LIKE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([PY, str(script)], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[False, False, False, False]", proc.stdout  # was [True, True, True, True]
    assert "ScriptRunContext" not in proc.stderr and "No runtime found" not in proc.stderr


def test_predict_refuses_a_row_whose_interval_is_not_finite(model_path, tmp_path, capsys):  # noqa: F811
    # found by scripts/fuzz_reliability.py: cores = 1e-300 gave predicted_high inf in the CSV
    rows = tmp_path / "rows.csv"
    rows.write_text("cores,input_fraction\n8,0.1\n1e-300,2\n")
    out = tmp_path / "o.csv"
    code, _, err = run(["predict", model_path, rows, "--out", out, "--interval", "0.5"], capsys)
    one_line_error(code, err, "row 2: the 50% interval is not finite (predicted 3.232e+302 s")
    assert not out.exists()
