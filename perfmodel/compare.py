"""Peer models side by side: the user's fit, the automatic one, presets, and an Extra-P-like search.

``compare(meas, user_model, auto)`` fits every peer to the same measurements and reports, in
one table, its in-sample MAPE, its k-fold cross-validated MAPE and its MAPE on a hold-out of
the largest scales, with the winner of each column flagged; the predictions of every peer
are kept for one parity chart (:func:`perfmodel.plots.selection.comparison_parity`).

Peers
-----
* **your model**: the user's :class:`~perfmodel.Model` (or the settings of a :class:`FitResult`),
  with its own settings;
* **automatic**: the best expression of :func:`perfmodel.search.auto_select`;
* **ernest**, **data-parallel**, **pollux** and **optimus** (:data:`PRESET_PEERS`): the presets of
  :mod:`perfmodel.terms` — Ernest's terms, the paper's generic data-parallel model, Pollux's step time
  (compute and network overlapping, ``overlap(A, B; g)``) and Optimus's parameter-server speed model,
  each times the iteration count;
* **PMNF search**: an Extra-P-like search (:func:`pmnf_search`), described below.

Every peer but the user's is fitted with the comparison's ``loss``, ``lam`` and ``seed``
(default: relative loss, λ = 0), so the table compares hypothesis spaces, not fitting
machinery. The searched peers (automatic, PMNF) choose their expression once on all the data
and are then refitted on each split; with ``nested=True`` their hold-out column re-runs the
search on the training part only (honest extrapolation, slower for the automatic search).

The PMNF search
---------------
Extra-P's modeler (extra-p/extrap, ``modelers/single_parameter/basic.py`` and
``modelers/multi_parameter/multi_parameter_modeler.py``) re-implemented on our data:

1. For each factor ``x``, a *line* of measurements along ``x``: configurations are grouped by
   the values of the other factors, the groups with the most distinct ``x`` values are kept,
   and the mean time of each ``x`` value is averaged over them (Extra-P's "best measurement
   points"). Times are per-configuration means, as Extra-P's default.
2. On that line, Extra-P's default single-parameter hypotheses ``c0 + c1·x^(i/j)·log2(x)^k``
   for its 42 published (i, j, k) triples (:data:`EXTRAP_EXPONENTS`; those with a log are
   dropped when a value of ``x`` is < 1) are fitted by least squares and scored by the SMAPE
   of leave-one-out predictions; a hypothesis replaces the best so far only when its SMAPE is
   lower, starting from the constant model (scored in-sample); a term that contributes less
   than 0.05 % anywhere is rejected. A factor with only two values on its line gets ``x``.
3. The factors' best terms are combined as Extra-P does: additively and multiplicatively, and
   for two or three factors also every mix of sums and products that Extra-P tries, each with
   a constant; coefficients by least squares on all configuration means; the hypothesis with
   the lowest SMAPE wins.

Coefficients are unconstrained in sign, as in Extra-P (``nonneg=False``).

A use of fitted models: imports from the data, fitting and search layers and perfmodel.parallel
(never from plots, report or the CLI).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np
import pandas as pd

from .search.candidates import Selection
from .parallel import run_tasks, n_workers
from .search.select import auto_select
from .data.measurements import Measurements
from .errors import PerfModelError
from .fitting.evaluate import cross_validate, holdout, largest_scale_query
from .fitting.model import DEFAULT_LAM, Model
from .fitting.result import FitResult
from .language.terms import preset_spec

#: Extra-P's default single-parameter building blocks ``x^(i/j)·log2(x)^k`` as (i, j, k),
#: from ``extrap/modelers/single_parameter/basic.py::create_default_building_blocks``
#: (extra-p/extrap, BSD-3-Clause), in Extra-P's order.
EXTRAP_EXPONENTS = (
    (0, 1, 1), (0, 1, 2), (1, 4, 0), (1, 3, 0), (1, 4, 1), (1, 3, 1), (1, 4, 2), (1, 3, 2), (1, 2, 0),
    (1, 2, 1), (1, 2, 2), (2, 3, 0), (3, 4, 0), (2, 3, 1), (3, 4, 1), (4, 5, 0), (2, 3, 2), (3, 4, 2),
    (1, 1, 0), (1, 1, 1), (1, 1, 2), (5, 4, 0), (5, 4, 1), (4, 3, 0), (4, 3, 1), (3, 2, 0), (3, 2, 1),
    (3, 2, 2), (5, 3, 0), (7, 4, 0), (2, 1, 0), (2, 1, 1), (2, 1, 2), (9, 4, 0), (7, 3, 0), (5, 2, 0),
    (5, 2, 1), (5, 2, 2), (8, 3, 0), (11, 4, 0), (3, 1, 0), (3, 1, 1),
)
_EPSILON = 0.0005  # Extra-P's minimum term contribution
def ernest_extra_factors(meas: Measurements) -> list[str]:
    """The varying factors that Ernest's four terms (N, p) leave out, each a term of the variant."""
    return [s for s in meas.factors if s not in ("p", "N") and np.ptp(meas.values(s)) > 0]


