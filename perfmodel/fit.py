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
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd
from scipy.optimize import differential_evolution, lsq_linear, minimize

from .data import Measurements
from .errors import PerfModelError
from .expression import Expression, parse_bounds, parse_expression
from .terms import preset_bounds, preset_spec

if TYPE_CHECKING:
    from .result import FitResult

LOSSES = ("relative", "absolute", "log")
PENALTIES = ("l1", "l2")
STRATEGIES = ("best1bin", "best1exp", "rand1bin", "rand1exp", "rand2bin", "rand2exp",
              "randtobest1bin", "currenttobest1bin", "best2bin", "best2exp")
BIG = 1e12  # cost of an invalid candidate (non-finite or non-positive prediction with log loss)
MAX_SEED = 2 ** 32 - 1  # numpy's seeds are unsigned 32-bit integers
#: Largest DE settings accepted: beyond them one fit runs for hours (popsize × maxiter bounds the
#: number of generations × members per dimension; the defaults use 15 × 1000, the app allows up to
#: 200 × 20,000).
MAX_POPSIZE = 1000
MAX_MAXITER = 100_000
MAX_DE_WORK = 5_000_000
MAX_LAMBDA = 1e6  # at λ = 1 a term carrying the whole mean time already costs as much as a 100 % error
#: Times inside this range are fitted as they are; outside it they are scaled by a power of two.
_PLAIN_TIMES = (1e-100, 1e100)
_MAX_TIME_SPAN = 1e200

#: The default regularisation weight of the library, the CLI and the app. Any λ > 0 makes a fit with
#: more fitted parameters than configurations well-posed (of the models that fit equally well, the
#: one with the smallest penalty); on short real series (1-4 GPU counts, benchmarks/small_data.py)
#: the `data-parallel` preset predicts the next GPU counts equally well for λ from 1e-7 to 1e-3 and
#: worse above. The smallest of these is the default: it costs a term carrying the whole mean time
#: as much as a 0.3 % RMS relative error, so a well-determined fit hardly moves (Ernest's rcv1
#: constants shift by 0.4 %; at 1e-3 they shift by a third).
DEFAULT_LAM = 1e-5


@dataclass
class DESettings:
    """Settings of :func:`scipy.optimize.differential_evolution` that are exposed."""

    strategy: str = "best1bin"
    popsize: int = 15
    mutation: tuple = (0.5, 1.0)
    recombination: float = 0.7
    maxiter: int = 1000
    tol: float = 0.01
    polish: bool = True
    init: str = "latinhypercube"

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise PerfModelError(f"unknown DE strategy {self.strategy!r}; known: {', '.join(STRATEGIES)}")
        if int(self.popsize) < 2:
            raise PerfModelError("popsize must be at least 2")
        if int(self.maxiter) < 1:
            raise PerfModelError("maxiter must be at least 1")
        if int(self.popsize) > MAX_POPSIZE:
            raise PerfModelError(f"popsize {int(self.popsize)} is above the limit {MAX_POPSIZE} (a fit would run for hours)")
        if int(self.maxiter) > MAX_MAXITER:
            raise PerfModelError(f"maxiter {int(self.maxiter)} is above the limit {MAX_MAXITER} (a fit would run for hours)")
        if int(self.popsize) * int(self.maxiter) > MAX_DE_WORK:
            raise PerfModelError(f"popsize × maxiter = {int(self.popsize) * int(self.maxiter)} is above the limit "
                                 f"{MAX_DE_WORK} (a fit would run for hours)")
        if not 0 <= float(self.recombination) <= 1:
            raise PerfModelError("recombination must be within [0, 1]")
        if not float(self.tol) >= 0:
            raise PerfModelError("tol must be >= 0")


