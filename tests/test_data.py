import numpy as np
import pandas as pd
import pytest

from perfmodel import Measurements, PerfModelError
from perfmodel.data import guess_roles, read_csv, read_extrap, read_table

CSV = b"workers;batch;time_s\n1;32;10.5\n2;32;abc\n4;32;\n8;32;-1\n16;32;inf\n2;64;6.1\n"


def test_semicolon_sniffed_and_bad_rows_reported_not_silent():
    frame = read_csv(CSV)
    assert list(frame.columns) == ["workers", "batch", "time_s"]
    m = Measurements.from_frame(frame, "time_s", {"p": "workers", "b": "batch"})
    assert m.n_rows == 2
    reasons = {d.row: (d.column, d.reason) for d in m.dropped}
    assert reasons[2] == ("time_s", "non-numeric value 'abc'")
    assert reasons[3] == ("time_s", "missing value")
    assert reasons[4][1].startswith("time must be > 0")
    assert reasons[5][1].startswith("infinite value")
    assert m.rows.tolist() == [1, 6]


def test_a_decimal_comma_is_read_in_a_semicolon_file():
    """A spreadsheet's export where ',' is the decimal mark: the numbers are numbers, and a bad one is
    still reported as written."""
    frame = read_csv(b"gpus;time (s)\n1;100,5\n2;52\n4;27,25\n8;1,5e1\n16;fast\n")
    m = Measurements.from_frame(frame, "time (s)", {"p": "gpus"})
    assert m.y.tolist() == [100.5, 52.0, 27.25, 15.0]
    assert [(d.row, d.reason) for d in m.dropped] == [(5, "non-numeric value 'fast'")]
    assert read_csv(b"a,b\n1,2\n").to_numpy().tolist() == [[1, 2]]  # in a comma file, a comma delimits


def test_unknown_columns_are_named():
    frame = read_csv(b"gpus,time\n1,2\n")
    with pytest.raises(PerfModelError, match="'tme' not found.*did you mean 'time'"):
        Measurements.from_frame(frame, "tme", {})
    with pytest.raises(PerfModelError, match="column 'gpu' for symbol 'p'"):
        Measurements.from_frame(frame, "time", {"p": "gpu"})


def test_all_rows_bad_is_an_error():
    with pytest.raises(PerfModelError, match="no usable rows"):
        Measurements.from_frame(read_csv(b"p,t\n1,x\n2,y\n"), "t", {"p": "p"})


def test_status_column_from_sweeps_filters_failed_runs():
    frame = read_csv(b"p,time_s,status\n1,2.0,ok\n2,1.5,failed\n4,1.0,timeout\n")
    m = Measurements.from_frame(frame, "time_s", {"p": "p"})
    assert m.n_rows == 1
    assert [d.row for d in m.dropped] == [2, 3]


def test_extrap_reader_repetitions_and_errors(data_dir):
    f = read_extrap(data_dir / "extrap" / "text_one_parameter_1.txt")
    assert len(f) == 30 and f["x"].tolist()[:6] == [20.0] * 6
    assert f["time"].iloc[0] == pytest.approx(82.00848518948744)
    with pytest.raises(PerfModelError, match="line 3: value 'abc'"):
        read_extrap(b"PARAMETER p\nPOINTS ( 1 ) ( 2 )\nDATA 1 abc\n")
    with pytest.raises(PerfModelError, match="2 DATA lines for 1 POINTS|more DATA lines"):
        read_extrap(b"PARAMETER p\nPOINTS ( 1 )\nDATA 1\nDATA 2\n")


def test_read_table_guesses_format(data_dir):
    f = read_table((data_dir / "extrap" / "text_two_parameter_5.txt").read_bytes())
    assert {"p", "s", "time"} <= set(f.columns)
    g = read_table(b"a,b\n1,2\n")
    assert list(g.columns) == ["a", "b"]


def test_guess_roles():
    roles = guess_roles(["gpus", "batch_per_gpu", "samples", "time_s", "epochs"])
    assert roles == {"time": "time_s", "p": "gpus", "N": "samples", "b": "batch_per_gpu", "E": "epochs"}


def test_an_empty_or_mostly_empty_column_is_not_guessed():
    from perfmodel.data.measurements import sparse_columns

    frame = pd.DataFrame({"gpus": [1, 2], "global_batch": [None, None], "batch": ["", " "], "time_s": [3.0, None]})
    assert sparse_columns(frame) == ["global_batch", "batch"]  # a time missing on one row of two is not
    assert guess_roles(frame.columns, skip=sparse_columns(frame)) == {"time": "time_s", "p": "gpus"}
    # a nodes column only a few series fill in (the LLM scaling tables): guessed, it would drop 3 rows of 4
    frame = pd.DataFrame({"gpus": [8, 16, 32, 64], "nodes": [1, None, "", None], "time_s": [4.0, 2.1, 1.1, 0.6]})
    assert sparse_columns(frame) == ["nodes"]
    assert guess_roles(frame.columns, skip=sparse_columns(frame)) == {"time": "time_s", "p": "gpus"}


