"""Checks of what a model file stores beside its members: numbers, the prior, the topology.

One definition each, which the model file's reader (:meth:`perfmodel.fitting.members.Uncertainty`)
and the prior's loader (:mod:`perfmodel.uncertainty.prior`) both apply; a problem comes back as a
sentence naming the key, never as an exception.
"""

from __future__ import annotations

import math

from ..errors import PerfModelError
from .extrapolation import CROSSINGS, MAX_EFFICIENCY_ROWS

MAX_MEMBERS = 50
MAX_SIGMA = 10.0  # relative noise of one run (1000 %)


def is_number(v) -> bool:
    """True for a finite number as a model file holds one: an int or float, not a bool, not text, not NaN."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: what :func:`valid_noise_prior` asks of a prior on the noise, for its messages
NOISE_PRIOR_NEEDS = f"needs sigma (a relative noise > 0 and <= {MAX_SIGMA:g}) and df (pseudo-degrees of freedom > 0)"


def valid_noise_prior(nz) -> bool:
    """True for a population prior on the noise that :meth:`Noise.moderated` can use: {"sigma": a
    relative noise > 0 and <= :data:`MAX_SIGMA`, "df": pseudo-degrees of freedom > 0}."""
    try:
        sigma, df = nz["sigma"], nz["df"]
    except (KeyError, TypeError):
        return False
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (sigma, df))
    return numbers and 0 < sigma <= MAX_SIGMA and 0 < df < 1e12


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def prior_problem(prior) -> str | None:
    """What is wrong with a stored prior (``uncertainty.prior``), or None (also for none): an object
    whose numbers are numbers (types checked, not only values: ``"0.5"`` is text, NaN is not finite)."""
    if prior is None:
        return None
    if not isinstance(prior, dict):
        return f"prior must be an object, got {_short(prior)}"

    def number(v, lo=0.0, hi=1e6):
        return is_number(v) and lo <= v < hi

    kappa = prior.get("kappa")
    if not (
        isinstance(kappa, dict)
        and all(number(kappa.get(c)) for c in CROSSINGS)
        and number(prior.get("pseudo_configurations"))
        and all(
            number(prior.get(key, default))
            for key, default in (
                ("structure_scale", 0.0),
                ("shortfall_scale", 0.0),
                ("band_scale", 1.0),
                ("few_dof_band_scale", 1.0),
                ("efficiency_slack", 0.0),
            )
        )
    ):
        return (
            "prior needs finite numbers κ >= 0 for same_nodes, crosses_nodes and unknown, pseudo_configurations, "
            "structure_scale, shortfall_scale, band_scale, few_dof_band_scale and efficiency_slack"
        )
    if "level" in prior and not (is_number(prior["level"]) and 0 < prior["level"] < 1):
        return f"prior.level is {_short(prior['level'])}; a number between 0 and 1"
    for key in ("n_series", "n_splits"):
        if prior.get(key) is not None and not number(prior[key], 0, 1e12):
            return f"prior.{key} is {_short(prior[key])}; a count"
    if "noise" in prior and not valid_noise_prior(prior["noise"]):
        return f"prior.noise {NOISE_PRIOR_NEEDS}"
    ck = prior.get("corpus_kappa")
    if ck is not None and not (isinstance(ck, dict) and all(number(ck.get(k)) for k in ("crosses_nodes", "unknown"))):
        return "prior.corpus_kappa needs a finite number κ >= 0 for crosses_nodes and unknown"
    c = prior.get("scaling_class")
    if c is not None and not (
        isinstance(c, dict)
        and all(is_number(c.get(k)) for k in ("efficiency_min", "efficiency"))
        and (c.get("efficiency_below") is None or is_number(c["efficiency_below"]))
        and all(c.get(k) is None or number(c[k], 0, 1e12) for k in ("n_series", "n_sources"))
        and isinstance(c.get("name", ""), str)
    ):
        return (
            "prior.scaling_class needs finite numbers efficiency_min and efficiency (efficiency_below a number "
            "or null, n_series and n_sources counts)"
        )
    return None


def topology_problem(topology) -> str | None:
    """What is wrong with a stored topology (``uncertainty.topology``), or None (also for none): an
    object with the nodes' symbol (a name) or the GPUs per node (a number > 0), and the most nodes
    measured (a number > 0)."""
    if topology is None:
        return None
    if not isinstance(topology, dict):
        return f"topology must be an object, got {_short(topology)}"
    for key in ("gpus_per_node", "max_nodes"):
        v = topology.get(key)
        if v is not None and not (is_number(v) and v > 0):
            return f"topology.{key} is {_short(v)}; a positive number"
    sym = topology.get("nodes_symbol")
    if sym is not None and not isinstance(sym, str):
        return f"topology.nodes_symbol is {_short(sym)}; a factor's symbol"
    for key in ("guessed", "from_column"):
        if not isinstance(topology.get(key, False), bool):
            return f"topology.{key} is {_short(topology[key])}; true or false"
    if topology.get("max_nodes") is not None and not (sym or topology.get("gpus_per_node") is not None):
        return "topology needs nodes_symbol or gpus_per_node beside max_nodes"
    if (sym or topology.get("gpus_per_node") is not None) and topology.get("max_nodes") is None:
        return "topology needs max_nodes beside nodes_symbol or gpus_per_node"
    return None


def noise_problem(sigma, df, source, own=None) -> str | None:
    """What is wrong with a noise block (``sigma``, ``df``, ``source``, ``own``), or None: the one
    definition of a usable noise, which a model file's reader (:meth:`Uncertainty._validate`) and the
    fit's own output (:func:`bounded_noise`, before it is written) both apply."""
    if not (is_number(sigma) and 0 <= sigma <= MAX_SIGMA) or (sigma == 0 and source != "residuals"):
        return f"noise.sigma is {sigma!r}; a positive relative noise up to {MAX_SIGMA:g}"
    if df is not None and not (is_number(df) and 0 < df < 1e12):
        return f"noise.df is {df!r}; a positive number of degrees of freedom"
    if own is not None and not (
        len(own) == 2
        and is_number(own[0])
        and 0 <= own[0] <= MAX_SIGMA
        and (own[1] is None or (is_number(own[1]) and 0 < own[1] < 1e12))
    ):
        return f"noise.own is {own!r}; the fit's own relative noise and its degrees of freedom"
    return None


