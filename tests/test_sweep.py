"""The sweep tool: grid runs, failures, timeouts, resume after a kill, no shell, clear errors."""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from perfmodel import sweep
from perfmodel.cli import sweep as sweep_cli
from perfmodel.data import Measurements
from perfmodel.errors import PerfModelError

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _quiet(*_args):
    pass


def test_grid_runs_every_configuration_and_times_the_process(tmp_path):
    out = tmp_path / "t.csv"
    cmd = f'{PY} -c "import time; time.sleep(0.05*{{p}})" {{tag}}'
    seen = []
    frame = sweep.run_sweep(
        cmd,
        {"p": ["1", "3"], "tag": ["a", "b"]},
        repeat=2,
        out=out,
        progress=lambda done, total, rec, eta: seen.append((done, total, rec, eta)),
    )
    assert list(frame.columns) == ["p", "tag", *sweep.FIXED_COLUMNS]
    assert len(frame) == 8 and set(frame.status) == {"ok"}
    keys = set(zip(frame.p, frame.tag, frame.repetition, strict=True))
    assert keys == {(p, t, r) for p in (1, 3) for t in ("a", "b") for r in (1, 2)}
    # the wall clock of the whole process includes the sleep
    assert (frame[frame.p == 3].time_s >= 0.15).all()
    assert (frame[frame.p == 1].time_s >= 0.05).all()
    # repetition-major order: every configuration once before any second repetition
    assert list(frame.repetition) == [1, 1, 1, 1, 2, 2, 2, 2]
    # progress: one call per run, the last with nothing left
    assert [s[0] for s in seen] == list(range(1, 9)) and all(s[1] == 8 for s in seen)
    assert seen[-1][3] == 0 and seen[0][3] > 0
    assert frame.command.iloc[0] == shlex.join([sys.executable, "-c", "import time; time.sleep(0.05*1)", "a"])


def test_failed_run_and_timeout_are_recorded_and_kept_out_of_fits(tmp_path):
    out = tmp_path / "t.csv"
    code = (
        "import sys, time; s = float(sys.argv[1]); time.sleep(s); "
        "sys.stderr.write('boom ' + sys.argv[2] + chr(10) + 'last line'); sys.exit(int(sys.argv[2]))"
    )
    cmd = f'{PY} -c "{code}" {{s}} {{c}}'
    t0 = time.perf_counter()
    frame = sweep.run_sweep(cmd, {"s": ["0", "30"], "c": ["0", "3"]}, out=out, timeout=1.0, progress=_quiet)
    assert time.perf_counter() - t0 < 20  # the 30 s runs were killed
    status = {(r.s, r.c): r for r in frame.itertuples()}
    assert status[(0, 0)].status == "ok" and status[(0, 0)].exit_code == 0
    failed = status[(0, 3)]
    assert failed.status == "failed" and failed.exit_code == 3
    assert failed.stderr_tail == "boom 3 | last line"
    for c in (0, 3):
        timed_out = status[(30, c)]
        assert timed_out.status == "timeout" and pd.isna(timed_out.exit_code)
        assert 1.0 <= timed_out.time_s < 10
        assert "killed after 1 s" in timed_out.stderr_tail
    # kept in the file, left out of fits
    assert len(sweep.read_timings(out, include_failed=True)) == 4
    ok = sweep.read_timings(out)
    assert len(ok) == 1 and set(ok.status) == {"ok"}
    meas = Measurements.from_frame(
        sweep.read_timings(out, include_failed=True), time="time_s", factors={"s": "s", "c": "c"}
    )
    assert meas.n_rows == 1 and len(meas.dropped) == 3


def test_program_that_cannot_start_is_a_clear_error(tmp_path):
    with pytest.raises(PerfModelError, match="program 'no-such-program-xyz' not found"):
        sweep.run_sweep("no-such-program-xyz {p}", {"p": ["1"]}, out=tmp_path / "t.csv", progress=_quiet)


def test_placeholders_are_substituted_per_argument_without_a_shell(tmp_path):
    argv = sweep.build_command("prog --x {x} '{y} z' {{lit}}", {"x": "a b; touch HACKED", "y": "1"})
    assert argv == ["prog", "--x", "a b; touch HACKED", "1 z", "{lit}"]
    # the value reaches the program as one argument and no shell interprets it
    marker = tmp_path / "HACKED"
    out = tmp_path / "t.csv"
    cmd = f'{PY} -c "import sys; assert len(sys.argv) == 2, sys.argv" {{v}}'
    frame = sweep.run_sweep(
        cmd,
        {"v": [f"x; touch {marker}", "$(touch {marker})".replace("{marker}", str(marker))]},
        out=out,
        progress=_quiet,
    )
    assert set(frame.status) == {"ok"}
    assert not marker.exists()


