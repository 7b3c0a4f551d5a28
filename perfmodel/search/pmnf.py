"""An Extra-P-like PMNF search: Extra-P's modelers re-implemented on our data, as a fair peer.

Extra-P (extra-p/extrap, BSD-3-Clause) models each parameter on a line of measurements, then
combines the parameters' best terms. ``pmnf_search(meas)`` follows its default modelers:

1. **Measurement lines** (``modelers/multi_parameter/multi_parameter_modeler.py::
   find_best_measurement_points``): for each factor ``x``, the configurations are grouped by the
   values of the other factors, the groups with the most distinct ``x`` values are kept, and the
   mean time of each ``x`` value is averaged over them. Times are per-configuration means, as
   Extra-P's default ``Measure.MEAN``.
2. **Strong scaling** (``fileio/io_helper.py::check_for_strong_scaling``): along a factor, the
   longest group of configurations (ties: the larger total time), ordered by the factor, is
   strong scaling when its mean time strictly falls. Extra-P's default hypotheses only grow with
   ``x``; its single-parameter modeler's option ``allow_negative_exponents`` ("adds negative
   exponents for strong scaling", ``modelers/single_parameter/basic.py``) adds the falling ones.
   By default (``negative_exponents=None``) the option is set when some factor is strong scaling
   (the time of a data-parallel job with a fixed data set falls as ``1/p``), as a user of Extra-P
   would set it for such data; without it no term in ``p`` can describe such a job, and the
   search keeps a constant along ``p``. A factor that an earlier one determines at every configuration
   (``nodes`` = p / 16 in a table of full nodes) gets no line of its own, none running along it with the
   other fixed: it is left to vary along the earlier factor's line (:func:`determined`).
3. **One factor** (``modelers/single_parameter/basic.py::create_default_building_blocks`` and
   ``abstract_base.py::find_best_hypothesis``, ``compare_hypotheses``): hypotheses
   ``c0 + c1·x^(i/j)·log2(x)^k`` for Extra-P's 42 published (i, j, k) triples
   (:data:`EXTRAP_EXPONENTS`), with the option also its 42 negative ones
   (:data:`EXTRAP_NEGATIVE_EXPONENTS`), in Extra-P's order. Logarithms are dropped when a value of
   ``x`` is < 1 (with negative exponents: <= 1, ``are_measurements_log_capable``). Each is fitted by
   least squares and scored by the SMAPE of leave-one-out predictions (Extra-P's default
   ``use_crossvalidation``; a constant below 0.05 % of the smallest training time is set to 0,
   ``clean_constant_coefficient``); a hypothesis replaces the best so far only when its SMAPE is
   lower, starting from the constant model scored in-sample, and a term that contributes less than
   0.05 % of the time everywhere is rejected. A factor with only two values on its line gets ``x``,
   or ``x^(-1)`` when the time falls along it and negative exponents are searched (Extra-P asks for five
   points; two cannot tell exponents apart). Such a line is what a design gives in which another
   factor changes with ``x`` (MLPerf's global batch with the accelerators).
4. **Combination** (``multi_parameter_modeler.py::create_model``): the factors' best terms, added and
   multiplied, and for two or three factors every mix of sums and products Extra-P tries, each with
   a constant; coefficients by least squares on all configuration means; starting from the product,
   a hypothesis replaces the best when its in-sample SMAPE is lower and each of its terms
   contributes at least 0.05 % somewhere.

Coefficients are unconstrained in sign, as in Extra-P (``nonneg=False``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from ..data.measurements import Measurements
from ..fitting.model import Model
from ..fitting.result import FitResult

#: Extra-P's default single-parameter building blocks ``x^(i/j)·log2(x)^k`` as (i, j, k),
#: from ``extrap/modelers/single_parameter/basic.py::create_default_building_blocks``, in its order.
EXTRAP_EXPONENTS = (
    (0, 1, 1),
    (0, 1, 2),
    (1, 4, 0),
    (1, 3, 0),
    (1, 4, 1),
    (1, 3, 1),
    (1, 4, 2),
    (1, 3, 2),
    (1, 2, 0),
    (1, 2, 1),
    (1, 2, 2),
    (2, 3, 0),
    (3, 4, 0),
    (2, 3, 1),
    (3, 4, 1),
    (4, 5, 0),
    (2, 3, 2),
    (3, 4, 2),
    (1, 1, 0),
    (1, 1, 1),
    (1, 1, 2),
    (5, 4, 0),
    (5, 4, 1),
    (4, 3, 0),
    (4, 3, 1),
    (3, 2, 0),
    (3, 2, 1),
    (3, 2, 2),
    (5, 3, 0),
    (7, 4, 0),
    (2, 1, 0),
    (2, 1, 1),
    (2, 1, 2),
    (9, 4, 0),
    (7, 3, 0),
    (5, 2, 0),
    (5, 2, 1),
    (5, 2, 2),
    (8, 3, 0),
    (11, 4, 0),
    (3, 1, 0),
    (3, 1, 1),
)
#: The blocks the same function adds with ``allow_negative_exponents`` ("for strong scaling"), in its
#: order: first those with a (negative) logarithm, then the negative powers.
EXTRAP_NEGATIVE_EXPONENTS = (
    (0, 1, -1),
    (0, 1, -2),
    (-1, 4, -1),
    (-1, 3, -1),
    (-1, 4, -2),
    (-1, 3, -2),
    (-1, 2, -1),
    (-1, 2, -2),
    (-2, 3, -1),
    (-3, 4, -1),
    (-2, 3, -2),
    (-3, 4, -2),
    (-1, 1, -1),
    (-1, 1, -2),
    (-5, 4, -1),
    (-4, 3, -1),
    (-3, 2, -1),
    (-3, 2, -2),
    (-2, 1, -1),
    (-2, 1, -2),
    (-5, 2, -1),
    (-5, 2, -2),
    (-3, 1, -1),
    (-1, 4, 0),
    (-1, 3, 0),
    (-1, 2, 0),
    (-2, 3, 0),
    (-3, 4, 0),
    (-4, 5, 0),
    (-1, 1, 0),
    (-5, 4, 0),
    (-4, 3, 0),
    (-3, 2, 0),
    (-5, 3, 0),
    (-7, 4, 0),
    (-2, 1, 0),
    (-9, 4, 0),
    (-7, 3, 0),
    (-5, 2, 0),
    (-8, 3, 0),
    (-11, 4, 0),
    (-3, 1, 0),
)
EPSILON = 0.0005  # Extra-P's minimum term contribution (and its constant-cleaning threshold in LOO)


def building_blocks(negative_exponents: bool = False) -> tuple:
    """Extra-P's building blocks (i, j, k), with its negative ones when ``negative_exponents``."""
    return EXTRAP_EXPONENTS + (EXTRAP_NEGATIVE_EXPONENTS if negative_exponents else ())


