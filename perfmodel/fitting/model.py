"""Fitting: cost = loss + λ·penalty, minimised by differential evolution.

Search space. Differential evolution (DE) searches the vector ``z = [u_1..u_K, θ_1..θ_M]``:
``θ`` are the free parameters (exponents) within their bounds and ``u_k`` is the
coefficient of term k *normalised by the term's scale over the data*,
``u_k = c_k · mean|term_k| / mean(y)``, i.e. the share of the mean time that the term
carries. This keeps every search direction on the same scale whatever the units, and it is
what the penalty acts on, so λ means the same for any dataset and any time unit (with the
relative loss, λ = 0.01 and L1 make a term that carries the whole mean time cost as much as a
10 % RMS relative error).

Losses (on the rows, mean over rows):
  * ``relative`` (default): ((pred − y)/y)², times spanning orders of magnitude weigh equally;
  * ``absolute``: (pred − y)² / mean(y)², least squares (RSS) made unit-free;
  * ``log``: (log pred − log y)².
Penalty: L1 (default) Σ|u_k| or L2 Σu_k², over all terms but the intercept.

Where the model is linear in its constants (no free parameters) the exact optimum of the
same cost is computed first (bounded least squares, ridge, or proximal gradient for L1) and
handed to DE as ``x0``; DE keeps its best member, so its result is never worse. After DE,
an L-BFGS-B polish (gradients by central differences, evaluated as one population) and an
exact solve of the coefficients at the final exponents are each kept when they lower the cost.

Imports from the model language, data and fitting layers only; computing intervals
(perfmodel.uncertainty) and searching (perfmodel.search) build on it, never the reverse.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..language.expression import Expression, parse_bounds, parse_expression
from ..language.terms import preset_bounds, preset_spec
from .problem import BIG, DESettings, Problem
from .reach import horizon_env

if TYPE_CHECKING:
    from .result import FitResult

LOSSES = ("relative", "absolute", "log")
PENALTIES = ("l1", "l2")
MAX_SEED = 2**32 - 1  # numpy's seeds are unsigned 32-bit integers
MAX_LAMBDA = 1e6  # at λ = 1 a term carrying the whole mean time already costs as much as a 100 % error

#: The default regularisation weight of the library, the CLI and the app. Any λ > 0 makes a fit with
#: more fitted parameters than configurations well-posed (of the models that fit equally well, the
#: one with the smallest penalty); on short real series (1-4 GPU counts, benchmarks/small_data.py)
#: the `data-parallel` preset predicts the next GPU counts equally well for λ from 1e-7 to 1e-3 and
#: worse above. The smallest of these is the default: it costs a term carrying the whole mean time
#: as much as a 0.3 % RMS relative error, so a well-determined fit hardly moves (Ernest's rcv1
#: constants shift by 0.4 %; at 1e-3 they shift by a third).
DEFAULT_LAM = 1e-5

#: Where the penalty weighs a term's effect (``Model(penalty_reach=...)``): ``"measured"``, over the
#: measured rows only; ``"horizon"``, also at the standard horizon beyond them
#: (:mod:`perfmodel.fitting.reach`), so that of the fits the data cannot tell apart the one whose
#: terms grow least beyond the measurements is chosen.
PENALTY_REACHES = ("measured", "horizon")
#: largest ``scale_weight`` (at 100 the third-largest scale already weighs 1/10,000 of the largest)
MAX_SCALE_WEIGHT = 100.0
DEFAULT_PENALTY_REACH = "horizon"


class Model:
    """An execution-time model ``T = Σ c_k·term_k`` to be fitted to measurements.

    Parameters
    ----------
    terms : expression such as ``"1 + N/(p*b)*b^e1 + N/(p*b)*log2(p) + p"`` (or None with ``preset``).
    preset : ``"data-parallel"``, ``"ernest"``, ``"pmnf"``, ``"pollux"`` or ``"optimus"`` (:data:`perfmodel.language.terms.PRESETS`);
        expanded for the mapped factors (and, for pollux, the rows) at fit time.
    lam : regularisation weight λ >= 0 (default :data:`DEFAULT_LAM`). With λ > 0 a model may have
        more fitted parameters than measured configurations: the penalty then decides (with a warning).
    penalty : ``"l1"`` or ``"l2"`` on normalised coefficients.
    penalty_reach : where the penalty weighs a term's effect: ``"measured"`` (the measured rows) or
        ``"horizon"`` (the larger of that and its effect at the standard horizon beyond them,
        :mod:`perfmodel.fitting.reach`); default :data:`DEFAULT_PENALTY_REACH`.
    loss : ``"relative"``, ``"absolute"`` or ``"log"``.
    bounds : ``{"e1": (0, 2), "c1": (0, 10)}`` or ``["e1=0:2"]``: free parameters (default
        [-3, 3]) and coefficients ``c0..`` (default [0, inf) when ``nonneg``).
    nonneg : coefficients non-negative by default (a time cannot be negative).
    seed : random seed of DE (same seed, same result).
    scale_weight : how much more each larger measured worker count ``p`` weighs in the loss than the one
        before (rows at the k-th smallest ``p`` weigh ``scale_weight**k``, normalised to a mean of 1;
        :func:`perfmodel.fitting.problem.scale_weights`): above 1 the fit follows the largest scales,
        where an extrapolation starts. Default 1: every row alike.
    exact_init : seed DE with the exact solution on linear models.
    **de : :class:`DESettings` fields (strategy, popsize, mutation, recombination, maxiter, tol, polish).

    The constructor only stores its arguments; :meth:`fit` validates them.
    """

    def __init__(
        self,
        terms: str | None = None,
        *,
        preset: str | None = None,
        lam: float = DEFAULT_LAM,
        penalty: str = "l1",
        loss: str = "relative",
        bounds=None,
        nonneg: bool = True,
        seed: int = 0,
        exact_init: bool = True,
        vectorized: bool = True,
        penalty_reach: str | None = None,
        scale_weight: float = 1.0,
        **de,
    ):
        self.terms = terms
        self.preset = preset
        self.lam = lam
        self.penalty = penalty
        self.penalty_reach = DEFAULT_PENALTY_REACH if penalty_reach is None else penalty_reach
        self.loss = loss
        self.bounds = bounds
        self.nonneg = nonneg
        self.seed = seed
        self.exact_init = exact_init
        self.vectorized = vectorized
        self.scale_weight = scale_weight
        unknown = set(de) - set(DESettings.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown Model argument(s): {', '.join(sorted(unknown))}")
        self.de = DESettings(**de)

    def __repr__(self) -> str:
        what = f"{self.terms!r}" if self.terms is not None else f"preset={self.preset!r}"
        return f"Model({what}, lam={self.lam}, penalty={self.penalty!r}, loss={self.loss!r}, seed={self.seed})"

    def get_params(self) -> dict:
        """Constructor arguments, JSON-ready (scikit-learn's convention)."""
        return {
            "terms": self.terms,
            "preset": self.preset,
            "lam": self.lam,
            "penalty": self.penalty,
            "penalty_reach": self.penalty_reach,
            "loss": self.loss,
            "bounds": parse_bounds(self.bounds or {}),
            "nonneg": self.nonneg,
            "seed": self.seed,
            "exact_init": self.exact_init,
            "vectorized": self.vectorized,
            "scale_weight": self.scale_weight,
            **asdict(self.de),
        }

    def clone(self, **changes) -> Model:
        params = {**self.get_params(), **changes}
        return Model(**params)

    # -- fitting -----------------------------------------------------------
    def resolve(self, data: Measurements) -> tuple[Expression, dict]:
        """Expand the preset and parse the expression for ``data``'s symbols.

        Returns ``(expression, coefficient_bounds)``.
        """
        symbols = list(data.factors)
        user_bounds = parse_bounds(self.bounds or {})
        if self.terms is not None and self.preset is not None:
            raise PerfModelError("give either terms or a preset, not both")
        if self.preset is not None:
            positive = [s for s in symbols if data.values(s).min() >= 1]
            spec = preset_spec(self.preset, symbols, positive, data.scaling_factors(), env=data.env())
            bounds = {**preset_bounds(self.preset, symbols), **user_bounds}
        elif self.terms is not None:
            spec, bounds = self.terms, user_bounds
        else:
            raise PerfModelError("no terms given: pass an expression or a preset")
        expr, leftover = parse_expression(spec, symbols, bounds, columns=list(data.frame.columns))
        names = [f"c{k}" for k in range(len(expr.terms))]
        defaults = preset_bounds(self.preset, symbols) if self.preset is not None else {}
        unknown = [n for n in leftover if n not in names and n not in defaults]
        if unknown:
            raise PerfModelError(
                f"bounds given for {unknown[0]!r}, which is neither a free parameter "
                f"({', '.join(expr.params) or 'none'}) nor a coefficient "
                f"({', '.join(names)})"
            )
        cbounds = {n: b for n, b in leftover.items() if n in names}
        return expr, cbounds

    def fit(
        self, data, time: str | None = None, factors: dict | None = None, *, progress: Callable | None = None
    ) -> FitResult:
        """Fit to ``data`` (Measurements, or a DataFrame with ``time`` and ``factors``).

        ``progress(generation, maxiter, best_cost)`` is called once per DE generation; a
        truthy return value stops the search early (the best so far is kept).
        """
        from .result import FitResult

        meas = as_measurements(data, time, factors)
        self._check_settings()
        expr, cbounds = self.resolve(meas)
        expr.check_domain(meas.env(), meas.rows)
        n_par = len(expr.terms) + len(expr.params)
        n_cfg = meas.n_configurations
        names = [f"c{k}" for k in range(len(expr.terms))] + list(expr.params)
        if n_cfg < n_par and float(self.lam) == 0:
            raise PerfModelError(
                f"{n_cfg} distinct configuration(s) cannot determine {n_par} fitted parameters "
                f"({', '.join(names)}) at λ = 0; set λ > 0 (the penalty makes such a fit well-posed, "
                f"e.g. the default {DEFAULT_LAM:g}), remove terms or measure more configurations"
            )
        problem = self.problem(expr, meas, cbounds)
        t0, c0 = _time.perf_counter(), _time.thread_time()
        z, info = problem.minimise(self.de, self.seed, self.exact_init, self.vectorized, progress)
        if n_cfg < n_par:
            info["underdetermined"] = (n_cfg, n_par)
        info["seconds"] = _time.perf_counter() - t0
        info["cpu_seconds"] = _time.thread_time() - c0  # this thread's CPU: not inflated by a busy machine
        coefs, theta = problem.natural(z)
        coefs = coefs * problem.yscale  # back from the internal time unit
        result = FitResult.build(self, expr, meas, coefs, theta, problem, z, info)
        _check_usable(result, meas)
        return result

    def problem(self, expr: Expression, meas: Measurements, cbounds: dict) -> Problem:
        """The cost :meth:`fit` minimises for ``expr`` (from :meth:`resolve`) on ``meas``."""
        return Problem(
            expr,
            meas,
            self.loss,
            self.penalty,
            float(self.lam),
            cbounds,
            self.nonneg,
            self.reach_env(meas),
            float(self.scale_weight),
        )

    def reach_env(self, meas: Measurements) -> dict | None:
        """The horizon points the penalty also weighs the terms at (None: where measured only)."""
        return horizon_env(meas) if self.penalty_reach == "horizon" else None

    def _check_settings(self) -> None:
        if self.penalty_reach not in PENALTY_REACHES:
            raise PerfModelError(f"unknown penalty reach {self.penalty_reach!r}; known: {', '.join(PENALTY_REACHES)}")
        if self.loss not in LOSSES:
            raise PerfModelError(f"unknown loss {self.loss!r}; known: {', '.join(LOSSES)}")
        if self.penalty not in PENALTIES:
            raise PerfModelError(f"unknown penalty {self.penalty!r}; known: {', '.join(PENALTIES)}")
        try:
            lam = float(self.lam)
        except (TypeError, ValueError):
            raise PerfModelError(f"λ must be a number, got {self.lam!r}") from None
        if not (math.isfinite(lam) and lam >= 0):
            raise PerfModelError(f"λ must be a finite number >= 0, got {self.lam!r}")
        if lam > MAX_LAMBDA:
            raise PerfModelError(
                f"λ = {lam:g} is too large (limit {MAX_LAMBDA:g}; already λ = 1 drives every penalised term towards 0)"
            )
        try:
            sw = float(self.scale_weight)
        except (TypeError, ValueError):
            raise PerfModelError(f"scale_weight must be a number, got {self.scale_weight!r}") from None
        if not (math.isfinite(sw) and 0 < sw <= MAX_SCALE_WEIGHT):
            raise PerfModelError(f"scale_weight must be within (0, {MAX_SCALE_WEIGHT:g}], got {self.scale_weight!r}")
        if not isinstance(self.seed, (int, np.integer)) or isinstance(self.seed, bool):
            raise PerfModelError(f"seed must be an integer, got {self.seed!r}")
        if not 0 <= int(self.seed) <= MAX_SEED:
            raise PerfModelError(f"seed must be within [0, {MAX_SEED}], got {self.seed}")
        self.de.validate()


def _check_usable(result, meas: Measurements) -> None:
    """Refuse a fit whose error or cost is not finite (e.g. an overlap exponent bounded near 0: every
    prediction overflows) or that predicts a time that is not positive at a measured configuration
    (``-max(16, s)`` with its constant bounded to [0, 1]: T = 0); such a model predicts nothing and
    must not be saved or ranked."""
    free = ", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in result.param_bounds.items())
    hint = "check the terms" + (f" and the bounds ({free})" if free else "")
    mape, cost = result.metrics.get("mape", float("nan")), result.cost
    if not (math.isfinite(mape) and math.isfinite(cost) and cost < BIG):
        raise PerfModelError(
            f"the fit of {result.expression} has no finite error (MAPE {mape:g}, cost {cost:g}): "
            f"its predictions are not finite positive times for the data; {hint}"
        )
    with np.errstate(all="ignore"):
        pred = np.asarray(result.predict(meas), float)
    bad = np.flatnonzero(~(np.isfinite(pred) & (pred > 0)))
    if bad.size:
        row = meas.rows[bad[0]]
        raise PerfModelError(
            f"the fit of {result.formula()} predicts a time that is not positive at {bad.size} of "
            f"{pred.size} measured rows (row {row}: {pred[bad[0]]:g} s); {hint}"
        )


def as_measurements(data, time: str | None = None, factors: dict | None = None) -> Measurements:
    if isinstance(data, Measurements):
        if time is not None or factors is not None:
            raise PerfModelError("time/factors are already set in the Measurements")
        return data
    if isinstance(data, pd.DataFrame):
        if time is None:
            raise PerfModelError("name the time column: fit(df, time='time_s', factors={...})")
        return Measurements.from_frame(data, time, factors or {})
    raise PerfModelError(f"expected Measurements or a pandas DataFrame, got {type(data).__name__}")


#: DE settings used while searching (cheap); the chosen models are refitted with ``final_de``.
SEARCH_DE = {"popsize": 10, "maxiter": 300, "tol": 0.01}


def exact_settings(model: Model, meas: Measurements) -> dict:
    """DE settings that give ``model`` its exact optimum at the least cost, or {}.

    When the expression has no free parameter and the loss is not ``log``, the core solves the
    coefficients exactly (bounded least squares; ridge or proximal gradient for λ > 0), hands
    that to DE as ``x0`` and keeps it unless DE finds better, which it cannot (the problem is
    convex). One generation then gives the same fit as a thousand.
    """
    if model.loss == "log":
        return {}
    try:
        expr, _ = model.resolve(meas)
    except PerfModelError:
        return {}
    return {"maxiter": 1, "polish": False} if expr.is_linear else {}


def refit_model(result, **changes):
    """A :class:`perfmodel.Model` that refits ``result``'s expression with its settings."""
    from ..fitting.model import Model

    s = dict(result.settings)
    bounds = {k: tuple(v) for k, v in (s.get("bounds") or {}).items() if k.startswith("c") and k[1:].isdigit()}
    bounds.update({k: tuple(v) for k, v in result.param_bounds.items()})
    kwargs = {k: v for k, v in s.items() if k not in ("terms", "preset", "bounds")}
    kwargs["mutation"] = tuple(kwargs.get("mutation", (0.5, 1.0)))
    kwargs.update(changes)
    return Model(result.expression, bounds=bounds or None, **kwargs)
