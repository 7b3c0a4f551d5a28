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
:mod:`perfmodel.search.pmnf` re-implements Extra-P's default modelers (extra-p/extrap): a line of
measurements along each factor, Extra-P's exponent set over every factor (with its negative
exponents when the time falls along a factor, as Extra-P's option for strong scaling), leave-one-out
SMAPE on each line, and its sums and products of the factors' terms chosen by SMAPE.

A use of fitted models: imports from the data, fitting and search layers and perfmodel.parallel
(never from plots, report or the CLI).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .data.measurements import Measurements
from .errors import PerfModelError
from .fitting.evaluate import cross_validate, holdout, largest_scale_query
from .fitting.model import DEFAULT_LAM, Model
from .fitting.result import FitResult
from .language.terms import preset_spec
from .parallel import n_workers, run_tasks
from .search.candidates import Selection
from .search.pmnf import PMNFSearchModel, pmnf_search
from .search.select import auto_select


def ernest_extra_factors(meas: Measurements) -> list[str]:
    """The varying factors that Ernest's four terms (N, p) leave out, each a term of the variant."""
    return [s for s in meas.factors if s not in ("p", "N") and np.ptp(meas.values(s)) > 0]


#: The preset peers of :func:`compare`, in the table's order.
PRESET_PEERS = ("ernest", "data-parallel", "pollux", "optimus")


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

    def merged(self, other: Comparison, after: str | None = "your model") -> Comparison:
        """This comparison with the peers of ``other`` (made on the same data, folds and hold-out)
        added after the row of ``after`` (at the end when absent); the winners recomputed.

        Lets a caller show the quick peers first and add a slow one (the automatic search)
        when it is done, without fitting the others again."""
        if (other.k, other.seed, other.holdout_query) != (self.k, self.seed, self.holdout_query):
            raise PerfModelError("can only merge comparisons with the same folds, seed and hold-out")
        names = self.table["model"].tolist()
        at = names.index(after) + 1 if after in names else len(names)
        cols = [c for c in self.table.columns if not c.startswith("best_")]
        table = pd.concat(
            [self.table[cols].iloc[:at], other.table[cols], self.table[cols].iloc[at:]], ignore_index=True
        )
        return Comparison(
            table=_flag_best(table),
            predictions=pd.concat([self.predictions, other.predictions], ignore_index=True),
            results={**self.results, **other.results},
            holdout_query=self.holdout_query,
            k=self.k,
            seed=self.seed,
            notes=[*self.notes, *other.notes],
        )

    def report(self) -> str:
        lines = [
            f"[[Comparison]]  {self.k}-fold CV (seed {self.seed}); hold-out: {self.holdout_query or 'none'}",
            f"    {'model':<16} {'params':>6} {'in-sample':>9} {'CV':>8} {'held-out':>8}  expression",
        ]
        for _, r in self.table.iterrows():

            def cell(v, flag):
                return (f"{v:.2f}" + ("*" if flag else " ")) if np.isfinite(v) else "-"

            lines.append(
                f"    {r['model']:<16} {r['n_params']:>6} {cell(r['fit_mape'], r['best_fit']):>9} "
                f"{cell(r['cv_mape'], r['best_cv']):>8} {cell(r['holdout_mape'], r['best_holdout']):>8}  "
                f"{r['expression'] or r['error']}"
            )
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
        table[flag] = np.isfinite(v) & (v <= np.nanmin(v) * (1 + TIE_RTOL) + 1e-12) if np.isfinite(v).any() else False
    return table


#: The fit settings that make two fits of one expression differ, with their names in a note.
_SETTING_NAMES = {
    "lam": "λ",
    "penalty": "penalty",
    "loss": "loss",
    "seed": "seed",
    "maxiter": "generations",
    "popsize": "population",
    "nonneg": "non-negative",
}


def same_expression_notes(table: pd.DataFrame, results: dict) -> dict[str, str]:
    """{model: note} for rows that share their expression with an earlier row: what differs in their
    fits' settings (``same terms as your model; λ = 0 here, 1e-05 there``), or that nothing does."""
    notes = {}
    seen: dict[str, str] = {}
    for name, expr in zip(table["model"], table["expression"], strict=True):
        if not expr or name not in results:
            continue
        first = seen.setdefault(expr, name)
        if first == name:
            continue
        a, b = results[name].settings, results[first].settings
        diff = [
            f"{label} = {a.get(k)!s} here, {b.get(k)!s} there"
            for k, label in _SETTING_NAMES.items()
            if a.get(k) != b.get(k)
        ]
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


