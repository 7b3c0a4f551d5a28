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

Measured on the 754 extrapolation splits of ``benchmarks/extrapolation.py`` (12 sources, trained on
the smaller scales, 1-3 doublings beyond): the median error of ``--auto`` fell on MLPerf (28.9 → 22 %
on a seeded half) and the LLM series, no family's median rose, and the result is the same with the
horizon at 2×, 4× or 8× the largest scale and with the score instead of the CV error as the noise.

Imports from the data and fitting layers only; the fits are :func:`perfmodel.search.refine.horizon_task`'s.
"""

from __future__ import annotations

import numpy as np

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
