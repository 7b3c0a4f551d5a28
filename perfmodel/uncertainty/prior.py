"""The population's prior on extrapolation error, learned from every real scaling curve we hold.

``extrapolation_prior.json`` beside this module is data, not code: how fast the log error of an
extrapolation grows per doubling beyond the measured range (κ), for targets on no more nodes than
measured, for targets on more nodes, and when the topology is unknown; how many configurations
of a series the population counts as (``pseudo_configurations``); how much the members' and the
noise's own band must be scaled to cover as often as it says (``band_scale``, and
``few_dof_band_scale`` for a fit whose noise is the stated prior or rests on fewer than three degrees
of freedom, where the Student-t quantile makes the band several times wider than the noise known
would); how much of the reference
structures' reach beyond the measurements the band takes in (``structure_scale``) and how much faster
κ grows for a series whose last measured doubling fell short of perfect scaling (``shortfall_scale``,
η in κ·(1 + η·u), :func:`perfmodel.fitting.extrapolation.scaling_shortfall`); and it may hold the
population's prior on one run's noise (``noise``: σ and pseudo-degrees of freedom of a scaled
inverse-χ², with which :meth:`perfmodel.fitting.members.Noise.moderated` combines a fit's own
estimate; none in the shipped file, see ``scripts/learn_prior.py --noise-prior``). It is written by
``scripts/learn_prior.py`` from the corpus of ``benchmarks/corpus.py`` (its sources and date are in
the file) and read when intervals are computed; :func:`perfmodel.fitting.extrapolation.combined_kappa`
combines it with what the series shows about itself.

The file may hold ``classes``: the same fields learned separately on the corpus's series of each
*scaling class*, told by the parallel efficiency of the series' last measured doubling
(``2^-u``, u its :func:`perfmodel.fitting.extrapolation.scaling_shortfall`): series that still scaled at
90 % or better extrapolated within a few % per doubling, those below 70 % (or whose time grew) by
tens of %. :func:`for_series` picks a fit's class; a series without a shortfall (no ``p``, or one
worker count) takes the fields of the whole corpus, at the top of the file. A target on more nodes
than a one-node series was measured on takes the larger of its class's and the whole corpus's κ for
crossing nodes, and a target of unknown topology the larger of the two κ for it: how a series scales
inside one node says nothing about the network.

:func:`topology` records, at fit time, how node crossings of a later target are told: the ``nodes``
factor when mapped, else ``gpus_per_node`` (given, e.g. ``--gpus-per-node 8``) and ``p``.

Imports from the data and fitting layers only.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import numpy as np

from ..data import Measurements
from ..errors import PerfModelError
from ..fitting.stored_checks import NOISE_PRIOR_NEEDS, valid_noise_prior

PRIOR_FILE = Path(__file__).resolve().parent / "extrapolation_prior.json"
FORMAT = "perfmodel.prior/1"


@functools.lru_cache(maxsize=4)
def _load(path: str) -> dict:
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise PerfModelError(f"cannot read the extrapolation prior {path}: {exc}") from None
    if d.get("format") != FORMAT:
        raise PerfModelError(f"{path} is not an extrapolation prior ({FORMAT})")
    kappa = d.get("kappa", {})
    vals = [kappa.get(k) for k in ("same_nodes", "crosses_nodes", "unknown")] + [
        d.get("pseudo_configurations"),
        d.get("band_scale", 1.0),
        d.get("few_dof_band_scale", 1.0),
        d.get("structure_scale", 0.0),
        d.get("shortfall_scale", 0.0),
    ]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in vals):
        raise PerfModelError(
            f"{path}: κ, pseudo_configurations, band_scale, few_dof_band_scale, structure_scale "
            "and shortfall_scale must be finite numbers >= 0"
        )
    slack = d.get("efficiency_slack", 0.0)
    if not (isinstance(slack, (int, float)) and math.isfinite(slack) and slack >= 0):
        raise PerfModelError(f"{path}: efficiency_slack must be a finite number >= 0")
    if "noise" in d and not valid_noise_prior(d["noise"]):
        raise PerfModelError(f"{path}: noise {NOISE_PRIOR_NEEDS}")
    for i, c in enumerate(d.get("classes") or []):
        try:
            vals = (
                [float(c["kappa"][k]) for k in ("same_nodes", "crosses_nodes", "unknown")]
                + [float(c[k]) for k in ("efficiency_min", "pseudo_configurations", "band_scale")]
                + [float(c.get(k, 0.0)) for k in ("structure_scale", "shortfall_scale")]
                + [float(c.get("few_dof_band_scale", 1.0))]
            )
        except (KeyError, TypeError, ValueError):
            vals = [float("nan")]
        if not all(math.isfinite(v) and v >= 0 for v in vals):
            raise PerfModelError(
                f"{path}: scaling class {i + 1} needs efficiency_min, κ per crossing, "
                "pseudo_configurations and band_scale, finite numbers >= 0"
            )
    return d


#: the fields a scaling class sets in place of the whole corpus's
CLASS_FIELDS = (
    "kappa",
    "pseudo_configurations",
    "band_scale",
    "few_dof_band_scale",
    "structure_scale",
    "shortfall_scale",
)


def efficiency(shortfall: float | None) -> float | None:
    """Parallel efficiency per doubling of a series' last measured doubling, ``2^-u`` (1: the time
    halved; 0.5: it stayed flat); None without a shortfall."""
    return None if shortfall is None or not math.isfinite(shortfall) else float(2.0**-shortfall)


def for_series(prior: dict | None, shortfall: float | None) -> dict | None:
    """``prior`` as it applies to a series of scaling shortfall ``shortfall``: the fields of its scaling
    class (the first of ``classes`` whose ``efficiency_min`` it reaches; they are sorted from the
    highest) in place of the whole corpus's, the class recorded as ``scaling_class`` (name, efficiency
    range, series, and the series' own efficiency); the prior as it is without classes or a
    shortfall. The stored fit keeps the result, so it does not depend on the file's classes later."""
    if not prior or not prior.get("classes"):
        return prior
    out = {k: v for k, v in prior.items() if k != "classes"}
    e = efficiency(shortfall)
    if e is None:
        return out
    classes = sorted(prior["classes"], key=lambda c: -float(c["efficiency_min"]))
    for i, c in enumerate(classes):
        if e >= float(c["efficiency_min"]) - 1e-12 or i == len(classes) - 1:
            out.update({k: c[k] for k in CLASS_FIELDS if k in c})
            out["corpus_kappa"] = dict(prior["kappa"])  # a first or unknown crossing takes it when larger
            top = float(classes[i - 1]["efficiency_min"]) if i else None
            out["scaling_class"] = {
                "name": c.get("name", ""),
                "efficiency_min": float(c["efficiency_min"]),
                "efficiency_below": top,
                "efficiency": e,
                "n_series": c.get("n_series"),
                "n_sources": c.get("n_sources"),
            }
            return out
    return out


