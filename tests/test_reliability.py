"""Reliability, second pass (issue 20): the stored intervals, advise, groups, Dask, plans and the
interval step handle bad input, extreme sizes and hostile text with one line naming the problem."""

import json

import numpy as np
import pandas as pd
import pytest

from perfmodel import FitResult, PerfModelError
from tests.cli_run import RCV1, fit_rcv1, one_line_error, run


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return fit_rcv1(tmp_path_factory.mktemp("model") / "m.json", "--replicates", "40")


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
    code, text, err = run(
        ["advise", model_path, "--target", "m=64,s=1", "--grid", "m=4,8", "--interval", level], capsys
    )
    assert code == 0 and "nan" not in text.lower(), text + err


def test_library_level_range():
    from perfmodel.fitting.stored_checks import check_level

    assert check_level(0.9) == 0.9
    for bad in (float("nan"), 1e-300, 1.0, -1, "x", None):
        with pytest.raises(PerfModelError, match="from 0.01 to 0.999"):
            check_level(bad)


# -- 2. configurations where the model does not hold -------------------------------------------------
@pytest.mark.parametrize(
    "row, fragment",
    [
        ("0,1", "row 2: term 's/m' is undefined"),
        ("-4,1", "row 2: term 'log(m)' is undefined"),
        ("8,-8000", "row 2: the predicted time is"),
        ("1e999,1", "row 2, column 'cores'"),
    ],
)
@pytest.mark.parametrize("interval", [[], ["--interval", "0.9"]])
def test_predict_refuses_rows_where_a_term_is_undefined(model_path, tmp_path, capsys, row, fragment, interval):
    csv = tmp_path / "x.csv"
    csv.write_text(f"cores,input_fraction\n8,1\n{row}\n")
    code, _, err = run(["predict", model_path, csv, "--out", tmp_path / "o.csv", *interval], capsys)
    one_line_error(code, err, fragment)
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize(
    "grid, fragment",
    [
        ("m=0,4", "configuration m=0, s=1: term 's/m' is undefined"),
        ("m=-1,4", "configuration m=-1, s=1: term 'log(m)' is undefined"),
        ("m=1e999,4", "--grid m: '1e999' is not a finite number"),
        ("s=-8000,1", "the predicted time is"),
    ],
)
def test_advise_refuses_grid_configurations_where_the_model_does_not_hold(model_path, capsys, grid, fragment):
    code, _, err = run(["advise", model_path, "--target", "m=64,s=1", "--grid", grid], capsys)
    one_line_error(code, err, fragment)


@pytest.mark.parametrize(
    "target, fragment",
    [("m=0,s=1", "the target: term 's/m'"), ("m=1e999,s=1", "--target: '1e999' (m) is not a finite number")],
)
def test_advise_refuses_a_target_where_the_model_does_not_hold(model_path, capsys, target, fragment):
    code, _, err = run(["advise", model_path, "--target", target, "--grid", "m=4,8"], capsys)
    one_line_error(code, err, fragment)


# -- 3. the stored uncertainty block -----------------------------------------------------------------
def _set(d, path, value):
    *head, last = path
    for k in head:
        d = d[k]
    d[last] = value(d[last]) if callable(value) else value


def _members(n):
    return lambda ms: [json.loads(json.dumps(ms[0])) for _ in range(n)]


