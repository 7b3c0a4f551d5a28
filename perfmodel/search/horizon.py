"""The choice sees where the model is used: a candidate must not let a term the data cannot see
decide its prediction at a standard horizon beyond the data.

The L1 penalty and the validation weigh a term by its effect inside the measured range. A term
whose share of the time there is below the fit's own error (its CV MAPE: the data cannot tell it
from noise) but that carries most of the prediction (more than half) two doublings beyond the
largest measured scale is an extrapolation the data does not support: ``c0 + c1/p + c2·p`` with the
``p`` term at 0.6 % of the measured time and half of the prediction at 4× the GPUs. Such a
candidate is set aside before the choice among those within noise (see
:func:`perfmodel.search.select._choose`). Both thresholds are scale-free (the fit's own relative
error; a majority), not constants tuned to a dataset.

The horizon (:func:`perfmodel.fitting.reach.horizon_env`, where the penalty can weigh the terms
too): the configurations at the largest measured scale times :data:`HORIZON_FACTOR`, the other
factors along their measured trends with it.

The same fit is also asked whether it **turns the time around** within the horizon: where the measured
time of every configuration fell at each of the last two steps of the scale (a job whose small
configurations already slow down, as with a ``0.25·p`` term, shows its reversal and is not concerned),
a candidate whose median prediction at the horizon is above its own at the largest measured scale
predicts a reversal the data do not show (:func:`fell_at_the_end`, :func:`rise_beyond`;
``1/p + (p-1)/p² + p^1.5·log2(p)`` on an LLM series measured at 8–256 GPUs fits within 1.1 % and
predicts 1,771 s at 1,024 GPUs where 430 s were measured).
On the corpus (``benchmarks/corpus.py``, 2026-12-05) the held-out time rose above the last measured one
on 2 of the 334 splits whose training time fell at each of its last two doublings (0.7 % of their
rows): such a reversal is rare enough to need a measurement. It is set aside like the unseen term.

Measured on the 754 extrapolation splits of ``benchmarks/extrapolation.py`` (12 sources, trained on
the smaller scales, 1-3 doublings beyond): the median error of ``--auto`` fell on MLPerf (28.9 → 22 %
on a seeded half) and the LLM series, no family's median rose, and the result is the same with the
horizon at 2×, 4× or 8× the largest scale and with the score instead of the CV error as the noise.

Imports from the data and fitting layers only; the fits are :func:`perfmodel.search.refine.horizon_task`'s.
"""

from __future__ import annotations

import numpy as np

from ..data.measurements import Measurements
from ..fitting.reach import HORIZON_FACTOR, horizon_env, scale_symbol  # noqa: F401 (the search's horizon)

#: A term "carries" the prediction at the horizon when its share there is above this (a majority).
DOMINANT_SHARE = 0.5


def term_shares(contributions: np.ndarray) -> np.ndarray:
    """Mean share of each term in the time over the rows of ``contributions`` (n, K): |c_k| / Σ|c|."""
    c = np.abs(np.asarray(contributions, float))
    total = c.sum(axis=1, keepdims=True)
    total[~(total > 0)] = 1.0
    return (c / total).mean(axis=0)


def unseen_dominant(share_in: np.ndarray, share_h: np.ndarray, error: float) -> list[int]:
    """Positions of the terms whose share in the measured range is below ``error`` (the fit's
    relative error, a fraction) and whose share at the horizon is above :data:`DOMINANT_SHARE`."""
    share_in, share_h = np.asarray(share_in, float), np.asarray(share_h, float)
    if share_in.shape != share_h.shape or not np.isfinite(error):
        return []
    return [int(i) for i in np.flatnonzero((share_in < error) & (share_h > DOMINANT_SHARE))]


def fell_at_the_end(meas: Measurements) -> bool:
    """Whether the measured time fell at each of the last two steps of the scale (``p``, else ``N``) in
    every configuration measured at all three: the runs alike in the factors that vary independently of
    the scale (one that takes a single value at each scale, as nodes or a global batch growing with the
    GPUs, moves with it), their geometric mean at each value."""
    sym = scale_symbol(meas)
    if sym is None:
        return False
    scale, y = meas.values(sym), np.asarray(meas.y, float)
    last = np.unique(scale)[-3:]
    if len(last) < 3 or not np.all(y > 0):
        return False
    free = [
        s
        for s in meas.factors
        if s != sym and any(len(np.unique(meas.values(s)[scale == v])) > 1 for v in np.unique(scale))
    ]
    keys = [tuple(row) for row in np.column_stack([meas.values(s) for s in free])] if free else [()] * len(y)
    seen = 0
    for key in set(keys):
        rows = np.array([k == key for k in keys])
        if not all(np.any(rows & (scale == v)) for v in last):
            continue
        g = [float(np.mean(np.log(y[rows & (scale == v)]))) for v in last]
        if not g[2] < g[1] < g[0]:
            return False
        seen += 1
    return seen > 0


def rise_beyond(at_top: np.ndarray, at_horizon: np.ndarray) -> float:
    """The median ratio of a fit's predictions at the horizon points to its own at the largest measured
    scale (row for row, as :func:`perfmodel.fitting.reach.horizon_env` builds them); nan without a
    positive, finite pair."""
    with np.errstate(all="ignore"):
        r = np.asarray(at_horizon, float) / np.asarray(at_top, float)
    r = r[np.isfinite(r) & (r > 0)]
    return float(np.median(r)) if len(r) else float("nan")