def test_shell_mode_runs_through_the_shell(tmp_path):
    target = tmp_path / "made_by_shell"
    frame = sweep.run_sweep(
        f"true {{v}} && touch {shlex.quote(str(target))}",
        {"v": ["1"]},
        out=tmp_path / "t.csv",
        shell=True,
        progress=_quiet,
    )
    assert frame.status.tolist() == ["ok"] and target.exists()


def test_warmup_runs_once_and_is_not_recorded(tmp_path):
    counter = tmp_path / "count"
    cmd = f"{PY} -c \"open({str(counter)!r}, 'a').write('x')\" {{p}}"
    frame = sweep.run_sweep(cmd, {"p": ["1", "2"]}, repeat=2, warmup=True, out=tmp_path / "t.csv", progress=_quiet)
    assert len(frame) == 4
    assert counter.read_text() == "x" * 5


def test_resume_skips_done_runs_and_refuses_a_different_sweep(tmp_path):
    out = tmp_path / "t.csv"
    cmd = f"{PY} -c pass {{p}}"
    sweep.run_sweep(cmd, {"p": ["1", "2"]}, repeat=1, out=out, progress=_quiet)
    first = _rows(out)
    frame = sweep.run_sweep(cmd, {"p": ["1", "2", "3"]}, repeat=2, out=out, progress=_quiet)
    assert len(frame) == 6
    assert _rows(out)[:2] == first  # append-only: earlier rows untouched
    assert len(set(zip(frame.p, frame.repetition, strict=True))) == 6
    # nothing left to do: no new rows
    again = sweep.run_sweep(cmd, {"p": ["1", "2", "3"]}, repeat=2, out=out, progress=_quiet)
    assert len(again) == 6
    with pytest.raises(PerfModelError, match="existing file has columns"):
        sweep.run_sweep(f"{PY} -c pass {{q}}", {"q": ["1"]}, out=out, progress=_quiet)
    with pytest.raises(PerfModelError, match="measured with command"):
        sweep.run_sweep(f"{PY} -c 'pass' -- {{p}}", {"p": ["1"]}, out=out, progress=_quiet)
    assert len(_rows(out)) == 6


def test_incomplete_last_line_is_repaired_on_resume(tmp_path):
    out = tmp_path / "t.csv"
    cmd = f"{PY} -c pass {{p}}"
    sweep.run_sweep(cmd, {"p": ["1", "2"]}, out=out, progress=_quiet)
    with open(out, "a", encoding="utf-8") as fh:
        fh.write("3,1,0.0")  # a crash in the middle of writing a row
    frame = sweep.run_sweep(cmd, {"p": ["1", "2", "3"]}, out=out, progress=_quiet)
    assert sorted(frame.p) == [1, 2, 3] and set(frame.status) == {"ok"}


