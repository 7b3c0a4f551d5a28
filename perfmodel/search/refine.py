"""Refinement: the shortlisted term sets, their free-exponent and overlap variants and the presets,
validated by differential evolution under the search's splits, then the chosen ones refitted on all data.

The task functions are top-level: they run in worker processes (:mod:`perfmodel.parallel`).
Imports from the fitting layer and the search's lower modules only.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import PerfModelError
from ..fitting.evaluate import cross_validate, holdout
from ..fitting.model import Model, exact_settings
from ..fitting.result import FitResult
from .horizon import rise_beyond, scale_symbol, term_shares


def validate_task(task: dict) -> dict:
    model = Model(task["spec"], bounds=task["bounds"] or None, **task["settings"])
    model = model.clone(**exact_settings(model, task["meas"]))
    meas, k, seed, query = task["meas"], task["k"], task["seed"], task["query"]
    try:
        cv = cross_validate(model, meas, "kfold", k, seed)
        ho = holdout(model, meas, query)[1] if query else None
    except PerfModelError as exc:
        return {"error": str(exc)}
    fold_mapes = [f["metrics"]["mape"] for f in cv.folds]
    per_split = fold_mapes + ([ho.metrics["mape"]] if ho else [])
    score = 0.5 * cv.metrics["mape"] + 0.5 * ho.metrics["mape"] if ho else cv.metrics["mape"]
    se = float(np.std(per_split, ddof=1) / math.sqrt(len(per_split))) if len(per_split) > 1 else 0.0
    return {
        "cv": cv.metrics,
        "cv_method": cv.method,
        "holdout": ho.metrics if ho else {},
        "holdout_method": ho.method if ho else "",
        "score": float(score) if math.isfinite(score) else math.inf,
        "se": se,
    }


def fit_task(task: dict) -> FitResult | str:
    model = Model(task["spec"], bounds=task["bounds"] or None, **task["settings"])
    try:
        return model.fit(task["meas"])
    except PerfModelError as exc:
        return str(exc)


def horizon_task(task: dict) -> dict:
    """The candidate fitted on all data (the search's DE settings): its terms' shares in the measured
    range and at the horizon points ``task["env"]``, and how its prediction there compares with its own
    at the largest measured scale (see :mod:`perfmodel.search.horizon`)."""
    meas = task["meas"]
    model = Model(task["spec"], bounds=task["bounds"] or None, **task["settings"])
    sym = scale_symbol(meas)  # the env exists only with one
    try:
        model = model.clone(**exact_settings(model, meas))
        res = model.fit(meas)
        with np.errstate(all="ignore"):
            share_in = term_shares(res.contributions(meas.frame).to_numpy(float))
            share_h = term_shares(res.contributions(task["env"]).to_numpy(float))
            top = meas.values(sym) == meas.values(sym).max()
            at_top = np.asarray(res.predict({s: meas.values(s)[top] for s in meas.factors}), float)
            at_h = np.asarray(res.predict(task["env"]), float)
    except PerfModelError as exc:
        return {"error": str(exc)}
    return {"terms": list(res.terms), "share_in": share_in, "share_h": share_h, "rise": rise_beyond(at_top, at_h)}