def test_guess_roles_counts_gpus_and_tells_global_from_per_worker_batch():
    roles = guess_roles(["GPU count", "global batch", "epoch time (s)"])
    assert roles == {"time": "epoch time (s)", "p": "GPU count", "B": "global batch"}
    assert guess_roles(["nodes", "batch_per_gpu", "t"]) == {"p": "nodes", "b": "batch_per_gpu"}
    assert guess_roles(["batch_size", "seconds"]) == {"time": "seconds", "b": "batch_size"}  # not the data size N
    assert guess_roles(["workers", "global_batch", "batch_per_worker", "samples", "time_s"]) == {
        "time": "time_s",
        "p": "workers",
        "N": "samples",
        "B": "global_batch",
        "b": "batch_per_worker",
    }


def test_other_frameworks_names_for_the_workers_and_the_time_are_guessed():
    """PyTorch's world_size, AdaptDL's num_replicas, SLURM's ntasks; a latency is a time (DeepBench)."""
    assert guess_roles(["world_size", "step_time_ms"]) == {"time": "step_time_ms", "p": "world_size"}
    assert guess_roles(["num_replicas", "batch_size", "iter_time"]) == {
        "time": "iter_time",
        "p": "num_replicas",
        "b": "batch_size",
    }
    assert guess_roles(["ntasks", "latency_us"]) == {"time": "latency_us", "p": "ntasks"}


def test_a_column_named_after_a_symbol_is_that_symbol():
    assert guess_roles(["p", "N", "b", "time"]) == {"time": "time", "p": "p", "N": "N", "b": "b"}
    assert guess_roles(["B", "E", "time_s"]) == {"time": "time_s", "B": "B", "E": "E"}


def test_a_rate_is_told_from_a_time_by_its_name():
    from perfmodel.data.throughput import looks_like_throughput, looks_per_worker

    rates = [
        "throughput",
        "Throughput (img/s)",
        "images/s",
        "tokens_per_sec",
        "samples per second",
        "img_per_s",
        "tokens/sec/gpu",
        "ips",
    ]
    others = ["time_s", "seconds", "step_time", "p", "gpus", "batch_size", "samples", "speedup", "epochs"]
    assert all(map(looks_like_throughput, rates)) and not any(map(looks_like_throughput, others))
    assert looks_per_worker("tokens/sec/gpu") and looks_per_worker("img_per_gpu_per_s")
    assert not looks_per_worker("images/s") and not looks_per_worker("gpus")


def test_summary_noise_and_configurations():
    frame = pd.DataFrame({"p": [1, 1, 2, 2], "t": [10.0, 12.0, 6.0, 6.0]})
    m = Measurements.from_frame(frame, "t", {"p": "p"})
    s = m.summary()
    assert s["configurations"] == 2 and s["repeats_min"] == 2
    assert s["noise_cv_max_pct"] == pytest.approx(np.std([10, 12], ddof=1) / 11 * 100)


def test_guess_roles_never_takes_a_time_column_as_a_factor():
    roles = guess_roles(["gpus", "batch_per_gpu", "samples", "step_time_s", "epoch_time_s"])
    assert roles["time"] in ("step_time_s", "epoch_time_s") and "E" not in roles


def test_a_time_column_states_its_unit_and_is_read_in_seconds():
    from perfmodel.data.time_units import time_in_seconds, unit_from_name
    from perfmodel.errors import PerfModelError

    names = {
        "step_time_ms": "ms",
        "epoch time (min)": "min",
        "time_s": "s",
        "Time (ms)": "ms",
        "ms/step": "ms",
        "latency_us": "us",
        "wall_hours": "h",
        "elapsed_sec": "s",
        "duration": None,
        "runtime": None,
        "minibatch": None,
        "samples": None,
    }
    assert {n: unit_from_name(n) for n in names} == names
    frame = pd.DataFrame({"gpus": [1, 2, 4], "step_time_ms": [62000, "slow", None]})
    out, name = time_in_seconds(frame, "step_time_ms", "ms")
    assert name == "step_time_ms in s" and out[name][0] == 62.0 and out[name][1] == "slow" and pd.isna(out[name][2])
    assert time_in_seconds(frame, "step_time_ms", "s") == (frame, "step_time_ms")
    assert time_in_seconds(pd.DataFrame({"t": [1.5]}), "t", "h")[0]["t in s"][0] == 5400
    with pytest.raises(PerfModelError, match="unknown time unit 'fortnight'"):
        time_in_seconds(frame, "step_time_ms", "fortnight")
    with pytest.raises(PerfModelError, match="time column 'secs' not found"):
        time_in_seconds(frame, "secs", "ms")
