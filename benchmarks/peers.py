"""Reference re-implementations of two peers' own models *and their own fitting*.

Written from reading the published code (reference only, not copied):

* **Pollux** (AdaptDL, OSDI'21; petuum/adaptdl ``adaptdl/adaptdl/goodput.py``: ``PerfParams``,
  ``fit_perf_params``, ``_obj_fn``, ``_predict*``). Per optimiser step, for K replicas on
  ``nodes`` nodes with local (per-replica) batch m::

      T_compute = α_c + β_c·m
      T_network = α_n + β_n·max(K−2, 1e-8)   if nodes > 1   (inter-node)
                  α_r + β_r·max(K−2, 1e-8)   elif K > 1     (intra-node)
                  1e-8 + 1e-8·max(K−2, 1e-8) else           (one replica: no network)
      T_step    = (T_compute^γ + T_network^γ)^(1/γ),   γ in [1, 10]

  fitted as AdaptDL does: start (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001), lower bounds 1e-8
  (γ: 1), upper ∞ (γ: 10); the constants the data cannot identify are pinned (α_c = half the
  mean compute time when only one local batch size was seen; α_n, β_n at their lower bound
  without multi-node runs; α_r, β_r without single-node multi-replica runs; β_n, β_r without
  runs of more than 2 replicas); objective = RMSE of log step time + RMSE of log compute time
  + 1e-3·(γ−1)² + 1e-2·((β_n/α_n)² + (β_r/α_r)²), minimised by L-BFGS-B (AdaptDL takes the
  gradient from autograd; here it is written out by hand and checked against finite differences
  in ``tests/test_accuracy_slice.py``; the pinned constants are left out of the optimisation
  instead of being given equal bounds).

  What our data lacks, and how it is filled in: AdaptDL profiles the compute time of every
  configuration separately; end-to-end run times only show it at one replica, where
  T_step = T_compute (no network). So the compute error uses the single-replica configurations
  (none: it is left out), and the pinned α_c uses their mean step time (none: the smallest
  step time, an upper bound on compute). Accumulation steps are 0. ``nodes`` is the frame's
  ``nodes`` column when there is one (MLPerf), else 1 (the brief's rule; the TF CNN K80 cluster
  spans 8 nodes but records no node count).

* **Optimus** (EuroSys'18; pengyanghua/optimus ``scheduler/estimator.py``,
  ``_sync_speed_curve_fitting``): synchronous training speed in steps per second
  ``1/speed = a·B/w + b + c·w/s + d·w + e·s`` (B global batch, w workers, s parameter servers),
  fitted with ``scipy.optimize.curve_fit`` on the speeds themselves (absolute residuals, sigma = 1,
  bounds [0, ∞) — hence the trust-region-reflective solver — from all-ones start values). Our data
  is all-reduce without servers, so the server terms c·w/s and e·s drop out:
  ``1/speed = a·B/w + b + d·w``.

Both fit step times per configuration (the mean over its repeated runs; Optimus averages speeds),
step time = time / iterations with perfmodel's iteration count (E·ceil(N/(p·b)); without N it is
known only up to a constant, ∝ E/B, and the step times are then rescaled so their median is
0.1 s — the scale Pollux's start values were made for; both fits are scale-free otherwise up to
the 1e-8 bounds). Predicted time = iterations × predicted step time.
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit, minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import Measurements  # noqa: E402

#: median step time (s) the step times are rescaled to when the iteration count is relative
RELATIVE_STEP_SCALE = 0.1
PARAMS = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")
_EPS = 1e-8


# ----------------------------------------------------------------------------------------
# the configuration of each row, from the mapped factors
# ----------------------------------------------------------------------------------------
def workers(meas: Measurements) -> np.ndarray:
    return meas.values("p") if "p" in meas.factors else np.ones(meas.n_rows)


def local_batch(meas: Measurements) -> np.ndarray:
    """Per-worker batch m: ``b``, else ``B/p``, else 1 (not recorded: one constant size)."""
    if "b" in meas.factors:
        return meas.values("b")
    if "B" in meas.factors:
        return meas.values("B") / workers(meas)
    return np.ones(meas.n_rows)


def global_batch(meas: Measurements) -> np.ndarray:
    return local_batch(meas) * workers(meas)


def nodes(meas: Measurements) -> np.ndarray:
    """The frame's ``nodes`` column when it has one, else 1 (one node)."""
    if "nodes" in meas.frame.columns:
        return pd.to_numeric(meas.frame["nodes"], errors="coerce").fillna(1).to_numpy(float)
    return np.ones(meas.n_rows)