HOSTILE_UNCERTAINTY = [
    (("members", 0, "coefficients"), [], "a member has 0 replicates"),
    (("members", 0, "params"), lambda v: v, None),  # unchanged: loads
    (("noise",), lambda nz: {**nz, "sigma": 0.0, "source": "prior"}, "noise.sigma"),
    (("noise",), lambda nz: {**nz, "sigma": 0.0, "source": "residuals"}, None),  # an exact fit: loads
    (("noise", "sigma"), -0.1, "noise.sigma"),
    (("noise", "sigma"), float("nan"), "noise.sigma"),
    (("noise", "sigma"), 1e308, "noise.sigma"),
    (("noise", "df"), 0, "noise.df"),
    (("noise", "df"), -3, "noise.df"),
    (("share_replicates",), [[0.5, 0.5], [0.5]], "share_replicates row 1"),
    (("share_replicates",), [["a", "b", "c", "d"]], "share_replicates row 1"),
    (("share_replicates",), [[0.1] * 4] * 10_001, "share_replicates must be a list of at most 10,000"),
    (("members", 0, "weight"), float("nan"), "weight is nan"),
    (("members", 0, "expression"), "1 + s*m + log(s) + m", "is not the model's expression"),
    (("calibration", "points"), [[float("nan"), 0.1, 0.1, 1.0]], "calibration.points"),
    (("calibration", "points"), [[float("inf"), 0.1, 0.1, 1.0]], "calibration.points"),
    (("calibration", "points"), [[0.1, 0.1, 0.1, 0.0]], "calibration.points"),
    (("members",), _members(51), "at most 50"),
    (("members", 0, "coefficients"), lambda c: c * 300, "from 1 to 10,000"),
    (("members", 0, "point", "coefficients", 0), 10**400, "malformed"),
    (("replicates",), 2_000_000, "replicates is 2000000"),
    (("factor_ranges", "m"), [8, 1], "factor_ranges['m']"),
    # found by scripts/fuzz_reliability.py: a number as the note was shown as 'inf' by show
    (("members_note",), 10**400, "members_note must be a text"),
    (("method",), ["x"], "method must be a text"),
    (("noise", "source"), "x" * 5000, "source must be a text of at most 2000 characters"),
]


@pytest.mark.parametrize("path, value, fragment", HOSTILE_UNCERTAINTY)
def test_stored_uncertainty_is_validated_at_load(model_dict, path, value, fragment):
    d = json.loads(json.dumps(model_dict))
    if path[0] == "members" and len(path) > 1 and path[-1] in ("coefficients", "params") and value == []:
        d["uncertainty"]["members"][0]["params"] = []
    _set(d["uncertainty"], path, value)
    if fragment is None:
        FitResult.from_dict(d)
        return
    with pytest.raises(PerfModelError, match=None) as info:
        FitResult.from_dict(d)
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_hostile_uncertainty_block_is_one_line_on_the_cli(model_dict, tmp_path, capsys):
    d = json.loads(json.dumps(model_dict))
    d["uncertainty"]["noise"]["sigma"] = 1e308
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    code, _, err = run(["advise", path, "--target", "m=64,s=1", "--grid", "m=4,8"], capsys)
    one_line_error(code, err, "noise.sigma is 1e+308")


