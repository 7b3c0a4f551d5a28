"""Metrics, cross-validation and hold-out splits.

Cross-validation keeps the repeats of a configuration together: folds are made of whole
configurations, so a model is always judged on configurations it has not seen.

Imports from the model language and data layers only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..language.query import evaluate_query

METRIC_LABELS = {
    "mape": "MAPE (%)",
    "smape": "SMAPE (%)",
    "rmse": "RMSE (s)",
    "r2": "R²",
    "adj_r2": "adjusted R²",
    "max_pct_error": "max |error| (%)",
}


def metrics(y: np.ndarray, pred: np.ndarray, n_params: int = 0) -> dict[str, float]:
    """MAPE, SMAPE and max % error (percent), RMSE (time unit), R² and adjusted R².

    ``y`` and ``pred`` have shape (n,); ``n_params`` counts fitted constants for adjusted R².
    """
    y = np.asarray(y, float)
    pred = np.asarray(pred, float)
    if y.shape != pred.shape or y.size == 0:
        raise PerfModelError(f"metrics need equal, non-empty shapes, got {y.shape} and {pred.shape}")
    # Times near the float limits (1e308, 1e-300) are compared in a unit where they are near 1,
    # so that squares and sums stay finite; RMSE is returned in the original unit.
    top = float(np.max(np.abs(y)))
    unit = top if math.isfinite(top) and top > 0 and not 1e-100 <= top <= 1e100 else 1.0
    y, pred = y / unit, pred / unit
    with np.errstate(all="ignore"):
        err = pred - y
        pct = np.abs(err) / np.abs(y) * 100
        denom = np.abs(y) + np.abs(pred)
        smape = np.mean(np.where(denom > 0, 2 * np.abs(err) / np.where(denom > 0, denom, 1), 0)) * 100
        ss_res = float(np.sum(err**2))
        ss_tot = float(np.sum((y - y.mean()) ** 2))
        rmse = float(np.sqrt(np.mean(err**2))) * unit
    r2 = 1 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    n = y.size
    adj = 1 - (1 - r2) * (n - 1) / (n - n_params - 1) if n - n_params - 1 > 0 else float("nan")
    return {
        "mape": float(np.mean(pct)),
        "smape": float(smape),
        "rmse": rmse,
        "r2": float(r2),
        "adj_r2": float(adj),
        "max_pct_error": float(np.max(pct)),
    }


def out_of_sample(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """:func:`metrics` of predictions for rows the model was not fitted to, without an adjusted R²:
    the adjustment corrects an in-sample R² for the parameters fitted to the same rows, and held-out
    rows already pay for them (with no parameters it would only repeat the R²)."""
    out = metrics(y, pred)
    out.pop("adj_r2")
    return out


@dataclass
class Validation:
    """Out-of-sample predictions and their metrics."""

    method: str
    metrics: dict
    predicted: np.ndarray  # out-of-sample prediction per row, NaN where a row was never tested
    folds: list  # per fold: {"test_rows": [...], "metrics": {...}}

    def to_dict(self) -> dict:
        return {"method": self.method, "metrics": self.metrics, "folds": self.folds}


#: Most folds of a k-fold cross-validation (each fold is one refit).
MAX_FOLDS = 100


def fold_ids(meas: Measurements, method: str, k: int, seed: int) -> np.ndarray:
    """Fold number of each row: whole configurations per fold (``loco``: one configuration each)."""
    cfg = meas.configurations()
    n_cfg = int(cfg.max()) + 1
    if method == "loco":
        return cfg
    if method != "kfold":
        raise PerfModelError(f"unknown validation method {method!r}; known: kfold, loco")
    if k < 2:
        raise PerfModelError("k-fold cross-validation needs k >= 2")
    if k > MAX_FOLDS:
        raise PerfModelError(
            f"k = {k} folds is above the limit {MAX_FOLDS} (each fold is a refit; for one "
            "fold per configuration use leave-one-configuration-out)"
        )
    k = min(k, n_cfg)
    order = np.random.default_rng(seed).permutation(n_cfg)
    fold_of_cfg = np.empty(n_cfg, int)
    fold_of_cfg[order] = np.arange(n_cfg) % k
    return fold_of_cfg[cfg]


def cross_validate(
    model, meas: Measurements, method: str = "kfold", k: int = 5, seed: int = 0, progress: Callable | None = None
) -> Validation:
    """k-fold (``method="kfold"``) or leave-one-configuration-out (``"loco"``) validation.

    Each fold refits ``model`` (same settings) on the other configurations.
    """
    folds = fold_ids(meas, method, k, seed)
    pred = np.full(meas.n_rows, np.nan)
    out = []
    ids = np.unique(folds)
    for i, f in enumerate(ids):
        test = folds == f
        train = meas.subset(~test)
        try:
            res = model.fit(train)
        except PerfModelError as exc:
            raise PerfModelError(f"fold {i + 1} of {len(ids)}: {exc}") from None
        p = res.predict(meas.subset(test))
        pred[test] = p
        out.append({"test_rows": meas.rows[test].tolist(), "metrics": out_of_sample(meas.y[test], p)})
        if progress is not None:
            progress(i + 1, len(ids))
    ok = np.isfinite(pred)
    label = f"{min(k, meas.n_configurations)}-fold" if method == "kfold" else "leave-one-configuration-out"
    return Validation(label, out_of_sample(meas.y[ok], pred[ok]), pred, out)


def holdout(model, meas: Measurements, query: str) -> tuple[object, Validation]:
    """Fit on the rows where ``query`` is false, test on those where it is true.

    ``query`` is a comparison over symbols or columns, e.g. ``"p > 8"``. Returns
    ``(fit_result_on_train, validation_on_test)``.
    """
    env = {
        **{
            c: meas.frame[c].to_numpy()
            for c in meas.frame.columns
            if c.isidentifier() and pd.api.types.is_numeric_dtype(meas.frame[c])
        },
        **meas.env(),
    }
    mask = evaluate_query(query, env)
    if mask.all():
        raise PerfModelError(f"the hold-out query {query!r} selects every row; nothing is left to fit")
    if not mask.any():
        raise PerfModelError(f"the hold-out query {query!r} selects no row")
    train, test = meas.subset(~mask), meas.subset(mask)
    res = model.fit(train)
    p = res.predict(test)
    pred = np.full(meas.n_rows, np.nan)
    pred[mask] = p
    return res, Validation(
        f"hold-out ({query})",
        out_of_sample(test.y, p),
        pred,
        [{"test_rows": test.rows.tolist(), "metrics": out_of_sample(test.y, p)}],
    )


def largest_scale_query(meas: Measurements, fraction: float = 0.3) -> str | None:
    """A query holding out the largest-scale configurations: the top values of ``p`` (or ``N``)."""
    for sym in ("p", "N"):
        if sym in meas.factors:
            vals = np.unique(meas.values(sym))
            if len(vals) >= 3:
                n_out = max(1, int(round(len(vals) * fraction)))
                cut = vals[-n_out - 1]
                return f"{sym} > {cut:g}"
    return None
