"""Reliability, third pass (issue 32): tampered model files refused with the field named (types checked,
not only values), units never guessed wrong, nothing listening beyond the machine, text from data
escaped on the terminal, the silent cases refused by name or done right, and work bounded before it
starts. (The round trip of every file ``fit`` writes: tests/test_round_trip.py.)"""

import json

import numpy as np
import pandas as pd
import pytest

from perfmodel import FitResult, PerfModelError
from tests.cli_run import fit_rcv1, one_line_error, run


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return fit_rcv1(tmp_path_factory.mktemp("model") / "m.json", "--replicates", "40")


@pytest.fixture
def model_dict(model_path):
    return json.loads(model_path.read_text())


# -- tampered model files: every field's type checked, NaN is not finite ------------------------------------
_TOPOLOGY = {"nodes_symbol": None, "gpus_per_node": 8.0, "max_nodes": 2.0, "guessed": False}


def _unc(key, value):
    return lambda d: d["uncertainty"].__setitem__(key, value)


def _prior(key, value):
    return lambda d: d["uncertainty"]["prior"].__setitem__(key, value)


def _topology(**changes):
    return lambda d: d["uncertainty"].__setitem__("topology", {**_TOPOLOGY, **changes})


def _scaling_class(**changes):
    def change(d):
        prior = d["uncertainty"]["prior"]
        prior["scaling_class"] = {
            "name": "x",
            "efficiency_min": 0.0,
            "efficiency_below": 0.7,
            "efficiency": 0.4,
            "n_series": 3,
            "n_sources": 2,
            **changes,
        }

    return change


def _span(**changes):
    return lambda d: d.__setitem__(
        "factor_span",
        {"symbols": ["m", "s"], "center": [3.0, -1.0], "directions": [[1.0, 0.0], [0.0, 1.0]], **changes},
    )


TAMPERED = [
    (_unc("prior", [1]), "prior must be an object, got [1]"),
    (_unc("prior", "x"), "prior must be an object, got 'x'"),
    (_unc("prior", 3), "prior must be an object, got 3"),
    (_unc("topology", [1]), "topology must be an object, got [1]"),
    (_unc("topology", "x"), "topology must be an object, got 'x'"),
    (_unc("topology", 3), "topology must be an object, got 3"),
    (_topology(gpus_per_node="8"), "topology.gpus_per_node is '8'; a positive number"),
    (_topology(max_nodes="1"), "topology.max_nodes is '1'; a positive number"),
    (_topology(max_nodes=float("nan")), "topology.max_nodes is nan"),
    (_topology(nodes_symbol=3), "topology.nodes_symbol is 3"),
    (_topology(gpus_per_node=None), "topology needs nodes_symbol or gpus_per_node"),
    (_topology(max_nodes=None), "topology needs max_nodes"),
    (_scaling_class(efficiency="0.4"), "prior.scaling_class needs finite numbers"),
    (_scaling_class(efficiency_min="0"), "prior.scaling_class needs finite numbers"),
    (_scaling_class(efficiency_below="0.7"), "prior.scaling_class needs finite numbers"),
    (_scaling_class(n_series="3"), "prior.scaling_class needs finite numbers"),
    (_prior("band_scale", "1"), "prior needs finite numbers"),
    (_prior("kappa", {"same_nodes": "0.1", "crosses_nodes": 0.2, "unknown": 0.3}), "prior needs finite numbers"),
    (_prior("level", "0.9"), "prior.level is '0.9'"),
    (_prior("n_series", "many"), "prior.n_series is 'many'"),
    (_span(directions=[[1.0], [1.0, 2.0]]), "factor_span's center and each of its directions need one number"),
    (_span(center=[3.0]), "factor_span's center and each of its directions need one number"),
    (_span(center=[float("nan"), 1.0]), "field 'factor_span.center[0]' is nan, not a finite number"),
    (lambda d: d.__setitem__("rate", {"column": "x", "work": float("nan")}), "field 'rate.work' is nan"),
    (lambda d: d.__setitem__("rate", {"column": "x", "work": float("inf")}), "field 'rate.work' is inf"),
    (lambda d: d["coefficients"].__setitem__("c0", float("nan")), "field 'coefficients.c0' is nan"),
    (lambda d: d["settings"].__setitem__("lam", float("nan")), "field 'settings.lam' is nan"),
]