def _efficiency_ref(ref) -> dict | None:
    """A stored efficiency reference, checked: {"symbols": [names], "rows": [[one finite number per
    symbol, a positive number of GPU-seconds], ...]} (at most MAX_EFFICIENCY_ROWS rows); raises ValueError."""
    if ref is None:
        return None
    if not isinstance(ref, dict) or not isinstance(ref.get("symbols"), list) or not isinstance(ref.get("rows"), list):
        raise ValueError("efficiency_ref must hold a list of symbols and a list of rows")
    syms = ref["symbols"]
    if not all(isinstance(x, str) and x.isidentifier() for x in syms) or len(ref["rows"]) > MAX_EFFICIENCY_ROWS:
        raise ValueError(f"efficiency_ref's symbols must be names, its rows at most {MAX_EFFICIENCY_ROWS}")
    rows = []
    for row in ref["rows"]:
        vals = [float(v) for v in row] if isinstance(row, list) and len(row) == len(syms) + 1 else []
        if not vals or not all(math.isfinite(v) for v in vals) or not vals[-1] > 0:
            raise ValueError("an efficiency_ref row needs one finite number per symbol and positive GPU-seconds")
        rows.append(vals)
    return {"symbols": list(syms), "rows": rows}


#: Interval levels accepted: nearer 0 the band has no width (a calibration divides by its z), nearer 1
#: its quantiles leave the replicates and the noise's t quantile grows without bound.
LEVEL_RANGE = (0.01, 0.999)


def check_level(level, what: str = "the interval level") -> float:
    """``level`` as a float in :data:`LEVEL_RANGE`, else a PerfModelError naming ``what`` (e.g. a flag)."""
    try:
        value = float(level)
        ok = LEVEL_RANGE[0] <= value <= LEVEL_RANGE[1]
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        lo, hi = LEVEL_RANGE
        raise PerfModelError(
            f"{what} must be a number between 0 and 1, from {lo:g} to {hi:g} (e.g. 0.9; outside "
            f"that range the interval's quantiles are not finite), got {level!r}"
        )
    return value