class Model:
    """An execution-time model ``T = Σ c_k·term_k`` to be fitted to measurements.

    Parameters
    ----------
    terms : expression such as ``"1 + N/(p*b)*b^e1 + N/(p*b)*log2(p) + p"`` (or None with ``preset``).
    preset : ``"data-parallel"``, ``"ernest"``, ``"pmnf"``, ``"pollux"`` or ``"optimus"`` (:data:`perfmodel.terms.PRESETS`);
        expanded for the mapped factors (and, for pollux, the rows) at fit time.
    lam : regularisation weight λ >= 0 (default :data:`DEFAULT_LAM`). With λ > 0 a model may have
        more fitted parameters than measured configurations: the penalty then decides (with a warning).
    penalty : ``"l1"`` or ``"l2"`` on normalised coefficients.
    loss : ``"relative"``, ``"absolute"`` or ``"log"``.
    bounds : ``{"e1": (0, 2), "c1": (0, 10)}`` or ``["e1=0:2"]``: free parameters (default
        [-3, 3]) and coefficients ``c0..`` (default [0, inf) when ``nonneg``).
    nonneg : coefficients non-negative by default (a time cannot be negative).
    seed : random seed of DE (same seed, same result).
    exact_init : seed DE with the exact solution on linear models.
    **de : :class:`DESettings` fields (strategy, popsize, mutation, recombination, maxiter, tol, polish).

    The constructor only stores its arguments; :meth:`fit` validates them.
    """

    def __init__(self, terms: str | None = None, *, preset: str | None = None, lam: float = DEFAULT_LAM,
                 penalty: str = "l1", loss: str = "relative", bounds=None, nonneg: bool = True,
                 seed: int = 0, exact_init: bool = True, vectorized: bool = True, **de):
        self.terms = terms
        self.preset = preset
        self.lam = lam
        self.penalty = penalty
        self.loss = loss
        self.bounds = bounds
        self.nonneg = nonneg
        self.seed = seed
        self.exact_init = exact_init
        self.vectorized = vectorized
        unknown = set(de) - set(DESettings.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown Model argument(s): {', '.join(sorted(unknown))}")
        self.de = DESettings(**de)

    def __repr__(self) -> str:
        what = f"{self.terms!r}" if self.terms is not None else f"preset={self.preset!r}"
        return f"Model({what}, lam={self.lam}, penalty={self.penalty!r}, loss={self.loss!r}, seed={self.seed})"

    def get_params(self) -> dict:
        """Constructor arguments, JSON-ready (scikit-learn's convention)."""
        return {"terms": self.terms, "preset": self.preset, "lam": self.lam, "penalty": self.penalty,
                "loss": self.loss, "bounds": parse_bounds(self.bounds or {}), "nonneg": self.nonneg,
                "seed": self.seed, "exact_init": self.exact_init, "vectorized": self.vectorized,
                **asdict(self.de)}

    def clone(self, **changes) -> "Model":
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
            spec = preset_spec(self.preset, symbols, positive, data.varying(), env=data.env())
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
            raise PerfModelError(f"bounds given for {unknown[0]!r}, which is neither a free parameter "
                                 f"({', '.join(expr.params) or 'none'}) nor a coefficient "
                                 f"({', '.join(names)})")
        cbounds = {n: b for n, b in leftover.items() if n in names}
        return expr, cbounds

    def fit(self, data, time: str | None = None, factors: dict | None = None, *,
            progress: Callable | None = None) -> "FitResult":
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
                f"e.g. the default {DEFAULT_LAM:g}), remove terms or measure more configurations")
        problem = Problem(expr, meas, self.loss, self.penalty, float(self.lam), cbounds, self.nonneg)
        t0, c0 = _time.perf_counter(), _time.thread_time()
        z, info = problem.minimise(self.de, self.seed, self.exact_init, self.vectorized, progress)
        if n_cfg < n_par:
            info["underdetermined"] = (n_cfg, n_par)
        info["seconds"] = _time.perf_counter() - t0
        info["cpu_seconds"] = _time.thread_time() - c0  # this thread's CPU: not inflated by a busy machine
        coefs, theta = problem.natural(z)
        coefs = coefs * problem.yscale  # back from the internal time unit
        return FitResult.build(self, expr, meas, coefs, theta, problem, z, info)

    def _check_settings(self) -> None:
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
            raise PerfModelError(f"λ = {lam:g} is too large (limit {MAX_LAMBDA:g}; already λ = 1 drives "
                                 "every penalised term towards 0)")
        if not isinstance(self.seed, (int, np.integer)) or isinstance(self.seed, bool):
            raise PerfModelError(f"seed must be an integer, got {self.seed!r}")
        if not 0 <= int(self.seed) <= MAX_SEED:
            raise PerfModelError(f"seed must be within [0, {MAX_SEED}], got {self.seed}")
        self.de.validate()