def test_resume_after_kill_midway(tmp_path):
    out = tmp_path / "killed.csv"
    cmd = f'{PY} -c "import time; time.sleep(0.2)" {{p}}'
    script = (
        "import sys; from perfmodel import sweep; "
        f"sweep.run_sweep({cmd!r}, {{'p': [str(i) for i in range(1, 7)]}}, repeat=2, out={str(out)!r})"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, env=env, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            if out.exists() and len(_rows(out)) >= 3:
                break
            if proc.poll() is not None:
                pytest.fail("sweep finished before it could be killed")
            time.sleep(0.05)
        else:
            pytest.fail("sweep did not write 3 rows within 60 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and the run in progress, like a crash
        proc.wait()
    before = _rows(out)
    assert 3 <= len(before) < 12
    frame = sweep.run_sweep(cmd, {"p": [str(i) for i in range(1, 7)]}, repeat=2, out=out, progress=_quiet)
    keys = list(zip(frame.p, frame.repetition, strict=True))
    assert len(keys) == len(set(keys)) == 12  # every (configuration, repetition) once
    assert set(keys) == {(p, r) for p in range(1, 7) for r in (1, 2)}
    assert _rows(out)[: len(before)] == before
    assert set(frame.status) == {"ok"}


@pytest.mark.parametrize(
    "command, grid, kwargs, message",
    [
        ("prog {p}", {}, {}, "no --grid"),
        ("prog {p} {q}", {"p": ["1"]}, {}, "placeholder '{q}' has no --grid q"),
        ("prog {p}", {"p": ["1"], "b": ["2"]}, {}, "no placeholder '{b}'"),
        ("prog {p}", {"p": ["1", "1"]}, {}, "listed twice"),
        ("prog {p}", {"p": [""]}, {}, "empty value"),
        ("prog {status}", {"status": ["1"]}, {}, "clashes"),
        ("prog {1p}", {"1p": ["1"]}, {}, "not an identifier"),
        ("prog {p}", {"p": ["1"]}, {"repeat": 0}, "--repeat"),
        ("prog {p}", {"p": ["1"]}, {"timeout": -1}, "--timeout"),
        ("  ", {"p": ["1"]}, {}, "--command is empty"),
        ("prog 'unclosed {p}", {"p": ["1"]}, {}, "cannot split"),
    ],
)
def test_bad_input_is_a_perfmodel_error(tmp_path, command, grid, kwargs, message):
    with pytest.raises(PerfModelError) as info:
        sweep.run_sweep(command, grid, out=tmp_path / "t.csv", progress=_quiet, **kwargs)
    assert message in str(info.value)


def test_parse_grid_option():
    assert sweep.parse_grid_option("p=1, 2,4") == ("p", ["1", "2", "4"])
    for bad in ("p", "p=", "p=1,,2"):
        with pytest.raises(PerfModelError):
            sweep.parse_grid_option(bad)


def _cli(argv):
    parser = argparse.ArgumentParser(prog="perfmodel")
    sweep_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.command == "sweep"  # the template does not clobber the sub-command name
    return sweep_cli.run_cli(args)


def test_run_cli_ok_and_bad_input(tmp_path, capsys):
    out = tmp_path / "cli.csv"
    assert (
        _cli(["sweep", "--command", f"{PY} -c pass {{p}}", "--grid", "p=1,2", "--repeat", "2", "--out", str(out)]) == 0
    )
    err = capsys.readouterr().err
    assert "4 ok" in err and "left" in err
    assert len(_rows(out)) == 4
    for argv, message in [
        (["--grid", "p=1"], "has no --grid"),
        (["--grid", "x=1", "--grid", "x=2"], "given twice"),
        (["--grid", "x"], "expected NAME=v1,v2"),
    ]:
        code = _cli(["sweep", "--command", f"{PY} -c pass {{x}}", "--out", str(tmp_path / "bad.csv"), *argv])
        err = capsys.readouterr().err
        assert code == 2
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
        assert "Traceback" not in err


def test_module_entry_point_end_to_end(tmp_path):
    out = tmp_path / "e2e.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfmodel",
            "sweep",
            "--command",
            f"{PY} -c pass {{p}}",
            "--grid",
            "p=1,2",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert len(_rows(out)) == 2
    bad = subprocess.run(
        [sys.executable, "-m", "perfmodel", "sweep", "--command", "prog {q}", "--grid", "p=1", "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0


# ------------------------------------------------------------------------------ the example job
def _dp_sgd(*args: str) -> dict[str, str]:
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dp_sgd.py"), *args], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return dict(item.split("=", 1) for item in res.stdout.split())


def test_example_job_is_synchronous_data_parallel_sgd():
    small = ["--samples", "3000", "--features", "16", "--hidden", "8", "--epochs", "2"]
    two = _dp_sgd("--workers", "2", "--batch-size", "16", *small)
    one = _dp_sgd("--workers", "1", "--batch-size", "32", *small)
    # iterations per epoch = ceil(N / (p*b)) = ceil(3000 / 32) = 94, times 2 epochs
    assert two["iterations"] == one["iterations"] == "188"
    # averaging the 2 workers' gradients every iteration is the same SGD as 1 worker on the global batch
    assert float(two["final_loss"]) == pytest.approx(float(one["final_loss"]), abs=2e-6)
    assert float(one["final_loss"]) < 0.6931  # below the loss of a constant 50/50 guess: it learned
    three = _dp_sgd("--workers", "3", "--batch-size", "16", *small)
    assert three["iterations"] == str(2 * -(-3000 // 48))
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dp_sgd.py"), "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "--workers must be >= 1" in res.stderr