def compare(
    meas: Measurements,
    user_model=None,
    auto=None,
    holdout_query: str | None = "auto",
    k: int = 5,
    seed: int = 0,
    *,
    loss: str = "relative",
    lam: float = DEFAULT_LAM,
    presets=PRESET_PEERS,
    pmnf: bool = True,
    run_auto: bool = True,
    nested: bool = False,
    de: dict | None = None,
    progress: Callable | None = None,
    should_stop: Callable | None = None,
    workers: int | None = None,
) -> Comparison:
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
        peers.append(
            {
                "name": name,
                "model": model,
                "holdout_model": holdout_model,
                "meas": meas,
                "k": int(k),
                "seed": int(seed),
                "query": holdout_query,
            }
        )

    if user_model is not None:
        add("your model", _user_model(user_model, base))
    auto_model, auto_error = _auto_model(
        meas,
        auto,
        run_auto,
        base,
        lam=lam,
        loss=loss,
        seed=seed,
        k=k,
        de=de,
        should_stop=should_stop,
        workers=workers,
        progress=progress,
    )
    if auto_model is not None:
        add(
            "automatic",
            auto_model,
            AutoSelectModel(lam=lam, loss=loss, seed=seed, k=k, n_best=1, workers=1) if nested else None,
        )
        notes.append(
            "automatic: expression chosen by auto_select on "
            + (
                "all data; its hold-out column re-runs the search on the training part"
                if nested
                else "all data, then refitted on every split (its CV/held-out errors are optimistic)"
            )
        )
    if auto_error is not None:
        peers.append({"name": "automatic", "error": auto_error})
    for name in presets:
        add(name, Model(preset=name, **base))
        if name == "ernest" and ernest_extra_factors(meas):  # Ernest is its four terms; other factors: a variant
            extra = ernest_extra_factors(meas)
            add(
                f"ernest + {' + '.join(extra)}",
                Model(preset_spec("ernest", list(meas.factors)) + " + " + " + ".join(extra), **base),
            )
            notes.append(
                f"ernest + {', '.join(extra)}: Ernest's four terms with a term for each factor Ernest does "
                "not model (a variant, not Ernest's model)"
            )
    if pmnf:
        search = pmnf_search(meas)
        add(
            "PMNF search",
            Model(search.spec, nonneg=False, **base),
            PMNFSearchModel(search.negative_exponents, **base) if nested else None,
        )
        notes.append(
            f"PMNF search: {search.explanation()}; expression chosen on "
            + (
                "all data; its hold-out column re-runs the search on the training part"
                if nested
                else "all data, then refitted on every split"
            )
        )
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
    return Comparison(
        table=table,
        predictions=predictions,
        results=results,
        holdout_query=holdout_query,
        k=int(k),
        seed=int(seed),
        notes=notes,
    )


def _user_model(user_model, base: dict) -> Model:
    """The user's peer as a Model: a FitResult refitted with its own settings, an expression with ``base``."""
    if isinstance(user_model, FitResult):
        user_model = model_from_result(user_model)
    elif isinstance(user_model, str):
        user_model = Model(user_model, **base)
    if not isinstance(user_model, Model):
        raise PerfModelError(f"user_model must be a Model, FitResult or expression, got {type(user_model).__name__}")
    return user_model


def _auto_model(
    meas: Measurements, auto, run_auto: bool, base: dict, *, lam, loss, seed, k, de, should_stop, workers, progress
) -> tuple[Model | None, str | None]:
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
        sel = auto_select(
            meas,
            lam=lam,
            loss=loss,
            seed=seed,
            k=k,
            n_best=1,
            final_de=de or None,
            should_stop=should_stop,
            workers=workers,
            progress=(lambda d, t, m: progress(0, 1, f"automatic search: {m}")) if progress else None,
        )
    except PerfModelError as exc:
        return None, str(exc)
    best = sel.best
    return Model(best.spec, bounds=best.bounds or None, **base), None


def _tabulate(meas: Measurements, peers: list, outs: list) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(the table, one row per peer with the best of each metric flagged; every peer's in-sample,
    cross-validated and held-out predictions per row; the fitted results by name)."""
    rows, preds, results = [], [], {}
    y = meas.y
    for peer, out in zip(peers, outs, strict=True):
        name = peer["name"]
        row = {
            "model": name,
            "expression": "",
            "n_params": 0,
            "fit_mape": np.nan,
            "cv_mape": np.nan,
            "holdout_mape": np.nan,
            "error": "",
        }
        if out is None or "error" in out:
            row["error"] = "stopped" if out is None else out["error"]
            rows.append(row)
            continue
        res: FitResult = out["result"]
        results[name] = res
        row.update(
            expression=res.expression,
            n_params=res.n_params,
            fit_mape=res.metrics["mape"],
            cv_mape=out.get("cv", {}).get("mape", np.nan),
            holdout_mape=out.get("holdout", {}).get("mape", np.nan),
            error="; ".join(out[e] for e in ("cv_error", "holdout_error") if e in out),
        )
        rows.append(row)
        for kind, key in (("in-sample", "fit_pred"), ("cross-validated", "cv_pred"), ("held-out", "holdout_pred")):
            if key in out:
                p = np.asarray(out[key], float)
                ok = np.isfinite(p)
                preds.append(
                    pd.DataFrame(
                        {"model": name, "kind": kind, "row": meas.rows[ok], "measured": y[ok], "predicted": p[ok]}
                    )
                )
    predictions = (
        pd.concat(preds, ignore_index=True)
        if preds
        else pd.DataFrame(columns=["model", "kind", "row", "measured", "predicted"])
    )
    return _flag_best(pd.DataFrame(rows)), predictions, results