def time_scale(y: np.ndarray) -> float:
    """The internal unit of time: 1 for ordinary times, else a power of two near their middle.

    Every loss is unchanged when times and coefficients are scaled together, and a power of two
    scales exactly; this keeps squares and sums of times like 1e308 or 1e-300 finite. Raises
    :class:`PerfModelError` when the times span too many orders of magnitude for any unit."""
    lo, hi = float(np.min(y)), float(np.max(y))
    if _PLAIN_TIMES[0] <= lo and hi <= _PLAIN_TIMES[1]:
        return 1.0
    if hi / lo > _MAX_TIME_SPAN or not math.isfinite(hi / lo):
        raise PerfModelError(f"the times span from {lo:g} to {hi:g} s, more than {math.log10(_MAX_TIME_SPAN):.0f} "
                             "orders of magnitude; check the time column's unit")
    return math.ldexp(1.0, min(1023, max(-1022, math.floor((math.log2(lo) + math.log2(hi)) / 2))))


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


class Problem:
    """The cost function of one fit, vectorised over a DE population.

    Rows that share a configuration share a prediction, so the loss is computed exactly on
    the distinct configurations with per-configuration statistics:
    Σ_rows w_i²(f(pred) − v_i)² = Σ_g A_g (f(pred_g) − m_g)² + R, where A_g = Σ w_i²,
    m_g = Σ w_i² v_i / A_g and R the within-configuration part, which no parameter changes
    (v = y for the relative and absolute losses, v = log y for the log loss).
    """

    def __init__(self, expr: Expression, meas: Measurements, loss: str, penalty: str, lam: float,
                 cbounds: dict, nonneg: bool):
        self.expr = expr
        self.yscale = time_scale(meas.y)
        y = meas.y / self.yscale  # in an internal unit where the times are near 1 (see time_scale)
        self.n = len(y)
        self.ybar = float(y.mean())
        self.loss, self.penalty, self.lam = loss, penalty, lam
        K = len(expr.terms)
        self.K, self.M = K, len(expr.params)
        self.penalised = np.array([not t.is_constant for t in expr.terms])
        lo = np.full(K, 0.0 if nonneg else -np.inf)
        hi = np.full(K, np.inf)
        for name, (a, b) in cbounds.items():
            k = int(name[1:])
            lo[k], hi[k] = a, b
        self.clo, self.chi = lo, hi
        # Distinct configurations and their loss statistics.
        cfg = meas.configurations()
        first = np.unique(cfg, return_index=True)[1]
        self.rows_of_group = meas.rows[first]
        full_env = meas.env()
        self.env = {s: v[first] for s, v in full_env.items()}
        self.counts = np.bincount(cfg).astype(float)
        if loss == "relative":
            w2, v = 1.0 / y ** 2, y
        elif loss == "absolute":
            w2, v = np.full(self.n, 1.0 / self.ybar ** 2), y
        else:
            w2, v = np.ones(self.n), np.log(y)
        self.A = np.bincount(cfg, weights=w2)
        self.m = np.bincount(cfg, weights=w2 * v) / self.A
        self.R = float(np.sum(w2 * (v - self.m[cfg]) ** 2))
        self.sqrtA = np.sqrt(self.A)
        # Terms that do not depend on free parameters are evaluated once.
        fixed = [k for k, t in enumerate(expr.terms) if not t.params]
        self.fixed = fixed
        self.dynamic = [k for k, t in enumerate(expr.terms) if t.params]
        G = len(self.counts)
        values = expr.term_values(self.env, np.zeros(self.M), only=fixed) if fixed else []
        self.fixed_matrix = np.vstack([np.broadcast_to(values[k], (G,)).astype(float) for k in fixed]) \
            if fixed else np.zeros((0, G))
        for k, v in zip(fixed, self.fixed_matrix):
            if not np.all(np.isfinite(v)):
                i = int(np.flatnonzero(~np.isfinite(v))[0])
                raise PerfModelError(f"term {expr.terms[k].text!r} is not finite at row {self.rows_of_group[i]}")
            if not np.any(v != 0):
                raise PerfModelError(f"term {expr.terms[k].text!r} is 0 on every row, so its coefficient "
                                     "cannot be fitted; remove it")
        self.fixed_scales = self._weighted_scale(self.fixed_matrix)
        self.U = 2.0 if nonneg else 10.0

    def _weighted_scale(self, T: np.ndarray) -> np.ndarray:
        """mean over *rows* of |term|, from per-configuration values (last axis)."""
        a = np.abs(T)
        with np.errstate(all="ignore"):
            s = a @ self.counts / self.n
            big = ~np.isfinite(s) & np.all(np.isfinite(a), axis=-1)
            if np.any(big):  # terms near the float limit: the sum overflows, the mean does not
                top = np.max(a, axis=-1)
                s = np.where(big, (a / np.where(top > 0, top, 1.0)[..., None]) @ self.counts / self.n * top, s)
        return np.where((s > 0) & np.isfinite(s), s, 1.0)

    # -- parameter spaces ---------------------------------------------------
    def term_matrix(self, theta: np.ndarray) -> np.ndarray:
        """Term values per configuration at ``theta`` (M,): shape (K, G)."""
        G = len(self.counts)
        out = np.empty((self.K, G))
        if self.fixed:
            out[self.fixed] = self.fixed_matrix
        if self.dynamic:
            vals = self.expr.term_values(self.env, np.asarray(theta, float), only=self.dynamic)
            for k in self.dynamic:
                out[k] = vals[k]
        return out

    def scales(self, T: np.ndarray) -> np.ndarray:
        return self._weighted_scale(T)

    def de_bounds(self, u_extra: float = 0.0) -> list[tuple[float, float]]:
        U = max(self.U, u_extra)
        out = []
        for k in range(self.K):
            a = 0.0 if self.clo[k] >= 0 else -U
            b = 0.0 if self.chi[k] <= 0 else U
            if a == b:
                b = a + 1e-12
            out.append((a, b))
        out += [self.expr.bounds[p] for p in self.expr.params]
        return out

    def natural(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """DE vector -> (coefficients (K,), free parameters (M,))."""
        z = np.asarray(z, float)
        theta = z[self.K:]
        with np.errstate(all="ignore"):
            T = self.term_matrix(theta)
            c = z[:self.K] * self.ybar / self.scales(T)
        return np.clip(c, self.clo, self.chi), theta

    # -- cost ---------------------------------------------------------------
    def cost(self, z: np.ndarray) -> np.ndarray:
        """Cost of DE vectors ``z`` of shape (D,) -> scalar, or (D, S) -> (S,)."""
        z = np.asarray(z, float)
        single = z.ndim == 1
        Z = z[:, None] if single else z
        u, theta = Z[:self.K], Z[self.K:]
        S = Z.shape[1]
        with np.errstate(all="ignore"):
            c = np.empty((S, self.K))
            scale = np.empty((S, self.K))
            pred = np.zeros((S, len(self.counts)))
            if self.fixed:
                scale[:, self.fixed] = self.fixed_scales
                c[:, self.fixed] = u[self.fixed].T * self.ybar / self.fixed_scales
            parts = np.empty((self.K,) + pred.shape) if self.expr.overlaps else None
            if self.dynamic:
                vals = self.expr.term_values(self.env, theta, only=self.dynamic)
                for k in self.dynamic:
                    T = np.broadcast_to(vals[k], pred.shape)
                    sk = self._weighted_scale(T)
                    scale[:, k] = sk
                    c[:, k] = u[k] * self.ybar / sk
                    part = np.clip(c[:, k], self.clo[k], self.chi[k])[:, None] * T
                    if parts is None:
                        pred += part
                    else:
                        parts[k] = part
            c = np.clip(c, self.clo, self.chi)
            if self.fixed:
                if parts is None:
                    pred += c[:, self.fixed] @ self.fixed_matrix
                else:
                    parts[self.fixed] = c[:, self.fixed].T[:, :, None] * self.fixed_matrix[:, None, :]
            if parts is not None:  # overlap groups: (a^g + b^g)^(1/g) per group (perfmodel.overlap)
                pred = self.expr.predict_from(parts, theta)
            loss = self._loss(pred)
            if self.lam:
                un = (c * scale / self.ybar)[:, self.penalised]
                pen = np.abs(un).sum(axis=1) if self.penalty == "l1" else (un ** 2).sum(axis=1)
                loss = loss + self.lam * pen
        out = np.where(np.isfinite(loss), loss, BIG)
        return float(out[0]) if single else out

    def _loss(self, pred: np.ndarray) -> np.ndarray:
        """Mean loss over rows for predictions per configuration, shape (S, G) -> (S,)."""
        if self.loss == "log":
            bad = np.any(pred <= 0, axis=-1)
            f = np.log(np.where(pred > 0, pred, 1.0))
            return np.where(bad, BIG, (((f - self.m) ** 2) @ self.A + self.R) / self.n)
        return (((pred - self.m) ** 2) @ self.A + self.R) / self.n

    def predict(self, c: np.ndarray, theta: np.ndarray, T: np.ndarray) -> np.ndarray:
        """Prediction per configuration from coefficients (K,), free parameters (M,) and terms (K, G)."""
        if self.expr.overlaps:
            return self.expr.predict_from(c[:, None] * T, theta)
        return c @ T

    def parts(self, z: np.ndarray) -> tuple[float, float]:
        """(loss, penalty) at one DE vector."""
        c, theta = self.natural(z)
        with np.errstate(all="ignore"):
            T = self.term_matrix(theta)
            loss = float(self._loss(self.predict(c, theta, T)[None])[0])
            un = (c * self.scales(T) / self.ybar)[self.penalised]
        pen = float(np.abs(un).sum() if self.penalty == "l1" else (un ** 2).sum())
        return loss, pen

    # -- exact coefficients at fixed exponents ------------------------------
    def exact_u(self, theta: np.ndarray) -> np.ndarray | None:
        """Exact optimum of the normalised coefficients at ``theta`` (None for the log loss, and for
        overlaps, which are not linear in their coefficients)."""
        if self.loss == "log" or self.expr.overlaps:
            return None
        with np.errstate(all="ignore"):
            T = self.term_matrix(np.asarray(theta, float))
        if not np.all(np.isfinite(T)):
            return None
        s = self.scales(T)
        with np.errstate(all="ignore"):
            A = (self.sqrtA[:, None] * (T.T / s[None, :]) * self.ybar) / math.sqrt(self.n)
        t = self.sqrtA * self.m / math.sqrt(self.n)
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(t))):
            return None
        lo = self.clo * s / self.ybar
        hi = self.chi * s / self.ybar
        if self.lam == 0 or self.penalty == "l2":
            if self.lam:
                ridge = np.sqrt(self.lam) * np.diag(self.penalised.astype(float))
                A = np.vstack([A, ridge[self.penalised]])
                t = np.concatenate([t, np.zeros(int(self.penalised.sum()))])
            res = lsq_linear(A, t, bounds=(lo, hi), method="bvls", tol=1e-14, max_iter=10000)
            return res.x
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(A.T @ A)):  # squares past the float range: leave it to DE
                return None
        try:
            return _l1_box_qp(A, t, self.lam * self.penalised, lo, hi)
        except np.linalg.LinAlgError:
            return None

    def polish(self, z: np.ndarray, best: float, bounds, vectorized: bool) -> tuple[np.ndarray, float, int]:
        """L-BFGS-B from DE's best within the DE bounds; kept only when it lowers the cost.

        The gradient comes from central differences evaluated as one population, so a
        polish step costs one vectorised call instead of 2·D + 1 single ones.
        """
        lo = np.array([b[0] for b in bounds])
        hi = np.array([b[1] for b in bounds])
        calls = [0]

        def fun(x):
            calls[0] += 2 * len(x) + 1
            return _central_gradient(self.cost, np.clip(x, lo, hi), lo, hi, vectorized)

        res = minimize(fun, z, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                       options={"maxiter": 200})
        x = np.clip(res.x, lo, hi)
        cost = float(self.cost(x))
        if np.isfinite(cost) and cost < best:
            return x, cost, calls[0]
        return z, best, calls[0]

    def minimise(self, de: DESettings, seed: int, exact_init: bool, vectorized: bool,
                 progress: Callable | None) -> tuple[np.ndarray, dict]:
        info: dict = {}
        x0 = None
        u_extra = 0.0
        if self.expr.is_linear and exact_init and self.loss != "log":
            u = self.exact_u(np.zeros(0))
            if u is not None:
                x0 = u
                info["exact_cost"] = float(self.cost(u))
                u_extra = 1.5 * float(np.max(np.abs(u))) if len(u) else 0.0
        bounds = self.de_bounds(u_extra)
        if x0 is not None:
            x0 = np.clip(x0, [b[0] for b in bounds], [b[1] for b in bounds])
        generation = [0]
        stopped = [False]

        def callback(intermediate_result):
            generation[0] += 1
            if progress is not None and progress(generation[0], de.maxiter, float(intermediate_result.fun)):
                stopped[0] = True
                return True
            return False

        res = differential_evolution(
            self.cost, bounds, strategy=de.strategy, popsize=int(de.popsize), mutation=de.mutation,
            recombination=float(de.recombination), maxiter=int(de.maxiter), tol=float(de.tol),
            polish=False, init=de.init, seed=int(seed), x0=x0,
            vectorized=vectorized, updating="deferred", callback=callback)
        z, best = np.array(res.x, float), float(res.fun)
        info.update(de_cost=best, success=bool(res.success), message=str(res.message),
                    nit=int(res.nit), nfev=int(res.nfev), stopped=stopped[0])
        if de.polish and not stopped[0]:
            z, best, nfev = self.polish(z, best, bounds, vectorized)
            info["nfev"] += nfev
        # Exact coefficients at the exponents DE found; kept when better.
        u = self.exact_u(z[self.K:])
        if u is not None:
            cand = np.concatenate([u, z[self.K:]])
            cost = float(self.cost(cand))
            if cost < best:
                z, best = cand, cost
                info["refined"] = True
        info["cost"] = best
        return z, info