#: The preset peers of :func:`compare`, in the table's order.
PRESET_PEERS = ("ernest", "data-parallel", "pollux", "optimus")


# ----------------------------------------------------------------------------------------
# the Extra-P-like PMNF search
# ----------------------------------------------------------------------------------------
def _smape(y: np.ndarray, pred: np.ndarray) -> float:
    denom = np.abs(y) + np.abs(pred)
    with np.errstate(all="ignore"):
        v = np.where(denom > 0, 2 * np.abs(pred - y) / np.where(denom > 0, denom, 1), 0.0)
    return float(np.mean(v) * 100)


def _block_text(x: str, i: int, j: int, k: int) -> str:
    e = Fraction(i, j)
    parts = []
    if e != 0:
        if e == 1:
            parts.append(x)
        elif e.denominator == 1:
            parts.append(f"{x}^{e.numerator}")
        else:
            parts.append(f"{x}^({e.numerator}/{e.denominator})")
    if k:
        parts.append(f"log2({x})" if k == 1 else f"log2({x})^{k}")
    return "*".join(parts) or "1"


def _block_values(v: np.ndarray, i: int, j: int, k: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.power(v, i / j) if i else np.ones_like(v)
        if k:
            out = out * np.log2(v) ** k
    return out


def _line(meas: Measurements, sym: str) -> tuple[np.ndarray, np.ndarray]:
    """Extra-P's measurement line along ``sym``: (x values, mean times)."""
    syms = list(meas.factors)
    cols = {s: meas.values(s) for s in syms}
    frame = pd.DataFrame({**cols, "_y": meas.y})
    means = frame.groupby(syms, sort=True)["_y"].mean().reset_index()
    others = [s for s in syms if s != sym]
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


def _lsq(F: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(F, y, rcond=None)[0]


def best_single_term(x: np.ndarray, y: np.ndarray) -> tuple[tuple[int, int, int] | None, float]:
    """Extra-P's single-parameter search on one line: the best (i, j, k), or None for constant."""
    if len(x) < 2:
        return None, 0.0
    if len(np.unique(x)) == 2:
        return (1, 1, 0), 0.0
    best, best_smape = None, _smape(y, np.full_like(y, y.mean()))
    if best_smape == 0:
        return None, 0.0
    logs_ok = bool(np.all(x >= 1))
    n = len(x)
    for ijk in EXTRAP_EXPONENTS:
        if ijk[2] and not logs_ok:
            continue
        f = _block_values(x, *ijk)
        if not np.all(np.isfinite(f)) or np.ptp(f) == 0:
            continue
        F = np.column_stack([np.ones(n), f])
        pred = np.empty(n)
        for i in range(n):
            keep = np.arange(n) != i
            c = _lsq(F[keep], y[keep])
            pred[i] = F[i] @ c
        c = _lsq(F, y)
        with np.errstate(all="ignore"):
            contrib = np.max(np.abs(c[1] * f) / np.abs(y))
        if c[1] == 0 or not contrib >= _EPSILON:
            continue
        s = _smape(y, pred)
        if np.isfinite(s) and s < best_smape:
            best, best_smape = ijk, s
    return best, best_smape


def _combinations(n: int) -> list[list[tuple[int, ...]]]:
    """Extra-P's multi-parameter hypotheses over n factor terms: lists of products (index tuples)."""
    idx = tuple(range(n))
    mult = [idx]
    add = [[(i,) for i in idx]]
    out = [mult, *add]
    if n == 2:
        out += [[(0,), idx], [(1,), idx]]
    elif n == 3:
        xy, yz, xz = (0, 1), (1, 2), (0, 2)
        x, y, z = (0,), (1,), (2,)
        out += [[idx, x], [idx, y], [idx, z], [idx, xy], [idx, yz], [idx, xz],
                [idx, xy, z], [idx, yz, x], [idx, xz, y], [idx, x, y], [idx, x, z], [idx, y, z],
                [xy, z], [xy, z, y], [xy, z, x], [xz, y], [xz, y, x], [xz, y, z], [yz, x], [yz, x, y], [yz, x, z]]
    return out


@dataclass
class PMNFSearch:
    """Outcome of :func:`pmnf_search`: the expression and how it was chosen."""

    spec: str
    per_factor: dict  # symbol -> (i, j, k) exponent triple, or None (constant along it)
    hypotheses: list  # (expression, SMAPE %) of every combination tried
    line_points: dict  # symbol -> number of points on its measurement line


def pmnf_search(meas: Measurements) -> PMNFSearch:
    """Extra-P-like PMNF search on ``meas`` (see the module doc); returns the chosen expression."""
    syms = meas.varying()
    per_factor, points, blocks = {}, {}, []
    for s in syms:
        x, y = _line(meas, s)
        points[s] = len(x)
        ijk, _ = best_single_term(x, y)
        per_factor[s] = ijk
        if ijk is not None:
            blocks.append((s, ijk))
    if not blocks:
        return PMNFSearch("1", per_factor, [("1", float("nan"))], points)
    # all configuration means
    cols = {s: meas.values(s) for s in meas.factors}
    frame = pd.DataFrame({**cols, "_y": meas.y}).groupby(list(meas.factors), sort=True)["_y"].mean().reset_index()
    y = frame["_y"].to_numpy(float)
    vals = [_block_values(frame[s].to_numpy(float), *ijk) for s, ijk in blocks]
    texts = [_block_text(s, *ijk) for s, ijk in blocks]
    tried = []
    best = None
    for hyp in _combinations(len(blocks)):
        F = np.column_stack([np.ones(len(y))] + [np.prod([vals[i] for i in prod], axis=0) for prod in hyp])
        if not np.all(np.isfinite(F)):
            continue
        c = _lsq(F, y)
        s = _smape(y, F @ c)
        spec = " + ".join(["1"] + ["*".join(texts[i] for i in prod) for prod in hyp])
        tried.append((spec, s))
        if best is None or s < best[1]:
            best = (spec, s)
    return PMNFSearch(best[0], per_factor, tried, points)


class PMNFSearchModel:
    """A model-like object whose ``fit`` runs :func:`pmnf_search` and fits the chosen expression.

    It works with :func:`perfmodel.fitting.evaluate.cross_validate` and ``holdout`` (the search is
    re-run on every training part). ``settings`` go to :class:`Model` (``nonneg=False`` as Extra-P).
    """

    def __init__(self, **settings):
        self.settings = {"nonneg": False, **settings}
        self.last_search: PMNFSearch | None = None

    def fit(self, meas: Measurements) -> FitResult:
        self.last_search = pmnf_search(meas)
        return Model(self.last_search.spec, **self.settings).fit(meas)


class AutoSelectModel:
    """A model-like object whose ``fit`` runs :func:`auto_select` and returns the best refit."""

    def __init__(self, **auto_kwargs):
        self.auto_kwargs = auto_kwargs

    def fit(self, meas: Measurements) -> FitResult:
        return auto_select(meas, **self.auto_kwargs).best.result


# ----------------------------------------------------------------------------------------
# the comparison
# ----------------------------------------------------------------------------------------
METRIC_COLUMNS = {"fit_mape": "in-sample MAPE (%)", "cv_mape": "CV MAPE (%)", "holdout_mape": "held-out MAPE (%)"}


@dataclass
class Comparison:
    """Peers side by side.

    ``table``: one row per peer with ``model``, ``expression``, ``n_params``, ``fit_mape``,
    ``cv_mape``, ``holdout_mape`` (percent), ``best_fit``/``best_cv``/``best_holdout`` (the
    winner of each column; ties all win) and ``error`` (why a peer could not be fitted, else
    ""). ``predictions``: long table (``model``, ``kind`` = in-sample / cross-validated /
    held-out, ``row``, ``measured``, ``predicted``) for the parity chart. ``results``: each
    peer's fit on all data.
    """

    table: pd.DataFrame
    predictions: pd.DataFrame
    results: dict
    holdout_query: str | None
    k: int
    seed: int
    notes: list = field(default_factory=list)

    def winners(self) -> dict:
        """{metric column: winning model name (or None)}."""
        out = {}
        for col in METRIC_COLUMNS:
            flag = "best_" + col.split("_")[0]
            hits = self.table.loc[self.table[flag], "model"].tolist()
            out[col] = " = ".join(hits) if hits else None  # a tie names every model in it
        return out

    def merged(self, other: "Comparison", after: str | None = "your model") -> "Comparison":
        """This comparison with the peers of ``other`` (made on the same data, folds and hold-out)
        added after the row of ``after`` (at the end when absent); the winners recomputed.

        Lets a caller show the quick peers first and add a slow one (the automatic search)
        when it is done, without fitting the others again."""
        if (other.k, other.seed, other.holdout_query) != (self.k, self.seed, self.holdout_query):
            raise PerfModelError("can only merge comparisons with the same folds, seed and hold-out")
        names = self.table["model"].tolist()
        at = names.index(after) + 1 if after in names else len(names)
        cols = [c for c in self.table.columns if not c.startswith("best_")]
        table = pd.concat([self.table[cols].iloc[:at], other.table[cols], self.table[cols].iloc[at:]],
                          ignore_index=True)
        return Comparison(table=_flag_best(table),
                          predictions=pd.concat([self.predictions, other.predictions], ignore_index=True),
                          results={**self.results, **other.results}, holdout_query=self.holdout_query,
                          k=self.k, seed=self.seed, notes=[*self.notes, *other.notes])

    def report(self) -> str:
        lines = [f"[[Comparison]]  {self.k}-fold CV (seed {self.seed}); hold-out: {self.holdout_query or 'none'}",
                 f"    {'model':<16} {'params':>6} {'in-sample':>9} {'CV':>8} {'held-out':>8}  expression"]
        for _, r in self.table.iterrows():
            def cell(v, flag):
                return (f"{v:.2f}" + ("*" if flag else " ")) if np.isfinite(v) else "-"
            lines.append(f"    {r['model']:<16} {r['n_params']:>6} {cell(r['fit_mape'], r['best_fit']):>9} "
                         f"{cell(r['cv_mape'], r['best_cv']):>8} {cell(r['holdout_mape'], r['best_holdout']):>8}  "
                         f"{r['expression'] or r['error']}")
        lines.append("    (MAPE in %; * = best in its column)")
        lines += [f"    note: {n}" for n in self.notes]
        return "\n".join(lines)


#: Two errors within this fraction of the lowest (1 %: 1.87 % and 1.885 %) are a tie: far below what
#: another fold assignment or seed moves a cross-validated MAPE, and the same number as shown.
TIE_RTOL = 0.01


def _flag_best(table: pd.DataFrame) -> pd.DataFrame:
    """Add the ``best_fit``/``best_cv``/``best_holdout`` columns: the lowest value of each metric and
    every value tied with it (within :data:`TIE_RTOL`); and ``note``: for rows whose expression another
    row also has, the settings in which their fits differ (why their numbers differ)."""
    for col in METRIC_COLUMNS:
        v = table[col].to_numpy(float)
        flag = "best_" + col.split("_")[0]
        table[flag] = (np.isfinite(v) & (v <= np.nanmin(v) * (1 + TIE_RTOL) + 1e-12)
                       if np.isfinite(v).any() else False)
    return table


#: The fit settings that make two fits of one expression differ, with their names in a note.
_SETTING_NAMES = {"lam": "λ", "penalty": "penalty", "loss": "loss", "seed": "seed", "maxiter": "generations",
                  "popsize": "population", "nonneg": "non-negative"}


def same_expression_notes(table: pd.DataFrame, results: dict) -> dict[str, str]:
    """{model: note} for rows that share their expression with an earlier row: what differs in their
    fits' settings (``same terms as your model; λ = 0 here, 1e-05 there``), or that nothing does."""
    notes = {}
    seen: dict[str, str] = {}
    for name, expr in zip(table["model"], table["expression"]):
        if not expr or name not in results:
            continue
        first = seen.setdefault(expr, name)
        if first == name:
            continue
        a, b = results[name].settings, results[first].settings
        diff = [f"{label} = {a.get(k)!s} here, {b.get(k)!s} there" for k, label in _SETTING_NAMES.items()
                if a.get(k) != b.get(k)]
        notes[name] = f"same terms as {first}; " + ("; ".join(diff) if diff else "fitted alike")
    return notes


def model_from_result(result: FitResult) -> Model:
    """The :class:`Model` that produced ``result`` (same expression, bounds and settings)."""
    s = dict(result.settings)
    terms = s.pop("terms", None) or result.expression
    s.pop("preset", None)
    bounds = s.pop("bounds", None) or {k: tuple(v) for k, v in result.param_bounds.items()}
    if isinstance(s.get("mutation"), list):
        s["mutation"] = tuple(s["mutation"])
    return Model(terms, bounds=bounds or None, **s)


def _peer_task(task: dict) -> dict:
    """Fit one peer on all data, cross-validate it and hold out the largest scales."""
    model, meas, k, seed, query = task["model"], task["meas"], task["k"], task["seed"], task["query"]
    out: dict = {"name": task["name"]}
    try:
        res = model.fit(meas)
    except PerfModelError as exc:
        return {**out, "error": str(exc)}
    out["result"] = res
    out["fit_pred"] = res.predict(meas)
    try:
        cv = cross_validate(model, meas, "kfold", k, seed)
        out["cv"] = cv.metrics
        out["cv_pred"] = cv.predicted
    except PerfModelError as exc:
        out["cv_error"] = str(exc)
    if query:
        hmodel = task.get("holdout_model") or model
        try:
            _, ho = holdout(hmodel, meas, query)
            out["holdout"] = ho.metrics
            out["holdout_pred"] = ho.predicted
        except PerfModelError as exc:
            out["holdout_error"] = str(exc)
    return out


def compare(meas: Measurements, user_model=None, auto=None, holdout_query: str | None = "auto", k: int = 5,
            seed: int = 0, *, loss: str = "relative", lam: float = DEFAULT_LAM, presets=PRESET_PEERS,
            pmnf: bool = True, run_auto: bool = True, nested: bool = False, de: dict | None = None,
            progress: Callable | None = None, should_stop: Callable | None = None,
            workers: int | None = None) -> Comparison:
    """Fit the peers to ``meas`` and compare them (see the module doc).

    Parameters
    ----------
    user_model : a :class:`Model`, a :class:`FitResult` (refitted with its own settings),
        an expression string, or None.
    auto : a :class:`Selection`, a :class:`FitResult` or :class:`Model` standing for the
        automatic choice, or None: then :func:`auto_select` runs when ``run_auto``.
    holdout_query : ``"auto"`` (the largest scales, :func:`largest_scale_query`), a query such
        as ``"p > 8"``, or None (no held-out column).
    k, seed : folds and seed of the cross-validation (whole configurations per fold); ``seed``
        also seeds the DE of every peer except the user's.
    loss, lam : fit settings of every peer except the user's.
    presets : preset peers; pmnf : include the Extra-P-like PMNF search.
    nested : re-run the searches (automatic, PMNF) on the training part of the hold-out split.
    de : DE settings for every peer except the user's (default: :class:`Model`'s).
    """
    if not isinstance(meas, Measurements):
        raise PerfModelError(f"compare needs Measurements, got {type(meas).__name__}")
    if holdout_query == "auto":
        holdout_query = largest_scale_query(meas)
    de = dict(de or {})
    base = {"loss": loss, "lam": lam, "seed": seed, **de}
    notes: list[str] = []
    peers: list[dict] = []

    def add(name, model, holdout_model=None):
        peers.append({"name": name, "model": model, "holdout_model": holdout_model, "meas": meas, "k": int(k),
                      "seed": int(seed), "query": holdout_query})

    if user_model is not None:
        add("your model", _user_model(user_model, base))
    auto_model, auto_error = _auto_model(meas, auto, run_auto, base, lam=lam, loss=loss, seed=seed, k=k, de=de,
                                         should_stop=should_stop, workers=workers, progress=progress)
    if auto_model is not None:
        add("automatic", auto_model,
            AutoSelectModel(lam=lam, loss=loss, seed=seed, k=k, n_best=1, workers=1) if nested else None)
        notes.append("automatic: expression chosen by auto_select on " +
                     ("all data; its hold-out column re-runs the search on the training part" if nested else
                      "all data, then refitted on every split (its CV/held-out errors are optimistic)"))
    if auto_error is not None:
        peers.append({"name": "automatic", "error": auto_error})
    for name in presets:
        add(name, Model(preset=name, **base))
        if name == "ernest" and ernest_extra_factors(meas):  # Ernest is its four terms; other factors: a variant
            extra = ernest_extra_factors(meas)
            add(f"ernest + {' + '.join(extra)}", Model(preset_spec("ernest", list(meas.factors)) + " + "
                                                       + " + ".join(extra), **base))
            notes.append(f"ernest + {', '.join(extra)}: Ernest's four terms with a term for each factor Ernest does "
                         "not model (a variant, not Ernest's model)")
    if pmnf:
        search = pmnf_search(meas)
        add("PMNF search", Model(search.spec, nonneg=False, **base),
            PMNFSearchModel(**base) if nested else None)
        notes.append("PMNF search: Extra-P's hypotheses chosen on " +
                     ("all data; its hold-out column re-runs the search on the training part" if nested else
                      "all data, then refitted on every split"))
    if not peers:
        raise PerfModelError("nothing to compare: give a model or enable the presets/PMNF search")

    def report(done):
        if progress is not None:
            n = sum("error" not in p for p in peers)
            progress(done, n, f"compared {done} of {n} models")

    runnable = [p for p in peers if "error" not in p]
    done = iter(run_tasks(_peer_task, runnable, n_workers(workers), report, should_stop))
    outs = [{"name": p["name"], "error": p["error"]} if "error" in p else next(done) for p in peers]
    table, predictions, results = _tabulate(meas, peers, outs)
    return Comparison(table=table, predictions=predictions, results=results, holdout_query=holdout_query,
                      k=int(k), seed=int(seed), notes=notes)


def _user_model(user_model, base: dict) -> Model:
    """The user's peer as a Model: a FitResult refitted with its own settings, an expression with ``base``."""
    if isinstance(user_model, FitResult):
        user_model = model_from_result(user_model)
    elif isinstance(user_model, str):
        user_model = Model(user_model, **base)
    if not isinstance(user_model, Model):
        raise PerfModelError(f"user_model must be a Model, FitResult or expression, got "
                             f"{type(user_model).__name__}")
    return user_model


def _auto_model(meas: Measurements, auto, run_auto: bool, base: dict, *, lam, loss, seed, k, de, should_stop,
                workers, progress) -> tuple[Model | None, str | None]:
    """(the automatic choice as a Model, or None; the search's error, or None)."""
    if isinstance(auto, Selection):
        best = auto.best
        return Model(best.spec, bounds=best.bounds or None, **base), None
    if isinstance(auto, FitResult):
        return model_from_result(auto), None
    if isinstance(auto, Model):
        return auto, None
    if auto is not None:
        raise PerfModelError(f"auto must be a Selection, FitResult or Model, got {type(auto).__name__}")
    if not run_auto:
        return None, None
    try:
        sel = auto_select(meas, lam=lam, loss=loss, seed=seed, k=k, n_best=1, final_de=de or None,
                          should_stop=should_stop, workers=workers,
                          progress=(lambda d, t, m: progress(0, 1, f"automatic search: {m}")) if progress else None)
    except PerfModelError as exc:
        return None, str(exc)
    best = sel.best
    return Model(best.spec, bounds=best.bounds or None, **base), None


def _tabulate(meas: Measurements, peers: list, outs: list) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(the table, one row per peer with the best of each metric flagged; every peer's in-sample,
    cross-validated and held-out predictions per row; the fitted results by name)."""
    rows, preds, results = [], [], {}
    y = meas.y
    for peer, out in zip(peers, outs):
        name = peer["name"]
        row = {"model": name, "expression": "", "n_params": 0, "fit_mape": np.nan, "cv_mape": np.nan,
               "holdout_mape": np.nan, "error": ""}
        if out is None or "error" in out:
            row["error"] = "stopped" if out is None else out["error"]
            rows.append(row)
            continue
        res: FitResult = out["result"]
        results[name] = res
        row.update(expression=res.expression, n_params=res.n_params, fit_mape=res.metrics["mape"],
                   cv_mape=out.get("cv", {}).get("mape", np.nan),
                   holdout_mape=out.get("holdout", {}).get("mape", np.nan),
                   error="; ".join(out[e] for e in ("cv_error", "holdout_error") if e in out))
        rows.append(row)
        for kind, key in (("in-sample", "fit_pred"), ("cross-validated", "cv_pred"), ("held-out", "holdout_pred")):
            if key in out:
                p = np.asarray(out[key], float)
                ok = np.isfinite(p)
                preds.append(pd.DataFrame({"model": name, "kind": kind, "row": meas.rows[ok],
                                           "measured": y[ok], "predicted": p[ok]}))
    predictions = pd.concat(preds, ignore_index=True) if preds else pd.DataFrame(
        columns=["model", "kind", "row", "measured", "predicted"])
    return _flag_best(pd.DataFrame(rows)), predictions, results