def iterations(meas: Measurements) -> tuple[np.ndarray, bool]:
    """(optimiser steps of each run, whether the count is absolute).

    As :func:`perfmodel.terms.iterations`: E·ceil(N/(p·b)) (or E·ceil(N/B)); without a batch
    E·N/p; without N only ∝ E/(p·b) (relative: False)."""
    E = meas.values("E") if "E" in meas.factors else np.ones(meas.n_rows)
    has_batch = "b" in meas.factors or "B" in meas.factors
    if "N" in meas.factors:
        N = meas.values("N")
        if has_batch:
            return E * np.ceil(N / global_batch(meas)), True
        return E * N / workers(meas), False
    return E / global_batch(meas) if has_batch else E / workers(meas), False


@dataclass
class StepTable:
    """One row per configuration: nodes, replicas K, local batch m, global batch, step time."""

    nodes: np.ndarray
    replicas: np.ndarray
    local_bsz: np.ndarray
    global_bsz: np.ndarray
    step_time: np.ndarray
    speed: np.ndarray  # mean of 1/step over the repeats (Optimus averages speeds)


def _config_arrays(meas: Measurements):
    return nodes(meas), workers(meas), local_batch(meas), global_batch(meas)


def step_table(meas: Measurements, scale: float) -> StepTable:
    it, _ = iterations(meas)
    step = meas.y / it * scale
    n, K, m, B = _config_arrays(meas)
    f = pd.DataFrame({"n": n, "K": K, "m": m, "B": B, "t": step, "s": 1 / step})
    g = f.groupby(["n", "K", "m", "B"], sort=True).agg(t=("t", "mean"), s=("s", "mean")).reset_index()
    return StepTable(*(g[c].to_numpy(float) for c in ("n", "K", "m", "B", "t", "s")))


def step_scale(meas: Measurements) -> float:
    """Factor that turns (time / iterations) into the step times the peers are fitted on."""
    it, absolute = iterations(meas)
    if absolute:
        return 1.0
    return RELATIVE_STEP_SCALE / float(np.median(meas.y / it))


# ----------------------------------------------------------------------------------------
# Pollux
# ----------------------------------------------------------------------------------------
def pollux_step(theta, nodes_, replicas, local_bsz) -> np.ndarray:
    """Pollux's predicted step time (seconds) for parameters ``theta`` (order :data:`PARAMS`)."""
    return np.exp(_pollux_parts(np.asarray(theta, float), nodes_, replicas, local_bsz)[0])


def _pollux_parts(theta, nodes_, replicas, local_bsz):
    ac, bc, an, bn, ar, br, g = theta
    nodes_, K, m = (np.asarray(v, float) for v in (nodes_, replicas, local_bsz))
    inter = nodes_ > 1
    intra = ~inter & (K > 1)
    retro = np.maximum(K - 2, _EPS)
    C = ac + bc * m
    Nt = np.where(inter, an + bn * retro, np.where(intra, ar + br * retro, _EPS + _EPS * retro))
    logC, logN = np.log(C), np.log(Nt)
    logS = np.logaddexp(g * logC, g * logN)
    logT = logS / g
    return logT, logC, logN, logS, C, m, inter, intra, retro


def _pollux_objective(theta, tab: StepTable, compute_rows: np.ndarray, compute_time: np.ndarray):
    """(objective, gradient) of AdaptDL's ``_obj_fn`` in all 7 parameters."""
    ac, bc, an, bn, ar, br, g = theta
    logT, logC, logN, logS, C, m, inter, intra, retro = _pollux_parts(theta, tab.nodes, tab.replicas, tab.local_bsz)
    grad = np.zeros(7)
    # error of total step time (log), RMSE
    e = logT - np.log(tab.step_time)
    r1 = math.sqrt(float(np.mean(e ** 2)))
    dT_dC = np.exp((g - 1) * logC - logS)
    dT_dN = np.exp((g - 1) * logN - logS)
    wC, wN = np.exp(g * logC - logS), np.exp(g * logN - logS)
    dT_dg = -logS / g ** 2 + (wC * logC + wN * logN) / g
    d = np.stack([dT_dC, dT_dC * m, dT_dN * inter, dT_dN * inter * retro, dT_dN * intra,
                  dT_dN * intra * retro, dT_dg])
    if r1 > 0:
        grad += (d @ e) / len(e) / r1
    obj = r1
    # error of compute time (log), RMSE, where it is observed
    if compute_rows.any():
        Cc, mc = C[compute_rows], m[compute_rows]
        e2 = np.log(Cc) - np.log(compute_time)
        r2 = math.sqrt(float(np.mean(e2 ** 2)))
        obj += r2
        if r2 > 0:
            grad[0] += float(np.mean(e2 / Cc)) / r2
            grad[1] += float(np.mean(e2 * mc / Cc)) / r2
    # AdaptDL's regularisation: towards γ = 1, and against retrogression
    obj += 1e-3 * (g - 1) ** 2 + 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
    grad[6] += 2e-3 * (g - 1)
    grad[2] += -2e-2 * bn ** 2 / an ** 3
    grad[3] += 2e-2 * bn / an ** 2
    grad[4] += -2e-2 * br ** 2 / ar ** 3
    grad[5] += 2e-2 * br / ar ** 2
    return obj, grad