def _central_gradient(cost, z: np.ndarray, lo: np.ndarray, hi: np.ndarray, vectorized: bool):
    """Cost and its central-difference gradient at ``z``, all points in one population call."""
    D = len(z)
    h = 1e-7 * np.maximum(1.0, np.abs(z))
    plus = np.minimum(z + h, hi)
    minus = np.maximum(z - h, lo)
    pts = np.tile(z[:, None], (1, 2 * D + 1))
    pts[np.arange(D), 1 + np.arange(D)] = plus
    pts[np.arange(D), 1 + D + np.arange(D)] = minus
    vals = cost(pts) if vectorized else np.array([cost(pts[:, i]) for i in range(pts.shape[1])])
    step = plus - minus
    grad = np.where(step > 0, (vals[1:D + 1] - vals[D + 1:]) / np.where(step > 0, step, 1), 0.0)
    return float(vals[0]), grad


def _l1_box_qp(A: np.ndarray, t: np.ndarray, lam: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               iters: int = 20000, tol: float = 1e-15) -> np.ndarray:
    """min ||A u − t||² + Σ lam_k |u_k| subject to lo <= u <= hi.

    Where every penalised u_k has one sign (the usual non-negative coefficients), Σ lam_k |u_k|
    is linear, g·u, and the problem is bounded least squares on a shifted target: with
    A'A w = g/2, ||A u − t||² + g·u = ||A u − (t − A w)||² + const. That is solved exactly by
    BVLS and accepted when its optimality (KKT) conditions hold; otherwise, and for mixed signs,
    FISTA with the exact proximal step is used.
    """
    sign = np.where(lo >= 0, 1.0, np.where(hi <= 0, -1.0, 0.0))
    if np.all((sign != 0) | (lam == 0)):
        g = lam * sign
        w = np.linalg.lstsq(A.T @ A, g / 2, rcond=None)[0]
        u = lsq_linear(A, t - A @ w, bounds=(lo, hi), method="bvls", tol=1e-14, max_iter=10000).x
        grad = 2 * A.T @ (A @ u - t) + g
        scale = 1e-9 * (np.max(np.abs(2 * A.T @ t)) + np.max(np.abs(g)) + 1e-300)
        with np.errstate(invalid="ignore"):  # inf - inf on unbounded sides
            at_lo = np.isfinite(lo) & (u <= lo + 1e-12 * (1 + np.abs(lo)))
            at_hi = np.isfinite(hi) & (u >= hi - 1e-12 * (1 + np.abs(hi)))
        ok = np.where(at_lo, grad >= -scale, np.where(at_hi, grad <= scale, np.abs(grad) <= scale))
        if np.all(ok):
            return u
    return _fista(A, t, lam, lo, hi, iters, tol)


