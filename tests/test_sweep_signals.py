"""The sweep under the signals schedulers send, jobs that leave processes behind, and hostile stderr."""

from __future__ import annotations

import csv
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from perfmodel import sweep
from perfmodel.cli import main

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals are POSIX")


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _quiet(*_args):
    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().strip()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.02)


def _signal_self_when(path: Path, signum: int) -> threading.Thread:
    """Send ``signum`` to this process once ``path`` exists (the job has started)."""

    def work():
        _wait_for(path)
        os.kill(os.getpid(), signum)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    return t


#: A job that writes its pid to DIR/pid-P, then sleeps for the seconds in DIR/sleep (TERM ignored if asked).
JOB = (
    "import os, signal, sys, time, pathlib; d = pathlib.Path(sys.argv[1]); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN) if (d / 'ignore').exists() else None; "
    "(d / ('pid-' + sys.argv[2])).write_text(str(os.getpid())); time.sleep(float((d / 'sleep').read_text()))"
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_job_records_it_interrupted_and_a_resume_redoes_it(signum, tmp_path):
    out = tmp_path / "t.csv"
    (tmp_path / "sleep").write_text("30")
    cmd = f'{PY} -c "{JOB}" {shlex.quote(str(tmp_path))} {{p}}'
    _signal_self_when(tmp_path / "pid-1", signum)
    t0 = time.monotonic()
    with pytest.raises(sweep.SweepInterrupted) as info:
        sweep.run_sweep(cmd, {"p": ["1", "2"]}, out=out, progress=_quiet)
    assert info.value.signum == signum
    assert time.monotonic() - t0 < 10
    job = int((tmp_path / "pid-1").read_text())
    assert not _alive(job)  # the job did not outlive the sweep
    assert not (tmp_path / "pid-2").exists()  # and the sweep stopped
    [row] = _rows(out)
    assert row["status"] == "interrupted" and f"stopped by {signal.Signals(signum).name}" in row["stderr_tail"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored
    (tmp_path / "sleep").write_text("0.05")
    frame = sweep.run_sweep(cmd, {"p": ["1", "2"]}, out=out, progress=_quiet)
    assert list(frame.status) == ["interrupted", "ok", "ok"] and list(frame.p) == [1, 1, 2]
    assert len(sweep.read_timings(out)) == 2


def test_a_job_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "TERM_GRACE_S", 1.0)
    (tmp_path / "sleep").write_text("30")
    (tmp_path / "ignore").write_text("1")
    cmd = f'{PY} -c "{JOB}" {shlex.quote(str(tmp_path))} {{p}}'
    _signal_self_when(tmp_path / "pid-1", signal.SIGTERM)
    t0 = time.monotonic()
    with pytest.raises(sweep.SweepInterrupted):
        sweep.run_sweep(cmd, {"p": ["1"]}, out=tmp_path / "t.csv", progress=_quiet)
    assert time.monotonic() - t0 < 8
    assert not _alive(int((tmp_path / "pid-1").read_text()))
    [row] = _rows(tmp_path / "t.csv")
    assert row["status"] == "interrupted" and "killed 1 s after SIGTERM" in row["stderr_tail"]


def test_sigterm_from_outside_stops_the_cli_sweep_and_its_job(tmp_path):
    out = tmp_path / "t.csv"
    (tmp_path / "sleep").write_text("30")
    cmd = f'{PY} -c "{JOB}" {shlex.quote(str(tmp_path))} {{p}}'
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "perfmodel", "sweep", "--command", cmd, "--grid", "p=1,2", "--out", str(out)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(tmp_path / "pid-1")
        proc.send_signal(signal.SIGTERM)  # the sweep only, as `timeout` or `kill` would
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "stopped by SIGTERM" in err
    assert not _alive(int((tmp_path / "pid-1").read_text()))
    assert [r["status"] for r in _rows(out)] == ["interrupted"]


#: Starts a grandchild in its own session (it leaves the job's process group) that inherits stderr.
ESCAPE = (
    "import subprocess, sys, time, pathlib; "
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(20)'], start_new_session=True); "
    "pathlib.Path(sys.argv[1]).write_text(str(c.pid)); time.sleep(float(sys.argv[2]))"
)


@pytest.fixture
def escaped(tmp_path):
    pidfile = tmp_path / "grandchild"
    yield pidfile
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_timeout_holds_when_a_grandchild_keeps_stderr_open(tmp_path, escaped):
    cmd = f'{PY} -c "{ESCAPE}" {shlex.quote(str(escaped))} {{s}}'
    t0 = time.monotonic()
    frame = sweep.run_sweep(cmd, {"s": ["30"]}, out=tmp_path / "t.csv", timeout=1.0, progress=_quiet)
    assert time.monotonic() - t0 < 6
    assert frame.status.tolist() == ["timeout"] and frame.time_s.iloc[0] < 4


def test_a_job_that_exits_leaving_a_process_holding_stderr_is_not_ok(tmp_path, escaped):
    cmd = f'{PY} -c "{ESCAPE}" {shlex.quote(str(escaped))} {{s}}'
    t0 = time.monotonic()
    frame = sweep.run_sweep(cmd, {"s": ["0"]}, out=tmp_path / "t.csv", progress=_quiet)
    assert time.monotonic() - t0 < 6
    row = frame.iloc[0]
    assert row.status == "failed" and row.exit_code == 0 and row.time_s < 3
    assert "left process(es) running" in row.stderr_tail


def test_a_helper_that_exits_on_its_own_just_after_the_job_is_not_left_behind(tmp_path):
    # as multiprocessing's resource tracker does after a job that used shared memory (examples/dp_sgd.py)
    cmd = "sh -c 'sleep 1 >/dev/null 2>&1 & exit 0' {p}"
    frame = sweep.run_sweep(cmd, {"p": ["1"]}, out=tmp_path / "t.csv", progress=_quiet)
    assert frame.status.tolist() == ["ok"], frame.stderr_tail.tolist()
    assert sweep.LINGER_GRACE_S >= 1


def test_a_job_that_leaves_a_child_in_its_group_is_not_ok_and_the_child_is_killed(tmp_path):
    pidfile = tmp_path / "child"
    cmd = f"sh -c 'sleep 30 >/dev/null 2>&1 & echo $! > {shlex.quote(str(pidfile))}' {{p}}"
    frame = sweep.run_sweep(cmd, {"p": ["1"]}, out=tmp_path / "t.csv", progress=_quiet)
    assert frame.status.tolist() == ["failed"] and frame.time_s.iloc[0] < 3
    time.sleep(0.2)
    assert not _alive(int(pidfile.read_text()))


def test_stderr_is_kept_as_a_bounded_tail(tmp_path):
    """200 MB of stderr: the sweep's peak memory grows by far less than that."""
    job = "import sys; b = b'x' * (1 << 20); w = sys.stderr.buffer.write; [w(b) for _ in range(200)]; w(b'the end')"
    script = (
        "import resource, sys; from perfmodel import sweep; "
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
        f"f = sweep.run_sweep({f'{PY} -c {shlex.quote(job)} {{p}}'!r}, {{'p': ['1']}}, "
        f"out={str(tmp_path / 't.csv')!r}, progress=lambda *a: None); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, f.stderr_tail.iloc[0].endswith('the end'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    growth_kb, tail = proc.stdout.split()
    assert int(growth_kb) < 50 * 1024 and tail == "True"


def test_control_characters_in_stderr_are_escaped_and_the_csv_fits(tmp_path, capsys):
    out = tmp_path / "t.csv"
    job = "import sys; sys.stderr.write('a' + chr(0) + 'b' + chr(27) + '[31m' + chr(0x2028) + 'c')"
    cmd = f"{PY} -c {shlex.quote(job)} {{p}}"
    sweep.run_sweep(cmd, {"p": ["1", "2", "3"]}, out=out, progress=_quiet)
    assert "\x00" not in out.read_text()
    assert _rows(out)[0]["stderr_tail"] == "a\\x00b\\x1b[31m\\u2028c"
    code = main(
        ["fit", str(out), "--time", "time_s", "--factor", "p=p", "--terms", "1", "--out", str(tmp_path / "m.json")]
    )
    assert code == 0, capsys.readouterr().err


def test_grid_values_with_control_characters_are_refused(tmp_path):
    with pytest.raises(sweep.PerfModelError, match="control character"):
        sweep.run_sweep("prog {p}", {"p": ["1\x00"]}, out=tmp_path / "t.csv")
