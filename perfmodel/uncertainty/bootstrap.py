"""Bootstrap replicates of one fit: a cluster wild bootstrap with Webb's weights, every replicate
refitted by projected Levenberg-Marquardt at once (see :mod:`perfmodel.uncertainty`).

Imports from the data and fitting layers only.
"""

from __future__ import annotations

import math

import numpy as np

from ..data.measurements import Measurements
from ..fitting.members import DEFAULT_REPLICATES, PRIOR_SIGMA, Member, Noise
from ..fitting.model import refit_model

# Webb's six-point distribution: ±sqrt(1/2), ±1, ±sqrt(3/2), each 1/6 (mean 0, variance 1).
_WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])


#: Numbers held at once in one refit's (replicates × configurations × parameters) arrays: the
#: interval step scales with the rows (chunks of replicates) instead of needing R·G·P at once.
CELLS = 8_000_000


class _Design:
    """A fit's cost on the distinct configurations, for many target vectors at once."""

    def __init__(self, result, meas: Measurements):
        self.result = result
        model = refit_model(result)
        self.expr, cbounds = model.resolve(meas)
        self.problem = model.problem(self.expr, meas, cbounds)
        pr = self.problem
        self.cfg = meas.configurations()
        self.G = len(pr.counts)
        self.n = meas.n_rows
        self.K, self.M = pr.K, pr.M
        self.loss, self.lam, self.penalty = pr.loss, pr.lam, pr.penalty
        # The problem works in an internal unit of time (seconds / yscale; 1 for ordinary times), so
        # times near the float limits stay finite: so do the refits, and they convert at the end.
        self.yscale = pr.yscale
        self.c0 = np.array(list(result.coefficients.values()), float) / self.yscale
        self.theta0 = np.array([result.params[p] for p in self.expr.params], float)
        with np.errstate(all="ignore"):
            T0 = pr.term_matrix(self.theta0)
        self.pen_scale = np.where(
            pr.penalised, pr.scales(T0) / pr.ybar * pr.reach(self.theta0, T0), 0.0
        )  # d u_k / d c_k
        lo_t = np.array([self.expr.bounds[p][0] for p in self.expr.params], float)
        hi_t = np.array([self.expr.bounds[p][1] for p in self.expr.params], float)
        self.lo = np.concatenate([pr.clo, lo_t])
        self.hi = np.concatenate([pr.chi, hi_t])
        # rows sorted by configuration, and where each configuration starts: per-configuration sums
        # by np.add.reduceat (a rows × configurations one-hot matrix is 74.5 GiB at 100,000 points)
        self.order = np.argsort(self.cfg, kind="stable")
        self.starts = np.flatnonzero(np.r_[True, np.diff(self.cfg[self.order]) != 0])
        self.fitted_cfg = pr.predict(self.c0, self.theta0, T0)  # (G,), internal unit

    def insensitive(self, j: int, values) -> bool:
        """True when the fit's predictions stay the same (to 1e-9) with free parameter ``j`` at each of
        ``values``, the other constants as fitted."""
        pr = self.problem
        for v in values:
            theta = self.theta0.copy()
            theta[j] = v
            with np.errstate(all="ignore"):
                pred = pr.predict(self.c0, theta, pr.term_matrix(theta))
            if not np.allclose(pred, self.fitted_cfg, rtol=1e-9, atol=0.0):
                return False
        return True

    def terms(self, theta: np.ndarray) -> np.ndarray:
        """Term values for parameter rows ``theta`` (R, M): shape (R, K, G)."""
        R = theta.shape[0]
        pr = self.problem
        out = np.empty((R, self.K, self.G))
        if pr.fixed:
            out[:, pr.fixed, :] = pr.fixed_matrix[None]
        if pr.dynamic:
            with np.errstate(all="ignore"):
                vals = self.expr.term_values(pr.env, theta.T)
            for k in pr.dynamic:
                out[:, k, :] = np.broadcast_to(vals[k], (R, self.G))
        return out

    def set_rows(self, base: np.ndarray) -> None:
        """The rows every replicate rescales (``base``, shape (n,), internal unit), summed once per
        configuration: the loss weight ``A0`` and target ``m0`` of each configuration (G,). A replicate
        multiplies all rows of configuration g by one factor f_g, so its weights and targets follow from
        these in closed form (:meth:`stats`): the bootstrap's memory is replicates × configurations,
        never replicates × rows (a 1,000,000-row file took 6.4 GB)."""
        if self.loss == "relative":
            w, v = 1.0 / base**2, base
        elif self.loss == "absolute":
            w, v = np.full(base.shape, 1.0 / self.problem.ybar**2), base
        else:
            w, v = np.ones(base.shape), np.log(base)
        w = w * self.problem.row_weights
        self.A0 = np.add.reduceat(w[self.order], self.starts)
        self.m0 = np.add.reduceat((w * v)[self.order], self.starts) / self.A0

    def stats(self, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-configuration loss weights A and targets m, (R, G) each, of the replicates whose rows are
        the base rows (:meth:`set_rows`) times ``factor`` (R, G), one factor per configuration: the relative
        loss weighs a row by 1/y² (A0/f², targets m0·f), the absolute one evenly (A0, m0·f), the log
        loss fits log y (A0, m0 + log f)."""
        factor = np.asarray(factor, float)
        if self.loss == "relative":
            return self.A0[None, :] / factor**2, self.m0[None, :] * factor
        if self.loss == "absolute":
            return np.broadcast_to(self.A0, factor.shape), self.m0[None, :] * factor
        return np.broadcast_to(self.A0, factor.shape), self.m0[None, :] + np.log(factor)

    def predict(self, c, T, theta) -> np.ndarray:
        """Predictions (R, G) from coefficients (R, K), terms (R, K, G) and free parameters (R, M)."""
        if not self.expr.overlaps:
            return np.einsum("rk,rkg->rg", c, T)
        parts = np.transpose(c[:, :, None] * T, (1, 0, 2))  # (K, R, G), as perfmodel.language.overlap expects
        return self.expr.predict_from(parts, theta.T)

    def coefficient_jacobian(self, c, T, theta) -> np.ndarray:
        """d prediction / d c_k, shape (R, K, G): the terms themselves, times (side/overlap)^(g-1) for a
        term inside an overlap."""
        if not self.expr.overlaps:
            return T
        from ..language.overlap import gradient_weights

        parts = np.transpose(c[:, :, None] * T, (1, 0, 2))
        w = gradient_weights(self.expr.overlaps, self.expr.params, parts, theta.T)
        return T * np.transpose(w, (1, 0, 2))

    def cost(self, c, T, A, m, theta) -> np.ndarray:
        with np.errstate(all="ignore"):
            pred = self.predict(c, T, theta)
            f = np.log(np.where(pred > 0, pred, np.nan)) if self.loss == "log" else pred
            out = np.sum(A * (f - m) ** 2, axis=1) / self.n
            u = c * self.pen_scale
            if self.lam:
                out = out + self.lam * (np.abs(u).sum(axis=1) if self.penalty == "l1" else (u**2).sum(axis=1))
        return np.where(np.isfinite(out), out, np.inf)

    def refit(self, factor: np.ndarray, iters: int = 40) -> tuple[np.ndarray, np.ndarray]:
        """Refit to the base rows (:meth:`set_rows`) times ``factor`` (R, G), one factor per replicate and
        configuration, from the fit's own parameters: ((R, K) coefficients in seconds per unit of the
        term, (R, M)). The replicates are refitted in chunks of at most ``CELLS`` numbers per
        (replicate, configuration, parameter) array."""
        step = max(1, CELLS // max(1, self.G * (self.K + self.M + 1)))
        if factor.shape[0] <= step:
            return self._refit(factor, iters)
        parts = [self._refit(factor[i : i + step], iters) for i in range(0, factor.shape[0], step)]
        return np.concatenate([c for c, _ in parts]), np.concatenate([t for _, t in parts])

    def _refit(self, factor: np.ndarray, iters: int = 40) -> tuple[np.ndarray, np.ndarray]:
        R = factor.shape[0]
        K, M = self.K, self.M
        P = K + M
        A, m = self.stats(factor)
        x = np.tile(np.concatenate([self.c0, self.theta0]), (R, 1))
        x = np.clip(x, self.lo, self.hi)
        T = self.terms(x[:, K:])
        cost = self.cost(x[:, :K], T, A, m, x[:, K:])
        mu = np.full(R, 1e-3)
        h = 1e-6 * np.maximum(1.0, np.abs(self.theta0))
        for _ in range(iters):
            c, theta = x[:, :K], x[:, K:]
            with np.errstate(all="ignore"):
                pred = self.predict(c, T, theta)
                if self.loss == "log":
                    fp = 1.0 / pred
                    res = np.log(np.where(pred > 0, pred, np.nan)) - m
                else:
                    fp = np.ones_like(pred)
                    res = pred - m
                J = np.empty((R, self.G, P))
                J[:, :, :K] = np.transpose(self.coefficient_jacobian(c, T, theta), (0, 2, 1)) * fp[:, :, None]
                for j in range(M):
                    tj = theta.copy()
                    tj[:, j] += h[j]
                    Tj = self.terms(tj)
                    J[:, :, K + j] = (self.predict(c, Tj, tj) - pred) / h[j] * fp
            JA = J * A[:, :, None]
            H = 2.0 / self.n * np.einsum("rgp,rgq->rpq", JA, J)
            g = 2.0 / self.n * np.einsum("rgp,rg->rp", JA, res)
            if self.lam:
                if self.penalty == "l1":
                    g[:, :K] += self.lam * self.pen_scale * np.sign(np.where(c == 0, 1.0, c))
                else:
                    g[:, :K] += 2 * self.lam * self.pen_scale**2 * c
                    H[:, np.arange(K), np.arange(K)] += 2 * self.lam * self.pen_scale**2
            ok = np.all(np.isfinite(H), axis=(1, 2)) & np.all(np.isfinite(g), axis=1)
            H = np.where(ok[:, None, None], H, np.eye(P))
            g = np.where(ok[:, None], g, 0.0)
            # Active bounds: a variable at a bound whose gradient pushes it outside stays there.
            with np.errstate(invalid="ignore"):  # inf - inf on unbounded sides
                at_lo = (x <= self.lo + 1e-12 * (1 + np.abs(self.lo))) & (g > 0)
                at_hi = (x >= self.hi - 1e-12 * (1 + np.abs(self.hi))) & (g < 0)
            frozen = at_lo | at_hi
            diag = np.einsum("rpp->rp", H)
            scale = np.where(diag > 0, diag, 1.0)
            Hd = H + (mu[:, None] * scale)[:, :, None] * np.eye(P)
            Hd = np.where((frozen[:, :, None] | frozen[:, None, :]), 0.0, Hd)
            Hd[:, np.arange(P), np.arange(P)] = np.where(frozen, 1.0, np.einsum("rpp->rp", Hd))
            rhs = np.where(frozen, 0.0, -g)
            try:
                step = np.linalg.solve(Hd, rhs[..., None])[..., 0]
            except np.linalg.LinAlgError:
                step = np.stack([np.linalg.lstsq(Hd[r], rhs[r], rcond=None)[0] for r in range(R)])
            x_new = np.clip(x + step, self.lo, self.hi)
            T_new = self.terms(x_new[:, K:]) if M else T
            cost_new = self.cost(x_new[:, :K], T_new, A, m, x_new[:, K:])
            better = cost_new < cost
            gain = np.where(better, (cost - cost_new) / np.maximum(cost, 1e-300), 0.0)
            x = np.where(better[:, None], x_new, x)
            if M:
                T = np.where(better[:, None, None], T_new, T)
            cost = np.where(better, cost_new, cost)
            mu = np.where(better, np.maximum(mu / 3, 1e-9), mu * 4)
            if np.all((gain < 1e-10) & better | (mu > 1e8)):
                break
        return x[:, :K] * self.yscale, x[:, K:]


def _effective_params(result) -> int:
    """Fitted parameters that the data had to determine: non-zero coefficients and free parameters."""
    nz = sum(1 for v in result.coefficients.values() if v != 0)
    return nz + len(result.params)


def _residual_noise(design: _Design, meas: Measurements, n_eff: int) -> tuple[Noise, np.ndarray]:
    """The noise estimate and the inflated relative residual of each configuration (G,)."""
    y = meas.y / design.yscale
    cfg = design.cfg
    G = design.G
    counts = np.bincount(cfg, minlength=G).astype(float)
    ybar_cfg = np.bincount(cfg, weights=y, minlength=G) / counts
    rel = ybar_cfg / design.fitted_cfg - 1.0
    df = G - n_eff
    n_rep = meas.n_rows - G  # degrees of freedom of the spread across repeats
    s_rep = float(np.sqrt(np.sum((y / ybar_cfg[cfg] - 1.0) ** 2) / n_rep)) if n_rep > 0 else 0.0
    if df >= 1:
        e = (rel - np.average(rel, weights=counts)) * math.sqrt(G / df)
        # one run's noise: the configuration-mean residual plus the part of the repeats' spread it averages out
        sigma = float(np.sqrt(np.sum(rel**2) / df + s_rep**2 * (1 - 1 / np.mean(counts))))
        return Noise(sigma, float(df), "residuals"), e
    if s_rep > 0:
        return Noise(s_rep, float(n_rep), "repeats"), np.zeros(G)
    return Noise(PRIOR_SIGMA, None, "prior"), np.zeros(G)


def _centred(
    design: _Design, coefs: np.ndarray, params: np.ndarray, c_ref: np.ndarray, p_ref: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Replicates shifted by (the fit − the same refit of the unperturbed targets), within the bounds.

    The replicates are refitted by Levenberg-Marquardt, the fit by differential evolution; with a
    penalty (λ > 0, above all L1, whose cost has kinks) or a flat cost the two can settle on different
    points of the same valley, and the replicates would then describe the spread around another point
    than the one reported (at λ = 0.01 on a real series every constant's interval missed its own
    estimate). Refitting the targets without perturbation by the same solver measures that offset,
    so the replicates' spread is kept and their centre is the fit's."""
    K = design.K
    coefs = np.clip(
        coefs + (design.c0 * design.yscale - c_ref), design.lo[:K] * design.yscale, design.hi[:K] * design.yscale
    )
    params = np.clip(params + (design.theta0 - p_ref), design.lo[K:], design.hi[K:])
    return coefs, params