def load_prior(path: str | Path | None = None) -> dict:
    """The prior as stored with a fit's intervals: κ per crossing, pseudo-configurations, and where it
    came from (sources, date, series)."""
    d = _load(str(path or PRIOR_FILE))
    keep = (
        "format",
        "kappa",
        "pseudo_configurations",
        "band_scale",
        "few_dof_band_scale",
        "structure_scale",
        "shortfall_scale",
        "efficiency_slack",
        "internode",
        "law_rule",
        "noise",
        "level",
        "classes",
        "n_series",
        "n_splits",
        "created",
        "sources",
    )
    return {k: d[k] for k in keep if k in d}


#: GPUs per node guessed when ``p`` counts GPUs (or accelerators) and neither ``nodes`` nor
#: ``gpus_per_node`` is given: eight, as in a DGX/HGX node and most cloud GPU nodes (every GPU system of
#: the corpus's MLPerf, LLM and TF CNN series with a stated node size has 4 or 8; it is shown as a guess).
GUESSED_GPUS_PER_NODE = 8
_ACCELERATOR = re.compile(r"gpu|accel|device|tpu|chip|hpu", re.I)


def counts_accelerators(column) -> bool:
    """True when a column of workers names GPUs or other accelerators (``gpus``, ``accelerators``,
    ``tpu_chips``…), not CPU machines or ranks."""
    return bool(_ACCELERATOR.search(str(column)))