@dataclass
class PolluxFit:
    params: dict  # name -> value (step times in the fitted unit; see ``scale``)
    pinned: tuple  # names of the pinned parameters
    scale: float  # fitted step time = (time / iterations) * scale
    success: bool
    message: str

    @property
    def theta(self) -> np.ndarray:
        return np.array([self.params[p] for p in PARAMS])

    def predict(self, meas: Measurements) -> np.ndarray:
        n, K, m, _ = _config_arrays(meas)
        it, _ = iterations(meas)
        return pollux_step(self.theta, n, K, m) / self.scale * it

    @property
    def expression(self) -> str:
        p = self.params
        return (f"T_step=((α_c {p['alpha_c']:.3g}+β_c {p['beta_c']:.3g}·m)^γ + T_net^γ)^(1/γ), "
                f"α_r {p['alpha_r']:.3g} β_r {p['beta_r']:.3g} α_n {p['alpha_n']:.3g} β_n {p['beta_n']:.3g} "
                f"γ {p['gamma']:.3g}; pinned {','.join(self.pinned) or '-'}")


def fit_pollux_table(tab: StepTable, scale: float = 1.0) -> PolluxFit:
    """AdaptDL's ``fit_perf_params`` on a step table (see the module doc)."""
    x0 = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lower = np.array([1e-8, 1e-8] * 3 + [1.0])
    upper = np.array([np.inf, np.inf] * 3 + [10.0])
    compute_rows = tab.replicas == 1  # T_step = T_compute there: the compute time is observed
    compute_time = tab.step_time[compute_rows]
    fixed = np.zeros(7, bool)
    if len(np.unique(tab.local_bsz)) == 1:
        x0[0] = (np.mean(compute_time) if compute_rows.any() else np.min(tab.step_time)) / 2
        fixed[0] = True
    if not np.any(tab.nodes > 1):
        x0[2], x0[3] = lower[2], lower[3]
        fixed[[2, 3]] = True
    if not np.any((tab.nodes == 1) & (tab.replicas > 1)):
        x0[4], x0[5] = lower[4], lower[5]
        fixed[[4, 5]] = True
    if not np.any(tab.replicas > 2):
        x0[3], x0[5] = lower[3], lower[5]
        fixed[[3, 5]] = True
    free = ~fixed

    def fun(z):
        theta = x0.copy()
        theta[free] = z
        obj, grad = _pollux_objective(theta, tab, compute_rows, compute_time)
        return obj, grad[free]

    with np.errstate(all="ignore"):
        res = minimize(fun, x0[free], jac=True, method="L-BFGS-B", bounds=list(zip(lower[free], upper[free])))
    theta = x0.copy()
    theta[free] = res.x
    return PolluxFit(dict(zip(PARAMS, map(float, theta))), tuple(p for p, f in zip(PARAMS, fixed) if f), scale,
                     bool(res.success), str(res.message))


def fit_pollux(meas: Measurements) -> PolluxFit:
    scale = step_scale(meas)
    return fit_pollux_table(step_table(meas, scale), scale)


# ----------------------------------------------------------------------------------------
# Optimus
# ----------------------------------------------------------------------------------------
def _optimus_speed(X, a, b, d):
    w, B = X
    return 1 / (a * B / w + b + d * w)


@dataclass
class OptimusFit:
    params: dict  # a, b, d (steps in the fitted unit; see ``scale``)
    scale: float

    def predict(self, meas: Measurements) -> np.ndarray:
        _, w, _, B = _config_arrays(meas)
        it, _ = iterations(meas)
        p = self.params
        return (p["a"] * B / w + p["b"] + p["d"] * w) / self.scale * it

    @property
    def expression(self) -> str:
        p = self.params
        return f"1/speed = {p['a']:.3g}·B/w + {p['b']:.3g} + {p['d']:.3g}·w"


def fit_optimus_table(tab: StepTable, scale: float = 1.0) -> OptimusFit:
    """Optimus's ``_sync_speed_curve_fitting`` without servers; raises RuntimeError/ValueError when
    curve_fit fails (Optimus logs the error and has no estimate)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # OptimizeWarning: covariance of unidentifiable constants
        popt, _ = curve_fit(_optimus_speed, (tab.replicas, tab.global_bsz), tab.speed, sigma=np.ones(len(tab.speed)),
                            absolute_sigma=False, bounds=([0, 0, 0], [np.inf] * 3))
    return OptimusFit(dict(zip("abd", map(float, popt))), scale)


def fit_optimus(meas: Measurements) -> OptimusFit:
    scale = step_scale(meas)
    return fit_optimus_table(step_table(meas, scale), scale)
