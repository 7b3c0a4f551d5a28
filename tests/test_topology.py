"""Nodes and GPUs per node (issue 22, item 4): how a node crossing is told, the population prior's
κ for it, the warning, and advise valuing a first run across the boundary."""

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import perfmodel
from perfmodel import Measurements, Model, PerfModelError, compute_intervals
from perfmodel.advise import advise
from perfmodel.fitting.extrapolation import combined_kappa, crossings, extended, series_evidence
from perfmodel.uncertainty.prior import describe, topology

PRIOR = {
    "format": "perfmodel.prior/1",
    "kappa": {"same_nodes": 0.05, "crosses_nodes": 0.4, "unknown": 0.2},
    "pseudo_configurations": 2.0,
    "level": 0.9,
    "n_series": 3,
}


def series(column="gpus", nodes=False, seed=0):
    rng = np.random.default_rng(seed)
    p = np.repeat([1.0, 2.0, 4.0, 8.0], 3)
    t = (30 + 800 / p + 4 * np.log2(p)) * np.exp(rng.normal(0, 0.02, p.size))
    frame = pd.DataFrame({column: p, "time_s": t})
    factors = {"p": column}
    if nodes:
        frame["nodes"] = np.ceil(p / 4)
        factors["nodes"] = "nodes"
    return Measurements.from_frame(frame, "time_s", factors)


def test_topology_from_a_nodes_column_from_gpus_per_node_and_guessed():
    assert topology(series(nodes=True))["max_nodes"] == 2
    t = topology(series(), 4)
    assert (t["gpus_per_node"], t["max_nodes"], t["guessed"]) == (4, 2, False)
    guess = topology(series("gpus"))
    assert guess["guessed"] and guess["gpus_per_node"] == 8 and guess["max_nodes"] == 1
    assert "guessed" in describe(guess)
    assert topology(series("workers")) is None  # p does not name GPUs: unknown, not guessed
    assert topology(series("gpus"), 0) is None  # 0 says: unknown
    with pytest.raises(PerfModelError, match="GPUs per node must be a number >= 1"):
        topology(series(), 0.5)


def test_crossings_and_extended():
    topo = {"nodes_symbol": None, "gpus_per_node": 4.0, "max_nodes": 2.0}
    env = {"p": np.array([4.0, 8.0, 12.0, 64.0])}
    assert list(crossings(topo, env)) == ["same_nodes", "same_nodes", "crosses_nodes", "crosses_nodes"]
    assert list(crossings(None, env)) == ["unknown"] * 4
    assert extended(topo, env, 3)["max_nodes"] == 16
    assert list(crossings(extended(topo, env, 3), env)) == ["same_nodes"] * 4


def test_combined_kappa_is_the_stated_formula():
    # one calibration point: e = 0.3 beyond a band of spread 0 at d = 1 -> evidence 0.09, n = 1
    evidence, n = series_evidence([[0.3, 0.0, 0.0, 1.0]])
    assert (evidence, n) == (pytest.approx(0.09), 1)
    assert combined_kappa(0.2, 2.0, evidence, n) == pytest.approx(math.sqrt((2 * 0.04 + 0.09) / 3))
    # the more configurations the series has, the less the population counts
    many = series_evidence([[0.3, 0.0, 0.0, 1.0]] * 12)
    assert abs(combined_kappa(0.2, 2.0, *many) - 0.3) < abs(combined_kappa(0.2, 2.0, evidence, n) - 0.3)


def fitted(gpus_per_node, prior=PRIOR):
    meas = series()
    res = Model("1 + 1/p + log2(p)").fit(meas)
    return perfmodel.compute_intervals(res, meas, replicates=60, prior=prior, gpus_per_node=gpus_per_node), meas


def test_a_target_across_the_node_boundary_gets_the_crossing_kappa_and_a_warning():
    at = {"p": [16.0]}
    across, _ = fitted(4)  # p = 16 needs 4 nodes, 2 measured
    within, _ = fitted(16)  # one 16-GPU node: no crossing, same distance
    a, w = across.predict(at, interval=0.9), within.predict(at, interval=0.9)
    assert a["predicted_time"].iloc[0] == pytest.approx(w["predicted_time"].iloc[0])
    assert (a["predicted_high"] - a["predicted_low"]).iloc[0] > 1.5 * (w["predicted_high"] - w["predicted_low"]).iloc[0]
    assert any("needs 4 nodes" in x for x in across.prediction_warnings(at))
    assert not any("nodes" in x for x in within.prediction_warnings(at))
    # and the model file keeps both
    again = perfmodel.FitResult.from_json(across.to_json())
    assert again.predict(at, interval=0.9).equals(a)