@pytest.mark.parametrize("change, fragment", TAMPERED)
def test_a_tampered_model_file_is_refused_naming_the_field(model_dict, change, fragment):
    d = json.loads(json.dumps(model_dict))
    change(d)
    with pytest.raises(PerfModelError) as info:
        FitResult.from_dict(json.loads(json.dumps(d, allow_nan=True)))
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_every_command_refuses_a_tampered_file_in_one_line(model_dict, tmp_path, capsys):
    """The 45 commands of the issue gave "internal error": each is one line naming the field now."""
    path = tmp_path / "m.json"
    commands = [
        ["show", path],
        ["predict", path, "--grid", "m=4,64", "--grid", "s=1", "--interval", "0.9"],
        ["plan", path, "--grid", "m=4,64", "--at", "s=1", "--deadline", "1h"],
        ["advise", path, "--target", "m=64,s=1", "--grid", "m=4,8"],
    ]
    for change, fragment in TAMPERED[:10]:
        d = json.loads(json.dumps(model_dict))
        change(d)
        path.write_text(json.dumps(d, allow_nan=True))
        for argv in commands:
            code, _, err = run(argv, capsys)
            one_line_error(code, err, fragment)


def test_a_well_formed_topology_and_scaling_class_load(model_dict):
    d = json.loads(json.dumps(model_dict))
    _topology()(d)
    _scaling_class()(d)
    _span()(d)
    FitResult.from_dict(d)


# -- units: read from a name only where it states one; unknown ones refused; rates per any unit ----------------
@pytest.mark.parametrize(
    "name, unit",
    [
        ("time_min_s", "s"),  # the minimum over ranks, in seconds (RELeARN's column): not minutes
        ("time_max_s", "s"),
        ("time_us_east", None),  # a region, not microseconds
        ("time_s_per_100_ms", "s"),  # the denominator is no unit of the time
        ("time_per_step_ms", "ms"),
        ("ms/step", "ms"),
        ("epoch time (min)", "min"),
        ("time [s, median]", "s"),
        ("latency_ns", "ns"),
        ("elapsed (ps)", "ps"),
        ("duration_days", "d"),
        ("wall_time_d", "d"),
        ("time_weeks", "week"),
        ("minibatch", None),
        ("time (rank 0)", None),
    ],
)
def test_a_unit_is_read_only_where_the_name_states_it(name, unit):
    from perfmodel.data.time_units import unit_from_name

    assert unit_from_name(name) == unit


@pytest.mark.parametrize(
    "name, token", [("time_m", "'m'"), ("latency_cycles", "'cycles'"), ("run (months)", "'months'")]
)
def test_a_time_unit_the_reader_does_not_convert_is_refused_by_name(name, token):
    from perfmodel.data.time_units import unit_from_name

    with pytest.raises(PerfModelError, match="not one the reader converts; known: ps, ns, us, ms, s, min, h, d, week"):
        unit_from_name(name)
    with pytest.raises(PerfModelError) as info:
        unit_from_name(name)
    assert token in str(info.value)


def test_time_min_s_is_fitted_in_seconds_and_days_are_converted(tmp_path, capsys):
    data = tmp_path / "t.csv"
    pd.DataFrame({"ranks": [1, 2, 4, 8], "time_min_s": [2 + 60 / p for p in (1, 2, 4, 8)]}).to_csv(data, index=False)
    model = tmp_path / "m.json"
    code, _, err = run(
        ["fit", data, "--terms", "1 + 1/p", "--lambda", "0", "--replicates", "0", "--out", model], capsys
    )
    assert code == 0 and "in min" not in err, err
    c = json.loads(model.read_text())["coefficients"]
    assert c["c0"] == pytest.approx(2, rel=1e-6) and c["c1"] == pytest.approx(60, rel=1e-6)
    data.write_text("ranks,wall_time_d\n1,1\n2,0.5\n4,0.25\n")
    code, _, err = run(["fit", data, "--terms", "1/p", "--lambda", "0", "--replicates", "0", "--out", model], capsys)
    assert code == 0 and "'wall_time_d' in d" in err, err
    assert json.loads(model.read_text())["coefficients"]["c0"] == pytest.approx(86400, rel=1e-6)
    data.write_text("ranks,time_m\n1,1\n2,0.5\n4,0.25\n")
    code, _, err = run(["fit", data, "--terms", "1/p", "--out", model], capsys)
    one_line_error(code, err, "states the unit 'm', which is not one the reader converts")