def _unpinned(
    design: _Design, factor: np.ndarray, coefs: np.ndarray, params: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Constants that the penalty pins to one value in every replicate (an L1 kink) although the data
    are noisy get the spread of the unpenalised refits instead: a zero-width interval would claim a
    certainty the measurements do not have."""

    def on_one_value(x):
        # pinned in most replicates, whatever the others do: a central interval of the usual levels would
        # then be that one value (at λ = 0.01 the constant of the data-parallel preset sat on one value
        # in 70-98 % of the replicates, and a 2.5-97.5 % check missed it where the others spread)
        med = np.median(x, axis=0)
        return np.mean(np.abs(x - med) <= 1e-9 * np.maximum(1.0, np.abs(med)), axis=0) >= 0.5

    x = np.column_stack([coefs, params])
    pinned = on_one_value(x)
    if not pinned.any():
        return coefs, params
    lam = design.lam
    design.lam = 0.0
    try:
        free = np.column_stack(_centred(design, *design.refit(factor), *design.refit(np.ones((1, design.G)))))
    finally:
        design.lam = lam
    x[:, pinned] = free[:, pinned]
    K = design.K
    for j in np.flatnonzero(
        (pinned & on_one_value(x))[K:]
    ):  # a free parameter the fit does not depend on (its terms are 0):
        lo, hi = design.lo[K + j], design.hi[K + j]  # any value in its bounds fits alike
        if np.isfinite(lo) and np.isfinite(hi) and hi > lo and design.insensitive(int(j), (lo, hi)):
            x[:, K + j] = np.linspace(lo, hi, len(x))
    return x[:, :K], x[:, K:]


def bootstrap(result, meas: Measurements, replicates: int = DEFAULT_REPLICATES, seed: int = 0) -> tuple[Member, Noise]:
    """Cluster wild bootstrap of ``result`` on ``meas``: its member (replicates) and noise estimate."""
    design = _Design(result, meas)
    noise, e = _residual_noise(design, meas, _effective_params(result))
    rng = np.random.default_rng(seed)
    R = int(replicates)
    v = rng.choice(_WEBB, size=(R, design.G))
    if noise.source == "residuals":
        factor = 1.0 + e[None, :] * v
    else:  # no residual degrees of freedom: perturb the configuration means by the noise level
        factor = np.exp(noise.sigma * v / math.sqrt(np.mean(np.bincount(design.cfg))))
    factor = np.maximum(factor, 0.05)
    y = meas.y / design.yscale
    ybar_cfg = np.bincount(design.cfg, weights=y) / np.bincount(design.cfg)
    design.set_rows(y * (design.fitted_cfg / ybar_cfg)[design.cfg])  # the rows moved onto the fit, residuals kept
    coefs, params = _centred(design, *design.refit(factor), *design.refit(np.ones((1, design.G))))
    if design.lam and noise.sigma > 0:
        coefs, params = _unpinned(design, factor, coefs, params)
    member = Member(
        expression=result.expression,
        param_bounds=dict(result.param_bounds),
        factors=list(result.factors),
        weight=1.0,
        point_coefficients=design.c0 * design.yscale,
        point_params=design.theta0,
        coefficients=coefs,
        params=params,
        label="fit",
    )
    return member, noise
