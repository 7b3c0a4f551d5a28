"""``auto_select``: the automatic search's outline (see :mod:`perfmodel.search` for the method).

Each step is a named helper beside it: check the settings, build the pool (screening the factors
first when there are many), screen term sets, shortlist them, build the refinement's candidates,
validate them by DE, choose (simplest within noise, the small-data rule) and refit the chosen.

Imports from the fitting layer, the search's own modules and perfmodel.parallel only.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.evaluate import MAX_FOLDS, holdout, largest_scale_query
from ..fitting.model import DEFAULT_LAM, SEARCH_DE, Model, exact_settings
from ..fitting.result import FitResult
from ..language.expression import parse_expression
from ..parallel import n_workers, run_tasks, with_single_blas_thread
from .beam import BeamSearch
from .candidates import (
    PRIOR_NOTE,
    READABLE_BAND,
    Candidate,
    Selection,
    simplest_first,
    structural_prior,
    validation_configurations,
)
from .horizon import HORIZON_FACTOR, fell_at_the_end, horizon_env, unseen_dominant
from .laws import LAW_WORDS, LAWS, applies, internode_applies, law_cell, law_spec, ruled_law, with_internode
from .pool import overlap_variant, pool_matrix, preset_specs, readability_cost, search_terms, term_set_spec
from .refine import fit_task, horizon_task, validate_task
from .screening import Screen, score_noise, validation_splits

#: With more varying factors than this, the factors are screened first (see the module doc) and
#: only those that matter get PMNF blocks and interactions.
FULL_POOL_FACTORS = 3
#: Most factors (the most important first) among which two- and three-factor interactions are built
#: after the factors were screened.
MAX_PAIR_FACTORS = 6
MAX_TRIPLE_FACTORS = 4


#: Ranges of the search's own settings: (least, largest). Beyond the largest the search would run
#: for hours (the screening grows with max_terms × beam × pool, the refinement with the candidates).
SEARCH_LIMITS = {
    "k": (2, MAX_FOLDS),
    "max_terms": (1, 10),
    "n_best": (1, 20),
    "beam": (1, 64),
    "max_candidates": (1, 50),
    "n_free": (0, 10),
    "max_free": (0, 6),
}


def _check_search_settings(**settings) -> None:
    for name, value in settings.items():
        lo, hi = SEARCH_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise PerfModelError(f"{name} must be a whole number, got {value!r}")
        if value < lo:
            raise PerfModelError(
                f"{name} must be at least {lo}, got {value}"
                + (" (k-fold cross-validation needs k >= 2)" if name == "k" else "")
            )
        if value > hi:
            raise PerfModelError(f"{name} {value} is above the limit {hi} (the search would run for hours)")


@with_single_blas_thread
def auto_select(
    meas: Measurements,
    *,
    lam: float = DEFAULT_LAM,
    loss: str = "relative",
    penalty: str = "l1",
    seed: int = 0,
    k: int = 5,
    n_best: int = 3,
    max_terms: int = 5,
    beam: int = 8,
    max_candidates: int = 10,
    n_free: int = 3,
    max_free: int = 3,
    holdout_query: str | None = "auto",
    search_de: dict | None = None,
    final_de: dict | None = None,
    progress: Callable | None = None,
    should_stop: Callable | None = None,
    workers: int | None = None,
    laws: bool = True,
    prior: dict | bool = True,
    validate: bool = True,
) -> Selection:
    """Search small expressions for ``meas`` and return the best few (see the module doc).

    With a factor ``p`` of at least two values (and ``laws``), the model is one of the scaling laws of
    :mod:`perfmodel.search.laws`, chosen by the corpus's rule for the series' cell (``prior``: the
    population prior holding the rule, True for the shipped one), the others listed after it; the term
    search runs for data without workers.

    Parameters
    ----------
    meas : the measurements (rows = runs; factors mapped to symbols).
    lam, loss, penalty, seed : fit settings of every candidate (as :class:`Model`).
    k : folds of the cross-validation (whole configurations per fold, as ``cross_validate``).
    n_best : how many candidates to return (each refitted with ``final_de``).
    max_terms : largest number of terms (intercept included) a candidate may have.
    beam : term sets kept per step of the forward screening.
    max_candidates : screened term sets refined by differential evolution.
    n_free : of those, how many best ones also get a free-exponent variant.
    max_free : most free exponents in one variant (the terms carrying the most time first).
    holdout_query : ``"auto"`` (largest-scale split), a query such as ``"p > 8"``, or None.
    search_de / final_de : DE settings while searching (default ``SEARCH_DE``) and for the
        final refits (default: :class:`Model`'s).
    progress : ``progress(done, total, message)`` after each step.
    should_stop : polled between steps; when true the search stops and returns what it has
        (``Selection.stopped``), or raises :class:`PerfModelError` when it has nothing yet.
    workers : processes for the refinement (default: all cores; 1 = no pool). A pool is
        started only when the work left justifies it (:data:`perfmodel.parallel.POOL_THRESHOLD`).
    laws, prior : choose among the scaling laws by the corpus's rule where they apply (see above).
    validate : hold out each law's largest scale for the table (the choice does not use it).
    """
    t0 = _time.perf_counter()
    _check_inputs(
        meas,
        k=k,
        max_terms=max_terms,
        n_best=n_best,
        beam=beam,
        max_candidates=max_candidates,
        n_free=n_free,
        max_free=max_free,
    )
    workers = n_workers(workers)
    search_de = {**SEARCH_DE, **(search_de or {})}
    final_de = dict(final_de or {})
    base: dict = {"lam": lam, "loss": loss, "penalty": penalty, "seed": seed}
    Model("1", **base, **search_de)._check_settings()  # bad λ/loss/seed/DE fail here, with one message
    Model("1", **base, **final_de)._check_settings()
    if holdout_query == "auto":
        holdout_query = largest_scale_query(meas)
    if laws and applies(meas):
        return _select_law(
            meas, base, final_de, int(k), int(seed), holdout_query, validate, workers, t0, progress, prior
        )
    run = _Progress(progress, should_stop, n_steps=max(1, int(max_terms)), n_best=int(n_best))

    splits = validation_splits(meas, int(k), int(seed), holdout_query)
    max_size = _largest_set(meas, splits)
    terms, X, pool_counts, importance = _build_pool(meas, splits, loss, max_terms, beam, max_size, run)
    screen = Screen(X, meas.y, loss, splits, max_size)
    search = BeamSearch(terms, screen)
    trace = search.run(max_terms, beam, run.stop, lambda step, msg: run.tell(1 + step, msg), thorough=bool(importance))
    short = _shortlist(search, max_candidates)
    run.tell(run.n_steps + 2, f"screened {screen.n_evaluated} term sets")

    specs = _refinement_specs(meas, search, short, n_free, max_free, max_terms)
    if laws and law_cell(meas) is not None:  # a longer series chooses its terms: the laws compete
        specs += _law_specs(meas, {sp[0] for sp in specs})
    evaluated = _validate(specs, meas, {**base, **search_de}, int(k), int(seed), holdout_query, workers, run)
    horizon = _HorizonCheck(meas, {**base, **search_de}, workers, run)
    noise, n_validation, prior, chosen = _choose(meas, splits, evaluated, n_best, horizon)
    chosen = _refit(chosen, meas, {**base, **final_de}, int(k), holdout_query, workers, run)
    run.tell(run.n_total, "done", run.n_total)
    return Selection(
        candidates=chosen,
        evaluated=evaluated,
        trace=trace,
        holdout_query=holdout_query,
        k=int(k),
        seed=int(seed),
        settings={
            **base,
            "max_terms": int(max_terms),
            "beam": int(beam),
            "n_best": int(n_best),
            "max_candidates": int(max_candidates),
            "search_de": search_de,
            "final_de": final_de,
        },
        pool=pool_counts,
        n_screened=screen.n_evaluated,
        seconds=_time.perf_counter() - t0,
        workers=workers,
        stopped=run.stopped,
        noise=noise,
        prior=PRIOR_NOTE.format(n=n_validation) if prior else "",
        set_aside=horizon.set_aside,
    )


def _check_inputs(meas: Measurements, **settings) -> None:
    if not isinstance(meas, Measurements):
        raise PerfModelError(f"auto_select needs Measurements, got {type(meas).__name__}")
    if meas.n_configurations < 2:
        raise PerfModelError(
            f"{meas.n_configurations} distinct configuration(s): the automatic search needs at "
            "least 2 to cross-validate; measure more configurations"
        )
    _check_search_settings(**settings)


class _Progress:
    """The search's progress reports (``progress(done, total, message)``) and its stop flag: once
    ``should_stop()`` was true, :meth:`stop` stays true and the Selection says it stopped."""

    def __init__(self, progress: Callable | None, should_stop: Callable | None, n_steps: int, n_best: int):
        self.progress, self.should_stop = progress, should_stop
        self.n_steps, self.n_best, self.n_tasks = n_steps, n_best, 0
        self.total = n_steps + 3  # the screening's steps; the refinement's tasks are added to n_total
        self.n_total = self.total
        self.stopped = False

    def stop(self) -> bool:
        if self.should_stop is not None and self.should_stop():
            self.stopped = True
        return self.stopped

    def tell(self, done: int, message: str, total: int | None = None) -> None:
        if self.progress is not None:
            self.progress(done, self.total if total is None else total, message)

    def tick(self, offset: int, label: str) -> Callable[[int], None]:
        """A task runner's ``report(done)``: ``done`` tasks after ``offset`` steps, out of ``n_total``."""
        return lambda done: self.tell(offset + done, label, self.n_total)


def _largest_set(meas: Measurements, splits) -> int:
    """Most terms a screened set may have: fewer than the configurations its smallest split trains on."""
    cfg = meas.configurations()
    min_cfg = min(len(np.unique(cfg[tr])) for name, tr, te in splits)
    return min_cfg - 1 if min_cfg > 1 else 1


def _build_pool(meas: Measurements, splits, loss: str, max_terms: int, beam: int, max_size: int, run: _Progress):
    """(pool terms, their values (n, P), the pool's counts, the factors' importance): with more than
    :data:`FULL_POOL_FACTORS` varying factors, the factors are screened first, and only those that
    matter get PMNF blocks and interactions."""
    varying = meas.scaling_factors()
    importance: dict[str, float] = {}
    if len(varying) > FULL_POOL_FACTORS:
        terms, X = pool_matrix(meas, search_terms(meas, singles=varying, pairs=(), triples=()))
        first = BeamSearch(terms, Screen(X, meas.y, loss, splits, max_size))
        first.run(max_terms, beam, run.stop, lambda step, msg: None, thorough=True)
        importance, threshold = first.factor_importance(meas, varying)
        active = [x for x in sorted(importance, key=lambda x: -importance[x]) if importance[x] > threshold]
        run.tell(
            1,
            f"screening factors: {len(active)} of {len(varying)} matter"
            + (f" ({', '.join(active)})" if active else ""),
        )
        pool = search_terms(meas, singles=active, pairs=active[:MAX_PAIR_FACTORS], triples=active[:MAX_TRIPLE_FACTORS])
    else:
        pool = search_terms(meas)
    terms, X = pool_matrix(meas, pool)
    pool_counts: dict = {
        "total": len(terms),
        **{kind: sum(t.kind == kind for t in terms) for kind in ("library", "pmnf", "interaction")},
    }
    if importance:  # how much each factor matters (score points), and those that do
        pool_counts["factors"] = {x: (round(v, 4) if math.isfinite(v) else str(v)) for x, v in importance.items()}
        pool_counts["matter"] = active
    return terms, X, pool_counts, importance


@dataclass
class _Shortlist:
    """The screened sets worth refining: ``sets`` (smallest first), the best ``best`` of all
    ``feasible`` ones, and the best set of library terms alone of each size (``library``)."""

    sets: list
    best: tuple
    feasible: list
    library: list


def _shortlist(search: BeamSearch, max_candidates: int) -> _Shortlist:
    """The best two sets of each size within reach of the best (its score + 2 noise + 0.5 points), at
    least four in all, at most ``max_candidates``; plus the best library-only set of each size
    within reach (the readable alternative the choice prefers when it is within noise)."""
    record, best_of = search.record, search.best_of
    feasible = [s for s in record if record[s].feasible]
    if not feasible:
        raise PerfModelError(
            "no candidate model could be fitted on every validation split; measure more configurations"
        )
    best_set = min(feasible, key=lambda s: record[s].score)
    band = record[best_set].score + 2 * score_noise(record[best_set].score, record[best_set].se) + 0.5
    shortlist: list[tuple] = []
    for m in sorted({len(s) for s in feasible}):
        inside = [s for s in best_of([s for s in feasible if len(s) == m], 2) if record[s].score <= band]
        shortlist += inside
    for s in sorted(feasible, key=lambda s: record[s].score):
        if len(shortlist) >= 4:
            break
        if s not in shortlist:
            shortlist.append(s)
    shortlist = sorted(shortlist, key=lambda s: record[s].score)[: max(1, int(max_candidates))]
    lib_best = [
        b[0]
        for b in (
            best_of([s for s in feasible if len(s) == m and search.is_library(s)], 1)
            for m in sorted({len(s) for s in feasible})
        )
        if b
    ]
    for s in lib_best:
        if record[s].score <= band and s not in shortlist:
            shortlist.append(s)
    shortlist.sort(key=lambda s: (len(s), record[s].score))
    return _Shortlist(shortlist, best_set, feasible, lib_best)


def _refinement_specs(
    meas: Measurements, search: BeamSearch, short: _Shortlist, n_free: int, max_free: int, max_terms: int
) -> list[tuple[str, dict, int, str, float]]:
    """[(spec, bounds, n_params, origin, screened score)] to validate by DE: the shortlist, free-exponent
    and overlap variants, and the presets; the costly DE fits first (see :func:`run_tasks`)."""
    terms, record, screen = search.terms, search.record, search.screen
    specs: list[tuple[str, dict, int, str, float]] = []
    seen_specs = set()
    for s in short.sets:
        spec, bounds, nf = term_set_spec([terms[i] for i in s], free=False)
        specs.append((spec, bounds, len(s), "screened", record[s].score))
        seen_specs.add(spec)
    by_size_best = _best_of_each_size(search, short)
    for spec, bounds, n_params, score in _free_variants(search, short, by_size_best, n_free, max_free):
        if spec not in seen_specs:
            specs.append((spec, bounds, n_params, "free exponents", score))
            seen_specs.add(spec)
    # overlap variants: of the best set of each size, and of the best set of library terms alone of
    # each size (a plain sum of compute and synchronisation can fit overlapped data badly)
    for s in by_size_best + [s for s in short.library if s not in by_size_best]:
        variant = overlap_variant([terms[i] for i in s], meas.factors)
        if variant is not None and variant[0] not in seen_specs and len(s) + 1 <= screen.max_size:
            specs.append((*variant, len(s) + 1, "overlap", record[s].score))
            seen_specs.add(variant[0])
    for spec, bounds, n_params in preset_specs(meas, int(max_terms) + int(max_free)):
        if spec not in seen_specs:
            specs.append((spec, bounds, n_params, "preset", float("nan")))
            seen_specs.add(spec)
    specs.sort(key=lambda sp: sp[3] == "screened")  # the costly DE fits first (see run_tasks)
    return specs


def _law_specs(meas: Measurements, seen: set[str]) -> list[tuple[str, dict, int, str, float]]:
    """[(spec, bounds, n_params, "law", nan)] of the scaling laws of :mod:`perfmodel.search.laws` not
    in ``seen``: candidates of the term search like the others (a law is readable)."""
    symbols = list(meas.factors)
    out = []
    for name in LAWS:
        spec = law_spec(name, meas)
        if "scale_weight" in spec:  # another law's formula with its scales weighted: a fit setting, not a term set
            continue
        if "preset" in spec:
            found = preset_specs(meas, names=[spec["preset"]])
        else:
            try:
                expr, _ = parse_expression(spec["terms"], symbols)
            except PerfModelError:
                continue
            found = [(spec["terms"], {}, len(expr.terms) + len(expr.params))]
        out += [(sp, bd, n, "law", math.nan) for sp, bd, n in found if sp not in seen]
        seen.update(sp for sp, _, _ in found)
    return out


def _best_of_each_size(search: BeamSearch, short: _Shortlist) -> list[tuple]:
    """The best set of each size that is not hopeless (screened score <= 2 x best + 1 point)."""
    record = search.record
    best_screen = record[short.best].score
    out = []
    for m in sorted({len(s) for s in short.feasible}):
        top = search.best_of([s for s in short.feasible if len(s) == m], 1)
        if top and record[top[0]].score <= 2 * best_screen + 1.0:
            out.append(top[0])
    return out


def _free_variants(search: BeamSearch, short: _Shortlist, by_size_best: list, n_free: int, max_free: int):
    """Yield (spec, bounds, n_params, screened score) of free-exponent variants. A set already within
    noise of the best screened score gains nothing from freeing its exponents (it would only add
    parameters); the others may, when their gridded exponent is off: the best set of each size
    (smallest first), then the shortlist by score. The exponents of the terms that carry the most
    time are freed, at most ``max_free`` of them."""
    terms, record, screen = search.terms, search.record, search.screen
    best_screen = record[short.best].score
    screen_noise = score_noise(best_screen, record[short.best].se)
    order = by_size_best + sorted((s for s in short.sets if s not in by_size_best), key=lambda s: record[s].score)
    seen, n_done = set(), 0
    for s in order:
        if n_done >= int(n_free):
            break
        if record[s].score <= best_screen + screen_noise:
            continue
        share = screen.shares(s)
        flags, n_params_free = [False] * len(s), 0
        for pos in np.argsort(-share):
            t = terms[s[pos]]
            if t.free is not None and n_params_free + len(t.params) <= int(max_free):
                flags[pos] = True
                n_params_free += len(t.params)
        spec, bounds, nf = term_set_spec([terms[i] for i in s], flags)
        if nf and spec not in seen and len(s) + nf <= screen.max_size:
            seen.add(spec)
            n_done += 1
            yield spec, bounds, len(s) + nf, record[s].score


def _validate(
    specs: list, meas: Measurements, settings: dict, k: int, seed: int, holdout_query, workers: int, run: _Progress
) -> list[Candidate]:
    """Every spec cross-validated and held out by DE (in a process pool), best score first."""
    tasks = [
        {"spec": sp, "bounds": bd, "settings": settings, "meas": meas, "k": k, "seed": seed, "query": holdout_query}
        for sp, bd, nf, origin, sc in specs
    ]
    run.n_total = run.total + len(tasks) + run.n_best
    outcomes = (
        []
        if run.stopped
        else run_tasks(validate_task, tasks, workers, run.tick(run.total - 1, "validating candidates"), run.stop)
    )
    run.n_tasks = len(tasks)
    evaluated: list[Candidate] = []
    # strict=False: outcomes is empty when the search was stopped before validating
    for (spec, bounds, n_params, origin, sc), out in zip(specs, outcomes, strict=False):
        if out is None or "error" in out:
            continue
        evaluated.append(
            Candidate(
                spec,
                None,
                out["cv"],
                out["holdout"],
                out["score"],
                n_params,
                out["se"],
                bounds,
                origin,
                sc,
                0 if origin in ("preset", "law") else readability_cost(spec, meas.factors),
            )
        )
    evaluated.sort(key=lambda c: (c.score, c.n_params))
    if not evaluated:
        if run.stopped:
            raise PerfModelError("the automatic search was stopped before any candidate was validated")
        raise PerfModelError("no candidate model could be validated; measure more configurations")
    return evaluated


class _HorizonCheck:
    """Which candidates let a term the data cannot see carry their prediction at the standard
    horizon (see :mod:`perfmodel.search.horizon`); each candidate is fitted on all data once, and
    only when the choice reaches it. ``set_aside``: {spec: why} of those set aside."""

    def __init__(self, meas: Measurements, settings: dict, workers: int, run: _Progress | None = None):
        self.meas, self.settings, self.workers, self.run = meas, settings, workers, run
        self.env = horizon_env(meas)
        self.fell = fell_at_the_end(meas)
        self.verdict: dict[int, str] = {}  # id(candidate) -> "" (kept) or why it is set aside
        self.set_aside: dict[str, str] = {}

    def bad(self, candidates: list[Candidate]) -> set[int]:
        """ids of those of ``candidates`` set aside (fitting those not yet checked)."""
        if self.env is None:
            return set()
        todo = [c for c in candidates if id(c) not in self.verdict]
        if todo:
            tasks = [
                {"spec": c.spec, "bounds": c.bounds, "settings": self.settings, "meas": self.meas, "env": self.env}
                for c in todo
            ]
            stop = self.run.stop if self.run is not None else None
            outs = run_tasks(horizon_task, tasks, self.workers, None, stop)
            for c, out in zip(todo, outs, strict=True):
                self.verdict[id(c)] = self._why(c, out, self.fell)
                if self.verdict[id(c)]:
                    self.set_aside[c.spec] = self.verdict[id(c)]
        return {id(c) for c in candidates if self.verdict.get(id(c))}

    @staticmethod
    def _why(c: Candidate, out, fell: bool) -> str:
        if not isinstance(out, dict) or "error" in out:
            return ""  # not refitted here: judged by its validation alone
        rise = out.get("rise", float("nan"))
        if fell and rise > 1:
            return (
                f"it predicts the time at {HORIZON_FACTOR:g}x the largest scale {rise:.2f}x its own there, "
                "where every configuration's measured time fell at each of the last two steps"
            )
        error = c.cv.get("mape", c.score) / 100.0
        where = unseen_dominant(out["share_in"], out["share_h"], error)
        if not where:
            return ""
        i = where[0]
        return (
            f"{out['terms'][i]} carries {100 * out['share_h'][i]:.0f} % of the prediction at "
            f"{HORIZON_FACTOR:g}x the largest scale and {100 * out['share_in'][i]:.2g} % of the measured time "
            f"(below the fit's {100 * error:.2g} % error)"
        )


def _choose(meas: Measurements, splits, evaluated: list[Candidate], n_best: int, horizon: _HorizonCheck | None = None):
    """(noise, configurations the validation trains on, the small-data prior or None, the chosen):
    the candidates within noise of the best, simplest first; a model of library terms alone counts
    as within noise up to READABLE_BAND x the noise (the best of thousands of screened opaque sets is
    scored optimistically, a library model is one of the few structures the domain suggests); when
    the validation is too small to choose, the paper's model first (see the module doc). With
    ``horizon``, a candidate in which a term the data cannot see carries the prediction at the
    standard horizon is set aside first (the best and the noise are those of the others; see
    :mod:`perfmodel.search.horizon`); if every candidate would be, none is."""
    n_validation = validation_configurations(meas, splits)
    pool = list(evaluated)
    while True:
        noise = score_noise(pool[0].score, pool[0].se)
        within = [
            c
            for c in pool
            if c.score <= pool[0].score + noise
            or (c.readability == 0 and c.score <= pool[0].score + READABLE_BAND * noise)
        ]
        prior = structural_prior(meas, n_validation, pool)
        if horizon is None:
            break
        bad = horizon.bad(within + ([prior] if prior is not None else []))
        if not bad:
            break
        rest = [c for c in pool if id(c) not in bad]
        if not rest:
            pool = list(evaluated)
            horizon = None
            continue
        pool = rest
    within.sort(key=simplest_first)
    if prior is not None:
        within = [prior] + [c for c in within if c is not prior]
    return noise, n_validation, prior, within[: max(1, int(n_best))]


def _refit(
    chosen: list[Candidate], meas: Measurements, settings: dict, k: int, holdout_query, workers: int, run: _Progress
) -> list[Candidate]:
    """The chosen candidates refitted on all data with the final DE settings (those that fit)."""
    fits = [{"spec": c.spec, "bounds": c.bounds, "settings": settings, "meas": meas} for c in chosen]
    results = run_tasks(
        fit_task, fits, workers, run.tick(run.total - 1 + run.n_tasks, "refitting the chosen models"), None
    )
    for c, res in zip(chosen, results, strict=True):
        if isinstance(res, FitResult):
            res.validation = {
                f"{out_name}": m
                for out_name, m in ((f"{k}-fold CV", c.cv), (f"hold-out ({holdout_query})", c.holdout))
                if m
            }
            c.result = res
    return [c for c in chosen if c.result is not None]


def _select_law(
    meas: Measurements,
    base: dict,
    final_de: dict,
    k: int,
    seed: int,
    holdout_query,
    validate: bool,
    workers: int,
    t0: float,
    progress: Callable | None,
    prior: dict | bool = True,
) -> Selection:
    """The scaling law the corpus's rule gives for ``meas``'s cell, first, then the other laws (by the
    corpus's error in that cell); each fitted on all data with the final settings and, with
    ``validate``, refitted without the largest scale to show how it extrapolated it."""
    from ..uncertainty.prior import load_prior

    cell = law_cell(meas)
    if cell is None:
        raise PerfModelError("the scaling laws need a factor p with at least two measured values")
    prior_d = load_prior() if prior is True else (prior or None)
    chosen, evidence = ruled_law(cell, prior_d)
    order = sorted(LAWS, key=lambda name: (name != chosen, evidence.get(name, math.inf), LAWS.index(name)))
    if progress is not None:
        progress(0, len(order), f"fitting {len(order)} scaling laws")
    out: list[Candidate] = []
    for i, name in enumerate(order):
        data = meas  # the topology stays mapped: only Pollux's structure reads it, as its network's machines
        model = Model(**law_spec(name, meas), **base, **final_de)
        try:
            res = model.clone(**exact_settings(model, data)).fit(data)
        except PerfModelError:
            continue
        cv: dict = {}
        ho: dict = {}
        if validate and holdout_query:  # how the law extrapolated the largest measured scale, for the table
            try:
                ho = holdout(model.clone(**{**SEARCH_DE, **exact_settings(model, data)}), data, holdout_query)[
                    1
                ].metrics
            except PerfModelError:
                ho = {}
            if ho:
                res.validation = {f"hold-out ({holdout_query})": ho}
        if not out and prior_d and internode_applies(meas, prior_d):  # the chosen law on one node: inter-node
            res = with_internode(res, meas, prior_d["internode"], {**base, **final_de})
        err = evidence.get(name, math.nan)
        out.append(
            Candidate(
                res.expression,
                res,
                cv,
                ho,
                float(err),
                res.n_params,
                0.0,
                dict(res.settings.get("bounds") or res.param_bounds),  # a pinned inter-node cost's too
                f"law: {name}",
                float("nan"),
                0,
            )
        )
        if progress is not None:
            progress(i + 1, len(order), f"fitted {name}")
    if not out:
        raise PerfModelError("no scaling law could be fitted to these measurements")
    n = evidence.get("n")
    why = f"the corpus's rule for series with {cell.describe()}: {out[0].origin[5:]} " + (
        f"(median error {evidence[out[0].origin[5:]]:.1f} % over {n} extrapolations of such series)"
        if out[0].origin[5:] in evidence and n
        else "(no learned rule: the default)"
    )
    return Selection(
        candidates=out,
        evaluated=list(out),
        trace=[],
        holdout_query=holdout_query,
        k=k,
        seed=seed,
        settings={**base, "final_de": final_de, "laws": list(LAWS)},
        pool={"total": len(LAWS), "laws": len(LAWS)},
        n_screened=0,
        seconds=_time.perf_counter() - t0,
        workers=workers,
        rule=why,
        law_words={c.origin[5:]: LAW_WORDS[c.origin[5:]] for c in out},
    )