def _limited_run(args, limit_bytes, timeout=240, cwd=None):
    """``python -m perfmodel ARGS`` in a subprocess whose address space is capped at ``limit_bytes``."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    return subprocess.run(
        [sys.executable, "-m", "perfmodel", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=cap,
        env=env,
        cwd=cwd,
    )


def test_advise_with_many_members_does_not_need_s_by_s_memory(model_dict, tmp_path):
    d = json.loads(json.dumps(model_dict))
    unc = d["uncertainty"]
    first = unc["members"][0]
    first["coefficients"] = (first["coefficients"] * 50)[:2000]
    first["params"] = (first["params"] * 50)[:2000]
    first["weight"] = 0.1
    unc["members"] = [json.loads(json.dumps(first)) for _ in range(10)]  # 20,000 replicates: S×S = 3.2 GB
    path = tmp_path / "big.json"
    path.write_text(json.dumps(d))
    proc = _limited_run(["advise", path, "--target", "m=64,s=1", "--grid", "m=4,8,16,32"], 1_500_000_000)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "nan" not in proc.stdout.lower()


# -- 4. --dask, --workers, --replicates ------------------------------------------------------------
FIT = ["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--factor", "s=input_fraction", "--terms", "1 + s/m"]


@pytest.mark.parametrize(
    "address, fragment",
    [
        ("", "is not a scheduler address"),
        ("bogus", "is not a scheduler address"),
        (" ", "is not a scheduler address"),
        ("tcp://[::1", "is not a scheduler address"),
        ("http://localhost:8787", "http:// is not a scheduler protocol"),
        ("inproc://x", "inproc://"),
        ("ucx://x", "ucx://"),
        ("tls://x:8786", "tls:// needs certificates"),
        ("tcp://h:0", "not a scheduler address"),
    ],
)
def test_unusable_dask_addresses_are_refused_before_connecting(tmp_path, capsys, address, fragment):
    code, _, err = run([*FIT, "--group-by", "machines", "--dask", address, "--out", tmp_path / "g"], capsys)
    one_line_error(code, err, fragment)
    assert not (tmp_path / "g").exists()


class _FakePeer:
    """A TCP server on 127.0.0.1 that answers every connection with ``reply`` (bytes or None: silent,
    as an HTTP server waiting for a request); at most 20 connections, then it stops."""

    def __init__(self, reply):
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(30)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        held = []
        try:
            for _ in range(20):
                conn, _ = self.sock.accept()
                held.append(conn)
                if self.reply:
                    conn.sendall(self.reply)
        except OSError:
            pass
        finally:
            for c in held:
                c.close()

    def close(self):
        self.sock.close()


@pytest.mark.parametrize(
    "reply",
    [None, np.random.default_rng(7).bytes(4096), b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + b" " * 64],
    ids=["silent", "random-bytes", "http-reply"],
)
def test_a_peer_that_is_not_a_dask_scheduler_fails_within_seconds(tmp_path, capsys, reply):
    import time

    peer = _FakePeer(reply)
    try:
        t0 = time.monotonic()
        code, _, err = run(
            [*FIT, "--group-by", "machines", "--dask", f"tcp://127.0.0.1:{peer.port}", "--out", tmp_path / "g"], capsys
        )
        elapsed = time.monotonic() - t0
    finally:
        peer.close()
    one_line_error(code, err, f"--dask 127.0.0.1:{peer.port}")
    assert elapsed < 15, elapsed


def test_nothing_listening_is_one_line(tmp_path, capsys):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    code, _, err = run(
        [*FIT, "--group-by", "machines", "--dask", f"tcp://127.0.0.1:{port}", "--out", tmp_path / "g"], capsys
    )
    one_line_error(code, err, "cannot reach the Dask scheduler")


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--workers", "2"], "--workers needs --group-by"),
        (["--dask", "local"], "--dask needs --group-by"),
        (["--dask", ""], "--dask needs --group-by"),
        (["--min-configurations", "3"], "--min-configurations needs --group-by"),
    ],
)
def test_group_flags_without_group_by_are_refused(tmp_path, capsys, flags, fragment):
    code, _, err = run([*FIT, *flags, "--out", tmp_path / "m.json"], capsys)
    one_line_error(code, err, fragment)


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--workers", "100000"], "--workers must be from 1 to"),
        (["--workers", "0"], "--workers must be from 1 to"),
        (["--workers", "-3"], "--workers must be from 1 to"),
    ],
)
def test_workers_are_capped(tmp_path, capsys, flags, fragment):
    code, _, err = run([*FIT, "--group-by", "machines", *flags, "--out", tmp_path / "g"], capsys)
    one_line_error(code, err, fragment)


def test_replicates_are_capped(tmp_path, capsys):
    code, _, err = run([*FIT, "--replicates", "10000001", "--out", tmp_path / "m.json"], capsys)
    one_line_error(code, err, "--replicates 10000001 is above the limit 10000")


# -- 5. the interval step scales with the rows -----------------------------------------------------
def test_intervals_for_20000_distinct_configurations_fit_in_bounded_memory(tmp_path):
    rng = np.random.default_rng(0)
    n = 20_000
    p = rng.integers(1, 512, n).astype(float)
    N = rng.uniform(1e3, 1e4, n)
    t = (2 + 3e-3 * N / p + 0.1 * np.log2(p)) * np.exp(rng.normal(0, 0.05, n))
    csv = tmp_path / "big.csv"
    pd.DataFrame({"p": p, "N": N, "time": t}).to_csv(csv, index=False)
    # before: a rows × configurations one-hot matrix (3.2 GB here, 74.5 GiB at 100,000 points), built
    # once whatever the replicates: 20 of them (not the default 200) test it in 16 s instead of 26 s
    proc = _limited_run(
        [
            "fit",
            csv,
            "--time",
            "time",
            "--factor",
            "p=p",
            "--factor",
            "N=N",
            "--terms",
            "1 + N/p + log2(p)",
            "--replicates",
            "20",
            "--out",
            tmp_path / "m.json",
        ],
        2_500_000_000,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert FitResult.load(tmp_path / "m.json").has_intervals