def _smape(y: np.ndarray, pred: np.ndarray) -> float:
    denom = np.abs(y) + np.abs(pred)
    with np.errstate(all="ignore"):
        v = np.where(denom > 0, 2 * np.abs(pred - y) / np.where(denom > 0, denom, 1), 0.0)
    return float(np.mean(v) * 100)


def _power_text(base: str, e: Fraction) -> str:
    if e == 1:
        return base
    if e.denominator == 1 and e > 0:
        return f"{base}^{e.numerator}"
    return f"{base}^({e.numerator})" if e.denominator == 1 else f"{base}^({e.numerator}/{e.denominator})"


def block_text(x: str, i: int, j: int, k: int) -> str:
    """The block ``x^(i/j)·log2(x)^k`` in the model language, e.g. ``p^(-1)``, ``x^(3/2)*log2(x)^2``."""
    parts = []
    if i:
        parts.append(_power_text(x, Fraction(i, j)))
    if k:
        parts.append(_power_text(f"log2({x})", Fraction(k)))
    return "*".join(parts) or "1"


def _block_values(v: np.ndarray, i: int, j: int, k: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.power(v, i / j) if i else np.ones_like(v)
        if k:
            out = out * np.log2(v) ** k
    return out


def _config_means(meas: Measurements) -> pd.DataFrame:
    """One row per configuration: the factors' values and the mean time ``_y``."""
    syms = list(meas.factors)
    frame = pd.DataFrame({**{s: meas.values(s) for s in syms}, "_y": meas.y})
    return frame.groupby(syms, sort=True)["_y"].mean().reset_index()


def determined(meas: Measurements) -> dict[str, str]:
    """{factor: the earlier factor that determines it}: a varying factor whose value is the same at every
    configuration with the same value of an earlier factor (nodes = p / 16 in a table of full nodes). No
    measurement line runs along one of the two with the other fixed; the search models the first only."""
    means = _config_means(meas)
    varying = meas.varying()
    out: dict[str, str] = {}
    for i, s in enumerate(varying):
        for earlier in varying[:i]:
            if earlier not in out and bool((means.groupby(earlier)[s].nunique() == 1).all()):
                out[s] = earlier
                break
    return out


def _line(meas: Measurements, sym: str, skip=()) -> tuple[np.ndarray, np.ndarray]:
    """Extra-P's measurement line along ``sym``: (x values, mean times); the factors in ``skip`` (those
    :func:`determined` by another) are left to vary along it."""
    means = _config_means(meas)
    others = [s for s in meas.factors if s != sym and s not in skip]
    if not others:
        return means[sym].to_numpy(float), means["_y"].to_numpy(float)
    groups = [g for _, g in means.groupby(others, sort=True)]
    longest = max(len(g) for g in groups)
    groups = [g for g in groups if len(g) == longest]
    common = set(groups[0][sym])
    for g in groups[1:]:
        common &= set(g[sym])
    xs = np.array(sorted(common), float)
    ys = np.array([np.mean([float(g.loc[g[sym] == x, "_y"].iloc[0]) for g in groups]) for x in xs])
    return xs, ys


def strong_scaling(meas: Measurements) -> list[str]:
    """The varying factors along which the time strictly falls, by Extra-P's
    ``fileio/io_helper.py::check_for_strong_scaling``: the longest group of configurations along the
    factor (the other factors fixed; ties: the larger total time), ordered by it."""
    means = _config_means(meas)
    skip = determined(meas)
    out = []
    for sym in [s for s in meas.scaling_factors() if s not in skip]:
        others = [s for s in meas.factors if s != sym and s not in skip]
        groups = [g for _, g in means.groupby(others, sort=True)] if others else [means]
        g = max(groups, key=lambda g: (len(g), float(g["_y"].sum())))
        y = g.sort_values(sym)["_y"].to_numpy(float)
        if len(y) > 1 and np.all(np.diff(y) < 0):
            out.append(sym)
    return out


def _lsq(F: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(F, y, rcond=None)[0]


def _loo_predictions(F: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Leave-one-out predictions of ``y ≈ F @ c``, each training constant cleaned as Extra-P's
    ``Hypothesis.clean_constant_coefficient`` (set to 0 below EPSILON × the smallest training time)."""
    n = len(y)
    pred = np.empty(n)
    for i in range(n):
        keep = np.arange(n) != i
        c = _lsq(F[keep], y[keep])
        low = float(np.min(y[keep]))
        if (abs(c[0]) < EPSILON) if low == 0 else (abs(c[0] / low) < EPSILON):
            c[0] = 0.0
        pred[i] = F[i] @ c
    return pred


def _contributes(coefficient: float, values: np.ndarray, y: np.ndarray) -> bool:
    """Extra-P's ``calc_term_contribution`` test: a non-zero term reaching EPSILON of the time somewhere."""
    with np.errstate(all="ignore"):
        return bool(coefficient != 0 and np.max(np.abs(coefficient * values / y)) >= EPSILON)


def best_single_term(
    x: np.ndarray, y: np.ndarray, negative_exponents: bool = False
) -> tuple[tuple[int, int, int] | None, float]:
    """Extra-P's single-parameter search on one line: the best (i, j, k), or None for constant;
    and its SMAPE (%)."""
    if len(x) < 2:
        return None, 0.0
    if len(np.unique(x)) == 2:  # two points cannot tell exponents apart: x, or 1/x where the time falls
        falls = negative_exponents and y[np.argmax(x)] < y[np.argmin(x)]
        return ((-1, 1, 0) if falls else (1, 1, 0)), 0.0
    best, best_smape = None, _smape(y, np.full_like(y, y.mean()))
    if best_smape == 0:
        return None, 0.0
    logs_ok = bool(np.all(x > 1) if negative_exponents else np.all(x >= 1))
    for ijk in building_blocks(negative_exponents):
        if ijk[2] and not logs_ok:
            continue
        f = _block_values(x, *ijk)
        if not np.all(np.isfinite(f)) or np.ptp(f) == 0:
            continue
        F = np.column_stack([np.ones(len(x)), f])
        c = _lsq(F, y)
        if not _contributes(c[1], f, y):
            continue
        s = _smape(y, _loo_predictions(F, y))
        if np.isfinite(s) and s < best_smape:
            best, best_smape = ijk, s
    return best, best_smape


def _combinations(n: int) -> list[list[tuple[int, ...]]]:
    """Extra-P's multi-parameter hypotheses over n factor terms: lists of products (index tuples)."""
    idx = tuple(range(n))
    if n == 1:
        return [[idx]]
    out: list[list[tuple[int, ...]]] = [[idx], [(i,) for i in idx]]
    if n == 2:
        out += [[(0,), idx], [(1,), idx]]
    elif n == 3:
        xy, yz, xz = (0, 1), (1, 2), (0, 2)
        x, y, z = (0,), (1,), (2,)
        out += [
            [idx, x],
            [idx, y],
            [idx, z],
            [idx, xy],
            [idx, yz],
            [idx, xz],
            [idx, xy, z],
            [idx, yz, x],
            [idx, xz, y],
            [idx, x, y],
            [idx, x, z],
            [idx, y, z],
            [xy, z],
            [xy, z, y],
            [xy, z, x],
            [xz, y],
            [xz, y, x],
            [xz, y, z],
            [yz, x],
            [yz, x, y],
            [yz, x, z],
        ]
    return out


@dataclass
class PMNFSearch:
    """Outcome of :func:`pmnf_search`: the expression and how it was chosen."""

    spec: str
    per_factor: dict  # symbol -> (i, j, k) exponent triple, or None (constant along it)
    hypotheses: list  # (expression, SMAPE %) of every combination tried
    line_points: dict  # symbol -> number of points on its measurement line
    negative_exponents: bool = False  # Extra-P's allow_negative_exponents was set
    strong_scaling: list = field(default_factory=list)  # factors along which the time strictly falls

    def explanation(self) -> str:
        """Which of Extra-P's exponent sets was searched, and why, for a note beside the result."""
        if not self.negative_exponents:
            return "Extra-P's default exponents (terms that grow with their factor)"
        if not self.strong_scaling:
            return "Extra-P's exponents and its negative ones (asked for)"
        names = " and ".join(
            [", ".join(self.strong_scaling[:-1]), self.strong_scaling[-1]]
            if len(self.strong_scaling) > 1
            else self.strong_scaling
        )
        grow = "grows" if len(self.strong_scaling) == 1 else "grow"
        return f"Extra-P's exponents and its negative ones for strong scaling (the time falls as {names} {grow})"


def pmnf_search(meas: Measurements, negative_exponents: bool | None = None) -> PMNFSearch:
    """Extra-P-like PMNF search on ``meas`` (see the module doc); returns the chosen expression.

    ``negative_exponents``: Extra-P's ``allow_negative_exponents``; None sets it when some factor is
    strong scaling (:func:`strong_scaling`)."""
    falling = strong_scaling(meas)
    negative = bool(falling) if negative_exponents is None else bool(negative_exponents)
    per_factor, points, blocks = {}, {}, []
    skip = determined(meas)  # nodes with p: modelled along p only (no line runs along one, the other fixed)
    for s in [s for s in meas.scaling_factors() if s not in skip]:
        x, y = _line(meas, s, skip)
        points[s] = len(x)
        ijk, _ = best_single_term(x, y, negative)
        per_factor[s] = ijk
        if ijk is not None:
            blocks.append((s, ijk))
    found: dict = dict(per_factor=per_factor, line_points=points, negative_exponents=negative, strong_scaling=falling)
    if not blocks:
        return PMNFSearch("1", hypotheses=[("1", float("nan"))], **found)
    means = _config_means(meas)
    y = means["_y"].to_numpy(float)
    vals = [_block_values(means[s].to_numpy(float), *ijk) for s, ijk in blocks]
    texts = [block_text(s, *ijk) for s, ijk in blocks]
    tried, best = [], None
    for hyp in _combinations(len(blocks)):
        terms = [np.prod([vals[i] for i in prod], axis=0) for prod in hyp]
        F = np.column_stack([np.ones(len(y))] + terms)
        if not np.all(np.isfinite(F)):
            continue
        c = _lsq(F, y)
        smape = _smape(y, F @ c)
        spec = " + ".join(["1"] + ["*".join(texts[i] for i in prod) for prod in hyp])
        tried.append((spec, smape))
        if best is None:  # Extra-P starts from its first hypothesis (the product), whatever its terms
            best = (spec, smape)
        elif smape < best[1] and all(_contributes(ck, t, y) for ck, t in zip(c[1:], terms, strict=True)):
            best = (spec, smape)
    if best is None:
        return PMNFSearch("1", hypotheses=[("1", float("nan"))], **found)
    return PMNFSearch(best[0], hypotheses=tried, **found)


class PMNFSearchModel:
    """A model-like object whose ``fit`` runs :func:`pmnf_search` and fits the chosen expression.

    It works with :func:`perfmodel.fitting.evaluate.cross_validate` and ``holdout`` (the search is
    re-run on every training part). ``settings`` go to :class:`Model` (``nonneg=False`` as Extra-P).
    """

    def __init__(self, negative_exponents: bool | None = None, **settings):
        self.negative_exponents = negative_exponents
        self.settings = {"nonneg": False, **settings}
        self.last_search: PMNFSearch | None = None

    def fit(self, meas: Measurements) -> FitResult:
        self.last_search = pmnf_search(meas, self.negative_exponents)
        return Model(self.last_search.spec, **self.settings).fit(meas)