def test_advise_values_a_first_run_across_the_boundary():
    target, grid = {"p": 32.0}, {"p": [16, 32]}
    crossing, _ = fitted(4)
    flat, _ = fitted(4, prior={**PRIOR, "kappa": {**PRIOR["kappa"], "crosses_nodes": 0.05}})
    gain = {
        name: advise(r, target, grid).set_index("p")["gain_pct"] for name, r in (("crossing", crossing), ("flat", flat))
    }
    # measuring p = 32 (the target's 8 nodes) removes the crossing: worth more when crossings are costly
    assert gain["crossing"][32.0] > gain["flat"][32.0] + 5


def test_cli_gpus_per_node(tmp_path):
    meas = series()
    csv = tmp_path / "runs.csv"
    meas.frame.to_csv(csv, index=False)
    run = [
        sys.executable,
        "-m",
        "perfmodel",
        "fit",
        str(csv),
        "--time",
        "time_s",
        "--factor",
        "p=gpus",
        "--terms",
        "1 + 1/p",
        "--replicates",
        "30",
        "--out",
        str(tmp_path / "m.json"),
    ]
    ok = subprocess.run(run + ["--gpus-per-node", "4"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "topology: 4 GPUs per node (given); measured on up to 2 node(s)" in ok.stdout
    bad = subprocess.run(run + ["--gpus-per-node", "0.5"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "GPUs per node must be a number >= 1" in bad.stderr


CLASSED = {
    **PRIOR,
    "band_scale": 0.7,
    "classes": [
        {
            "name": "scales well",
            "efficiency_min": 0.9,
            "kappa": {"same_nodes": 0.01, "crosses_nodes": 0.02, "unknown": 0.03},
            "pseudo_configurations": 4.0,
            "band_scale": 0.5,
            "structure_scale": 0.0,
            "shortfall_scale": 0.0,
            "n_series": 7,
            "n_sources": 3,
        },
        {
            "name": "scaling stopped",
            "efficiency_min": 0.0,
            "kappa": {"same_nodes": 0.3, "crosses_nodes": 0.6, "unknown": 0.5},
            "pseudo_configurations": 8.0,
            "band_scale": 0.9,
            "structure_scale": 0.0,
            "shortfall_scale": 0.0,
        },
    ],
}


def test_the_scaling_class_is_told_by_the_last_doublings_efficiency():
    from perfmodel.uncertainty.prior import efficiency, for_series

    assert efficiency(0.0) == 1.0 and efficiency(1.0) == 0.5 and efficiency(None) is None
    # 2^-u >= 0.9 <=> u <= 0.152: the first class; just past it, the next
    well, stopped = for_series(CLASSED, 0.15), for_series(CLASSED, 0.16)
    assert well["kappa"] == CLASSED["classes"][0]["kappa"] and well["band_scale"] == 0.5
    assert well["scaling_class"]["name"] == "scales well" and well["scaling_class"]["efficiency_below"] is None
    assert stopped["kappa"] == CLASSED["classes"][1]["kappa"] and stopped["pseudo_configurations"] == 8.0
    assert stopped["scaling_class"]["efficiency_below"] == 0.9
    # no shortfall (no p, or one worker count): the whole corpus's fields; no classes: the prior as it is
    pooled = for_series(CLASSED, None)
    assert pooled["kappa"] == PRIOR["kappa"] and "classes" not in pooled and "scaling_class" not in pooled
    assert for_series(PRIOR, 0.5) is PRIOR and for_series(None, 0.5) is None
    assert "classes" not in well and "classes" not in stopped  # the stored fit keeps its class only


def test_a_series_that_stopped_scaling_gets_its_class_kappa_and_says_why():
    meas = series()  # 30 + 800/p + 4·log2(p): the last doubling (4 -> 8) runs at 84 % efficiency
    res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=20, prior=CLASSED)
    unc = res._uncertainty()
    assert unc.prior["scaling_class"]["name"] == "scaling stopped"
    k, how = unc.kappa(0.9, "crosses_nodes")
    assert "parallel efficiency" in how and "scaling stopped" not in how
    assert k == pytest.approx(combined_kappa(0.6, 8.0, *series_evidence(unc.calibration)))
    # the stored fit keeps its class: read back, the same κ without the file's classes
    from perfmodel.fitting.members import Uncertainty

    again = Uncertainty.from_dict(unc.to_dict())
    assert again.kappa(0.9, "crosses_nodes")[0] == pytest.approx(k)


def test_a_stored_scaling_class_that_is_not_numbers_is_refused():
    from perfmodel.fitting.members import Uncertainty

    res = compute_intervals(Model(preset="data-parallel").fit(series()), series(), replicates=20, prior=CLASSED)
    d = res._uncertainty().to_dict()
    d["prior"]["scaling_class"]["efficiency"] = "high"
    with pytest.raises(PerfModelError, match="scaling_class"):
        Uncertainty.from_dict(d)


def test_a_first_run_across_nodes_takes_at_least_the_whole_corpus_kappa():
    """Measured on one node, a series' class says nothing about the network: a target on more nodes
    takes the larger of its class's and the whole corpus's κ; measured across nodes, its class's."""
    one = series(nodes=True)  # p = 1, 2, 4, 8 on ceil(p / 4) nodes: up to 2 nodes
    meas = one.subset(one.values("p") <= 4)  # one node
    res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=20, prior=CLASSED)
    unc = res._uncertainty()
    assert unc.prior["scaling_class"]["name"] == "scales well" and unc.topology["max_nodes"] == 1
    S, n = series_evidence(unc.calibration)
    k, how = unc.kappa(0.9, "crosses_nodes")
    assert k == pytest.approx(combined_kappa(0.4, 4.0, S, n)) and "first run across nodes" in how
    assert unc.kappa(0.9, "same_nodes")[0] == pytest.approx(combined_kappa(0.01, 4.0, S, n))
    # after a measurement on two nodes (advise's question), a third node is no longer a first crossing
    two = dict(unc.topology, max_nodes=2.0)
    assert unc.kappa(0.9, "crosses_nodes", two)[0] == pytest.approx(combined_kappa(0.02, 4.0, S, n))
    env = {"p": np.array([4.0, 16.0]), "nodes": np.array([1.0, 4.0])}
    assert np.allclose(unc.kappas(env, 0.9), [combined_kappa(0.01, 4.0, S, n), k])
    assert np.allclose(unc.kappas(env, 0.9, two), [combined_kappa(0.01, 4.0, S, n), combined_kappa(0.02, 4.0, S, n)])


def test_a_target_of_unknown_topology_takes_at_least_the_whole_corpus_kappa():
    """Workers that are not GPUs: no topology is guessed, a target may cross nodes unseen, so the
    class's κ for an unknown crossing counts only when it is the larger."""
    meas = series(column="workers")
    sub = meas.subset(meas.values("p") <= 4)
    res = compute_intervals(Model(preset="data-parallel").fit(sub), sub, replicates=20, prior=CLASSED)
    unc = res._uncertainty()
    assert unc.topology is None and unc.prior["scaling_class"]["name"] == "scales well"
    S, n = series_evidence(unc.calibration)
    k, how = unc.kappa(0.9, "unknown")
    assert k == pytest.approx(combined_kappa(0.2, 4.0, S, n)) and "unknown topology" in how
    assert np.allclose(unc.kappas({"p": np.array([16.0])}, 0.9), [k])


def test_the_interval_facts_give_the_widening_on_and_beyond_the_measured_nodes():
    meas = series()  # "gpus" up to 8: 8 per node guessed, all of it on one node
    res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=20, prior=CLASSED)
    facts = dict(res.interval_facts())
    assert set(facts) >= {"extrapolation, on the measured nodes", "extrapolation, on more nodes"}
    k = res._uncertainty().kappa(0.9, "crosses_nodes")[0]  # its class's 0.6, larger than the corpus's 0.4
    assert facts["extrapolation, on more nodes"].startswith(f"widens by {k * 100:.3g} % per doubling")
    unknown = compute_intervals(
        Model(preset="data-parallel").fit(series("workers")), series("workers"), replicates=20, prior=CLASSED
    )
    assert "extrapolation" in dict(unknown.interval_facts())


def test_a_class_that_widens_less_on_more_nodes_says_the_structures_carry_it():
    """A class learned with the reference structures' reach may need less κ on more nodes than on the
    measured ones (the corpus's *scales partly*); the facts say why instead of leaving a contradiction."""
    meas = series(nodes=True)  # up to 2 nodes, the last doubling at 84 %: "scaling stopped" below
    stopped = dict(CLASSED["classes"][1], kappa={"same_nodes": 0.3, "crosses_nodes": 0.05, "unknown": 0.3})
    facts = {}
    for g in (0.0, 1.0):
        prior = {**CLASSED, "classes": [CLASSED["classes"][0], dict(stopped, structure_scale=g)]}
        res = compute_intervals(Model(preset="data-parallel").fit(meas), meas, replicates=20, prior=prior)
        facts[g] = dict(res.interval_facts())
        k_same, k_more = (res._uncertainty().kappa(0.9, c)[0] for c in ("same_nodes", "crosses_nodes"))
        assert k_more < k_same
    assert "reference structures reach" in facts[1.0]["extrapolation, on more nodes"]
    assert "reference structures" not in facts[0.0]["extrapolation, on more nodes"]
    assert "reference structures" not in facts[1.0]["extrapolation, on the measured nodes"]


def test_a_stored_corpus_kappa_without_the_unknown_crossing_is_refused():
    from perfmodel.fitting.members import Uncertainty

    res = compute_intervals(Model(preset="data-parallel").fit(series()), series(), replicates=20, prior=CLASSED)
    d = res._uncertainty().to_dict()
    del d["prior"]["corpus_kappa"]["unknown"]  # kappa() would read it for a target of unknown topology
    with pytest.raises(PerfModelError, match="corpus_kappa"):
        Uncertainty.from_dict(d)


def test_a_fit_whose_noise_rests_on_few_degrees_of_freedom_takes_its_own_band_scale():
    """Two worker counts, one run each, two constants: no residual degrees of freedom and no repeats, so
    the noise is the stated prior (5 %), and the band takes the class's few_dof_band_scale; a fit
    whose noise rests on 3 or more (six worker counts, two constants) keeps band_scale. Inside the measured range (no widening, γ = 0) the half-width is the
    scale times the un-widened band's, exactly."""
    from perfmodel.fitting.members import Uncertainty

    classed = {**CLASSED, "classes": [dict(c, few_dof_band_scale=0.3) for c in CLASSED["classes"]]}
    frame = pd.DataFrame({"gpus": [1.0, 2.0], "time_s": [100.0, 52.0]})
    two = Measurements.from_frame(frame, "time_s", {"p": "gpus"})
    res = compute_intervals(Model(terms="1 + 1/p").fit(two), two, replicates=20, prior=classed)
    unc = res._uncertainty()
    assert unc.noise.source == "prior" and unc.band_scale() == 0.3
    at = {"p": np.array([1.0, 2.0])}
    t, lo, hi = unc.interval(at, 0.9)
    t0, lo0, hi0 = unc.interval(at, 0.9, widen=False)
    assert np.allclose(np.log(hi / t), 0.3 * np.log(hi0 / t0)) and np.allclose(np.log(t / lo), 0.3 * np.log(t0 / lo0))
    p = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    six = Measurements.from_frame(
        pd.DataFrame({"gpus": p, "time_s": (5 + 100 / p) * (1 + 0.01 * np.cos(p))}), "time_s", {"p": "gpus"}
    )
    u = compute_intervals(Model(terms="1 + 1/p").fit(six), six, replicates=20, prior=classed)._uncertainty()
    assert u.noise.df >= 3
    assert (
        u.band_scale()
        == next(c for c in CLASSED["classes"] if c["name"] == u.prior["scaling_class"]["name"])["band_scale"]
    )
    assert (
        dict(res.interval_facts())["band scale"].startswith("× 0.3: ")
        and "fewer than 3 degrees" in dict(res.interval_facts())["band scale"]
    )
    d = unc.to_dict()
    d["prior"]["few_dof_band_scale"] = "narrow"
    with pytest.raises(PerfModelError, match="few_dof_band_scale"):
        Uncertainty.from_dict(d)
