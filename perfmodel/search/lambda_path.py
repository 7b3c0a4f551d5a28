"""λ chosen by validation: one model fitted and cross-validated over a grid of λ.

Imports from the fitting layer and :mod:`perfmodel.parallel` only.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.evaluate import cross_validate
from ..fitting.model import SEARCH_DE, Model, exact_settings
from ..parallel import n_workers, run_tasks

#: Default λ grid: 0 and 11 values from 1e-6 to 0.1 (λ acts on each term's share of the mean
#: time, so with the relative loss λ = 0.01 makes a term carrying the whole mean time cost as
#: much as a 10 % RMS error; see perfmodel.fitting).
DEFAULT_LAMS = (0.0,) + tuple(float(v) for v in np.logspace(-6, -1, 11))


LAMBDA_RULES = ("1se", "min")


@dataclass
class LambdaPath:
    """Coefficients and validation error against λ.

    ``lams`` shape (L,); ``coefficients`` and ``shares`` shape (L, K) for the K ``terms``
    (``shares``: each coefficient normalised as the fitter penalises it, c_k·mean|term_k| /
    mean(time), i.e. the share of the mean time the term carries); ``params`` the free
    parameters per λ; ``cv_mape``/``cv_se`` the k-fold MAPE (percent) and its standard error
    (std of the fold MAPEs / sqrt(k)); ``fit_mape`` the in-sample MAPE. ``lam_min`` has the
    lowest CV MAPE; ``lam_1se`` is the largest λ whose CV MAPE is within one standard error
    of that minimum (the one-standard-error rule); ``chosen`` is the one ``rule`` picks.
    """

    expression: str
    lams: np.ndarray
    terms: list
    coefficients: np.ndarray
    shares: np.ndarray
    params: list
    cv_mape: np.ndarray
    cv_se: np.ndarray
    fit_mape: np.ndarray
    lam_min: float
    lam_1se: float
    chosen: float
    rule: str
    k: int
    seed: int
    errors: list = field(default_factory=list)
    seconds: float = 0.0

    def to_frame(self):
        """One row per λ: lam, cv_mape, cv_se, fit_mape, then ``share:<term>`` and ``coef:<term>``."""
        import pandas as pd

        df = pd.DataFrame({"lam": self.lams, "cv_mape": self.cv_mape, "cv_se": self.cv_se, "fit_mape": self.fit_mape})
        for j, t in enumerate(self.terms):
            df[f"share:{t}"] = self.shares[:, j]
        for j, t in enumerate(self.terms):
            df[f"coef:{t}"] = self.coefficients[:, j]
        df["chosen"] = df["lam"] == self.chosen
        return df

    def to_dict(self) -> dict:
        return {
            "expression": self.expression,
            "lams": self.lams.tolist(),
            "terms": list(self.terms),
            "coefficients": self.coefficients.tolist(),
            "shares": self.shares.tolist(),
            "params": self.params,
            "cv_mape": self.cv_mape.tolist(),
            "cv_se": self.cv_se.tolist(),
            "fit_mape": self.fit_mape.tolist(),
            "lam_min": self.lam_min,
            "lam_1se": self.lam_1se,
            "chosen": self.chosen,
            "rule": self.rule,
            "k": self.k,
            "seed": self.seed,
            "errors": self.errors,
        }


def _lambda_task(task: dict) -> dict:
    model: Model = task["model"]
    meas = task["meas"]
    try:
        res = model.fit(meas)
        cv = cross_validate(model, meas, "kfold", task["k"], task["seed"])
    except PerfModelError as exc:
        return {"error": str(exc)}
    T = res.term_values(meas)
    c = np.array(list(res.coefficients.values()))
    share = c * np.mean(np.abs(T), axis=1) / float(np.mean(meas.y))
    folds = [f["metrics"]["mape"] for f in cv.folds]
    return {
        "terms": res.terms,
        "coef": c,
        "share": share,
        "params": dict(res.params),
        "fit_mape": res.metrics["mape"],
        "cv_mape": cv.metrics["mape"],
        "cv_se": float(np.std(folds, ddof=1) / math.sqrt(len(folds))) if len(folds) > 1 else 0.0,
        "expression": res.expression,
    }


def lambda_path(
    model: Model,
    meas: Measurements,
    lams: Sequence[float] | None = None,
    k: int = 5,
    seed: int = 0,
    *,
    rule: str = "1se",
    de: dict | None = None,
    progress: Callable | None = None,
    should_stop: Callable | None = None,
    workers: int | None = None,
) -> LambdaPath:
    """Fit ``model`` at each λ in ``lams`` and cross-validate it (k-fold, ``seed``).

    ``lams``: default :data:`DEFAULT_LAMS`. ``rule``: ``"1se"`` (default; the largest λ
    within one standard error of the lowest CV MAPE) or ``"min"``. ``de``: DE settings for
    these fits (default :data:`SEARCH_DE`; ``{}`` keeps the model's; a model without free
    parameters gets its exact optimum in one DE generation, see :func:`exact_settings`). The model's own seed
    is used for every fit, so the path (and the chosen λ) is reproducible.
    ``progress(done, total, message)``; ``should_stop()`` ends the path early (the λ values
    done so far are used). Raises :class:`PerfModelError` when no λ could be validated.
    """
    t0 = _time.perf_counter()
    if not isinstance(model, Model):
        raise PerfModelError(f"lambda_path needs a Model, got {type(model).__name__}")
    if rule not in LAMBDA_RULES:
        raise PerfModelError(f"unknown λ rule {rule!r}; known: {', '.join(LAMBDA_RULES)}")
    try:
        grid = np.array(sorted({float(v) for v in (DEFAULT_LAMS if lams is None else lams)}), float)
    except (TypeError, ValueError):
        raise PerfModelError(f"λ values must be numbers, got {lams!r}") from None
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise PerfModelError("λ values must be finite numbers >= 0 (and at least one)")
    if int(k) < 2:
        raise PerfModelError("k-fold cross-validation needs k >= 2")
    de = SEARCH_DE if de is None else de
    fast = exact_settings(model, meas)
    tasks: list[dict] = [
        {"model": model.clone(lam=float(lam), **{**de, **fast}), "meas": meas, "k": int(k), "seed": int(seed)}
        for lam in grid
    ]
    tasks[0]["model"]._check_settings()
    total = len(tasks)

    def report(done):
        if progress is not None:
            progress(done, total, f"λ path: {done} of {total} values")

    outs = run_tasks(_lambda_task, tasks, n_workers(workers), report, should_stop, adaptive=False)
    ok = [i for i, o in enumerate(outs) if o is not None and "error" not in o]
    errors = [f"λ = {grid[i]:g}: {o['error']}" for i, o in enumerate(outs) if o is not None and "error" in o]
    if not ok:
        raise PerfModelError("no λ could be validated" + (f": {errors[0]}" if errors else " (stopped)"))
    grid = grid[ok]
    outs = [outs[i] for i in ok]
    cv = np.array([o["cv_mape"] for o in outs])
    se = np.array([o["cv_se"] for o in outs])
    finite = np.isfinite(cv)
    if not finite.any():
        raise PerfModelError("the cross-validated error is not finite for any λ")
    i_min = int(np.nanargmin(np.where(finite, cv, np.nan)))
    within = np.flatnonzero(finite & (cv <= cv[i_min] + se[i_min]))
    i_1se = int(within.max())
    chosen = grid[i_1se] if rule == "1se" else grid[i_min]
    return LambdaPath(
        expression=outs[0]["expression"],
        lams=grid,
        terms=list(outs[0]["terms"]),
        coefficients=np.vstack([o["coef"] for o in outs]),
        shares=np.vstack([o["share"] for o in outs]),
        params=[o["params"] for o in outs],
        cv_mape=cv,
        cv_se=se,
        fit_mape=np.array([o["fit_mape"] for o in outs]),
        lam_min=float(grid[i_min]),
        lam_1se=float(grid[i_1se]),
        chosen=float(chosen),
        rule=rule,
        k=int(k),
        seed=int(seed),
        errors=errors,
        seconds=_time.perf_counter() - t0,
    )
