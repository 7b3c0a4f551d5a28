"""Exact screening of term sets: non-negative weighted least squares on every validation split at once.

:func:`validation_splits` gives the splits ("all", the k folds of :func:`perfmodel.fitting.evaluate.cross_validate`,
the largest-scale hold-out); :class:`Screen` scores many term sets on them in batches with numpy
(score = ½·CV MAPE + ½·hold-out MAPE, its standard error from the splits).

Imports from the data and fitting layers only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.evaluate import fold_ids
from ..language.query import evaluate_query


def validation_splits(meas: Measurements, k: int, seed: int, query: str | None):
    """[(name, train_mask, test_mask)]: "all", k folds (as cross_validate), and the hold-out."""
    n = meas.n_rows
    out = [("all", np.ones(n, bool), np.zeros(n, bool))]
    folds = fold_ids(meas, "kfold", k, seed)
    for f in np.unique(folds):
        out.append((f"fold {int(f) + 1}", folds != f, folds == f))
    if query is not None:
        mask = query_mask(meas, query)
        out.append((f"hold-out ({query})", ~mask, mask))
    return out


def query_mask(meas: Measurements, query: str) -> np.ndarray:
    env = {
        **{
            c: meas.frame[c].to_numpy()
            for c in meas.frame.columns
            if str(c).isidentifier() and pd.api.types.is_numeric_dtype(meas.frame[c].dtype)
        },
        **meas.env(),
    }
    mask = evaluate_query(query, env)
    if mask.all() or not mask.any():
        raise PerfModelError(f"the hold-out query {query!r} must select some rows but not all")
    return mask


@dataclass
class Score:
    score: float
    se: float
    cv: float
    holdout: float
    feasible: bool


class Screen:
    """Exact non-negative weighted least squares of many term sets on all splits at once."""

    def __init__(self, X: np.ndarray, y: np.ndarray, loss: str, splits, min_train_cfg: int):
        self.X, self.y = X, y
        w = 1.0 / y if loss in ("relative", "log") else np.full(len(y), 1.0 / y.mean())
        A = X * w[:, None]
        self.t = y * w
        s = np.sqrt(np.mean(A**2, axis=0))
        self.s = np.where(s > 0, s, 1.0)
        self.A = A / self.s
        # A split's Gram matrix is that of all rows minus that of its test rows; the folds' test
        # rows partition the rows, so all of them cost one pass over the rows (plus the hold-out's).
        parts = {}
        for name, _tr, te in splits:
            if te.any():
                Ate = self.A[te]
                parts[name] = (Ate.T @ Ate, Ate.T @ self.t[te])
        folds = [parts[name] for name, tr, te in splits if name.startswith("fold")]
        if folds and sum(len(np.flatnonzero(te)) for name, tr, te in splits if name.startswith("fold")) == len(y):
            G_all, r_all = sum(g for g, _ in folds), sum(r for _, r in folds)
        else:
            G_all, r_all = self.A.T @ self.A, self.A.T @ self.t
        self.splits = []
        for name, tr, te in splits:
            G, r = (G_all - parts[name][0], r_all - parts[name][1]) if name in parts else (G_all, r_all)
            self.splits.append((name, np.flatnonzero(tr), np.flatnonzero(te), G, r))
        self.has_holdout = splits[-1][0].startswith("hold-out")
        self.max_size = min_train_cfg
        self.n_evaluated = 0

    def _solve(self, subsets: np.ndarray, G: np.ndarray, r: np.ndarray, tr: np.ndarray):
        J, m = subsets.shape
        Gs = G[subsets[:, :, None], subsets[:, None, :]]
        Gs = Gs + np.eye(m) * (1e-10 * len(tr))
        rs = r[subsets]
        try:
            c = np.linalg.solve(Gs, rs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            c = np.stack([np.linalg.lstsq(Gs[i], rs[i], rcond=None)[0] for i in range(J)])
        # coefficients that are zero up to rounding (a redundant term on exact data) count as zero
        neg = np.any(c < -1e-9 * np.maximum(1.0, np.max(np.abs(c), axis=1, keepdims=True)), axis=1)
        return np.maximum(c, 0.0), neg

    def shares(self, subset: Sequence[int]) -> np.ndarray:
        """Mean share of the predicted time carried by each term of ``subset`` (fit on all rows)."""
        sub = np.array(subset, int)[None, :]
        name, tr, te, G, r = self.splits[0]
        c, _ = self._solve(sub, G, r, tr)
        contrib = np.abs(self.X[:, sub[0]] * (c[0] / self.s[sub[0]]))
        total = contrib.sum(axis=1, keepdims=True)
        return np.mean(contrib / np.where(total > 0, total, 1.0), axis=0)

    def evaluate(self, subsets: np.ndarray) -> list[Score]:
        """Scores of term sets ``subsets`` (int array (J, m) of pool columns)."""
        out: list[Score] = []
        for start in range(0, len(subsets), 512):
            out += self._evaluate(subsets[start : start + 512])
        self.n_evaluated += len(subsets)
        return out

    def _evaluate(self, subsets: np.ndarray) -> list[Score]:
        J, m = subsets.shape
        y = self.y
        feasible = np.ones(J, bool)
        fold_ape_sum = np.zeros(J)
        fold_n = 0
        fold_mapes = []
        ho = np.full(J, np.nan)
        for name, tr, te, G, r in self.splits:
            c, neg = self._solve(subsets, G, r, tr)
            if name == "all":
                feasible &= ~neg
                continue
            for j in map(int, np.flatnonzero(neg & feasible)):
                c[j] = nnls(self.A[np.ix_(tr, subsets[j])], self.t[tr], maxiter=50 * m)[0]
            coef = c / self.s[subsets]
            Xte = self.X[te][:, subsets]  # (n_te, J, m)
            pred = np.einsum("njm,jm->jn", Xte, coef)
            ape = np.abs(pred - y[te]) / y[te] * 100
            if name.startswith("hold-out"):
                ho = ape.mean(axis=1)
            else:
                fold_ape_sum += ape.sum(axis=1)
                fold_n += len(te)
                fold_mapes.append(ape.mean(axis=1))
        cv = fold_ape_sum / fold_n
        per_split = np.column_stack(fold_mapes + ([ho] if self.has_holdout else []))
        score = 0.5 * cv + 0.5 * ho if self.has_holdout else cv
        se = per_split.std(axis=1, ddof=1) / math.sqrt(per_split.shape[1]) if per_split.shape[1] > 1 else np.zeros(J)
        bad = ~np.isfinite(score)
        score = np.where(bad, np.inf, score)
        out: list[Score] = []
        for j in range(J):
            out_ok = bool(feasible[j] and not bad[j] and m <= self.max_size)
            out.append(
                Score(
                    float(score[j]),
                    float(se[j]),
                    float(cv[j]),
                    float(ho[j]) if self.has_holdout else float("nan"),
                    out_ok,
                )
            )
        return out


def score_noise(best_score: float, best_se: float) -> float:
    return max(best_se, 0.01 * best_score, 0.001)
