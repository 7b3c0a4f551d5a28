"""Where a model is used to predict: the standard horizon beyond the measurements.

A fit is judged where it was measured, but used beyond: the next scale up. :func:`horizon_env` gives
the configurations at the largest measured scale (``p``, else ``N``) times :data:`HORIZON_FACTOR`,
every other factor along its measured log-log trend with the scale (a global batch that grows with
the GPUs grows with them; a factor varied independently of the scale stays where it was). The
automatic search sets aside a candidate whose prediction there rests on a term the data cannot see
(:mod:`perfmodel.search.horizon`), and the penalty weighs each term by its effect there as well as
where measured (:func:`reach_weights`, ``Model(penalty_reach="horizon")``).

Imports from the data layer only.
"""

from __future__ import annotations

import numpy as np

from ..data.measurements import Measurements

#: The standard horizon: this many times the largest measured scale (two doublings; the
#: benchmark's targets lie 1-3 doublings beyond; 2× and 8× chose alike).
HORIZON_FACTOR = 4.0


def scale_symbol(meas: Measurements) -> str | None:
    """The symbol the predictions extrapolate in: ``p``, else ``N`` (varying), else None."""
    for sym in ("p", "N"):
        if sym in meas.factors and len(np.unique(meas.values(sym))) > 1:
            return sym
    return None


def horizon_env(meas: Measurements, factor: float = HORIZON_FACTOR) -> dict[str, np.ndarray] | None:
    """{symbol: values} of the horizon points (see the module doc), or None without a scale."""
    sym = scale_symbol(meas)
    if sym is None:
        return None
    scale = meas.values(sym)
    top = scale == scale.max()
    with np.errstate(divide="ignore", invalid="ignore"):  # a scale of 0: no trend is fitted (all > 0 below)
        log_scale = np.log(scale)
    env = {}
    for s in meas.factors:
        v = meas.values(s)
        if s == sym:
            env[s] = v[top] * factor
            continue
        slope = 0.0
        if np.all(v > 0) and np.all(scale > 0) and np.ptp(v) > 0 and np.ptp(log_scale) > 0:
            slope = float(np.polyfit(log_scale, np.log(v), 1)[0])
        with np.errstate(over="ignore"):  # a trend past the float range: an infinite horizon, weighed 1
            env[s] = v[top] * np.float64(factor) ** slope
    return env


def reach_weights(inside: np.ndarray, at_reach: np.ndarray) -> np.ndarray:
    """How much more a term weighs in the penalty for its effect beyond the measurements: the ratio
    of its mean magnitude at the horizon to that over the measured rows, at least 1 (a term that
    shrinks beyond the data, like 1/p, weighs as where measured). ``inside``: the terms' mean
    magnitudes over the rows (..., K); ``at_reach``: their values at the horizon points (..., K, H).
    Non-finite values weigh 1."""
    with np.errstate(all="ignore"):
        h = np.mean(np.abs(at_reach), axis=-1)
        w = h / inside
    return np.where(np.isfinite(w) & (w > 1), w, 1.0)