def test_the_bundled_datasets_state_their_units():
    from perfmodel.data import datasets

    assert {d.time_unit for d in datasets.list_datasets()} == {"s"}


@pytest.mark.parametrize(
    "column, flags, per_second",
    [
        ("images/s", [], 1),
        ("images/min", [], 1 / 60),
        ("tokens/hour", [], 1 / 3600),
        ("images/ms", [], 1000),
        ("throughput", ["--rate-unit", "min"], 1 / 60),
        ("images/min", ["--rate-unit", "s"], 1),  # stated wins over the name
    ],
)
def test_a_rate_per_minute_hour_or_millisecond_is_converted(tmp_path, capsys, column, flags, per_second):
    """Rates from T = 2 + 60/p seconds per image, written per the column's unit: the fit finds the
    formula's constants in seconds, and predict gives the rate back in the column's unit."""
    data = tmp_path / "r.csv"
    rates = [1 / (2 + 60 / p) / per_second for p in (1, 2, 4, 8)]
    pd.DataFrame({"gpus": [1, 2, 4, 8], column: rates}).to_csv(data, index=False)
    model = tmp_path / "m.json"
    argv = ["fit", data, "--throughput", column, *flags, "--terms", "1 + 1/p", "--lambda", "0", "--replicates", "0"]
    code, _, err = run([*argv, "--out", model], capsys)
    assert code == 0, err
    c = json.loads(model.read_text())["coefficients"]
    assert c["c0"] == pytest.approx(2, rel=1e-5) and c["c1"] == pytest.approx(60, rel=1e-5)
    code, out, err = run(["predict", model, "--grid", "p=4"], capsys)
    assert code == 0, err
    frame = pd.read_csv(__import__("io").StringIO(out))
    assert frame[f"predicted {column}"].iloc[0] == pytest.approx(rates[2], rel=1e-5)


def test_time_unit_with_a_throughput_points_to_rate_unit(tmp_path, capsys):
    data = tmp_path / "r.csv"
    data.write_text("gpus,images/min\n1,60\n2,110\n")
    code, _, err = run(
        ["fit", data, "--throughput", "images/min", "--time-unit", "min", "--terms", "1", "--out", "x"], capsys
    )
    one_line_error(code, err, "--time-unit is for a measured time; the time unit a throughput is per is --rate-unit")
    code, _, err = run(
        ["fit", data, "--time", "images/min", "--rate-unit", "min", "--terms", "1", "--out", "x"], capsys
    )
    one_line_error(code, err, "--rate-unit is for a throughput")


@pytest.mark.parametrize("flag", [["--time-unit", "ms"], ["--throughput", "epoch_time_s"], ["--rate-unit", "min"]])
def test_unit_flags_are_refused_with_group_by_on_a_dataset_and_an_extrap_file(tmp_path, capsys, flag):
    from tests.cli_run import ROOT

    code, _, err = run(["fit", "--dataset", "tf-cnn-all", *flag, "--group-by", "model", "--out", tmp_path], capsys)
    one_line_error(code, err, f"{flag[0]}: the bundled dataset 'tf-cnn-all' is measured as times in seconds")
    extrap = ROOT / "data" / "extrap" / "text_two_parameter_6.txt"
    if flag[0] != "--throughput":
        code, _, err = run(["fit", extrap, *flag, "--terms", "1", "--group-by", "region", "--out", tmp_path], capsys)
        one_line_error(code, err, f"{flag[0]}: an Extra-P file's values are taken as they are")


def test_a_throughput_work_cell_that_is_not_a_positive_number_is_named(tmp_path, capsys):
    data = tmp_path / "w.csv"
    data.write_text("gpus,samples,images/s\n1,100,10\n2,x,19\n4,,37\n8,0,70\n16,-5,130\n32,inf,250\n64,100,400\n")
    model = tmp_path / "m.json"
    argv = ["fit", data, "--throughput", "images/s", "--work", "samples", "--terms", "1 + 1/p", "--replicates", "0"]
    code, _, err = run([*argv, "--out", model], capsys)
    assert code == 0, err
    for row, cell in ((2, "x"), (3, ""), (4, "0"), (5, "-5"), (6, "inf")):
        assert f"dropped row {row}, column 'samples / images/s': non-numeric value \"work {cell!r}" in err, err
    for cell, shown in (("x", "'x'"), ("", "(an empty cell)"), ("0", "0"), ("-5", "-5"), ("inf", "inf")):
        rows = tmp_path / "p.csv"
        rows.write_text(f"gpus,samples\n1,100\n2,{cell}\n")
        code, _, err = run(["predict", model, rows], capsys)
        one_line_error(code, err, f"row 2, column 'samples': the work per run {shown} is not a positive number")
    code, out, err = run(["predict", model, "--grid", "p=2,4", "--grid", "samples=100"], capsys)
    assert code == 0 and "predicted images/s" in out, err


