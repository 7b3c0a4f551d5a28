"""Members of every plausible model and the calibration on "train small, test large" splits.

:func:`compute` bootstraps the displayed fit and its plausible alternatives (weighted by their
validation scores), then refits them on the smaller scales of the measurements to learn how much
wider the band must be per doubling beyond the measured range (see :mod:`perfmodel.uncertainty`).

Imports from the data and fitting layers and :mod:`perfmodel.uncertainty.bootstrap` only.
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.extrapolation import efficiency_reference, scaling_shortfall
from ..fitting.members import DEFAULT_LEVEL, DEFAULT_REPLICATES, PRIOR_SIGMA, Member, Noise, Uncertainty, distance
from ..fitting.model import refit_model
from .bootstrap import bootstrap
from .prior import for_series, load_prior, topology
from .references import reference_members

#: Most "train small, test large" splits used for the calibration.
MAX_SPLITS = 3


def _quick_refit(result, meas: Measurements):
    """``result``'s model refitted on ``meas`` with the automatic search's DE settings (one generation,
    i.e. the exact optimum, when the model is linear in its constants)."""
    from ..fitting.model import SEARCH_DE, exact_settings

    model = refit_model(result, **SEARCH_DE)
    return model.clone(**exact_settings(model, meas)).fit(meas)


def scale_axis(meas: Measurements) -> str | None:
    """The factor along which "train small, test large" splits are made: ``p``, else ``N``, else
    the factor with the most distinct values (at least three)."""
    counts = {s: len(np.unique(meas.values(s))) for s in meas.factors}
    for s in ("p", "N"):
        if counts.get(s, 0) >= 3:
            return s
    best = max(counts, key=lambda s: counts[s]) if counts else None
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
    K = len(vals)
    step = max(1, 8_000_000 // max(1, K * meas.n_rows))  # replicates per chunk: K·step·n numbers at once
    contrib = np.empty((R, K))
    with np.errstate(all="ignore"):
        for r0 in range(0, R, step):
            c = member.coefficients[r0 : r0 + step]
            th = member.params[r0 : r0 + step]
            vs = [v[r0 : r0 + step] if np.ndim(v) == 2 else v for v in vals]  # (R, n) where a free parameter enters
            parts = np.stack(
                [c[:, k, None] * np.broadcast_to(v, (len(c), meas.n_rows)) for k, v in enumerate(vs)]
            )  # (K, chunk, n)
            parts = expr.combine(parts, th.T)  # overlaps split by perfmodel.language.overlap's rule
            contrib[r0 : r0 + step] = np.transpose(parts, (1, 0, 2)).sum(axis=2)
        total = contrib.sum(axis=1, keepdims=True)
        shares = np.where(total != 0, contrib / total, np.nan)
    return shares.tolist()


def _bands(results: list, weights: list, meas: Measurements, replicates: int, seed: int) -> tuple[list[Member], Noise]:
    """Bootstrap members for ``results`` (the first is the displayed model) and its noise."""
    members, noise = [], None
    total = float(sum(weights))
    for j, (res, w) in enumerate(zip(results, weights, strict=True)):
        R = replicates if j == 0 or len(results) == 1 else max(20, int(round(replicates * w / total)))
        m, nz = bootstrap(res, meas, R, seed + j)
        m.weight = w / total
        m.label = "fit" if j == 0 else f"candidate {j + 1}"
        members.append(m)
        noise = noise or nz
    assert noise is not None  # results holds the fit at least
    return members, noise


def compute(
    result,
    meas: Measurements,
    *,
    candidates: list | None = None,
    scores: list | None = None,
    noise_scale: float | None = None,
    replicates: int = DEFAULT_REPLICATES,
    seed: int | None = None,
    calibrate: bool = True,
    calibration_replicates: int = 100,
    prior: dict | bool = True,
    gpus_per_node: float | None = None,
    references: bool = True,
) -> Uncertainty:
    """The :class:`Uncertainty` of ``result`` fitted on ``meas``.

    ``prior``: the population's prior on extrapolation error (True, the default: the one learned from the corpus,
    :func:`perfmodel.uncertainty.prior.load_prior`; a dict of that form; False: none, the stated
    ``PRIOR_KAPPA`` as before it existed). ``gpus_per_node``: to tell a target on more nodes than
    measured when ``nodes`` is not a factor (see :func:`perfmodel.uncertainty.prior.topology`).
    ``references``: fit the reference structures too (:mod:`perfmodel.uncertainty.references`), whose
    disagreement with the model's prediction widens the interval as the prior says (never the
    prediction itself).

    ``candidates``: other plausible fits of ``meas`` (FitResults, e.g. the automatic search's runners-up)
    with ``scores`` (validation scores, ``result``'s first; lower is better) and the score noise
    ``noise_scale``; the members are weighted ``exp(-(score - best) / noise)``. They widen the band;
    the point prediction stays ``result``'s.
    """
    with np.errstate(all="ignore"):  # non-finite replicates are handled where they arise
        unc = _compute(
            result, meas, candidates, scores, noise_scale, replicates, seed, calibrate, calibration_replicates
        )
    unc.prior = load_prior() if prior is True else (dict(prior) if prior else None)
    unc.topology = topology(meas, gpus_per_node)
    if "p" in meas.factors:
        unc.scaling_shortfall = scaling_shortfall(meas.values("p"), meas.y)
        unc.efficiency_ref = efficiency_reference(meas.env(), meas.y, list(meas.factors))
    unc.prior = for_series(unc.prior, unc.scaling_shortfall)  # the fields of the series' scaling class
    if unc.prior and unc.prior.get("noise"):  # the population's prior on the noise, combined with the fit's
        unc.noise = unc.noise.moderated(unc.prior["noise"])
    if references:
        t0 = _time.perf_counter()
        unc.references = reference_members(meas, unc.seed) or None
        if unc.references:
            env = meas.env()
            lr = unc.reference_logratios(env, unc.point(unc.point_predictions(env)))
            unc.reference_misfit = [float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 0.0 for v in lr]
        unc.seconds += _time.perf_counter() - t0
    return unc


def _compute(result, meas, candidates, scores, noise_scale, replicates, seed, calibrate, calibration_replicates):
    t0 = _time.perf_counter()
    seed = int(result.settings.get("seed", 0)) if seed is None else int(seed)
    submodel_note = ""
    if not candidates and result.n_params > result.n_configurations:
        candidates, scores, noise_scale = submodels(result, meas)
        if candidates:
            submodel_note = (
                f"the interval includes {len(candidates)} model(s) with one term left out, which fit "
                "the measurements about as well (more unknowns than configurations)"
            )
    elif candidates:
        submodel_note = f"the interval includes {len(candidates)} other plausible model(s) of the search"
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
    for m, s in zip(members, sc, strict=True):
        m.score = float(s)
    unc = Uncertainty(
        members=members,
        noise=noise,
        calibration=[],
        factor_ranges={k: tuple(v) for k, v in result.factor_ranges.items()},
        replicates=int(replicates),
        seed=seed,
    )
    unc.members_note = submodel_note
    unc.share_replicates = _share_replicates(members[0], meas)
    if calibrate:
        _calibrate(unc, results, weights, meas, calibration_replicates, seed)
    unc.seconds = _time.perf_counter() - t0
    return unc


def submodels(result, meas: Measurements) -> tuple[list, list, float]:
    """The fit with one of its terms left out, each refitted: (fits, scores, noise scale).

    For a model with more fitted parameters than configurations, where the penalty picks one of
    many models that fit equally well, these are the plausible alternatives its interval must show.
    Scores are ``n·loss / (2σ²)`` (σ: the relative noise of one run, or the prior), so a submodel
    that fits clearly worse gets a small weight ``exp(-(score - best))``.
    """
    from ..language.expression import parse_expression

    fits = []
    for k, term in enumerate(result.terms):
        if term == "1" or result.coefficients[f"c{k}"] == 0 or len(result.terms) < 3:
            continue
        kept = [(t, sg) for j, (t, sg) in enumerate(zip(result.terms, result.signs, strict=True)) if j != k]
        spec = " ".join(("- " if sg < 0 else "+ ") + f"({t})" for t, sg in kept).lstrip("+ ")
        try:
            expr, _ = parse_expression(spec, list(result.factors))
            bounds = {p: tuple(b) for p, b in result.param_bounds.items() if p in expr.params}
            model = refit_model(result)
            fits.append(model.clone(terms=spec, bounds=bounds or None).fit(meas))
        except PerfModelError:
            continue
    sigma = PRIOR_SIGMA
    scores = [meas.n_rows * r.loss / (2 * sigma**2) for r in [result] + fits]
    return fits, scores, 1.0


def _calibrate(
    unc: Uncertainty,
    results: list,
    weights: list,
    meas: Measurements,
    replicates: int,
    seed: int,
) -> None:
    """The larger-scale points of nested "train small, test large" splits: [error, band low, band
    high, distance] of the displayed model refitted on the smaller scales (its members' band, not
    widened), one point per held-out configuration."""
    points: list = []
    splits: list[dict] = []
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
        nested = Uncertainty(
            members=members,
            noise=noise,
            calibration=[],
            factor_ranges={k: tuple(v) for k, v in fits[0].factor_ranges.items()},
        )
        y = test_m.y
        # one band per configuration, its repeats' errors against it: the members' predictions are
        # replicates × configurations, not × rows (a million rows made 1.6 GB of them)
        cfg = test_m.configurations()
        first = np.unique(cfg, return_index=True)[1]
        env = {s: v[first] for s, v in test_m.env().items()}
        predictions = nested.member_predictions(env)
        d = distance(nested.factor_ranges, env)
        counts = np.bincount(cfg)
        covered = []
        t, low, high = nested.interval(env, level, widen=False, predictions=predictions)
        with np.errstate(all="ignore"):
            e, b_lo, b_hi = np.log(y / t[cfg]), np.log(t / low), np.log(high / t)
        b_lo, b_hi = np.maximum(b_lo, 0.0), np.maximum(b_hi, 0.0)  # a band of zero width: -2e-16 in logs
        e = np.bincount(cfg, weights=e) / counts  # repeats of one configuration are one point: their mean error
        for g in range(len(first)):
            pt = [float(e[g]), float(b_lo[g]), float(b_hi[g]), float(d[g])]
            if all(math.isfinite(v) for v in pt) and pt[3] > 0:
                points.append(pt)
                covered.append(-pt[1] <= pt[0] <= pt[2])
        splits.append(
            {
                "split": label,
                "train_configurations": train_m.n_configurations,
                "test_configurations": test_m.n_configurations,
                "mape_fit": float(np.mean(np.abs(t[cfg] / y - 1)) * 100),
                "covered_unwidened": float(np.mean(covered)) if covered else None,
            }
        )
    unc.splits = splits
    unc.calibration = points
