"""Prediction intervals: bootstrap replicates, plausible models, and calibration on extrapolation.

A fitted model carries its uncertainty as plain data (``FitResult.uncertainty``), so intervals
come from the model file alone:

* **members**: parameter vectors of one or more expressions, each with a weight. For a user's
  terms there is one member, the model itself; for ``--auto`` the plausible candidates (within
  noise of the best validation score), weighted by ``exp(-(score - best) / noise)``. Each member
  holds ``replicates`` refits on bootstrap resamples of the measurements.
* **the bootstrap** (noise): a *cluster wild bootstrap* (Cameron, Gelbach & Miller 2008) with
  Webb's six-point weights: the relative residual of each configuration (the mean of its repeats
  against the fit), inflated by ``sqrt(G / (G - P))`` for the ``P`` fitted parameters, is flipped
  and scaled by one random weight per configuration, so repeats stay together and the design
  (the configurations the user chose to measure) is kept. Where there are no residual degrees of
  freedom (as many or more fitted parameters than configurations, which λ > 0 allows) the
  configuration means are perturbed by the noise level instead (below). Every replicate is refitted
  by projected Levenberg-Marquardt warm-started from the fit, all replicates at once (arrays of
  shape replicates × parameters), with the fit's own cost (loss + λ·penalty) and bounds.
* **noise** of a new measurement: ``sigma``, the RMS of the inflated relative residuals with
  ``df = G - P`` degrees of freedom (Student-t quantiles, so two degrees of freedom give wide
  intervals); without residual degrees of freedom, the pooled spread of the repeats, and without
  repeats either, a stated prior (:data:`PRIOR_SIGMA`).
* **calibration on extrapolation** (split-conformal style): on "train on the smaller scales, test
  on the larger" splits of the measurements themselves, the model is refitted (with its bootstrap)
  on the smaller scales and asked for the larger ones. Each held-out configuration gives its log
  error ``e``, the spread ``b`` of its un-widened band and its distance ``d`` beyond the training
  range in doublings. Extrapolation adds an error of spread ``κ·d``: with enough points for a
  conformal quantile (9 at the 90 % level) ``κ`` is the conformal quantile of the ``κ`` each point
  needs to be covered; with fewer, the moment estimate
  ``κ² = (κ0² + Σ max(e² − b², 0) / d²) / (1 + n)``, shrunk towards the stated prior ``κ0``
  (:data:`PRIOR_KAPPA`) by one pseudo-point. So intervals grow with the distance from what was
  measured, by as much as the data's own extrapolation errors say.

An interval at ``x`` (level ``1 - α``), in log units around the point prediction ``t``:
``low = t·exp(-sqrt(hl² + q² + (z·κ·d)²))``, ``high = t·exp(sqrt(hu² + q² + (z·κ·d)²))``, where
``hl, hu`` are the distances from ``log t`` to the members' weighted α/2 and 1 - α/2 quantiles, ``q``
the noise quantile, ``z`` the normal quantile of the level and ``d`` the distance beyond the measured
range in doublings (0 inside it).
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit  # normal and Student-t quantiles (scipy.stats costs 0.6 s to import)

from .data import Measurements
from .errors import PerfModelError
from .expression import Expression, parse_expression

FORMAT = "perfmodel.intervals/1"
DEFAULT_LEVEL = 0.9
DEFAULT_REPLICATES = 200
#: Relative run-to-run noise assumed when the data cannot tell it (no residual degrees of freedom
#: and no repeats): a few per cent is what repeated training runs on shared clusters show.
PRIOR_SIGMA = 0.05
#: Prior spread of the extrapolation error per doubling beyond the measured range (log units),
#: the value the calibration is shrunk towards when it has few larger-scale points: 10 % per
#: doubling, the order of the errors empirical models make at 2-4x their measured scale.
PRIOR_KAPPA = 0.1
#: Most "train small, test large" splits used for the calibration.
MAX_SPLITS = 3

def normal_quantile(level: float) -> float:
    """z such that a normal variable lies within ±z standard deviations with probability ``level``."""
    return float(ndtri(0.5 + level / 2))


_Z90 = normal_quantile(DEFAULT_LEVEL)
# Webb's six-point distribution: ±sqrt(1/2), ±1, ±sqrt(3/2), each 1/6 (mean 0, variance 1).
_WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])


# ---------------------------------------------------------------------------------------------
# members: parameter replicates of one expression
# ---------------------------------------------------------------------------------------------
@dataclass
class Member:
    """One expression with its point fit and bootstrap replicates.

    ``coefficients`` shape (R, K), ``params`` shape (R, M) in the expression's parameter order;
    ``point_coefficients`` (K,) and ``point_params`` (M,) the fit on all data.
    """

    expression: str
    param_bounds: dict
    factors: list
    weight: float
    point_coefficients: np.ndarray
    point_params: np.ndarray
    coefficients: np.ndarray
    params: np.ndarray
    score: float = float("nan")
    label: str = ""

    def parsed(self) -> Expression:
        expr, _ = parse_expression(self.expression, list(self.factors),
                                   {k: tuple(v) for k, v in self.param_bounds.items()})
        return expr

    def predict(self, env: dict, coefficients: np.ndarray, params: np.ndarray) -> np.ndarray:
        """Predictions for parameter rows ``coefficients`` (S, K) and ``params`` (S, M): shape (S, n)."""
        expr = self.parsed()
        n = len(next(iter(env.values()))) if env else 1
        theta = params.T if expr.params else None
        vals = expr.term_values(env, theta)
        out = np.zeros((coefficients.shape[0], n))
        with np.errstate(all="ignore"):
            if expr.overlaps:
                parts = np.stack([coefficients[:, k:k + 1] * np.broadcast_to(v, out.shape)
                                  for k, v in enumerate(vals)])
                return expr.predict_from(parts, params.T)
            for k, v in enumerate(vals):
                out += coefficients[:, k:k + 1] * np.broadcast_to(v, out.shape)
        return out

    def to_dict(self) -> dict:
        return {"expression": self.expression, "param_bounds": {k: list(v) for k, v in self.param_bounds.items()},
                "factors": list(self.factors), "weight": float(self.weight), "score": _num(self.score),
                "label": self.label,
                "point": {"coefficients": self.point_coefficients.tolist(), "params": self.point_params.tolist()},
                "coefficients": self.coefficients.tolist(), "params": self.params.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "Member":
        try:
            point = d["point"]
            K = len(point["coefficients"])
            M = len(point["params"])
            coefs = np.asarray(d["coefficients"], float).reshape(-1, K)
            params = np.asarray(d["params"], float).reshape(len(coefs), M)
            m = cls(expression=str(d["expression"]), param_bounds=dict(d.get("param_bounds") or {}),
                    factors=list(d["factors"]), weight=float(d["weight"]),
                    point_coefficients=np.asarray(point["coefficients"], float).reshape(K),
                    point_params=np.asarray(point["params"], float).reshape(M),
                    coefficients=coefs, params=params,
                    score=float("nan") if d.get("score") is None else float(d["score"]),
                    label=str(d.get("label", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise PerfModelError(f"the model file's intervals are malformed ({exc})") from None
        expr = m.parsed()
        if len(expr.terms) != K or len(expr.params) != M:
            raise PerfModelError("the model file's intervals do not match their expression")
        return m


def _num(v) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


# ---------------------------------------------------------------------------------------------
# batched refits
# ---------------------------------------------------------------------------------------------
class _Design:
    """A fit's cost on the distinct configurations, for many target vectors at once."""

    def __init__(self, result, meas: Measurements):
        from .fit import Problem

        self.result = result
        model = refit_model(result)
        self.expr, cbounds = model.resolve(meas)
        self.problem = Problem(self.expr, meas, result.settings["loss"], result.settings["penalty"],
                               float(result.settings["lam"]), cbounds, bool(result.settings.get("nonneg", True)))
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
        self.pen_scale = np.where(pr.penalised, pr.scales(T0) / pr.ybar, 0.0)  # d u_k / d c_k
        lo_t = np.array([self.expr.bounds[p][0] for p in self.expr.params], float)
        hi_t = np.array([self.expr.bounds[p][1] for p in self.expr.params], float)
        self.lo = np.concatenate([pr.clo, lo_t])
        self.hi = np.concatenate([pr.chi, hi_t])
        self.onehot = np.zeros((self.n, self.G))
        self.onehot[np.arange(self.n), self.cfg] = 1.0
        self.fitted_cfg = pr.predict(self.c0, self.theta0, T0)  # (G,), internal unit

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

    def stats(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-configuration loss weights A and targets m for row targets ``Y`` (R, n): (R, G) each."""
        if self.loss == "relative":
            w, v = 1.0 / Y ** 2, Y
        elif self.loss == "absolute":
            w, v = np.full(Y.shape, 1.0 / self.problem.ybar ** 2), Y
        else:
            w, v = np.ones(Y.shape), np.log(Y)
        A = w @ self.onehot
        m = (w * v) @ self.onehot / A
        return A, m

    def predict(self, c, T, theta) -> np.ndarray:
        """Predictions (R, G) from coefficients (R, K), terms (R, K, G) and free parameters (R, M)."""
        if not self.expr.overlaps:
            return np.einsum("rk,rkg->rg", c, T)
        parts = np.transpose(c[:, :, None] * T, (1, 0, 2))  # (K, R, G), as perfmodel.overlap expects
        return self.expr.predict_from(parts, theta.T)

    def coefficient_jacobian(self, c, T, theta) -> np.ndarray:
        """d prediction / d c_k, shape (R, K, G): the terms themselves, times (side/overlap)^(g-1) for a
        term inside an overlap."""
        if not self.expr.overlaps:
            return T
        from .overlap import gradient_weights

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
                out = out + self.lam * (np.abs(u).sum(axis=1) if self.penalty == "l1" else (u ** 2).sum(axis=1))
        return np.where(np.isfinite(out), out, np.inf)

    def refit(self, Y: np.ndarray, iters: int = 40) -> tuple[np.ndarray, np.ndarray]:
        """Refit to row targets ``Y`` (R, n, internal unit) from the fit's own parameters:
        ((R, K) coefficients in seconds per unit of the term, (R, M))."""
        R = Y.shape[0]
        K, M = self.K, self.M
        P = K + M
        A, m = self.stats(Y)
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
                    g[:, :K] += 2 * self.lam * self.pen_scale ** 2 * c
                    H[:, np.arange(K), np.arange(K)] += 2 * self.lam * self.pen_scale ** 2
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


# ---------------------------------------------------------------------------------------------
# noise and the bootstrap
# ---------------------------------------------------------------------------------------------
@dataclass
class Noise:
    """Relative noise of one measurement: ``sigma`` with ``df`` degrees of freedom (None: prior)."""

    sigma: float
    df: float | None
    source: str  # "residuals", "repeats" or "prior"

    def quantile(self, level: float) -> float:
        z = stdtrit(self.df, 0.5 + level / 2) if self.df else normal_quantile(level)
        return float(self.sigma * z)

    def to_dict(self) -> dict:
        return {"sigma": self.sigma, "df": self.df, "source": self.source}


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
        sigma = float(np.sqrt(np.sum(rel ** 2) / df + s_rep ** 2 * (1 - 1 / np.mean(counts))))
        return Noise(sigma, float(df), "residuals"), e
    if s_rep > 0:
        return Noise(s_rep, float(n_rep), "repeats"), np.zeros(G)
    return Noise(PRIOR_SIGMA, None, "prior"), np.zeros(G)


def bootstrap(result, meas: Measurements, replicates: int = DEFAULT_REPLICATES, seed: int = 0
              ) -> tuple[Member, Noise]:
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
    Y = y[None, :] * (design.fitted_cfg / ybar_cfg)[design.cfg][None, :] * factor[:, design.cfg]
    coefs, params = design.refit(Y)
    member = Member(expression=result.expression, param_bounds=dict(result.param_bounds),
                    factors=list(result.factors), weight=1.0,
                    point_coefficients=design.c0 * design.yscale, point_params=design.theta0,
                    coefficients=coefs, params=params, label="fit")
    return member, noise


# ---------------------------------------------------------------------------------------------
# intervals
# ---------------------------------------------------------------------------------------------
def weighted_quantile(values: np.ndarray, weights: np.ndarray, q) -> np.ndarray:
    """Weighted quantiles along axis 0: ``values`` (S, n), ``weights`` (S,) -> (len(q), n)."""
    order = np.argsort(values, axis=0)
    v = np.take_along_axis(values, order, axis=0)
    w = weights[order]
    cw = np.cumsum(w, axis=0) - 0.5 * w
    cw /= np.sum(weights)
    q = np.atleast_1d(q)
    out = np.empty((len(q), values.shape[1]))
    for j in range(values.shape[1]):
        out[:, j] = np.interp(q, cw[:, j], v[:, j])
    return out


def distance(factor_ranges: dict, env: dict) -> np.ndarray:
    """Distance beyond the measured range in doublings: max over factors of log2 beyond [lo, hi]."""
    n = len(next(iter(env.values()))) if env else 0
    d = np.zeros(n)
    with np.errstate(all="ignore"):
        for s, (lo, hi) in factor_ranges.items():
            x = np.asarray(env[s], float)
            if hi > 0 and lo > 0:
                above = np.where(x > hi, np.log2(np.maximum(x, 1e-300) / hi), 0.0)
                below = np.where((x < lo) & (x > 0), np.log2(lo / np.maximum(x, 1e-300)), 0.0)
                d = np.maximum(d, np.where(np.isfinite(above), above, 0.0))
                d = np.maximum(d, np.where(np.isfinite(below), below, 0.0))
            else:  # a factor that reaches 0 or below: distance relative to the range's width
                width = max(hi - lo, abs(hi), 1e-300)
                out = np.maximum(x - hi, lo - x) / width
                d = np.maximum(d, np.where(out > 0, np.log2(1 + out), 0.0))
    return d


@dataclass
class Uncertainty:
    """What a fit needs to give intervals: members, noise, calibration and the predictor choice."""

    members: list
    noise: Noise
    calibration: list  # per held-out configuration of the nested splits: [e, b_low, b_high, d] (see module doc)
    factor_ranges: dict
    predictor: str = "best"  # "best" (member 0) or "ensemble" (weighted mean of the members' point fits)
    predictor_note: str = ""
    replicates: int = DEFAULT_REPLICATES
    seed: int = 0
    seconds: float = 0.0
    method: str = "cluster wild bootstrap (Webb weights), Levenberg-Marquardt refits"
    share_replicates: list | None = None  # (R, K) the best member's term shares per replicate
    splits: list | None = None

    # -- calibration --------------------------------------------------------------------------
    def kappa(self, level: float) -> tuple[float, str]:
        """Spread of the extrapolation error per doubling (log units) at ``level``, and how it was obtained."""
        z = normal_quantile(level)
        pts = np.asarray(self.calibration, float).reshape(-1, 4)
        n = len(pts)
        if n == 0:
            return PRIOR_KAPPA, "the prior (no larger-scale split to calibrate on)"
        e, b_lo, b_hi, d = pts.T
        b = np.where(e > 0, b_hi, b_lo) / _Z90  # spreads of the un-widened bands
        rank = math.ceil((n + 1) * level)
        if rank <= n:
            need = np.sqrt(np.maximum(e ** 2 - (z * b) ** 2, 0.0)) / (z * d)
            return float(np.sort(need)[rank - 1]), f"conformal quantile of {n} larger-scale configurations"
        k2 = (PRIOR_KAPPA ** 2 + float(np.sum(np.maximum(e ** 2 - b ** 2, 0.0) / d ** 2))) / (1 + n)
        return math.sqrt(k2), f"{n} larger-scale configurations, shrunk towards the prior {PRIOR_KAPPA:g}"

    # -- predictions --------------------------------------------------------------------------
    def member_predictions(self, env: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(replicate predictions (S, n), their weights (S,), point predictions per member (J, n))."""
        preds, weights = [], []
        for m in self.members:
            p = m.predict(env, m.coefficients, m.params)
            preds.append(p)
            weights.append(np.full(len(p), m.weight / len(p)))
        return np.vstack(preds), np.concatenate(weights), self.point_predictions(env)

    def point_predictions(self, env: dict) -> np.ndarray:
        """Each member's prediction from its fit on all data, shape (J, n)."""
        return np.vstack([m.predict(env, m.point_coefficients[None], m.point_params[None])[0] for m in self.members])

    def point(self, points: np.ndarray) -> np.ndarray:
        if self.predictor == "ensemble" and len(self.members) > 1:
            w = np.array([m.weight for m in self.members])
            return w @ points / w.sum()
        return points[0]

    def interval(self, env: dict, level: float = DEFAULT_LEVEL, widen: bool = True, predictions=None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(point, low, high) predictions, each shape (n,); ``widen=False`` leaves out the calibration.
        ``predictions``: :meth:`member_predictions` at ``env``, when the caller has them already."""
        _check_level(level)
        with np.errstate(all="ignore"):
            preds, weights, points = self.member_predictions(env) if predictions is None else predictions
            t = self.point(points)
        a = (1 - level) / 2
        with np.errstate(all="ignore"):
            logs = np.log(np.where(preds > 0, preds, np.nan))
            ok = np.isfinite(logs)
            logs = np.where(ok, logs, np.log(np.maximum(t, 1e-300))[None, :])
            lo_q, hi_q = weighted_quantile(logs, weights, [a, 1 - a])
            lt = np.log(np.where(t > 0, t, np.nan))
            hl = np.maximum(lt - lo_q, 0.0)
            hu = np.maximum(hi_q - lt, 0.0)
            q = self.noise.quantile(level)
            kappa = self.kappa(level)[0] if widen else 0.0
            x = normal_quantile(level) * kappa * distance(self.factor_ranges, env)
            low = np.exp(lt - np.sqrt(hl ** 2 + q ** 2 + x ** 2))
            high = np.exp(lt + np.sqrt(hu ** 2 + q ** 2 + x ** 2))
        bad = ~(t > 0)
        low = np.where(bad, np.nan, low)
        high = np.where(bad, np.nan, high)
        return t, low, high

    def constants(self, level: float = DEFAULT_LEVEL) -> dict[str, tuple[float, float]]:
        """{name: (low, high)} of the best member's constants and free parameters (percentile)."""
        _check_level(level)
        m = self.members[0]
        a = (1 - level) / 2
        out = {}
        for k in range(m.coefficients.shape[1]):
            lo, hi = np.quantile(m.coefficients[:, k], [a, 1 - a])
            out[f"c{k}"] = (float(lo), float(hi))
        names = m.parsed().params
        for j, name in enumerate(names):
            lo, hi = np.quantile(m.params[:, j], [a, 1 - a])
            out[name] = (float(lo), float(hi))
        return out

    def shares(self, terms: list, level: float = DEFAULT_LEVEL) -> dict[str, tuple[float, float]]:
        """{term: (low, high)} of each term's share of the measured time over the replicates."""
        _check_level(level)
        if not self.share_replicates:
            return {}
        S = np.asarray(self.share_replicates, float)
        a = (1 - level) / 2
        return {t: (float(np.quantile(S[:, k], a)), float(np.quantile(S[:, k], 1 - a))) for k, t in enumerate(terms)}

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": FORMAT, "method": self.method, "replicates": int(self.replicates), "seed": int(self.seed),
                "seconds": float(self.seconds), "predictor": self.predictor, "predictor_note": self.predictor_note,
                "noise": self.noise.to_dict(), "factor_ranges": {k: list(v) for k, v in self.factor_ranges.items()},
                "calibration": {"points": [[float(v) for v in pt] for pt in self.calibration],
                                "splits": self.splits or []},
                "members": [m.to_dict() for m in self.members],
                "share_replicates": self.share_replicates or []}

    @classmethod
    def from_dict(cls, d: dict) -> "Uncertainty":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PerfModelError(f"the model file's intervals are not in the format {FORMAT!r}")
        try:
            nz = d["noise"]
            noise = Noise(float(nz["sigma"]), None if nz.get("df") is None else float(nz["df"]), str(nz["source"]))
            cal = d["calibration"]
            members = [Member.from_dict(m) for m in d["members"]]
            points = [[float(v) for v in pt] for pt in cal["points"]]
            if any(len(pt) != 4 for pt in points):
                raise ValueError("a calibration point needs 4 numbers")
            out = cls(members=members, noise=noise, calibration=points,
                      factor_ranges={str(k): (float(v[0]), float(v[1])) for k, v in d["factor_ranges"].items()},
                      predictor=str(d.get("predictor", "best")), predictor_note=str(d.get("predictor_note", "")),
                      replicates=int(d.get("replicates", 0)), seed=int(d.get("seed", 0)),
                      seconds=float(d.get("seconds", 0.0)), method=str(d.get("method", "")),
                      share_replicates=d.get("share_replicates") or None, splits=cal.get("splits") or None)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise PerfModelError(f"the model file's intervals are malformed ({exc})") from None
        if not members:
            raise PerfModelError("the model file's intervals have no members")
        if out.predictor not in ("best", "ensemble"):
            raise PerfModelError(f"unknown predictor {out.predictor!r} in the model file's intervals")
        return out


def _check_level(level: float) -> None:
    try:
        ok = 0 < float(level) < 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise PerfModelError(f"the interval level must be a number between 0 and 1 (e.g. 0.9), got {level!r}")


# ---------------------------------------------------------------------------------------------
# building it: bootstrap every member, calibrate on "train small, test large" splits
# ---------------------------------------------------------------------------------------------
def refit_model(result, **changes):
    """A :class:`perfmodel.Model` that refits ``result``'s expression with its settings."""
    from .fit import Model

    s = dict(result.settings)
    bounds = {k: tuple(v) for k, v in (s.get("bounds") or {}).items() if k.startswith("c") and k[1:].isdigit()}
    bounds.update({k: tuple(v) for k, v in result.param_bounds.items()})
    kwargs = {k: v for k, v in s.items() if k not in ("terms", "preset", "bounds")}
    kwargs["mutation"] = tuple(kwargs.get("mutation", (0.5, 1.0)))
    kwargs.update(changes)
    return Model(result.expression, bounds=bounds or None, **kwargs)


def _quick_refit(result, meas: Measurements):
    """``result``'s model refitted on ``meas`` with the automatic search's DE settings (one generation,
    i.e. the exact optimum, when the model is linear in its constants)."""
    from .autoselect import SEARCH_DE, exact_settings

    model = refit_model(result, **SEARCH_DE)
    return model.clone(**exact_settings(model, meas)).fit(meas)


def scale_axis(meas: Measurements) -> str | None:
    """The factor along which "train small, test large" splits are made: ``p``, else ``N``, else
    the factor with the most distinct values (at least three)."""
    counts = {s: len(np.unique(meas.values(s))) for s in meas.factors}
    for s in ("p", "N"):
        if counts.get(s, 0) >= 3:
            return s
    best = max(counts, key=counts.get) if counts else None
    return best if best is not None and counts[best] >= 3 else None


def extrapolation_splits(meas: Measurements, max_splits: int = MAX_SPLITS) -> list[tuple[str, np.ndarray]]:
    """[(description, test mask)]: the largest values of the scale axis held out, one, two, ... at a time,
    keeping at least two of its values (and two configurations) to train on."""
    axis = scale_axis(meas)
    if axis is None:
        return []
    x = meas.values(axis)
    vals = np.unique(x)
    out = []
    for n_out in range(1, len(vals) - 1):
        cut = vals[-n_out - 1]
        test = x > cut
        if meas.subset(~test).n_configurations < 2:
            break
        out.append((f"{axis} > {cut:g}", test))
        if len(out) >= max_splits:
            break
    return out


def _share_replicates(member: Member, meas: Measurements) -> list:
    env = meas.env()
    expr = member.parsed()
    theta = member.params.T if expr.params else None
    vals = expr.term_values(env, theta)
    R = member.coefficients.shape[0]
    with np.errstate(all="ignore"):
        parts = np.stack([member.coefficients[:, k, None] * np.broadcast_to(v, (R, meas.n_rows))
                          for k, v in enumerate(vals)])  # (K, R, n)
        parts = expr.combine(parts, member.params.T)  # overlaps split by perfmodel.overlap's rule
        contrib = np.transpose(parts, (1, 0, 2)).sum(axis=2)  # (R, K)
        total = contrib.sum(axis=1, keepdims=True)
        shares = np.where(total != 0, contrib / total, np.nan)
    return shares.tolist()


def _bands(results: list, weights: list, meas: Measurements, replicates: int, seed: int
           ) -> tuple[list[Member], Noise]:
    """Bootstrap members for ``results`` (the first is the displayed model) and its noise."""
    members, noise = [], None
    total = float(sum(weights))
    for j, (res, w) in enumerate(zip(results, weights)):
        R = replicates if j == 0 or len(results) == 1 else max(20, int(round(replicates * w / total)))
        m, nz = bootstrap(res, meas, R, seed + j)
        m.weight = w / total
        m.label = "fit" if j == 0 else f"candidate {j + 1}"
        members.append(m)
        noise = noise or nz
    return members, noise


def compute(result, meas: Measurements, *, candidates: list | None = None, scores: list | None = None,
            noise_scale: float | None = None, replicates: int = DEFAULT_REPLICATES, seed: int | None = None,
            calibrate: bool = True, calibration_replicates: int = 100) -> Uncertainty:
    """The :class:`Uncertainty` of ``result`` fitted on ``meas``.

    ``candidates``: other plausible fits of ``meas`` (FitResults, e.g. the automatic search's runners-up)
    with ``scores`` (validation scores, ``result``'s first; lower is better) and the score noise
    ``noise_scale``; the members are weighted ``exp(-(score - best) / noise)``. The ensemble of their
    point fits predicts instead of ``result`` alone when it does better on the extrapolation splits.
    """
    with np.errstate(all="ignore"):  # non-finite replicates are handled where they arise
        return _compute(result, meas, candidates, scores, noise_scale, replicates, seed, calibrate,
                        calibration_replicates)


def _compute(result, meas, candidates, scores, noise_scale, replicates, seed, calibrate, calibration_replicates):
    t0 = _time.perf_counter()
    seed = int(result.settings.get("seed", 0)) if seed is None else int(seed)
    allow_ensemble = bool(candidates)
    if not candidates and result.n_params > result.n_configurations:
        candidates, scores, noise_scale = submodels(result, meas)
    results = [result] + list(candidates or [])
    if len(results) > 1:
        sc = np.asarray(scores, float)
        if sc.shape != (len(results),):
            raise PerfModelError("give one validation score per model (the fit's first)")
        scale = noise_scale if noise_scale and noise_scale > 0 else max(float(np.std(sc)), 1e-9)
        weights = list(np.exp(-(sc - np.min(sc)) / scale))
    else:
        sc, weights = np.array([float("nan")]), [1.0]
    members, noise = _bands(results, weights, meas, replicates, seed)
    for m, s in zip(members, sc):
        m.score = float(s)
    unc = Uncertainty(members=members, noise=noise, calibration=[],
                      factor_ranges={k: tuple(v) for k, v in result.factor_ranges.items()},
                      replicates=int(replicates), seed=seed)
    unc.share_replicates = _share_replicates(members[0], meas)
    if calibrate:
        _calibrate(unc, results, weights, meas, calibration_replicates, seed, allow_ensemble)
    unc.seconds = _time.perf_counter() - t0
    return unc


def submodels(result, meas: Measurements) -> tuple[list, list, float]:
    """The fit with one of its terms left out, each refitted: (fits, scores, noise scale).

    For a model with more fitted parameters than configurations, where the penalty picks one of
    many models that fit equally well, these are the plausible alternatives its interval must show.
    Scores are ``n·loss / (2σ²)`` (σ: the relative noise of one run, or the prior), so a submodel
    that fits clearly worse gets a small weight ``exp(-(score - best))``.
    """
    from .expression import parse_expression

    fits = []
    for k, term in enumerate(result.terms):
        if term == "1" or result.coefficients[f"c{k}"] == 0 or len(result.terms) < 3:
            continue
        kept = [(t, sg) for j, (t, sg) in enumerate(zip(result.terms, result.signs)) if j != k]
        spec = " ".join(("- " if sg < 0 else "+ ") + f"({t})" for t, sg in kept).lstrip("+ ")
        try:
            expr, _ = parse_expression(spec, list(result.factors))
            bounds = {p: tuple(b) for p, b in result.param_bounds.items() if p in expr.params}
            model = refit_model(result)
            fits.append(model.clone(terms=spec, bounds=bounds or None).fit(meas))
        except PerfModelError:
            continue
    sigma = PRIOR_SIGMA
    scores = [meas.n_rows * r.loss / (2 * sigma ** 2) for r in [result] + fits]
    return fits, scores, 1.0


def _calibrate(unc: Uncertainty, results: list, weights: list, meas: Measurements, replicates: int,
               seed: int, allow_ensemble: bool = True) -> None:
    """Scores of the larger-scale points on nested splits; chooses best vs ensemble."""
    points: dict = {"best": [], "ensemble": []}
    splits, err_best, err_ens = [], [], []
    level = DEFAULT_LEVEL
    for label, test in extrapolation_splits(meas):
        train_m, test_m = meas.subset(~test), meas.subset(test)
        fits = []
        for res in results:
            try:
                fits.append(_quick_refit(res, train_m))
            except PerfModelError:
                fits.append(None)
        if fits[0] is None:
            splits.append({"split": label, "error": "the model could not be refitted on the smaller scales"})
            continue
        ok = [j for j, f in enumerate(fits) if f is not None]
        try:
            members, noise = _bands([fits[j] for j in ok], [weights[j] for j in ok], train_m, replicates, seed)
        except PerfModelError as exc:
            splits.append({"split": label, "error": str(exc)})
            continue
        nested = Uncertainty(members=members, noise=noise, calibration=[],
                             factor_ranges={k: tuple(v) for k, v in fits[0].factor_ranges.items()})
        env = test_m.env()
        y = test_m.y
        predictions = nested.member_predictions(env)
        points_j = predictions[2]
        ens = nested.point(points_j) if len(ok) > 1 else points_j[0]
        err_best += list(np.abs(points_j[0] / y - 1))
        err_ens += list(np.abs(ens / y - 1))
        d = distance(nested.factor_ranges, env)
        cfg = test_m.configurations()
        covered = []
        for predictor in ("best", "ensemble") if len(ok) > 1 else ("best",):
            nested.predictor = predictor
            t, low, high = nested.interval(env, level, widen=False, predictions=predictions)
            with np.errstate(all="ignore"):
                e, b_lo, b_hi = np.log(y / t), np.log(t / low), np.log(high / t)
            for g in np.unique(cfg):  # repeats of one configuration are one point: their mean error
                sel = cfg == g
                pt = [float(np.mean(e[sel])), float(b_lo[sel][0]), float(b_hi[sel][0]), float(d[sel][0])]
                if all(math.isfinite(v) for v in pt) and pt[3] > 0:
                    points[predictor].append(pt)
                    if predictor == "best":
                        covered.append(-pt[1] <= pt[0] <= pt[2])
        splits.append({"split": label, "train_configurations": train_m.n_configurations,
                       "test_configurations": test_m.n_configurations,
                       "mape_fit": float(np.mean(np.abs(points_j[0] / y - 1)) * 100),
                       "mape_ensemble": float(np.mean(np.abs(ens / y - 1)) * 100) if len(ok) > 1 else None,
                       "covered_unwidened": float(np.mean(covered)) if covered else None})
    unc.splits = splits
    if len(results) > 1 and not allow_ensemble:
        unc.predictor_note = (f"the interval includes {len(results) - 1} model(s) with one term left out, which fit "
                              "the measurements about as well (more unknowns than configurations)")
    elif len(results) > 1:
        if err_best and np.mean(err_ens) < np.mean(err_best):
            unc.predictor = "ensemble"
            unc.predictor_note = (f"predicts with the weighted ensemble of {len(results)} plausible models: on the "
                                  f"larger-scale splits its error was {np.mean(err_ens) * 100:.1f} % against "
                                  f"{np.mean(err_best) * 100:.1f} % for the displayed model alone")
        elif err_best:
            unc.predictor_note = (f"predicts with the displayed model: on the larger-scale splits its error was "
                                  f"{np.mean(err_best) * 100:.1f} % against {np.mean(err_ens) * 100:.1f} % for the "
                                  f"ensemble of {len(results)} plausible models")
        else:
            unc.predictor_note = "predicts with the displayed model (no larger-scale split to compare the ensemble on)"
    unc.calibration = points[unc.predictor]