# -- CSV: decimal commas with grouped thousands; a header read in time linear in its columns -------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("p;t\n1;12,5\n2;1.000\n", [12.5, 1000.0]),  # a thousand, grouped by a point, in a decimal-comma file
        ("p;t\n1;1.234,5\n2;12,5\n", [1234.5, 12.5]),
        ("p;t\n1;12.345.678\n2;0,5\n", [12345678.0, 0.5]),
        ("p;t\n1;0.5\n2;1.5\n", [0.5, 1.5]),  # no decimal comma anywhere: points are decimal points
        ("p,t\n1,1.000\n2,2.5\n", [1.0, 2.5]),
    ],
)
def test_a_decimal_comma_file_reads_grouped_thousands(text, expected):
    from perfmodel.data.readers import read_csv

    assert read_csv(text.encode())["t"].tolist() == expected


def test_a_column_mixing_decimal_points_and_grouped_thousands_is_refused_by_row():
    from perfmodel.data.readers import read_csv

    with pytest.raises(PerfModelError, match=r"row 2, column 't': '1.000' could be a number with a decimal point"):
        read_csv(b"p;t\n1;0,5\n2;1.000\n3;0.25\n")


@pytest.mark.parametrize("columns", [10_000, 100_000])
def test_a_wide_header_is_refused_in_time_linear_in_its_columns(tmp_path, columns):
    import time

    from perfmodel.data.readers import MAX_COLUMNS, read_csv

    path = tmp_path / "wide.csv"
    names = ",".join(f"c{i}" for i in range(columns))
    path.write_text(names + "\n" + ",".join("1" for _ in range(columns)) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(PerfModelError, match=f"the header has {columns:,} columns; at most {MAX_COLUMNS:,}"):
        read_csv(path)
    assert time.perf_counter() - t0 < 5


def test_duplicate_names_among_many_columns_are_named_quickly(tmp_path):
    import time

    from perfmodel.data.readers import MAX_COLUMNS, read_csv

    path = tmp_path / "dupes.csv"
    names = [f"c{i}" for i in range(MAX_COLUMNS - 1)] + ["c7"]
    path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(PerfModelError, match="duplicate column name\\(s\\): 'c7'"):
        read_csv(path)
    assert time.perf_counter() - t0 < 5


# -- nothing listens beyond the machine; text from data reaches the terminal escaped ------------------------
def test_a_local_dask_cluster_listens_on_loopback_only():
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("distributed")
    from perfmodel.parallel import dashboard_address, dask_client

    with dask_client("local", 1) as client:
        me = psutil.Process()
        pids = {me.pid} | {p.pid for p in me.children(recursive=True)}
        listening = [c.laddr.ip for c in psutil.net_connections(kind="inet") if c.status == "LISTEN" and c.pid in pids]
        link = dashboard_address(client) or ""
    assert listening and set(listening) == {"127.0.0.1"}, listening
    assert link.startswith("http://127.0.0.1:")


def test_the_dashboard_is_served_on_this_machine_only_unless_asked():
    import tomllib

    from tests.cli_run import ROOT

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert config["client"]["showErrorDetails"] == "type"  # an exception's type, never a traceback


HOSTILE_TEXT = ["\x1b]0;pwned\x07fw", "\x1b[2Jclear", "x\u202eevil", "\x9b31m"]


def test_group_values_with_escape_sequences_reach_the_terminal_escaped(tmp_path, capsys):
    rows = [(v, m, 1 + 0.1 * k + 30 / m) for k, v in enumerate(HOSTILE_TEXT) for m in (4, 8, 16, 32)]
    data = tmp_path / "g.csv"
    pd.DataFrame(rows, columns=["fw", "m", "t"]).to_csv(data, index=False)
    argv = ["fit", data, "--time", "t", "--factor", "m=m", "--terms", "1 + 1/m", "--group-by", "fw"]
    code, out, err = run([*argv, "--workers", "1", "--replicates", "0", "--out", tmp_path / "out"], capsys)
    assert code == 0, err
    for raw, shown in (("\x1b", "\\x1b"), ("\x07", "\\x07"), ("\u202e", "\\u202e"), ("\x9b", "\\x9b")):
        assert raw not in out + err and shown in out


def test_a_column_name_with_a_line_break_or_an_escape_keeps_an_error_one_line(tmp_path, capsys):
    data = tmp_path / "n.csv"
    data.write_text('p,"time\nx\x1b[2J"\n1,2\n2,3\n')
    code, _, err = run(["fit", data, "--time", "bogus", "--terms", "1", "--out", tmp_path / "m.json"], capsys)
    one_line_error(code, err, "columns are: p, time\\nx\\x1b[2J")


def test_predict_to_a_pipe_keeps_the_rows_as_they_are(model_path, tmp_path, capsys):
    rows = tmp_path / "r.csv"
    rows.write_text("cores,input_fraction,note\n8,1,\x1b[2J\n")
    code, out, err = run(["predict", model_path, rows], capsys)
    assert code == 0, err
    assert "\x1b[2J" in out  # data into a pipe (not a terminal) is data; on a terminal it is escaped


# -- the silent cases: refused by name or done right --------------------------------------------------------
@pytest.fixture(scope="module")
def nodes_model(tmp_path_factory):
    """T = 10 + 100/p on p GPUs spread over a nodes column that is not ceil(p / 8): 2 GPUs per node."""
    folder = tmp_path_factory.mktemp("nodes")
    data = folder / "n.csv"
    p = np.array([2, 4, 8, 16])
    pd.DataFrame({"p": p, "nodes": p // 2, "time_s": 10 + 100 / p}).to_csv(data, index=False)
    model = folder / "m.json"
    argv = ["fit", str(data), "--factor", "p=p", "--factor", "nodes=nodes", "--terms", "1 + 1/p + nodes"]
    from perfmodel.cli import main

    assert main([*argv, "--replicates", "20", "--out", str(model)]) == 0
    return model


def test_a_node_hour_price_counts_the_models_nodes_column(nodes_model, tmp_path, capsys):
    out = tmp_path / "plan.csv"
    argv = ["plan", nodes_model, "--grid", "p=4,16", "--grid", "nodes=2,8", "--node-hour-price", "3", "--out", out]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    table = pd.read_csv(out)
    np.testing.assert_allclose(table["cost"], table["time_s"] / 3600 * table["nodes"] * 3)
    code, _, err = run([*argv[:-2], "--gpus-per-node", "8"], capsys)
    one_line_error(code, err, "--gpus-per-node: the model has a nodes factor")
    code, _, err = run(
        ["advise", nodes_model, "--target", "p=32,nodes=16", "--grid", "p=4,8", "--grid", "nodes=2,4"]
        + ["--node-hour-price", "3", "--rank-by", "cost", "--out", out],
        capsys,
    )
    assert code == 0, err
    table = pd.read_csv(out)
    np.testing.assert_allclose(table["cost"], table["predicted_time"] / 3600 * table["nodes"] * 3)


@pytest.mark.parametrize("command", ["fit", "advise", "plan"])
def test_zero_gpus_per_node_is_refused_everywhere(model_path, tmp_path, capsys, command):
    from tests.cli_run import RCV1

    argv = {
        "fit": ["fit", RCV1, "--time", "time_s", "--factor", "p=cores", "--terms", "1 + 1/p", "--out", tmp_path / "x"],
        "advise": ["advise", model_path, "--target", "m=64,s=1", "--grid", "m=4,8", "--node-hour-price", "2"],
        "plan": ["plan", model_path, "--grid", "m=4,8", "--at", "s=1", "--node-hour-price", "2"],
    }[command]
    code, _, err = run([*argv, "--gpus-per-node", "0"], capsys)
    one_line_error(code, err, "--gpus-per-node")
    assert "must be a positive number, got 0" in err or "GPUs per node must be a number >= 1, got 0" in err


def test_a_plan_that_overflows_is_refused_naming_the_column(model_path, nodes_model, capsys):
    code, out, err = run(["plan", model_path, "--at", "s=1", "--grid", "m=4,8", "--repeat", "1e308"], capsys)
    one_line_error(code, err, "time_s is inf at m = 4, s = 1: the time × --repeat (1e+308)")
    code, out, err = run(["plan", nodes_model, "--at", "nodes=2", "--grid", "p=4,1e300"], capsys)
    one_line_error(code, err, "is inf at p = 1e+300, nodes = 2")


@pytest.mark.parametrize("value", ["-0.001", "0"])
def test_predict_refuses_a_factor_measured_positive_at_zero_or_below(model_path, tmp_path, capsys, value):
    rows = tmp_path / "r.csv"
    rows.write_text(f"cores,input_fraction\n8,{value}\n")
    code, _, err = run(["predict", model_path, rows], capsys)
    one_line_error(code, err, f"row 1: input_fraction = {value}, but every measured input_fraction was positive")
    code, _, err = run(["advise", model_path, "--target", f"m=64,s={value}", "--grid", "m=4,8"], capsys)
    one_line_error(code, err, "every measured input_fraction was positive")
    code, _, err = run(["plan", model_path, "--at", f"s={value}", "--grid", "m=4,8"], capsys)
    one_line_error(code, err, "every measured input_fraction was positive")


@pytest.mark.parametrize("column", ["predicted_time", "predicted_low", "predicted_high"])
@pytest.mark.parametrize("interval", [[], ["--interval", "0.9"]])
def test_predict_refuses_input_columns_named_like_its_output(model_path, tmp_path, capsys, column, interval):
    rows = tmp_path / "r.csv"
    rows.write_text(f"cores,input_fraction,{column}\n8,1,123\n")
    code, _, err = run(["predict", model_path, rows, *interval], capsys)
    one_line_error(code, err, f"DATA has a column {column!r}, a name predict writes its output under")


def test_a_reused_out_folder_keeps_only_the_model_files_its_summary_lists(tmp_path, capsys):
    rows = [(g, m, 1 + k + 30 / m) for k, g in enumerate("abc") for m in (4, 8, 16, 32)]
    data = tmp_path / "g.csv"
    pd.DataFrame(rows, columns=["fw", "m", "t"]).to_csv(data, index=False)
    out = tmp_path / "out"
    (tmp_path / "out").mkdir()
    mine = out / "notes.json"
    mine.write_text('{"not": "a model"}')
    argv = ["fit", data, "--time", "t", "--factor", "m=m", "--terms", "1 + 1/m", "--group-by", "fw"]
    argv += ["--workers", "1", "--replicates", "0", "--cv", "0", "--out", out]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert len(list(out.glob("*.json"))) == 4
    pd.DataFrame(rows[:8], columns=["fw", "m", "t"]).to_csv(data, index=False)  # group c is gone
    code, _, err = run(argv, capsys)
    assert code == 0 and "removed 1 model file(s) of the previous run" in err, err
    listed = set(pd.read_csv(out / "summary.csv")["model_file"])
    assert {p.name for p in out.glob("*.json")} == listed | {"notes.json"} and mine.exists()


# -- bounded work: memory by configurations and replicates, not rows; work refused before it starts ------------
def _many_rows(n: int) -> "pd.DataFrame":
    rng = np.random.default_rng(0)
    p = rng.choice([1, 2, 4, 8, 16, 32], n)
    return pd.DataFrame({"p": p, "time_s": (2 + 60 / p) * np.exp(rng.normal(0, 0.05, n))})


def test_the_bootstrap_and_the_intervals_take_memory_by_configurations_not_rows():
    """200,000 rows of 6 configurations, 200 replicates: the row-sized (replicates × rows) arrays were
    320 MB each; per configuration they are kilobytes."""
    import tracemalloc

    from perfmodel import Measurements, Model
    from perfmodel.uncertainty import bootstrap

    meas = Measurements.from_frame(_many_rows(200_000), "time_s", {"p": "p"})
    result = Model("1 + 1/p").fit(meas)
    tracemalloc.start()
    try:
        member, _ = bootstrap(result, meas, 200, 0)
        peak_bootstrap = tracemalloc.get_traced_memory()[1]
        from perfmodel.fitting.members import Noise, Uncertainty

        unc = Uncertainty([member], Noise(0.05, 10.0, "residuals"), [], {"p": (1.0, 32.0)})
        result.attach_uncertainty(unc)
        tracemalloc.reset_peak()
        band = result.predict(meas, interval=0.9)
        peak_interval = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert member.coefficients.shape == (200, 2) and len(band) == 200_000
    assert peak_bootstrap < 60e6 and peak_interval < 60e6, (peak_bootstrap, peak_interval)


def test_intervals_in_chunks_equal_intervals_at_once(model_path, monkeypatch):
    import perfmodel.fitting.result as result_module

    result = FitResult.load(model_path)
    grid = {"m": np.repeat([1.0, 4.0, 16.0, 64.0, 256.0], 3), "s": np.tile([0.1, 0.5, 1.0], 5)}
    whole = result.predict(grid, interval=0.9)
    monkeypatch.setattr(result_module, "CELLS", 1)  # one configuration a chunk
    pd.testing.assert_frame_equal(result.predict(grid, interval=0.9), whole)


@pytest.mark.parametrize("command", ["predict", "plan", "advise"])
def test_predict_plan_and_advise_refuse_work_beyond_the_limit_before_starting(model_path, capsys, monkeypatch, command):
    import perfmodel.fitting.result as result_module

    monkeypatch.setattr(result_module, "MAX_PREDICTIONS", 40 * 50)  # 40 replicates: 50 configurations
    values = ",".join(str(v) for v in range(1, 61))
    argv = {
        "predict": ["predict", model_path, "--grid", f"m={values}", "--grid", "s=1", "--interval", "0.9"],
        "plan": ["plan", model_path, "--grid", f"m={values}", "--at", "s=1"],
        "advise": ["advise", model_path, "--target", "m=64,s=1", "--grid", f"m={values}"],
    }[command]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "configurations and the model file 40 replicates")
    assert "above the limit 2,000; give at most 50 configurations at once" in err


def test_advise_refuses_more_comparisons_than_its_limit(model_path, capsys, monkeypatch):
    import perfmodel.advise as advise_module

    monkeypatch.setattr(advise_module, "MAX_COMPARISONS", 40**2 * 10)
    values = ",".join(str(v) for v in range(1, 21))
    code, _, err = run(["advise", model_path, "--target", "m=64,s=1", "--grid", f"m={values}"], capsys)
    one_line_error(code, err, "each weighing 40 replicates against each other: 32,000 comparisons")


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--time", "bogus", "--factor", "m=m"], "time column 'bogus' not found"),
        (["--time", "t", "--factor", "m=bogus"], "factor m's column 'bogus' not found"),
    ],
)
def test_group_by_names_a_missing_time_or_factor_column(tmp_path, capsys, flags, fragment):
    # found by scripts/fuzz_reliability.py (the terminal class): a KeyError, "internal error"
    data = tmp_path / "g.csv"
    pd.DataFrame({"fw": ["a"] * 4, "m": [4, 8, 16, 32], "t": [9, 5, 3, 2]}).to_csv(data, index=False)
    argv = ["fit", data, *flags, "--terms", "1 + 1/m", "--group-by", "fw", "--workers", "1", "--replicates", "0"]
    code, _, err = run([*argv, "--out", tmp_path / "out"], capsys)
    one_line_error(code, err, fragment)


