"""Evaluating a fit's stored uncertainty: its members, noise and calibration (plain data).

A fitted model carries its uncertainty as plain data (``FitResult.uncertainty``, an
:class:`Uncertainty`), so intervals come from the model file alone. This module *evaluates* it:
every member's replicates in one numpy pass, weighted quantiles in log units, the noise of a new
run and the calibrated widening with the distance beyond the measured range (the formulas are in
:mod:`perfmodel.uncertainty`, which *computes* the members: bootstrap refits and calibration).

Imports from the model language only (a FitResult holds an Uncertainty; nothing here fits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import PerfModelError
from ..language.expression import Expression, parse_expression
from .extrapolation import (
    _Z90,
    DEFAULT_LEVEL,
    OWN_NOISE_SOURCES,
    beyond_p,
    combined_kappa,
    crossings,
    efficiency_floor,
    few_noise_dof,
    moderated_noise,
    noise_quantile,
    normal_quantile,
    series_evidence,
    structure_reach,
    widen_band,
)
from .stored_checks import (
    MAX_MEMBERS,
    MAX_SIGMA,
    _efficiency_ref,
    check_level,
    is_number,
    noise_problem,
    prior_problem,
    topology_problem,
)

FORMAT = "perfmodel.intervals/1"


DEFAULT_REPLICATES = 200


#: Bounds on a stored uncertainty block (a model file is input: these keep loading and evaluating it
#: to seconds and megabytes): members, replicates per member, rows of share_replicates.
MAX_STORED_REPLICATES = 10_000


#: Relative run-to-run noise assumed when the data cannot tell it (no residual degrees of freedom
#: and no repeats): a few per cent is what repeated training runs on shared clusters show.
PRIOR_SIGMA = 0.05


#: Prior spread of the extrapolation error per doubling beyond the measured range (log units),
#: the value the calibration is shrunk towards when it has few larger-scale points: 10 % per
#: doubling, the order of the errors empirical models make at 2-4x their measured scale.
PRIOR_KAPPA = 0.1


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
        expr, _ = parse_expression(
            self.expression, list(self.factors), {k: tuple(v) for k, v in self.param_bounds.items()}
        )
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
                parts = np.stack(
                    [coefficients[:, k : k + 1] * np.broadcast_to(v, out.shape) for k, v in enumerate(vals)]
                )
                return expr.predict_from(parts, params.T)
            for k, v in enumerate(vals):
                out += coefficients[:, k : k + 1] * np.broadcast_to(v, out.shape)
        return out

    def to_dict(self) -> dict:
        return {
            "expression": self.expression,
            "param_bounds": {k: list(v) for k, v in self.param_bounds.items()},
            "factors": list(self.factors),
            "weight": float(self.weight),
            "score": _num(self.score),
            "label": self.label,
            "point": {"coefficients": self.point_coefficients.tolist(), "params": self.point_params.tolist()},
            "coefficients": self.coefficients.tolist(),
            "params": self.params.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Member:
        try:
            point = d["point"]
            K = len(point["coefficients"])
            M = len(point["params"])
            coefs = np.asarray(d["coefficients"], float).reshape(-1, K)
            params = np.asarray(d["params"], float).reshape(len(coefs), M)
            m = cls(
                expression=str(d["expression"]),
                param_bounds=dict(d.get("param_bounds") or {}),
                factors=list(d["factors"]),
                weight=float(d["weight"]),
                point_coefficients=np.asarray(point["coefficients"], float).reshape(K),
                point_params=np.asarray(point["params"], float).reshape(M),
                coefficients=coefs,
                params=params,
                score=float("nan") if d.get("score") is None else float(d["score"]),
                label=str(d.get("label", "")),
            )
            if not all(isinstance(f, str) for f in m.factors):
                raise ValueError("a member's factors must be names")
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise PerfModelError(f"the model file's intervals are malformed ({exc})") from None
        R = len(m.coefficients)
        if not 1 <= R <= MAX_STORED_REPLICATES:
            raise PerfModelError(
                f"the model file's intervals: a member has {R} replicates; from 1 to {MAX_STORED_REPLICATES:,}"
            )
        if not (math.isfinite(m.weight) and m.weight >= 0):
            raise PerfModelError(f"the model file's intervals: a member's weight is {m.weight!r}, not a number >= 0")
        if not (np.isfinite(m.point_coefficients).all() and np.isfinite(m.point_params).all()):
            raise PerfModelError("the model file's intervals: a member's point fit is not finite")
        if np.isinf(m.coefficients).any() or np.isinf(m.params).any():
            raise PerfModelError("the model file's intervals: a member's replicates are not finite")
        expr = m.parsed()
        if len(expr.terms) != K or len(expr.params) != M:
            raise PerfModelError("the model file's intervals do not match their expression")
        return m


def _num(v) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass
class Noise:
    """Relative noise of one measurement: ``sigma`` with ``df`` degrees of freedom (None: prior).
    ``own``: (σ, df) the data gave, when ``sigma`` and ``df`` are those moderated by the population's
    prior on the noise (:meth:`moderated`)."""

    sigma: float
    df: float | None
    source: str  # "residuals", "repeats" or "prior"
    own: tuple | None = None

    def quantile(self, level: float) -> float:
        return float(noise_quantile(self.sigma, self.df, level))

    def moderated(self, prior: dict) -> Noise:
        """This noise combined with the population's prior on it, ``prior`` {"sigma", "df"}
        (:func:`perfmodel.fitting.extrapolation.moderated_noise`; the stated prior noise, which the data did
        not give, replaced by the population's)."""
        own = self.source in OWN_NOISE_SOURCES and self.df
        sigma, df = moderated_noise(
            self.sigma if own else 0.0, self.df if own else 0.0, float(prior["sigma"]), float(prior["df"])
        )
        return Noise(sigma, df, self.source, (self.sigma, self.df))

    def to_dict(self) -> dict:
        return {
            "sigma": self.sigma,
            "df": self.df,
            "source": self.source,
            **({"own": list(self.own)} if self.own else {}),
        }


def bounded_noise(noise: Noise) -> tuple[Noise, str]:
    """``noise`` within :func:`noise_problem`'s limits, and a sentence saying what was changed ("" when
    nothing was): a relative noise above :data:`MAX_SIGMA` (a run ~75× off its fit, terms that do not
    follow the data) is capped there, so the fit still writes a model file every command reads, and the
    band it gives says the fit is too poor to quote."""

    def cap(v):
        return MAX_SIGMA if v is None or not (is_number(v) and v <= MAX_SIGMA) else max(float(v), 0.0)

    sigma, own = cap(noise.sigma), noise.own
    if own is not None:
        own = (cap(own[0]), own[1])
    if sigma == noise.sigma and own == noise.own:
        return noise, ""
    was = noise.sigma if noise.sigma != sigma else (noise.own or (None,))[0]
    try:
        shown = f"{100 * float(was):,.0f} %"
    except (TypeError, ValueError, OverflowError):
        shown = repr(was)
    return Noise(sigma, noise.df, noise.source, own), (
        f"the noise of one run ({shown} of the time, from the {noise.source}) is beyond what an interval can "
        f"say; capped at {100 * MAX_SIGMA:,.0f} %: this fit is too poor to quote, its intervals span orders "
        "of magnitude (a measurement far off the rest, or terms that do not follow the data)"
    )


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
    """Distance beyond the measured range in doublings: max over factors of log2 beyond [lo, hi] (the
    nodes' topology left out: a target's nodes follow its workers, whose distance counts, and a crossing
    has its own κ)."""
    n = len(next(iter(env.values()))) if env else 0
    d = np.zeros(n)
    with np.errstate(all="ignore"):
        for s, (lo, hi) in factor_ranges.items():
            if s == "nodes" and "p" in factor_ranges:
                continue
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
    """What a fit needs to give intervals: members, noise, calibration, the prior and the reference structures."""

    members: list
    noise: Noise
    calibration: list  # per held-out configuration of the nested splits: [e, b_low, b_high, d] (see module doc)
    factor_ranges: dict
    replicates: int = DEFAULT_REPLICATES
    seed: int = 0
    seconds: float = 0.0
    #: what the members beside the displayed model are (the search's plausible models, or submodels)
    members_note: str = ""
    method: str = "cluster wild bootstrap (Webb weights), Levenberg-Marquardt refits"
    share_replicates: list | None = None  # (R, K) the best member's term shares per replicate
    splits: list | None = None
    #: the population's prior learned from the corpus (perfmodel/uncertainty/extrapolation_prior.json),
    #: copied in at fit time; None in model files written before it (then PRIOR_KAPPA, as then)
    prior: dict | None = None
    #: {"nodes_symbol", "gpus_per_node", "max_nodes", "guessed", "from_column"}: how node crossings are told
    #: (see crossings; from_column: the GPUs per node read from the nodes column)
    topology: dict | None = None
    #: point fits of the reference structures (data-parallel, Ernest, Pollux) on the same measurements,
    #: whose disagreement with the point prediction beyond the measurements widens the interval (by the
    #: prior's ``structure_scale``; see :meth:`structures`), and for each its largest disagreement
    #: over the measured configurations (|log| of the ratio), which it does not add
    references: list | None = None
    reference_misfit: list | None = None
    #: how far the series' last measured doubling fell short of perfect scaling (scaling_shortfall),
    #: which tells its scaling class in the prior (perfmodel.uncertainty.prior.for_series) and widens κ by
    #: the prior's ``shortfall_scale``: 1 + η·u
    scaling_shortfall: float | None = None
    #: the least GPU-seconds measured per amount of work (:func:`efficiency_reference`), which with the
    #: noise of one run and the prior's ``efficiency_slack`` bounds the band's low end
    #: (:meth:`efficiency_bound`)
    efficiency_ref: dict | None = None

    # -- calibration --------------------------------------------------------------------------
    def kappa(self, level: float, crossing: str = "unknown", topology: dict | None = None) -> tuple[float, str]:
        """Spread of the extrapolation error per doubling (log units) at ``level`` for a target of
        ``crossing`` (:data:`CROSSINGS`), and how it was obtained. ``topology``: another than the fit's
        (as in :meth:`kappas`), which tells whether a crossing is the series' first."""
        if self.prior:
            pop = own = float(self.prior["kappa"][crossing])
            if self.beyond_class(crossing, topology):
                pop = max(pop, float(self.prior["corpus_kappa"][crossing]))
            n0 = float(self.prior["pseudo_configurations"])
            evidence, n = series_evidence(self.calibration)
            what = {"same_nodes": "", "crosses_nodes": " for a target on more nodes than measured", "unknown": ""}[
                crossing
            ]
            eta, u = float(self.prior.get("shortfall_scale", 0.0)), float(self.scaling_shortfall or 0.0)
            c = self.prior.get("scaling_class")
            if c and pop > own:  # the whole corpus's, larger than the class's: a network the class cannot speak for
                why = (
                    "a first run across nodes"
                    if crossing == "crosses_nodes"
                    else "a target of unknown topology, which may cross nodes"
                )
                whose = (
                    f"{self.prior.get('n_series', '?')} real series; for {why}, the whole corpus's, larger than "
                    f"its class's {own:.3g}: how a series scales inside one node says nothing about the network"
                )
            elif c:  # perfmodel.uncertainty.prior.for_series chose it
                span = (
                    f"{100 * c['efficiency_min']:.0f} % or more"
                    if c.get("efficiency_below") is None
                    else f"{100 * c['efficiency_min']:.0f}-{100 * c['efficiency_below']:.0f} %"
                )
                whose = (
                    f"{c.get('n_series', '?')} real series whose last measured doubling ran at {span} parallel "
                    f"efficiency, as this one's {100 * c['efficiency']:.0f} %"
                )
            else:
                whose = f"{self.prior.get('n_series', '?')} real series"
            how = (
                f"the population's {pop:.3g} per doubling{what} ({whose}) "
                f"weighed as {n0:g} configurations against this series' {n} larger-scale configuration(s)"
            )
            if eta and u:
                how += (
                    f", × {1 + eta * u:.3g} as its last measured doubling fell {100 * u:.0f} % short of "
                    "halving the time"
                )
            return combined_kappa(pop, n0, evidence, n) * (1 + eta * u), how
        z = normal_quantile(level)
        pts = np.asarray(self.calibration, float).reshape(-1, 4)
        n = len(pts)
        if n == 0:
            return PRIOR_KAPPA, "the prior (no larger-scale split to calibrate on)"
        e, b_lo, b_hi, d = pts.T
        b = np.where(e > 0, b_hi, b_lo) / _Z90  # spreads of the un-widened bands
        rank = math.ceil((n + 1) * level)
        if rank <= n:
            need = np.sqrt(np.maximum(e**2 - (z * b) ** 2, 0.0)) / (z * d)
            return float(np.sort(need)[rank - 1]), f"conformal quantile of {n} larger-scale configurations"
        k2 = (PRIOR_KAPPA**2 + float(np.sum(np.maximum(e**2 - b**2, 0.0) / d**2))) / (1 + n)
        return math.sqrt(k2), f"{n} larger-scale configurations, shrunk towards the prior {PRIOR_KAPPA:g}"

    def beyond_class(self, crossing: str, topology: dict | None = None) -> bool:
        """True when the prior is a scaling class's and a target of ``crossing`` needs a network the
        class cannot speak for: a first run across nodes (the measurements on one node) or a target of
        unknown topology. Such a target takes the whole corpus's κ when it is larger
        (:func:`perfmodel.uncertainty.prior.for_series` keeps it beside the class's): how a series
        scales inside one node says nothing about the network."""
        if not (self.prior and self.prior.get("corpus_kappa")):
            return False
        if crossing == "unknown":
            return True
        topo = self.topology if topology is None else topology
        return bool(
            crossing == "crosses_nodes" and topo and topo.get("max_nodes") is not None and float(topo["max_nodes"]) <= 1
        )

    def band_scale(self) -> float:
        """How much wider (> 1) or narrower the members' and the noise's band must be to cover as often
        as it says on real series (the population's prior, ``band_scale``; ``few_dof_band_scale``
        when the noise is the stated prior or rests on few degrees of freedom,
        :func:`perfmodel.fitting.extrapolation.few_noise_dof`; 1 without it)."""
        if not self.prior:
            return 1.0
        if self.few_dof_band():
            return float(self.prior["few_dof_band_scale"])
        return float(self.prior.get("band_scale", 1.0))

    def few_dof_band(self) -> bool:
        """True when :meth:`band_scale` is the prior's ``few_dof_band_scale``: the prior has one and
        the noise rests on few degrees of freedom (:func:`perfmodel.fitting.extrapolation.few_noise_dof`)."""
        return bool(
            self.prior and "few_dof_band_scale" in self.prior and few_noise_dof(self.noise.source, self.noise.df)
        )

    def structure_scale(self, level: float) -> float:
        """How much of the reference structures' disagreement the interval at ``level`` takes in: the
        prior's ``structure_scale`` (learned at its level, scaled by the normal quantiles); 0 without it."""
        prior = self.prior or {}
        g = float(prior.get("structure_scale", 0.0))
        if not g or not self.references:
            return 0.0
        return g * normal_quantile(level) / normal_quantile(float(prior.get("level", DEFAULT_LEVEL)))

    def reference_logratios(self, env: dict, t: np.ndarray) -> np.ndarray:
        """log(reference / t) of each reference structure at ``env``, shape (J, n) (NaN where a
        structure gives no positive prediction or ``t`` is not positive)."""
        env = self.with_nodes(env)
        with np.errstate(all="ignore"):
            refs = np.vstack(
                [m.predict(env, m.point_coefficients[None], m.point_params[None])[0] for m in self.references or []]
            )
            ok = np.isfinite(refs) & (refs > 0) & (np.asarray(t) > 0)[None, :]
            return np.where(ok, np.log(np.where(ok, refs, 1.0) / np.where(t > 0, t, 1.0)[None, :]), np.nan)

    def reference_shifts(self, env: dict, t: np.ndarray) -> np.ndarray:
        """Where each reference structure puts the time at ``env`` beyond what the measurements already
        showed, relative to ``t``: ``sign(l)·max(|l| − misfit, 0)`` of its log ratio ``l = log(r/t)``,
        shape (J, n); 0 where it gives no positive prediction, where it agrees within its misfit, and
        where ``p`` is not beyond the measured range (:func:`beyond_p`: the extrapolation the corpus
        learned this on; a larger data size alone, or another factor, is left to the model and κ)."""
        lr = self.reference_logratios(env, t)
        rho = np.asarray(self.reference_misfit if self.reference_misfit else [0.0] * len(lr), float)[:, None]
        with np.errstate(all="ignore"):
            a = np.nan_to_num(np.sign(lr) * np.maximum(np.abs(lr) - rho, 0.0))
        return a * beyond_p(self.factor_ranges, env)[None, :]

    def structures(self, env: dict, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(below, above), shape (n,) each: how far the reference structures reach below and above the
        model's prediction ``t`` beyond the measurements (:meth:`reference_shifts`); zeros without
        them or when the prior's ``structure_scale`` takes none of it in."""
        n = len(t)
        if not self.references or not self.structure_scale(DEFAULT_LEVEL):
            return np.zeros(n), np.zeros(n)  # the structures would change nothing
        return structure_reach(self.reference_shifts(env, t))

    def kappas(self, env: dict, level: float, topology: dict | None = None) -> np.ndarray:
        """κ of each configuration of ``env`` (its node crossing decides which prior applies;
        ``topology``: another than the fit's, e.g. after a measurement on more nodes)."""
        cross = crossings(self.topology if topology is None else topology, env)
        if not self.prior:
            return np.full(len(cross), self.kappa(level)[0])
        table = {c: self.kappa(level, c, topology)[0] for c in set(cross)}
        return np.array([table[c] for c in cross], float)

    def efficiency_bound(self, env: dict, level: float = DEFAULT_LEVEL) -> np.ndarray:
        """The shortest time the band may reach at each configuration of ``env``: the best parallel
        efficiency measured for the same work, exceeded by at most the noise of one run (its quantile
        at ``level``, as in the band: a run may be that much faster than the measured mean) and the
        prior's ``efficiency_slack`` (how far the corpus's runs beyond the measurements ran faster
        than that, learned with the same noise; super-linear steps exist but are rare). NaN where no
        bound applies (work not measured at other worker counts, or no slack in the prior)."""
        n = len(next(iter(env.values()))) if env else 0
        slack = (self.prior or {}).get("efficiency_slack")
        if slack is None or not self.efficiency_ref:
            return np.full(n, np.nan)
        noise = math.exp(-self.noise.quantile(level))
        return efficiency_floor(self.efficiency_ref, env) * noise / (1.0 + float(slack))

    # -- predictions --------------------------------------------------------------------------
    def with_nodes(self, env: dict) -> dict:
        """``env`` with the nodes each configuration spans (ceil(p / GPUs per node), the fit's topology)
        where it gives p but not nodes: a target's nodes follow from its workers."""
        g = (self.topology or {}).get("gpus_per_node")
        if "nodes" in env or "p" not in env or not g:
            return env
        return {**env, "nodes": np.ceil(np.asarray(env["p"], float) / float(g) - 1e-9)}

    def member_predictions(self, env: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(replicate predictions (S, n), their weights (S,), point predictions per member (J, n))."""
        env = self.with_nodes(env)
        preds, weights = [], []
        for m in self.members:
            p = m.predict(env, m.coefficients, m.params)
            preds.append(p)
            weights.append(np.full(len(p), m.weight / len(p)))
        return np.vstack(preds), np.concatenate(weights), self.point_predictions(env)

    def point_predictions(self, env: dict) -> np.ndarray:
        """Each member's prediction from its fit on all data, shape (J, n)."""
        env = self.with_nodes(env)
        return np.vstack([m.predict(env, m.point_coefficients[None], m.point_params[None])[0] for m in self.members])

    def point(self, points: np.ndarray) -> np.ndarray:
        """The point prediction: the displayed model's (member 0), never a mix of the members."""
        return points[0]

    def interval(
        self, env: dict, level: float = DEFAULT_LEVEL, widen: bool = True, predictions=None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(point, low, high) predictions, each shape (n,); ``widen=False`` leaves out the calibration.
        ``predictions``: :meth:`member_predictions` at ``env``, when the caller has them already."""
        _check_level(level)
        with np.errstate(all="ignore"):
            preds, weights, points = self.member_predictions(env) if predictions is None else predictions
            t = self.point(points)
            below, above = self.structures(env, t)
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
            kappa = self.kappas(env, level) if widen else 0.0
            d = distance(self.factor_ranges, env)
            s = self.band_scale() if widen else 1.0
            g = self.structure_scale(level) if widen else 0.0
            # the members' and the noise's band around the model's prediction
            low = np.exp(lt - np.hypot(widen_band(s * np.sqrt(hl**2 + q**2), kappa, d, level), g * below))
            high = np.exp(lt + np.hypot(widen_band(s * np.sqrt(hu**2 + q**2), kappa, d, level), g * above))
            if widen:  # no faster than the best measured efficiency allows (never above the point itself)
                floor = self.efficiency_bound(env, level)
                low = np.where(np.isfinite(floor), np.maximum(low, np.minimum(t, floor)), low)
        bad = ~(t > 0)
        low = np.where(bad, np.nan, low)
        high = np.where(bad, np.nan, high)
        return t, low, high

    def draws(self, env: dict, n: int, rng: np.random.Generator, level: float = DEFAULT_LEVEL) -> np.ndarray:
        """Simulated run times at ``env``'s configurations, shape (n, C): per draw one member replicate
        (chosen by weight; its deviation from the members' median, around the point prediction), one
        run's noise per configuration (Student-t with the noise's degrees of freedom), and the
        extrapolation error shared by the draw (normal, κ·d) — the parts of :meth:`interval`, as samples."""
        preds, weights, points = self.member_predictions(env)
        with np.errstate(all="ignore"):
            t = self.point(points)
            logs = np.log(np.where(preds > 0, preds, np.nan))
            logs = np.where(np.isfinite(logs), logs, np.log(np.maximum(t, 1e-300))[None, :])
        dev = logs - weighted_quantile(logs, weights, [0.5])[0][None, :]
        idx = rng.choice(len(weights), size=int(n), p=weights / weights.sum())
        C = logs.shape[1]
        df = self.noise.df
        e = rng.standard_t(df, size=(int(n), C)) if df else rng.standard_normal((int(n), C))
        shared = rng.standard_normal((int(n), 1))
        extra = shared * (self.kappas(env, level) * distance(self.factor_ranges, env))[None, :]
        below, above = self.structures(env, t)
        g = self.structure_scale(level)
        if g:  # the structures' disagreement, shared by the draw: a two-piece normal, z·σ = γ·reach per side
            u = rng.standard_normal((int(n), 1))
            extra = extra + u * (g / normal_quantile(level)) * np.where(u > 0, above[None, :], below[None, :])
        with np.errstate(all="ignore"):
            return t[None, :] * np.exp(self.band_scale() * (dev[idx] + self.noise.sigma * e) + extra)

    def constants(self, level: float = DEFAULT_LEVEL) -> dict[str, tuple[float, float]]:
        """{name: (low, high)} of the best member's constants and free parameters (percentile of the
        replicates, widened where needed to hold the estimate itself)."""
        _check_level(level)
        m = self.members[0]
        a = (1 - level) / 2
        out = {}
        for k in range(m.coefficients.shape[1]):
            out[f"c{k}"] = _holding(np.quantile(m.coefficients[:, k], [a, 1 - a]), m.point_coefficients[k])
        for j, name in enumerate(m.parsed().params):
            out[name] = _holding(np.quantile(m.params[:, j], [a, 1 - a]), m.point_params[j])
        return out

    def shares(
        self, terms: list, level: float = DEFAULT_LEVEL, estimates: dict | None = None
    ) -> dict[str, tuple[float, float]]:
        """{term: (low, high)} of each term's share of the measured time over the replicates (holding
        ``estimates[term]``, the fit's own share, when given)."""
        _check_level(level)
        if not self.share_replicates:
            return {}
        S = np.asarray(self.share_replicates, float)
        a = (1 - level) / 2
        est = estimates or {}
        return {t: _holding(np.quantile(S[:, k], [a, 1 - a]), est.get(t)) for k, t in enumerate(terms)}

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "method": self.method,
            "replicates": int(self.replicates),
            "seed": int(self.seed),
            "seconds": float(self.seconds),
            "members_note": self.members_note,
            "noise": self.noise.to_dict(),
            "factor_ranges": {k: list(v) for k, v in self.factor_ranges.items()},
            "calibration": {"points": [[float(v) for v in pt] for pt in self.calibration], "splits": self.splits or []},
            "members": [m.to_dict() for m in self.members],
            "share_replicates": self.share_replicates or [],
            **({"prior": self.prior} if self.prior else {}),
            **({"topology": self.topology} if self.topology else {}),
            **(
                {
                    "references": [m.to_dict() for m in self.references],
                    "reference_misfit": [float(v) for v in self.reference_misfit or []],
                }
                if self.references
                else {}
            ),
            **({"scaling_shortfall": float(self.scaling_shortfall)} if self.scaling_shortfall is not None else {}),
            **({"efficiency_ref": self.efficiency_ref} if self.efficiency_ref else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Uncertainty:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PerfModelError(f"the model file's intervals are not in the format {FORMAT!r}")

        def text(block, key, default=None):  # shown to the user as it is: text, and short
            value = block.get(key, default) if default is not None else block[key]
            if not isinstance(value, str) or len(value) > 2000:
                raise ValueError(f"{key} must be a text of at most 2000 characters, got {str(value)[:40]!r}")
            return value

        try:
            nz = d["noise"]
            own = nz.get("own")
            noise = Noise(
                float(nz["sigma"]),
                None if nz.get("df") is None else float(nz["df"]),
                text(nz, "source"),
                None if own is None else (float(own[0]), None if own[1] is None else float(own[1])),
            )
            cal = d["calibration"]
            members = [Member.from_dict(m) for m in d["members"]]
            points = [[float(v) for v in pt] for pt in cal["points"]]
            if any(len(pt) != 4 for pt in points):
                raise ValueError("a calibration point needs 4 numbers")
            out = cls(
                members=members,
                noise=noise,
                calibration=points,
                factor_ranges={str(k): (float(v[0]), float(v[1])) for k, v in d["factor_ranges"].items()},
                replicates=int(d.get("replicates", 0)),
                seed=int(d.get("seed", 0)),
                seconds=float(d.get("seconds", 0.0)),
                members_note=text(d, "members_note", ""),
                method=text(d, "method", ""),
                share_replicates=d.get("share_replicates") or None,
                splits=cal.get("splits") or None,
                prior=d.get("prior") or None,
                topology=d.get("topology") or None,
                references=[Member.from_dict(m) for m in d.get("references") or []] or None,
                reference_misfit=[float(v) for v in d.get("reference_misfit") or []] or None,
                scaling_shortfall=None if d.get("scaling_shortfall") is None else float(d["scaling_shortfall"]),
                efficiency_ref=_efficiency_ref(d.get("efficiency_ref")),
            )
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
            raise PerfModelError(f"the model file's intervals are malformed ({exc})") from None
        if not members:
            raise PerfModelError("the model file's intervals have no members")
        out._validate()
        return out

    def _validate(self) -> None:
        """Refuse values the formulas cannot use (one line each, naming the field)."""

        def bad(field, why):
            raise PerfModelError(f"the model file's intervals: {field} {why}")

        if len(self.members) > MAX_MEMBERS:
            bad("members", f"has {len(self.members)} entries; at most {MAX_MEMBERS}")
        if self.references and len(self.references) > MAX_MEMBERS:
            bad("references", f"has {len(self.references)} entries; at most {MAX_MEMBERS}")
        if (
            self.references
            and self.reference_misfit is not None
            and (
                len(self.reference_misfit) != len(self.references)
                or not all(math.isfinite(v) and v >= 0 for v in self.reference_misfit)
            )
        ):
            bad("reference_misfit", "must hold one finite number >= 0 per reference")
        if self.scaling_shortfall is not None and not 0 <= self.scaling_shortfall <= 2:
            bad("scaling_shortfall", f"is {self.scaling_shortfall!r}; a number from 0 to 2")
        if not sum(m.weight for m in self.members) > 0:
            bad("members' weights", "do not add up to a positive number")
        why = noise_problem(self.noise.sigma, self.noise.df, self.noise.source, self.noise.own)
        if why:
            raise PerfModelError(f"the model file's intervals: {why}")
        pts = np.asarray(self.calibration, float).reshape(-1, 4)
        if not np.isfinite(pts).all() or (pts[:, 3] <= 0).any() or (pts[:, 1:3] < 0).any():
            bad("calibration.points", "hold a non-finite number, a negative band or a distance <= 0")
        for k, (lo, hi) in self.factor_ranges.items():
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                bad(f"factor_ranges[{k!r}]", f"is [{lo!r}, {hi!r}]; two finite numbers, low <= high")
        if not 0 <= self.replicates <= MAX_STORED_REPLICATES:
            bad("replicates", f"is {self.replicates}; from 0 to {MAX_STORED_REPLICATES:,}")
        if self.share_replicates is not None:
            rows = self.share_replicates
            K = self.members[0].coefficients.shape[1]
            if not isinstance(rows, list) or len(rows) > MAX_STORED_REPLICATES:
                bad("share_replicates", f"must be a list of at most {MAX_STORED_REPLICATES:,} rows")
            for i, row in enumerate(rows):
                if (
                    not isinstance(row, list)
                    or len(row) != K
                    or not all(
                        isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isinf(v) for v in row
                    )
                ):
                    bad("share_replicates", f"row {i + 1} is not {K} numbers (one per term)")
        for why in (prior_problem(self.prior), topology_problem(self.topology)):
            if why:
                raise PerfModelError(f"the model file's intervals: {why}")


def _holding(interval, estimate) -> tuple[float, float]:
    """(low, high) widened to hold ``estimate`` (a finite number; None leaves it as it is)."""
    lo, hi = float(interval[0]), float(interval[1])
    if estimate is not None and math.isfinite(float(estimate)):
        lo, hi = min(lo, float(estimate)), max(hi, float(estimate))
    return lo, hi


def _check_level(level: float) -> None:
    check_level(level)
