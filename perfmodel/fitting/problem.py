"""The cost a fit minimises and its exact solvers (see :mod:`perfmodel.fitting.model` for the method).

:class:`Problem` holds one expression on one dataset: the search vector ``z`` (normalised
coefficients and free parameters), the cost ``loss + λ·penalty`` for a whole DE population at once,
and the exact optimum of the coefficients where the expression is linear in them (bounded least
squares, ridge, or FISTA for L1). :func:`time_scale` keeps extreme time units inside what floats hold.

Imports from the model language and data layers only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import differential_evolution, lsq_linear, minimize

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..language.expression import Expression
from .reach import reach_weights

BIG = 1e12  # cost of an invalid candidate (non-finite or non-positive prediction with log loss)


#: Times inside this range are fitted as they are; outside it they are scaled by a power of two.
_PLAIN_TIMES = (1e-100, 1e100)


_MAX_TIME_SPAN = 1e200


def time_scale(y: np.ndarray) -> float:
    """The internal unit of time: 1 for ordinary times, else a power of two near their middle.

    Every loss is unchanged when times and coefficients are scaled together, and a power of two
    scales exactly; this keeps squares and sums of times like 1e308 or 1e-300 finite. Raises
    :class:`PerfModelError` when the times span too many orders of magnitude for any unit."""
    lo, hi = float(np.min(y)), float(np.max(y))
    if _PLAIN_TIMES[0] <= lo and hi <= _PLAIN_TIMES[1]:
        return 1.0
    if hi / lo > _MAX_TIME_SPAN or not math.isfinite(hi / lo):
        raise PerfModelError(
            f"the times span from {lo:g} to {hi:g} s, more than {math.log10(_MAX_TIME_SPAN):.0f} "
            "orders of magnitude; check the time column's unit"
        )
    return math.ldexp(1.0, min(1023, max(-1022, math.floor((math.log2(lo) + math.log2(hi)) / 2))))


def scale_weights(meas: Measurements, ratio: float) -> np.ndarray:
    """Each row's loss weight when every larger measured worker count weighs ``ratio`` times the one
    before (``Model(scale_weight=...)``): ``ratio**k`` at the k-th smallest ``p`` (k from 0), normalised
    to a mean of 1 so λ keeps its meaning; ones without a factor ``p`` or at ratio 1."""
    if float(ratio) == 1.0 or "p" not in meas.factors:
        return np.ones(meas.n_rows)
    p = meas.values("p")
    log_w = np.searchsorted(np.unique(p), p) * math.log(float(ratio))
    w = np.maximum(np.exp(log_w - log_w.max()), 1e-12)  # no row's weight overflows or vanishes
    return w / w.mean()


def pinned(lo: float, hi: float) -> bool:
    """True when bounds [lo, hi] hold a coefficient at one value (to a relative 1e-6): a term may then be
    0 on every measured row (an inter-node cost on one-node data, sized elsewhere)."""
    return bool(np.isfinite(lo) and np.isfinite(hi) and 0 <= hi - lo <= 1e-6 * max(abs(lo), abs(hi)))


class Problem:
    """The cost function of one fit, vectorised over a DE population.

    Rows that share a configuration share a prediction, so the loss is computed exactly on
    the distinct configurations with per-configuration statistics:
    Σ_rows w_i²(f(pred) − v_i)² = Σ_g A_g (f(pred_g) − m_g)² + R, where A_g = Σ w_i²,
    m_g = Σ w_i² v_i / A_g and R the within-configuration part, which no parameter changes
    (v = y for the relative and absolute losses, v = log y for the log loss).
    """

    def __init__(
        self,
        expr: Expression,
        meas: Measurements,
        loss: str,
        penalty: str,
        lam: float,
        cbounds: dict,
        nonneg: bool,
        reach_env: dict | None = None,
        scale_weight: float = 1.0,
    ):
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
            w2, v = 1.0 / y**2, y
        elif loss == "absolute":
            w2, v = np.full(self.n, 1.0 / self.ybar**2), y
        else:
            w2, v = np.ones(self.n), np.log(y)
        self.row_weights = scale_weights(meas, scale_weight)
        w2 = w2 * self.row_weights
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
        self.fixed_matrix = (
            np.vstack([np.broadcast_to(values[k], (G,)).astype(float) for k in fixed]) if fixed else np.zeros((0, G))
        )
        for k, v in zip(fixed, self.fixed_matrix, strict=True):
            if not np.all(np.isfinite(v)):
                i = int(np.flatnonzero(~np.isfinite(v))[0])
                raise PerfModelError(f"term {expr.terms[k].text!r} is not finite at row {self.rows_of_group[i]}")
            if not np.any(v != 0) and not pinned(lo[k], hi[k]):  # a pinned coefficient needs no data
                raise PerfModelError(
                    f"term {expr.terms[k].text!r} is 0 on every row, so its coefficient cannot be fitted; remove it"
                )
        self.fixed_scales = self._weighted_scale(self.fixed_matrix)
        # The penalty weighs a term by its effect where measured and at the horizon beyond (reach_env:
        # perfmodel.fitting.reach; None: where measured only): a weight >= 1 per term on its |u|.
        self.reach_env = reach_env if lam and reach_env else None
        self.n_reach = len(next(iter(self.reach_env.values()))) if self.reach_env else 0  # horizon points
        self.fixed_reach = np.ones(len(fixed))
        if self.reach_env is not None and fixed:
            with np.errstate(all="ignore"):
                at = expr.term_values(self.reach_env, np.zeros(self.M), only=fixed)
                self.fixed_reach = reach_weights(
                    self.fixed_scales,
                    np.vstack([np.broadcast_to(np.asarray(at[k], float), (self.n_reach,)) for k in fixed]),
                )
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

    def reach(self, theta: np.ndarray, T: np.ndarray) -> np.ndarray:
        """Each term's penalty weight for its effect at the horizon (:func:`reach_weights`; 1 without
        a horizon) at one ``theta`` (M,), ``T`` its term matrix (K, G): shape (K,)."""
        out = np.ones(self.K)
        if self.reach_env is None:
            return out
        out[self.fixed] = self.fixed_reach
        if self.dynamic:
            with np.errstate(all="ignore"):
                at = self.expr.term_values(self.reach_env, np.asarray(theta, float), only=self.dynamic)
                for k in self.dynamic:
                    out[k] = reach_weights(
                        self._weighted_scale(T[k]), np.broadcast_to(np.asarray(at[k], float), (self.n_reach,))
                    )
        return out

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
        theta = z[self.K :]
        with np.errstate(all="ignore"):
            T = self.term_matrix(theta)
            c = z[: self.K] * self.ybar / self.scales(T)
        return np.clip(c, self.clo, self.chi), theta

    # -- cost ---------------------------------------------------------------
    def cost(self, z: np.ndarray) -> float | np.ndarray:
        """Cost of DE vectors ``z`` of shape (D,) -> scalar, or (D, S) -> (S,)."""
        z = np.asarray(z, float)
        single = z.ndim == 1
        Z = z[:, None] if single else z
        u, theta = Z[: self.K], Z[self.K :]
        S = Z.shape[1]
        with np.errstate(all="ignore"):
            c = np.empty((S, self.K))
            scale = np.empty((S, self.K))
            pred = np.zeros((S, len(self.counts)))
            if self.fixed:
                scale[:, self.fixed] = self.fixed_scales
                c[:, self.fixed] = u[self.fixed].T * self.ybar / self.fixed_scales
            parts = np.empty((self.K,) + pred.shape) if self.expr.overlaps else None
            rho = None
            if self.reach_env is not None:  # (set only with λ > 0)
                rho = np.ones((S, self.K))
                rho[:, self.fixed] = self.fixed_reach
                at = self.expr.term_values(self.reach_env, theta, only=self.dynamic) if self.dynamic else []
            if self.dynamic:
                vals = self.expr.term_values(self.env, theta, only=self.dynamic)
                for k in self.dynamic:
                    T = np.broadcast_to(vals[k], pred.shape)
                    sk = self._weighted_scale(T)
                    scale[:, k] = sk
                    if rho is not None:
                        rho[:, k] = reach_weights(sk, np.broadcast_to(np.asarray(at[k], float), (S, self.n_reach)))
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
            if parts is not None:  # overlap groups: (a^g + b^g)^(1/g) per group (perfmodel.language.overlap)
                pred = self.expr.predict_from(parts, theta)
            loss = self._loss(pred)
            if self.lam:
                un = (c * scale / self.ybar * (1.0 if rho is None else rho))[:, self.penalised]
                pen = np.abs(un).sum(axis=1) if self.penalty == "l1" else (un**2).sum(axis=1)
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
            un = (c * self.scales(T) / self.ybar * self.reach(theta, T))[self.penalised]
        pen = float(np.abs(un).sum() if self.penalty == "l1" else (un**2).sum())
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
        rho = self.reach(np.asarray(theta, float), T)
        if self.lam == 0 or self.penalty == "l2":
            if self.lam:
                ridge = np.sqrt(self.lam) * np.diag(self.penalised * rho)
                A = np.vstack([A, ridge[self.penalised]])
                t = np.concatenate([t, np.zeros(int(self.penalised.sum()))])
            res = lsq_linear(A, t, bounds=(lo, hi), method="bvls", tol=1e-14, max_iter=10000)
            return res.x
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(A.T @ A)):  # squares past the float range: leave it to DE
                return None
        try:
            return _l1_box_qp(A, t, self.lam * self.penalised * rho, lo, hi)
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

        res = minimize(
            fun, z, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)), options={"maxiter": 200}
        )
        x = np.clip(res.x, lo, hi)
        cost = float(self.cost(x))
        if np.isfinite(cost) and cost < best:
            return x, cost, calls[0]
        return z, best, calls[0]

    def minimise(
        self, de: DESettings, seed: int, exact_init: bool, vectorized: bool, progress: Callable | None
    ) -> tuple[np.ndarray, dict]:
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
            self.cost,  # type: ignore[arg-type]  # vectorized: (D, S) -> (S,), beside the scalar form the stubs know
            bounds,  # type: ignore[arg-type]  # (low, high) pairs, as SciPy documents; the stubs omit a list of them
            strategy=de.strategy,  # type: ignore[arg-type]  # a str checked against STRATEGIES by the settings
            popsize=int(de.popsize),
            mutation=de.mutation,
            recombination=float(de.recombination),
            maxiter=int(de.maxiter),
            tol=float(de.tol),
            polish=False,
            init=de.init,  # type: ignore[arg-type]  # one of the names SciPy takes (DESettings.init)
            seed=int(seed),
            x0=x0,
            vectorized=vectorized,
            updating="deferred",
            callback=callback,
        )
        z, best = np.array(res.x, float), float(res.fun)
        info.update(
            de_cost=best,
            success=bool(res.success),
            message=str(res.message),
            nit=int(res.nit),
            nfev=int(res.nfev),
            stopped=stopped[0],
        )
        if de.polish and not stopped[0]:
            z, best, nfev = self.polish(z, best, bounds, vectorized)
            info["nfev"] += nfev
        # Exact coefficients at the exponents DE found; kept when better.
        u = self.exact_u(z[self.K :])
        if u is not None:
            cand = np.concatenate([u, z[self.K :]])
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
    grad = np.where(step > 0, (vals[1 : D + 1] - vals[D + 1 :]) / np.where(step > 0, step, 1), 0.0)
    return float(vals[0]), grad


def _l1_box_qp(
    A: np.ndarray,
    t: np.ndarray,
    lam: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    iters: int = 20000,
    tol: float = 1e-15,
) -> np.ndarray:
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


def _fista(
    A: np.ndarray, t: np.ndarray, lam: np.ndarray, lo: np.ndarray, hi: np.ndarray, iters: int, tol: float
) -> np.ndarray:
    """:func:`_fista_scaled` on unit-norm columns (u = z/s): the same problem, better conditioned
    when terms differ by orders of magnitude."""
    s = np.linalg.norm(A, axis=0)
    s = np.where(s > 0, s, 1.0)
    z = _fista_scaled(A / s, t, lam / s, lo * s, hi * s, iters, tol)
    return z / s


def _fista_scaled(
    A: np.ndarray, t: np.ndarray, lam: np.ndarray, lo: np.ndarray, hi: np.ndarray, iters: int, tol: float
) -> np.ndarray:
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
            raise PerfModelError(
                f"popsize {int(self.popsize)} is above the limit {MAX_POPSIZE} (a fit would run for hours)"
            )
        if int(self.maxiter) > MAX_MAXITER:
            raise PerfModelError(
                f"maxiter {int(self.maxiter)} is above the limit {MAX_MAXITER} (a fit would run for hours)"
            )
        if int(self.popsize) * int(self.maxiter) > MAX_DE_WORK:
            raise PerfModelError(
                f"popsize × maxiter = {int(self.popsize) * int(self.maxiter)} is above the limit "
                f"{MAX_DE_WORK} (a fit would run for hours)"
            )
        if not 0 <= float(self.recombination) <= 1:
            raise PerfModelError("recombination must be within [0, 1]")
        if not float(self.tol) >= 0:
            raise PerfModelError("tol must be >= 0")


STRATEGIES = (
    "best1bin",
    "best1exp",
    "rand1bin",
    "rand1exp",
    "rand2bin",
    "rand2exp",
    "randtobest1bin",
    "currenttobest1bin",
    "best2bin",
    "best2exp",
)


#: Largest DE settings accepted: beyond them one fit runs for hours (popsize × maxiter bounds the
#: number of generations × members per dimension; the defaults use 15 × 1000, the app allows up to
#: 200 × 20,000).
MAX_POPSIZE = 1000


MAX_MAXITER = 100_000


MAX_DE_WORK = 5_000_000
