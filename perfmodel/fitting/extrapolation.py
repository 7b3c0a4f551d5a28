"""How far an extrapolation goes, and how much wider it must be: the population prior's formulas.

The plain functions :class:`perfmodel.fitting.members.Uncertainty` evaluates a stored fit with, and that
``scripts/learn_prior.py`` uses as they are to learn the prior from the corpus: the series' own evidence
and its combination with the population's κ, the scaling shortfall that tells a series' scaling class,
the widening per doubling, the node crossing of a target, and the point rules that make the prediction
from the model and the reference structures.

Imports numpy and scipy only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri  # the normal quantile (scipy.stats costs 0.6 s to import)

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


#: :meth:`Uncertainty.point_rule` values
POINT_RULES = ("model", "structures-median", "structures-only-median", "backtest-best", "backtest-weighted")
#: how each rule but ``model`` makes the point prediction, in words ("the prediction is ...")
POINT_RULE_WORDS = {
    "structures-median": "their median with it",
    "structures-only-median": "their median (the formula's own left out, as for series that had stopped scaling)",
    "backtest-best": "the one of them that extrapolated this series' own larger worker counts best",
    "backtest-weighted": "their mean weighted by how well each extrapolated this series' own larger worker counts",
}
#: the smallest backtest error (log units) the ``backtest-weighted`` rule weighs by: about a run's own
#: noise, below which two structures' errors on a few held-out points say nothing about which is better
BACKTEST_FLOOR = 0.01


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


def widen_band(half: np.ndarray, kappa: np.ndarray | float, d: np.ndarray, level: float) -> np.ndarray:
    """A band's log half-width ``half`` widened for extrapolation: ``sqrt(half² + (z·κ·d)²)``."""
    return np.sqrt(half**2 + (normal_quantile(level) * kappa * d) ** 2)


def structure_terms(
    shifts: np.ndarray, rule: str, scores: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shift, below, above), shape (n,) each, from the reference structures' shifts (J, n) around the
    model's prediction (NaN: a structure left out at that configuration): the point's log shift by
    ``rule`` (:data:`POINT_RULES`) and how far the structures, the model among them, reach below and
    above the shifted point. ``scores``: the backtest errors of the model and the structures, shape
    (J + 1,) or (J + 1, n) (NaN: not scored), which the ``backtest-*`` rules weigh them by; without
    them those rules leave the point where the model puts it."""
    a = np.vstack([np.zeros(np.shape(shifts)[-1]), np.reshape(shifts, (-1, np.shape(shifts)[-1]))])
    with np.errstate(all="ignore"):
        if rule == "structures-median":
            m = np.nanmedian(a, axis=0)
        elif rule == "structures-only-median":  # the model's own prediction only where no structure speaks
            m = np.nanmedian(a[1:], axis=0) if len(a) > 1 else np.zeros(a.shape[1])
            m = np.where(np.isfinite(m), m, 0.0)
        elif rule in ("backtest-best", "backtest-weighted") and scores is not None:
            sc = np.broadcast_to(np.reshape(np.asarray(scores, float), (len(a), -1)), a.shape)
            sc = np.where(np.isfinite(a), sc, np.nan)  # a structure left out at a row is not chosen there
            if rule == "backtest-best":
                best = np.argmin(np.where(np.isfinite(sc), sc, np.inf), axis=0)  # ties, no score: the model
                m = a[best, np.arange(a.shape[1])]
            else:  # inverse mean-square-error weights (Bates & Granger 1969), errors floored at 1 %
                w = np.where(np.isfinite(sc), 1.0 / np.maximum(sc, BACKTEST_FLOOR) ** 2, 0.0)
                w[0] = np.where(w.sum(axis=0) > 0, w[0], 1.0)
                m = np.nansum(w * np.nan_to_num(a), axis=0) / w.sum(axis=0)
        else:
            m = np.zeros(a.shape[1])
        return m, np.maximum(m - np.nanmin(a, axis=0), 0.0), np.maximum(np.nanmax(a, axis=0) - m, 0.0)


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
