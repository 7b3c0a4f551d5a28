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
