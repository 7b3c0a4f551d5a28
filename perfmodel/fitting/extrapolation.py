"""How far an extrapolation goes, and how much wider it must be: the population prior's formulas.

The plain functions :class:`perfmodel.fitting.members.Uncertainty` evaluates a stored fit with, and that
``scripts/learn_prior.py`` uses as they are to learn the prior from the corpus: the series' own evidence
and its combination with the population's κ, the scaling shortfall that tells a series' scaling class,
the widening per doubling, the node crossing of a target, and how far the reference structures reach
around the model's prediction.

Imports numpy and scipy only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri, stdtrit  # normal and Student-t quantiles (scipy.stats costs 0.6 s to import)

DEFAULT_LEVEL = 0.9


def normal_quantile(level: float) -> float:
    """z such that a normal variable lies within ±z standard deviations with probability ``level``."""
    return float(ndtri(0.5 + level / 2))


_Z90 = normal_quantile(DEFAULT_LEVEL)


#: Where a target stands against the measured nodes: on no more nodes than measured, on more (a
#: multi-node target from single-node data too), or unknown (the topology was not given).
CROSSINGS = ("same_nodes", "crosses_nodes", "unknown")
#: Degrees of freedom of the noise estimate below which a fit's band takes the prior's
#: ``few_dof_band_scale`` (the stated prior noise, no degrees of freedom, among them): with one or two
#: the Student-t quantile of the 90 % band is 6.3 or 2.9 times the noise, where 1.64 would do with the
#: noise known, and the corpus's series of two or three scales, of few or no repeats, were covered
#: 97-100 % of the time. A round number: the 90 % quantile at 3 is 2.35, 1.4 times the normal's.
FEW_NOISE_DOF = 3


#: :class:`perfmodel.fitting.members.Noise` sources the data gave (else the stated prior)
OWN_NOISE_SOURCES = ("residuals", "repeats")


def few_noise_dof(source: str, df) -> bool:
    """True when a fit's noise is the stated prior or rests on fewer than :data:`FEW_NOISE_DOF`
    degrees of freedom (``source``, ``df``: :class:`perfmodel.fitting.members.Noise`'s)."""
    return source == "prior" or df is None or not (float(df) >= FEW_NOISE_DOF)


def moderated_noise(sigma, df, prior_sigma: float, prior_df: float):
    """(σ, degrees of freedom) of a fit's noise combined with the population's prior on it (Smyth
    2004, limma's moderated variance): the prior is a scaled inverse-χ² with ``prior_df`` pseudo-degrees
    of freedom about ``prior_sigma``², the fit's own estimate ``sigma`` rests on ``df``; the posterior
    variance is their degrees-of-freedom-weighted mean, on ``df + prior_df``. ``df`` 0 or NaN (no
    estimate: the stated prior noise): the population's own. Broadcasts over arrays."""
    s, d = np.asarray(sigma, float), np.nan_to_num(np.asarray(df, float), nan=0.0)
    var = (prior_df * prior_sigma**2 + d * s**2) / (prior_df + d)
    if np.ndim(var) == 0:
        return float(np.sqrt(var)), float(prior_df + d)
    return np.sqrt(var), prior_df + d


def series_evidence(points) -> tuple[float, int]:
    """(Σ max(e² − b², 0) / d², n) of a series' own calibration points [e, b_low, b_high, d]: the
    extrapolation error its larger-scale splits showed beyond their un-widened bands, per doubling²."""
    pts = np.asarray(points, float).reshape(-1, 4)
    if not len(pts):
        return 0.0, 0
    e, b_lo, b_hi, d = pts.T
    b = np.where(e > 0, b_hi, b_lo) / _Z90  # spreads of the un-widened bands
    return float(np.sum(np.maximum(e**2 - b**2, 0.0) / d**2)), len(pts)


def combined_kappa(kappa_population: float, pseudo_configurations: float, evidence: float, n: int) -> float:
    """Spread of the extrapolation error per doubling, the population's prior and the series combined:
    ``κ² = (n0·κ_pop² + Σ max(e² − b², 0)/d²) / (n0 + n)`` — ``n0`` pseudo-configurations of the
    population against the series' ``n`` larger-scale configurations, so a 3-configuration series
    (one calibration point) leans on the population and a 12-configuration one on itself."""
    n0 = max(float(pseudo_configurations), 0.0)
    if n0 + n <= 0:
        return float(kappa_population)
    return math.sqrt((n0 * kappa_population**2 + evidence) / (n0 + n))


def scaling_shortfall(p, y) -> float | None:
    """How far the last measured doubling fell short of perfect strong scaling: ``u = 1 + s``, ``s`` the
    log-log slope of the mean time between the two largest measured worker counts ``p``, clipped to
    [0, 2] (0: the time fell as 1/p; 1: it stayed flat; 2: it grew as p). The corpus's series that
    still scaled well where measured kept doing so beyond; those that had stopped are the ones whose
    extrapolations went astray (scripts/learn_prior.py learns how much wider their band must be).
    None with fewer than two worker counts or a time that is not positive."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    vals = np.unique(p[np.isfinite(p)])
    if len(vals) < 2 or not (vals[-2] > 0):
        return None
    with np.errstate(all="ignore"):
        top, prev = float(np.mean(y[p == vals[-1]])), float(np.mean(y[p == vals[-2]]))
        slope = (
            (math.log(top) - math.log(prev)) / (math.log(vals[-1]) - math.log(vals[-2]))
            if top > 0 and prev > 0
            else float("nan")
        )
    return float(min(max(1.0 + slope, 0.0), 2.0)) if math.isfinite(slope) else None


def noise_quantile(sigma, df, level: float):
    """The log half-width of one run's noise at ``level``: σ times the Student-t quantile at ``df``
    degrees of freedom (normal where ``df`` is None, 0 or NaN, the stated prior); element-wise on arrays."""
    sigma, df = np.asarray(sigma, float), np.asarray(np.nan if df is None else df, float)
    known = np.isfinite(df) & (df > 0)
    z = np.where(known, stdtrit(np.where(known, df, 1.0), 0.5 + level / 2), normal_quantile(level))
    return sigma * z


def widen_band(half: np.ndarray, kappa: np.ndarray | float, d: np.ndarray, level: float) -> np.ndarray:
    """A band's log half-width ``half`` widened for extrapolation: ``sqrt(half² + (z·κ·d)²)``."""
    return np.sqrt(half**2 + (normal_quantile(level) * kappa * d) ** 2)


def structure_reach(shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(below, above), shape (n,) each: how far the reference structures reach below and above the
    model's prediction, from their log shifts (J, n) around it (NaN: a structure left out there). The
    model's own prediction (shift 0) is among them, so both are >= 0. The point prediction is always
    the model's: the structures are evidence that widens its band, never the number."""
    a = np.vstack([np.zeros(np.shape(shifts)[-1]), np.reshape(shifts, (-1, np.shape(shifts)[-1]))])
    with np.errstate(all="ignore"):
        return np.maximum(-np.nanmin(a, axis=0), 0.0), np.maximum(np.nanmax(a, axis=0), 0.0)


def beyond_p(factor_ranges: dict, env: dict) -> np.ndarray:
    """True where a configuration of ``env`` has more workers ``p`` than were measured: the
    extrapolation the corpus's real series show (train on the smaller scales, predict the larger),
    where the reference structures speak (:meth:`Uncertainty.reference_shifts`); False everywhere
    without a ``p`` factor."""
    n = len(next(iter(env.values()))) if env else 0
    if "p" not in factor_ranges or "p" not in env:
        return np.zeros(n, bool)
    with np.errstate(all="ignore"):
        return np.asarray(env["p"], float) > float(factor_ranges["p"][1]) * (1 + 1e-9)


def crossings(topology: dict | None, env: dict) -> np.ndarray:
    """:data:`CROSSINGS` of each configuration of ``env``: from the ``nodes`` factor when it is mapped,
    else from ``p`` and the GPUs per node, else unknown. ``topology``: {"nodes_symbol", "gpus_per_node",
    "max_nodes"} as :func:`perfmodel.uncertainty.topology` records it at fit time."""
    n = len(next(iter(env.values()))) if env else 0
    out = np.full(n, "unknown", dtype=object)
    if not topology or not topology.get("max_nodes"):
        return out
    with np.errstate(all="ignore"):
        if topology.get("nodes_symbol") and topology["nodes_symbol"] in env:
            nodes = np.asarray(env[topology["nodes_symbol"]], float)
        elif topology.get("gpus_per_node") and "p" in env:
            nodes = np.ceil(np.asarray(env["p"], float) / float(topology["gpus_per_node"]))
        else:
            return out
    return np.where(nodes > float(topology["max_nodes"]) + 1e-9, "crosses_nodes", "same_nodes").astype(object)


def extended(topology: dict | None, env: dict, j: int) -> dict | None:
    """``topology`` after measuring configuration ``j`` of ``env`` (its nodes join the measured ones)."""
    if not topology or not topology.get("max_nodes"):
        return topology
    if topology.get("nodes_symbol") and topology["nodes_symbol"] in env:
        nodes = float(np.asarray(env[topology["nodes_symbol"]], float)[j])
    elif topology.get("gpus_per_node") and "p" in env:
        nodes = float(np.ceil(float(np.asarray(env["p"], float)[j]) / float(topology["gpus_per_node"])))
    else:
        return topology
    return {**topology, "max_nodes": max(float(topology["max_nodes"]), nodes)}


#: Symbols along which the work per run does not change (the workers and where they run): the GPU-seconds
#: of a run, time × p, are comparable between configurations that differ in these only.
FIXED_WORK_FREE = ("p", "nodes")


#: most rows an efficiency reference keeps (one per combination of the other factors); beyond it the
#: work hardly repeats over worker counts, and the bound is left out (the model file's limit too)
MAX_EFFICIENCY_ROWS = 2500


def efficiency_reference(env: dict, y, symbols) -> dict | None:
    """The least GPU-seconds (mean time × p over a configuration's repeats) measured for each
    combination of the other factors ``symbols`` (all but :data:`FIXED_WORK_FREE`): the best parallel
    efficiency the measurements showed, per amount of work. {"symbols": [...], "rows": [[values...,
    least p·T], ...]}; None without a factor ``p`` or with more than :data:`MAX_EFFICIENCY_ROWS`
    combinations."""
    if "p" not in env:
        return None
    p = np.asarray(env["p"], float)
    y = np.asarray(y, float)
    others = [s for s in symbols if s not in FIXED_WORK_FREE and s in env]
    keys = np.column_stack([np.asarray(env[s], float) for s in others]) if others else np.zeros((len(p), 0))
    cfg, inv = np.unique(np.column_stack([keys, p]), axis=0, return_inverse=True)
    inv = inv.ravel()
    with np.errstate(all="ignore"):  # times near the float limit: GPU-seconds beyond it are not kept
        means = np.bincount(inv, weights=y, minlength=len(cfg)) / np.bincount(inv, minlength=len(cfg))
        tp = means * cfg[:, -1]
    ok = np.isfinite(tp) & (tp > 0)
    work, group = np.unique(cfg[ok, :-1], axis=0, return_inverse=True)
    if not len(work) or len(work) > MAX_EFFICIENCY_ROWS:
        return None
    least = np.full(len(work), np.inf)
    np.minimum.at(least, group.ravel(), tp[ok])
    rows = [[float(v) for v in key] + [float(t)] for key, t in zip(work, least, strict=True)]
    return {"symbols": others, "rows": rows}


def efficiency_floor(reference: dict | None, env: dict) -> np.ndarray:
    """The shortest time at each configuration of ``env`` that keeps the parallel efficiency at or below
    the best measured for the same work: least measured GPU-seconds / p (NaN where no configuration with
    the same other factors was measured, or without a reference)."""
    n = len(next(iter(env.values()))) if env else 0
    out = np.full(n, np.nan)
    if not reference or "p" not in env:
        return out
    p = np.asarray(env["p"], float)
    syms = list(reference.get("symbols") or [])
    if any(s not in env for s in syms):
        return out
    keys = np.column_stack([np.asarray(env[s], float) for s in syms]) if syms else np.zeros((n, 0))
    for row in reference.get("rows") or []:
        key, tp = np.asarray(row[:-1], float), float(row[-1])
        sel = np.all(np.isclose(keys, key[None, :], rtol=1e-9, atol=0.0), axis=1) if syms else np.ones(n, bool)
        with np.errstate(all="ignore"):
            out = np.where(sel, tp / p, out)
    return out