def _fista(A: np.ndarray, t: np.ndarray, lam: np.ndarray, lo: np.ndarray, hi: np.ndarray,
           iters: int, tol: float) -> np.ndarray:
    """:func:`_fista_scaled` on unit-norm columns (u = z/s): the same problem, better conditioned
    when terms differ by orders of magnitude."""
    s = np.linalg.norm(A, axis=0)
    s = np.where(s > 0, s, 1.0)
    z = _fista_scaled(A / s, t, lam / s, lo * s, hi * s, iters, tol)
    return z / s


def _fista_scaled(A: np.ndarray, t: np.ndarray, lam: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  iters: int, tol: float) -> np.ndarray:
    """Accelerated proximal gradient for the L1 box QP (any signs), with the gradient-based adaptive
    restart of O'Donoghue and Candès (2015): the momentum is reset whenever it points uphill, which
    keeps the linear convergence of the strongly convex case instead of oscillating for thousands
    of steps on an ill-conditioned term matrix."""
    Q = A.T @ A
    r = A.T @ t
    L = 2 * float(np.linalg.eigvalsh(Q).max()) or 1.0
    start = lsq_linear(A, t, bounds=(lo, hi), method="bvls", tol=1e-14).x
    u = start.copy()
    v = u.copy()
    tk = 1.0

    def obj(x):
        return float(np.sum((A @ x - t) ** 2) + np.sum(lam * np.abs(x)))

    for _ in range(iters):
        g = 2 * (Q @ v - r)
        w = v - g / L
        w = np.sign(w) * np.maximum(np.abs(w) - lam / L, 0.0)
        u_new = np.clip(w, lo, hi)
        if float((v - u_new) @ (u_new - u)) > 0:  # momentum uphill: restart
            tk = 1.0
        t_new = (1 + math.sqrt(1 + 4 * tk * tk)) / 2
        v = u_new + (tk - 1) / t_new * (u_new - u)
        if np.max(np.abs(u_new - u)) <= tol * (1 + np.max(np.abs(u))):
            u = u_new
            break
        u, tk = u_new, t_new
    return u if obj(u) <= obj(start) else start