def guessed_gpus_per_node(meas: Measurements) -> float | None:
    """:data:`GUESSED_GPUS_PER_NODE` when ``p``'s column names GPUs or accelerators and neither a
    ``nodes`` column nor the GPUs per node is given; else None."""
    if "p" not in meas.factors or "nodes" in meas.factors or meas.gpus_per_node:
        return None
    return float(GUESSED_GPUS_PER_NODE) if counts_accelerators(meas.factors["p"]) else None


def with_topology(meas: Measurements, gpus_per_node: float | None = None) -> Measurements:
    """``meas`` with where its runs ran mapped as topology: a ``nodes`` column as it is; else the GPUs per
    node given (``gpus_per_node``; 0: unknown, nothing is assumed) or guessed (:func:`guessed_gpus_per_node`)
    make a column ``nodes`` = ceil(p / GPUs per node), the GPUs per node kept with it, so a target spans
    the nodes it would and a crossing is told the same way everywhere."""
    if "nodes" in meas.factors or "p" not in meas.factors or gpus_per_node == 0:
        return meas
    if gpus_per_node is not None:
        try:
            g = float(gpus_per_node)
        except (TypeError, ValueError):
            g = float("nan")
        if not (math.isfinite(g) and 1 <= g <= 1e9):
            raise PerfModelError(f"GPUs per node must be a number from 1 to 1e9, got {gpus_per_node!r}")
        return meas.with_nodes(g)
    guess = guessed_gpus_per_node(meas)
    return meas if guess is None else meas.with_nodes(guess, guessed=True)


def topology(meas: Measurements, gpus_per_node: float | None = None) -> dict | None:
    """How node crossings are told for targets of a fit on ``meas``: the ``nodes`` factor when mapped,
    else ``gpus_per_node`` with ``p`` (given, or :data:`GUESSED_GPUS_PER_NODE` when ``p``'s column
    names GPUs or accelerators, flagged ``guessed``), else None (unknown; ``gpus_per_node=0`` says so
    without a guess)."""
    if "nodes" in meas.factors:
        g, how = meas.node_topology()
        return {
            "nodes_symbol": "nodes",
            "gpus_per_node": g,
            "max_nodes": float(np.max(meas.values("nodes"))),
            "guessed": how == "a guess",
            "from_column": how == "the nodes column",
        }
    if gpus_per_node is None and meas.gpus_per_node:
        gpus_per_node = meas.gpus_per_node
    if "p" not in meas.factors or gpus_per_node == 0:
        return None
    guessed = gpus_per_node is None
    if gpus_per_node is None:  # guessed
        if not counts_accelerators(meas.factors["p"]):
            return None
        gpus_per_node = GUESSED_GPUS_PER_NODE
    try:
        k = float(gpus_per_node)
    except (TypeError, ValueError):
        k = float("nan")
    if not (math.isfinite(k) and k >= 1):
        raise PerfModelError(f"GPUs per node must be a number >= 1, got {gpus_per_node!r}")
    return {
        "nodes_symbol": None,
        "gpus_per_node": k,
        "max_nodes": float(np.ceil(np.max(meas.values("p")) / k)),
        "guessed": guessed,
    }


def describe(topo: dict | None) -> str:
    """One line on how node crossings are told, for the CLI, the report and the app."""
    if not topo:
        return (
            "topology unknown: map a nodes column or give the GPUs per node (--gpus-per-node) to tell "
            "targets on more nodes than measured"
        )
    if topo.get("nodes_symbol") and not topo.get("gpus_per_node"):
        return f"nodes from the {topo['nodes_symbol']} column; measured on up to {topo['max_nodes']:g} node(s)"
    how = (
        "guessed; set it with --gpus-per-node"
        if topo.get("guessed")
        else "from the nodes column"
        if topo.get("from_column")
        else "given"
    )
    return f"{topo['gpus_per_node']:g} GPUs per node ({how}); measured on up to {topo['max_nodes']:g} node(s)"