def test_a_plan_needs_at_least_one_worker(nodes_model):
    # found by the round trip over ../shared/refdata (MLPerf's summary measures p = 0): efficiency nan
    from perfmodel.plan import plan

    d = json.loads(nodes_model.read_text())
    d["factor_ranges"]["p"] = [0.0, 16.0]
    d["uncertainty"]["factor_ranges"]["p"] = [0.0, 16.0]
    with pytest.raises(PerfModelError, match="a plan needs at least one worker; the grid has p = 0"):
        plan(FitResult.from_dict(d), {"nodes": 2}, {"p": [0, 4]})


def test_a_failing_fit_after_dropped_rows_is_one_line_that_says_so(tmp_path, capsys):
    # found by scripts/fuzz_reliability.py (the csv class): the dropped-row warnings came before the error
    data = tmp_path / "mixed.csv"
    data.write_text("p;time_s\n1;62000.000\n2;32.000,000\n4;17.000,000\n")
    argv = ["fit", data, "--time", "time_s", "--factor", "p=p", "--terms", "1 + 1/p", "--lambda", "0"]
    code, _, err = run([*argv, "--replicates", "0", "--out", tmp_path / "m.json"], capsys)
    one_line_error(code, err, "(2 row(s) were dropped, e.g. row 2, column 'time_s': non-numeric value '32.000,000')")
