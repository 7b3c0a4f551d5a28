"""Automatic term selection, and λ chosen by validation.

``auto_select(meas)`` finds small expressions ``T = Σ c_k·term_k`` that predict unseen
configurations well, above all larger scales; ``lambda_path(model, meas)`` fits one model
over a range of λ and picks λ by cross-validation.

What is searched
----------------
The *term pool* is built for the factors present (:func:`search_terms`):

1. **The term library** (:func:`perfmodel.terms.library`): constant (start-up), iterations
   ``I``, per-iteration compute ``I·b^e`` (with ``e`` on the grid 0.1, 0.2, ..., 1.9),
   data-parallel compute ``N/p``, tree all-reduce ``I·log2(p)``, ring all-reduce
   ``I·(p-1)/p``, parameter server ``I·p`` and per-worker start-up ``p``, each in the form
   that suits the mapped factors.
2. **PMNF blocks of one factor** ``x^i·log2(x)^j`` with ``i`` in {0, 1/2, 1, 3/2, 2, 5/2, 3}
   and ``j`` in {0, 1, 2} (Extra-P's normal form on a coarser grid), plus the strong-scaling
   blocks ``x^-2, x^-1, x^-1/2, log2(x)/x`` that Extra-P's default search lacks (time that
   falls as processors grow).
3. **Interactions**: products of two factors' blocks from {x^-1, x^1/2, x, x^3/2, x^2,
   log2(x), x·log2(x)}, and of three factors' blocks from {x^-1, x, x^2, log2(x)}.

Logarithms are used only for factors whose values are all >= 1 (Extra-P's rule); negative
and fractional exponents only for positive factors; a factor with two distinct values
gets only the block ``x``. Terms that are constant, non-finite, or proportional to an
earlier term on the data are dropped (library terms come first, so they win ties).

*Many factors.* The interactions grow combinatorially (8 factors: ~9,000 terms). With more
than :data:`FULL_POOL_FACTORS` varying factors the factors are screened first: a search over
the library and every factor's own PMNF blocks finds the best set S; a factor *matters* when
removing S's terms that depend on it (``I`` depends on E, N, p, b) worsens the score, or adding
its best block to S improves it, by more than the noise of S's score. Only factors that matter
get PMNF blocks; interactions are built among the :data:`MAX_PAIR_FACTORS` (pairs) and
:data:`MAX_TRIPLE_FACTORS` (triples) that matter most. A nuisance factor thus never enters.

How it is searched
------------------
*Screening* (exact, fast): every term set is fitted by non-negative weighted least squares
(the same loss as the fit; the log loss is screened with the relative loss; λ = 0) on each
validation split, in batches with numpy. Every single term and every set of library terms
(with at most one exponent per gridded family) are screened; then a beam search (width
``beam``, the constant always among the starts) adds one term at a time up to ``max_terms`` terms
(at most one exponent of the gridded ``I·b^e`` per set); then every term set on the
final beams and the best set of each size is pruned backwards (each term removed in turn).
On pools built after screening the factors (large ones) the search is more thorough: a pool of
more than :data:`GROW_ALL` terms grows each set by the :data:`GROW_TOP` terms that lower its
squared error most (exact least squares of the set plus each term, from the Gram matrix), the
best sets of library terms alone are grown beside the beam, and an *exchange* step swaps one or
two terms of the best sets for others (guided by the same criterion) while the score improves:
a greedy step that locked in two products approximating one true term is undone.
A set in which a term would get a negative coefficient on all the data is rejected (that
term is redundant). *Refinement*: the best screened sets of each size (those within noise of
the best screened score, at most ``max_candidates``), and for a few (``n_free``) a variant
whose exponents are free parameters fitted by differential evolution (``I·b^e_b`` with
``e_b`` in [0, 2]; each ``x^i`` of a PMNF block or interaction as ``x^e`` with ``e`` in
[i-1, i+1]; at most ``max_free`` free exponents, of the terms that carry the most time), are
fitted with :class:`perfmodel.Model`,
together with the presets of :data:`PRESET_CANDIDATES` (the paper's ``data-parallel`` model; a
name not in :data:`perfmodel.terms.PRESETS` is skipped, and so is a preset with more parameters
than ``max_terms + max_free``, e.g. one exponent per extra factor),
(modest DE settings, ``search_de``) under the same cross-validation and hold-out splits as
:func:`perfmodel.evaluate.cross_validate` and :func:`perfmodel.evaluate.holdout`, in a
process pool. The chosen ones are refitted on all data with full DE settings (``final_de``).

Score
-----
``score = ½·(k-fold CV MAPE) + ½·(hold-out MAPE)``, where the hold-out split trains on the
smaller scales and tests on the largest (:func:`perfmodel.evaluate.largest_scale_query`:
the top ~30 % of ``p`` values, else of ``N``), so extrapolation counts as much as
interpolation; without such a split the score is the CV MAPE. Its standard error ``se`` is
the standard deviation of the k fold MAPEs and the hold-out MAPE over sqrt(k + 1).
*Within noise of the best* means ``score <= best + max(se_best, 1 % of best, 0.001)``
(the one-standard-error rule); among those the candidates are listed simplest first, and
``Selection.best`` is the first. Simplest means the fewest fitted parameters plus the
*readability cost* (:func:`readability_cost`: 0 for each library term — constant, ``I``,
``I·b^e``, ``N/p``, ``I·log2(p)``, ``I·(p-1)/p``, ``I·p``, ``p`` —, 1 for a PMNF block of one
factor, k for a product of k factors), then the readability cost, then the score: of two
models the data cannot tell apart, the one a stakeholder can read (start-up, compute,
all-reduce) is shown, not ``p^2*B^-2``. A candidate of library terms alone (readability cost 0)
counts as within noise up to :data:`READABLE_BAND` × the noise (1: the same band; two standard
errors took a real series from 5.6 % to 48 %). The best set of library terms alone of each size
is refined whenever its screened score is within reach of the best, so it can be chosen. A
preset (the paper's model, Pollux's, Optimus's) is a documented structure: its readability cost
is 0, and so is an overlap of library terms (below).

*Overlap variants.* For the best screened set of each size, and the best set of library terms
alone of each size, that has both compute and communication terms of the library, a variant
``overlap(compute, communication; g) + start-up`` (Pollux's structure: compute and
synchronisation overlapping, γ in [1, 10]) is refined too.

Too few configurations to choose by validation
-----------------------------------------------
When the hold-out split trains on fewer than :data:`MIN_VALIDATION_CONFIGURATIONS` (3)
configurations, a model with a constant and one scaling term already fits its training part
exactly, so the validation cannot tell structures apart: with 3 measured GPU counts it prefers
``I`` alone (perfect linear speed-up), which is optimistic by construction. The search then shows
the paper's generic ``data-parallel`` model (regularised by λ) first, the validated candidates
after it (they widen its intervals), and says so (``Selection.prior``). On 61 real short series
with 3 GPU counts this took the median error of the next count from 5.0 % to 3.5 %
(``benchmarks/accuracy.py --series``).

All of it runs with one BLAS thread in this process (the matrices are small; BLAS threads
only spin there, see :func:`_blas_single_thread`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import math
import multiprocessing as mp
import os
import re
import threading
import time as _time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from .data import Measurements
from .errors import PerfModelError
from .evaluate import MAX_FOLDS, fold_ids, cross_validate, holdout, largest_scale_query
from .expression import FUNCTIONS, GLOBAL_BATCH, ITERATIONS, evaluate_query, parse_expression
from .fit import DEFAULT_LAM, Model
from .overlap import DEFAULT_BOUNDS as OVERLAP_BOUNDS, NAME as OVERLAP
from .result import FitResult
from .terms import (PRESETS, LibraryTerm, _times, effective_symbols, iterations, library, pmnf_term,
                    preset_bounds, preset_spec)

#: DE settings used while searching (cheap); the chosen models are refitted with ``final_de``.
SEARCH_DE = {"popsize": 10, "maxiter": 300, "tol": 0.01}

# PMNF blocks (i, j) = x^i·log2(x)^j.
_SINGLE_POLY = (0, 0.5, 1, 1.5, 2, 2.5, 3)
_SINGLE_LOG = (0, 1, 2)
_STRONG = ((-1, 0), (-0.5, 0), (-2, 0), (-1, 1))
_PAIR_BLOCKS = ((1, 0), (0, 1), (0.5, 0), (1.5, 0), (2, 0), (1, 1), (-1, 0), (-2, 0))
_TRIPLE_BLOCKS = ((1, 0), (0, 1), (-1, 0), (2, 0), (-2, 0))
_COMPUTE_GRID = tuple(round(0.1 * i, 1) for i in range(1, 20))  # 0.1 .. 1.9
#: With more varying factors than this, the factors are screened first (see the module doc) and
#: only those that matter get PMNF blocks and interactions.
FULL_POOL_FACTORS = 3
#: Most factors (the most important first) among which two- and three-factor interactions are built
#: after the factors were screened.
MAX_PAIR_FACTORS = 6
MAX_TRIPLE_FACTORS = 4
#: Rounds of the exchange step (one swap per round) and candidates tried per term swapped (one
#: term, or each of two).
EXCHANGE_ROUNDS = 6
EXCHANGE_TOP = 64
EXCHANGE_TOP_PAIR = 8
#: Members of the final beam that are exchanged besides the best set of each size.
EXCHANGE_BEAM = 3
#: Pools of at most GROW_ALL terms are grown by every term at each step of the forward search;
#: larger ones by the GROW_TOP terms that lower the squared error of the set most.
GROW_ALL = 600
GROW_TOP = 192
#: Sets of library terms alone grown beside the beam at each step of the forward search.
LIBRARY_BEAM = 2


# ----------------------------------------------------------------------------------------
# the term pool
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchTerm:
    """One candidate term of the search.

    ``expr`` has fixed exponents (the model stays linear); ``free`` is the same term with its
    exponents as free parameters ``params`` = ((name, low, high), ...) (None when it has none).
    """

    expr: str
    kind: str  # "library", "pmnf" or "interaction"
    meaning: str
    free: str | None = None
    params: tuple = ()
    blocks: tuple = ()  # PMNF blocks and interactions: ((symbol, i, j), ...), the product of x^i·log2(x)^j


#: Structures of the strong peers' models that the term library lacks, as terms of the pool (read
#: as library terms: they carry a meaning). Pollux (petuum/adaptdl, ``goodput.py``): the gradient
#: synchronisation costs nothing on one worker and ``α + β·(K − 2)`` on K workers, i.e. per
#: iteration ``I·min(p−1, 1)`` (its latency, on any p > 1) and ``I·max(p−2, 0)`` (its growth).
#: Optimus (pengyanghua/optimus, ``estimator.py``): ``a·B/w + b + c·w/s + d·w + e·s`` per
#: iteration; its ``B/w`` (compute of the per-worker batch) is the library's ``I·b`` (b = B/p),
#: ``b`` is ``I`` and ``d·w`` is ``I·p``; with the server count mapped (symbol ``servers``), ``c·w/s``
#: and ``e·s`` are ``I·p/servers`` and ``I·servers``. Each entry: (key, the factor per iteration,
#: symbols it needs, meaning).
PEER_TERMS = (
    ("pollux-sync-latency", "min(p-1,1)", ("p",),
     "Pollux: per-iteration synchronisation latency, on more than one worker"),
    ("pollux-sync-growth", "max(p-2,0)", ("p",),
     "Pollux: per-iteration synchronisation growing with the workers beyond two"),
    ("optimus-server-load", "p/servers", ("p", "servers"),
     "Optimus: per-iteration traffic of the workers spread over the parameter servers"),
    ("optimus-servers", "servers", ("servers",),
     "Optimus: per-iteration cost of each parameter server (its connection and update overhead)"),
)


def _library(symbols) -> list:
    """The term library (:func:`perfmodel.terms.library`) plus :data:`PEER_TERMS` for ``symbols``."""
    out = list(library(symbols))
    it = iterations(symbols)
    for key, factor, needs, meaning in PEER_TERMS:
        if it is not None and all(x in effective_symbols(symbols) for x in needs):
            out.append(LibraryTerm(key, _times(it, factor), "communication", meaning))
    return out


def _block_ok(values: np.ndarray, i: float, j: float) -> bool:
    lo = float(values.min())
    if j and lo < 1:
        return False
    if (i < 0 or i != int(i)) and lo <= 0:
        return False
    return True


def _blocks(values: np.ndarray, wanted) -> list[tuple[float, float]]:
    if len(np.unique(values)) == 2:
        wanted = [(1, 0)]
    return [(i, j) for i, j in wanted if _block_ok(values, i, j)]


def search_terms(meas: Measurements, singles: Sequence[str] | None = None, pairs: Sequence[str] | None = None,
                 triples: Sequence[str] | None = None) -> list[SearchTerm]:
    """The term pool searched by :func:`auto_select` for ``meas``'s factors (see module doc).

    ``singles``, ``pairs``, ``triples``: the factors that get PMNF blocks of their own, and
    among which two- and three-factor interactions are built (default: every factor with
    more than one value; those without are dropped in any case). The library terms are always
    in the pool.
    """
    varying = meas.varying()

    def subset(chosen):
        return varying if chosen is None else [x for x in varying if x in set(chosen)]

    symbols = subset(singles)
    out: list[SearchTerm] = []
    for t in _library(meas.factors):
        if "e_b" in t.expr:
            lo, hi = preset_bounds("data-parallel", meas.factors)["e_b"]
            for e in _COMPUTE_GRID:
                fixed = t.expr.replace("b^e_b", "b" if e == 1 else f"b^{e:g}")
                out.append(SearchTerm(fixed, "library", t.meaning, t.expr, (("e_b", lo, hi),)))
        else:
            out.append(SearchTerm(t.expr, "library", t.meaning))
    singles = [(i, j) for i in _SINGLE_POLY for j in _SINGLE_LOG if (i, j) != (0, 0)] + list(_STRONG)
    singles.sort(key=lambda ij: (ij[1] > 0, abs(ij[0]) != 1, ij[0] < 0, abs(ij[0]), ij[1]))

    def product(blocks, kind, meaning):
        expr = "*".join(pmnf_term(x, i, j) for x, i, j in blocks)
        free = "*".join(pmnf_term(x, f"e_{x}" if i else 0, j) for x, i, j in blocks)
        params = tuple((f"e_{x}", i - 1.0, i + 1.0) for x, i, j in blocks if i)
        return SearchTerm(expr, kind, meaning, free if params else None, params, tuple(blocks))

    for x in symbols:
        for i, j in _blocks(meas.values(x), singles):
            out.append(product([(x, i, j)], "pmnf", f"PMNF block {x}^{i:g}·log2({x})^{j:g}"))
    two = subset(pairs)
    for a in range(len(two)):
        for b in range(a + 1, len(two)):
            x, y = two[a], two[b]
            for bx in _blocks(meas.values(x), _PAIR_BLOCKS):
                for by in _blocks(meas.values(y), _PAIR_BLOCKS):
                    out.append(product([(x, *bx), (y, *by)], "interaction", f"interaction of {x} and {y}"))
    three = subset(triples)
    for a in range(len(three)):
        for b in range(a + 1, len(three)):
            for c in range(b + 1, len(three)):
                xs = three[a], three[b], three[c]
                lists = [_blocks(meas.values(x), _TRIPLE_BLOCKS) for x in xs]
                for blks in itertools.product(*lists):
                    out.append(product([(x, *blk) for x, blk in zip(xs, blks)], "interaction",
                                       f"interaction of {', '.join(xs)}"))
    return out


def _pool_matrix(meas: Measurements, terms: list[SearchTerm]) -> tuple[list[SearchTerm], np.ndarray]:
    """Evaluate the pool on the data; drop constant, non-finite and duplicate columns."""
    env = meas.env()
    n = meas.n_rows
    kept: list[SearchTerm] = []
    cols: list[np.ndarray] = []
    seen: set[bytes] = set()
    block_cache: dict[tuple, np.ndarray] = {}

    def block(x: str, i: float, j: float) -> np.ndarray:
        if (x, i, j) not in block_cache:
            xv = env[x].astype(float)
            with np.errstate(all="ignore"):
                block_cache[(x, i, j)] = (xv ** i if i else 1.0) * (np.log2(xv) ** j if j else 1.0)
        return block_cache[(x, i, j)]

    for t in terms:
        if t.blocks:  # products of x^i·log2(x)^j: evaluated directly (the parser's result, faster)
            v = np.ones(n)
            for x, i, j in t.blocks:
                v = v * block(x, i, j)
        else:
            try:
                expr, _ = parse_expression(t.expr, list(meas.factors))
                expr.check_domain(env)
                v = np.broadcast_to(expr.term_values(env)[0], (n,)).astype(float)
            except PerfModelError:
                continue
        if not np.all(np.isfinite(v)):
            continue
        if t.expr != "1":
            if np.ptp(v) <= 1e-12 * max(1.0, float(np.max(np.abs(v)))):
                continue
        key = np.round(v / np.linalg.norm(v), 9).tobytes()  # proportional columns share the key
        if key in seen:
            continue
        seen.add(key)
        kept.append(t)
        cols.append(v)
    if not kept:
        raise PerfModelError("no usable candidate term for these factors")
    return kept, np.column_stack(cols)


#: Presets that compete with the searched term sets under the same validation (the paper's generic
#: data-parallel model knows structure the term pool lacks: compute per iteration with a fitted
#: batch exponent, all-reduce per iteration, per-worker start-up; Pollux's and Optimus's fitted
#: models). Add a name here to make it compete; a name not (yet) in
#: :data:`perfmodel.terms.PRESETS` is skipped.
PRESET_CANDIDATES = ("data-parallel", "pollux", "optimus")


def _preset_specs(meas: Measurements, max_params: int | None = None,
                  names: Sequence[str] | None = None) -> list[tuple[str, dict, int]]:
    """[(spec, bounds, n_params)] of :data:`PRESET_CANDIDATES` for ``meas``'s factors: those known
    to :data:`perfmodel.terms.PRESETS` (others are skipped) with at most ``max_params`` parameters."""
    symbols = list(meas.factors)
    positive = [x for x in symbols if meas.values(x).min() >= 1]
    varying = meas.varying()
    out = []
    for name in PRESET_CANDIDATES if names is None else names:
        if name not in PRESETS:
            continue  # a preset this version does not define yet
        try:
            spec = preset_spec(name, symbols, positive, varying, env=meas.env())
        except PerfModelError:
            continue
        try:
            expr, _ = parse_expression(spec, symbols)
        except PerfModelError:
            continue
        bounds = {k: v for k, v in preset_bounds(name, symbols).items() if k in expr.params}
        n_params = len(expr.terms) + len(expr.params)
        if max_params is not None and n_params > max_params:
            continue  # larger than any searched candidate (e.g. one exponent per extra factor)
        out.append((spec, bounds, n_params))
    return out


# ----------------------------------------------------------------------------------------
# validation splits and the exact screening
# ----------------------------------------------------------------------------------------
def _splits(meas: Measurements, k: int, seed: int, query: str | None):
    """[(name, train_mask, test_mask)]: "all", k folds (as cross_validate), and the hold-out."""
    n = meas.n_rows
    out = [("all", np.ones(n, bool), np.zeros(n, bool))]
    folds = fold_ids(meas, "kfold", k, seed)
    for f in np.unique(folds):
        out.append((f"fold {int(f) + 1}", folds != f, folds == f))
    if query is not None:
        mask = _query_mask(meas, query)
        out.append((f"hold-out ({query})", ~mask, mask))
    return out


def _query_mask(meas: Measurements, query: str) -> np.ndarray:
    env = {**{c: meas.frame[c].to_numpy() for c in meas.frame.columns
              if str(c).isidentifier() and pd.api.types.is_numeric_dtype(meas.frame[c].dtype)}, **meas.env()}
    mask = evaluate_query(query, env)
    if mask.all() or not mask.any():
        raise PerfModelError(f"the hold-out query {query!r} must select some rows but not all")
    return mask


@dataclass
class _Score:
    score: float
    se: float
    cv: float
    holdout: float
    feasible: bool


class _Screen:
    """Exact non-negative weighted least squares of many term sets on all splits at once."""

    def __init__(self, X: np.ndarray, y: np.ndarray, loss: str, splits, min_train_cfg: int):
        self.X, self.y = X, y
        w = 1.0 / y if loss in ("relative", "log") else np.full(len(y), 1.0 / y.mean())
        A = X * w[:, None]
        self.t = y * w
        s = np.sqrt(np.mean(A ** 2, axis=0))
        self.s = np.where(s > 0, s, 1.0)
        self.A = A / self.s
        # A split's Gram matrix is that of all rows minus that of its test rows; the folds' test
        # rows partition the rows, so all of them cost one pass over the rows (plus the hold-out's).
        parts = {}
        for name, tr, te in splits:
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

    def evaluate(self, subsets: np.ndarray) -> list[_Score]:
        """Scores of term sets ``subsets`` (int array (J, m) of pool columns)."""
        out: list[_Score] = []
        for start in range(0, len(subsets), 512):
            out += self._evaluate(subsets[start:start + 512])
        self.n_evaluated += len(subsets)
        return out

    def _evaluate(self, subsets: np.ndarray) -> list[_Score]:
        J, m = subsets.shape
        y = self.y
        feasible = np.ones(J, bool)
        fold_ape_sum = np.zeros(J)
        fold_n = 0
        fold_mapes = []
        ho = np.full(J, np.nan)
        for si, (name, tr, te, G, r) in enumerate(self.splits):
            c, neg = self._solve(subsets, G, r, tr)
            if name == "all":
                feasible &= ~neg
                continue
            for j in np.flatnonzero(neg & feasible):
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
        se = per_split.std(axis=1, ddof=1) / math.sqrt(per_split.shape[1]) if per_split.shape[1] > 1 \
            else np.zeros(J)
        bad = ~np.isfinite(score)
        score = np.where(bad, np.inf, score)
        out: list[_Score] = []
        for j in range(J):
            out_ok = bool(feasible[j] and not bad[j] and m <= self.max_size)
            out.append(_Score(float(score[j]), float(se[j]), float(cv[j]),
                              float(ho[j]) if self.has_holdout else float("nan"), out_ok))
        return out


def _noise(best_score: float, best_se: float) -> float:
    return max(best_se, 0.01 * best_score, 0.001)


def _term_factors(expr: str, factors) -> set[str]:
    """The mapped factors a term's value depends on (``I`` = E·ceil(N/(p·b)); b = B/p when only
    the global batch B is mapped)."""
    factors = set(factors)
    out: set[str] = set()
    for name in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr)) - set(FUNCTIONS):
        if name == ITERATIONS:
            out |= {"E", "N", "p", "b", GLOBAL_BATCH}
        elif name == "b" and "b" not in factors:
            out |= {GLOBAL_BATCH, "p"}
        else:
            out.add(name)
    return out & factors


class _Search:
    """The exact screening of term sets over one pool (see the module doc, *How it is searched*):
    every single term and every set of library terms, a beam search adding one term at a time,
    then backward pruning. ``record`` maps each screened set (sorted pool indices) to its score."""

    def __init__(self, terms: list[SearchTerm], screen: _Screen):
        self.terms, self.screen = terms, screen
        self.record: dict[tuple, _Score] = {}
        self.const = next((i for i, t in enumerate(terms) if t.expr == "1"), None)
        # at most one exponent of a gridded library family (one I·b^e) per set: several would be
        # nearly collinear, fit the noise and make the penalised fits slow
        self.family = [t.free if t.kind == "library" and t.free else None for t in terms]
        self._diag = None

    def evaluate(self, sets) -> None:
        sets = [s for s in dict.fromkeys(sets) if s not in self.record]
        by_size: dict[int, list[tuple]] = {}
        for s in sets:
            by_size.setdefault(len(s), []).append(s)
        for m, group in by_size.items():
            for s, sc in zip(group, self.screen.evaluate(np.array(group, dtype=int))):
                self.record[s] = sc

    def is_library(self, subset: tuple) -> bool:
        return all(self.terms[i].kind == "library" for i in subset)

    def best_of(self, sets, n: int) -> list[tuple]:
        ok = [s for s in sets if self.record[s].feasible]
        return sorted(ok, key=lambda s: (self.record[s].score, len(s)))[:n]

    def library_sets(self, max_terms: int) -> list[tuple]:
        """Every set of library terms (the domain's own models), with at most one exponent of each
        gridded family (e.g. one I·b^e) and the constant in each."""
        terms, const = self.terms, self.const
        lib = [i for i, t in enumerate(terms) if t.kind == "library" and i != const]
        plain = [i for i in lib if terms[i].free is None]
        families: dict[str, list[int]] = {}
        for i in lib:
            if terms[i].free is not None:
                families.setdefault(terms[i].free, []).append(i)
        choices = [[()] + [(i,) for i in members] for members in families.values()]
        out = []
        room = int(max_terms) - (1 if const is not None else 0)
        for picks in itertools.product(*choices):
            fixed = tuple(x for pick in picks for x in pick)
            for m in range(0, room - len(fixed) + 1):
                for combo in itertools.combinations(plain, m):
                    s = tuple(sorted(fixed + combo + ((const,) if const is not None else ())))
                    if len(s) > 1:
                        out.append(s)
        return out[:50000]

    def run(self, max_terms: int, beam: int, stop: Callable[[], bool],
            tell: Callable[[int, str], None], thorough: bool = False) -> list[dict]:
        """Screen; ``tell(step, message)`` after each step; returns the trace (one row per size).

        ``thorough`` (used for pools built after screening the factors, where products of many
        factors compete): the best library-only sets are grown beside the beam, and the best sets
        are improved by :meth:`exchange`. On small pools the beam already covers much of the
        space, and more search there mostly fits the validation splits' noise."""
        terms, record, P = self.terms, self.record, len(self.terms)
        start = [(i,) for i in range(P)]
        self.evaluate(start)
        self.evaluate(self.library_sets(max_terms))
        beams = self.best_of(start, beam) or start[:1]
        if self.const is not None and (self.const,) not in beams:
            beams.append((self.const,))  # the intercept (start-up cost) is always grown from
        tell(0, f"screening: {P} candidate terms")
        trace: list[dict] = []
        family = self.family
        for step in range(2, max(1, int(max_terms)) + 1):
            if stop():
                break
            if P <= GROW_ALL:
                grow = [tuple(sorted(set(s) | {j})) for s in beams for j in range(P)
                        if j not in s and not (family[j] and family[j] in {family[i] for i in s})]
            else:  # a large pool: the GROW_TOP terms that lower each set's squared error most
                grow = []
                for s in beams:
                    g = self.gain(s)
                    grow += [tuple(sorted(s + (int(j),))) for j in np.argsort(-g)[:GROW_TOP] if g[j] >= 0]
            self.evaluate(grow)
            size_sets = [s for s in record if len(s) == step]
            new = self.best_of(size_sets, beam)
            if not new:
                break
            # the best sets of library terms alone are grown as well: the domain's structure plus
            # what it lacks, a path the greedy step can miss when an opaque product fits best early
            beams = new
            if thorough:
                beams = new + [s for s in self.best_of([s for s in size_sets if self.is_library(s)], LIBRARY_BEAM)
                               if s not in new]
            b = record[beams[0]]
            trace.append({"terms": step, "best": " + ".join(terms[i].expr for i in beams[0]), "score": b.score,
                          "cv_mape": b.cv, "holdout_mape": b.holdout, "screened": self.screen.n_evaluated})
            tell(step - 1, f"screening: best {step}-term set scores {b.score:.3g}")
        # exchange: the best set of each size and the final beam, terms swapped while that helps
        sizes = sorted({len(s) for s in record if len(s) > 1})
        if thorough and not stop():
            self.exchange([b for m in sizes for b in self.best_of([s for s in record if len(s) == m], 1)]
                          + beams[:EXCHANGE_BEAM])
        # backward pruning of every beam member and of the best set of each size
        seeds_ = set(beams)
        for m in sorted({len(s) for s in record}):
            seeds_ |= set(self.best_of([s for s in record if len(s) == m], 2))
        if not stop():
            self.evaluate([tuple(x for x in s if x != j) for s in seeds_ if len(s) > 1 for j in s])
        return trace

    def gain(self, rest: Sequence[int]) -> np.ndarray:
        """For each pool term j, how much adding it to the set ``rest`` lowers the squared error on
        all rows (unconstrained least squares): <a_j, res>² / |a_j minus its projection on the
        rest's columns|², from the Gram matrix alone (O(pool × |rest|²)). Terms that cannot join
        (in ``rest``, or of a gridded family already in it) get -1."""
        _, _, _, G, r = self.screen.splits[0]
        if self._diag is None:
            self._diag = np.maximum(np.diag(G).copy(), 1e-300)
            self._members = {}
            for j, f in enumerate(self.family):
                if f:
                    self._members.setdefault(f, []).append(j)
        rest = list(rest)
        if rest:
            Gr = G[np.ix_(rest, rest)]
            Gr = Gr + np.eye(len(rest)) * (1e-12 * np.trace(Gr))
            GR = G[rest, :]
            sol = np.linalg.solve(Gr, np.column_stack([r[rest], GR]))
            corr = r - GR.T @ sol[:, 0]  # A'(t - A_R c)
            left = self._diag - np.sum(GR * sol[:, 1:], axis=0)
        else:
            corr, left = r.copy(), self._diag.copy()
        out = corr ** 2 / np.maximum(left, 1e-9 * self._diag)
        out[rest] = -1.0
        for f in {self.family[x] for x in rest if self.family[x]}:
            out[self._members[f]] = -1.0
        return out

    def exchange(self, seeds: Sequence[tuple], rounds: int = EXCHANGE_ROUNDS) -> None:
        """Swap one or two terms of each seed set for others while the score improves (at most
        ``rounds`` times per seed).

        A greedy forward search can lock in terms that approximate true ones together; a swap
        undoes that. The replacements are guided by the residual: for each term (pair of terms)
        removed, the :data:`EXCHANGE_TOP` (:data:`EXCHANGE_TOP_PAIR` for each of two, one after the
        other) pool terms that would lower the squared error of the rest (fitted on all rows) most
        are tried in its place; the tried sets are then scored exactly."""

        def refill(rest: list[int], n_add: int, top: int) -> list[tuple]:
            if n_add == 0:
                return [tuple(sorted(rest))]
            corr = self.gain(rest)
            out: list[tuple] = []
            for j in np.argsort(-corr)[:int(top)]:
                if corr[j] >= 0:
                    out += refill(rest + [int(j)], n_add - 1, top)
            return out

        for cur in dict.fromkeys(seeds):
            for _ in range(int(rounds)):
                tries = []
                for i in cur:
                    tries += refill([x for x in cur if x != i], 1, EXCHANGE_TOP)
                if len(cur) >= 3:
                    for a, b in itertools.combinations(cur, 2):
                        tries += refill([x for x in cur if x not in (a, b)], 2, EXCHANGE_TOP_PAIR)
                tries = [s for s in tries if s != cur and len(set(s)) == len(s)]
                self.evaluate(tries)
                best = self.best_of(tries, 1)
                if not best or self.record[best[0]].score >= self.record[cur].score - 1e-12:
                    break
                cur = best[0]

    def factor_importance(self, meas: Measurements, factors: Sequence[str]) -> tuple[dict[str, float], float]:
        """How much each factor matters, and the noise of the score.

        From the best screened set S: for a factor S uses, how much the score worsens when S's terms
        that depend on it are removed; for a factor S does not use, how much the score improves
        when the best of its own PMNF blocks is added to S. A factor matters when this exceeds the
        noise of S's score (:func:`_noise`)."""
        record = self.record
        feasible = [s for s in record if record[s].feasible]
        if not feasible:
            return {x: math.inf for x in factors}, 0.0
        best = min(feasible, key=lambda s: (record[s].score, len(s)))
        base = record[best].score
        uses = {i: _term_factors(self.terms[i].expr, meas.factors) for i in range(len(self.terms))}
        out: dict[str, float] = {}
        for x in factors:
            used = [i for i in best if x in uses[i]]
            if used:
                rest = tuple(i for i in best if i not in used)
                if not rest and self.const is not None:
                    rest = (self.const,)
                if not rest:
                    out[x] = math.inf
                    continue
                self.evaluate([rest])
                out[x] = record[rest].score - base if record[rest].feasible else math.inf
            else:
                sets = [tuple(sorted(best + (j,))) for j, t in enumerate(self.terms)
                        if t.kind == "pmnf" and uses[j] == {x}]
                self.evaluate(sets)
                scores = [record[s].score for s in sets if record[s].feasible]
                out[x] = base - min(scores) if scores else -math.inf
        return out, _noise(base, record[best].se)


# ----------------------------------------------------------------------------------------
# process pool
# ----------------------------------------------------------------------------------------
def _context():
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" in methods:  # a threaded host (e.g. a Streamlit server): never fork it
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["perfmodel.autoselect"])
        return ctx
    return mp.get_context("spawn")


#: OpenBLAS's (get, set) thread-count functions under their build's names; MKL's setter besides.
_BLAS_THREAD_PAIRS = (("openblas_get_num_threads", "openblas_set_num_threads"),
                      ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                      ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                      ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"))
_BLAS_SET_THREADS = tuple(set_ for _, set_ in _BLAS_THREAD_PAIRS) + ("MKL_Set_Num_Threads",)


def _blas_libraries() -> list:
    """The OpenBLAS/MKL libraries numpy and SciPy loaded (Linux; best effort, else [])."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "blas" in line.lower() or "mkl" in line.lower()}
    except OSError:  # pragma: no cover - not Linux
        return []
    libs = []
    for path in sorted(paths):
        if not path.startswith("/"):
            continue
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:  # pragma: no cover
            continue
    return libs


def _one_blas_thread() -> None:
    """Worker initialiser: one BLAS thread per worker process.

    The fits multiply small matrices; OpenBLAS's own threads then only spin, and with one
    worker per core they oversubscribe the machine (measured: the λ path on 2 cores took
    10.1 s with them, 4.3 s without). Best effort: Linux, OpenBLAS/MKL loaded by numpy/scipy.
    """
    for lib in _blas_libraries():
        for name in _BLAS_SET_THREADS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(1)


@contextlib.contextmanager
def _blas_single_thread():
    """One BLAS thread in this process while the block runs; the previous counts are restored.

    The search's matrices are small (a few hundred rows): OpenBLAS's threads only spin there, and
    on a loaded machine they made it three times slower (measured on 2 cores at load 5: 38 s
    against 12 s for 8 factors, 300 rows). Best effort, as :func:`_one_blas_thread`; the count is
    per process, so a threaded host's other work runs single-threaded BLAS meanwhile."""
    saved = []
    for lib in _blas_libraries():
        for get, set_ in _BLAS_THREAD_PAIRS:
            g, f = getattr(lib, get, None), getattr(lib, set_, None)
            if g is not None and f is not None:
                g.restype = ctypes.c_int
                saved.append((f, int(g())))
                f(1)
    try:
        yield
    finally:
        for f, n in saved:
            f(max(1, n))


def n_workers(workers: int | None = None) -> int:
    """Worker processes used: ``workers``, or every core this process may use."""
    if workers is not None:
        return max(1, int(workers))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Cancelled(Exception):
    """Raised inside the task runner when ``should_stop()`` turns true."""


#: Seconds of remaining work (estimated from the tasks run so far) that justify starting a
#: process pool; below that the pool's start-up costs more than it saves (measured on 2 cores:
#: a 300-row search whose candidates are all linear took 0.7 s serially and 1.1 s in a pool).
POOL_THRESHOLD = 1.0
#: The same when worker processes cannot be forked from this one (a threaded host such as the
#: Streamlit server uses a forkserver): starting them, importing numpy and SciPy there and
#: pickling the tasks costs seconds (measured on 2 cores: the quick peers of a comparison of a
#: 30-row upload took 3.5-4.0 s in the dashboard with a pool, 1.4-1.9 s serially).
POOL_THRESHOLD_NO_FORK = 8.0


def _run(fn: Callable, tasks: list, workers: int, report: Callable[[int], None] | None,
         should_stop: Callable | None, adaptive: bool = True) -> list:
    """``[fn(t) for t in tasks]``, the rest in a process pool once that pays off.

    Tasks run in this process until the time they took predicts more than
    :data:`POOL_THRESHOLD` seconds (:data:`POOL_THRESHOLD_NO_FORK` when workers cannot be forked)
    for the remaining ones; then (``workers > 1``) the rest go
    to a pool of ``workers`` processes (``adaptive=False``: all tasks, at once). ``report(done)`` after each task; when
    ``should_stop()`` turns true the pending tasks are cancelled and their results are None.
    Exceptions (also from ``report``) cancel the pending tasks and propagate.
    """
    results: list = [None] * len(tasks)
    if not tasks:
        return results
    start = _time.perf_counter()
    forks = workers > 1 and _context().get_start_method() == "fork"
    threshold = POOL_THRESHOLD if forks else POOL_THRESHOLD_NO_FORK
    i = 0
    while i < len(tasks):
        if should_stop is not None and should_stop():
            return results
        if workers > 1 and len(tasks) - i >= 2 and not adaptive:
            break
        if i and workers > 1 and len(tasks) - i >= 2:
            per_task = (_time.perf_counter() - start) / i
            if per_task * (len(tasks) - i) > threshold:
                break
        results[i] = fn(tasks[i])
        i += 1
        if report is not None:
            report(i)
    if i == len(tasks):
        return results
    first = i
    ex = ProcessPoolExecutor(max_workers=min(workers, len(tasks) - first), mp_context=_context(),
                             initializer=_one_blas_thread)
    try:
        futures = {ex.submit(fn, tasks[j]): j for j in range(first, len(tasks))}
        pending = set(futures)
        done_count = first
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for f in done:
                results[futures[f]] = f.result()
                done_count += 1
                if report is not None:
                    report(done_count)
            if should_stop is not None and should_stop():
                for f in pending:
                    f.cancel()
                break
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    return results


# ----------------------------------------------------------------------------------------
# refinement tasks (top-level functions: they run in worker processes)
# ----------------------------------------------------------------------------------------
def exact_settings(model: Model, meas: Measurements) -> dict:
    """DE settings that give ``model`` its exact optimum at the least cost, or {}.

    When the expression has no free parameter and the loss is not ``log``, the core solves the
    coefficients exactly (bounded least squares; ridge or proximal gradient for λ > 0), hands
    that to DE as ``x0`` and keeps it unless DE finds better, which it cannot (the problem is
    convex). One generation then gives the same fit as a thousand.
    """
    if model.loss == "log":
        return {}
    try:
        expr, _ = model.resolve(meas)
    except PerfModelError:
        return {}
    return {"maxiter": 1, "polish": False} if expr.is_linear else {}


def _validate_task(task: dict) -> dict:
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
    return {"cv": cv.metrics, "cv_method": cv.method, "holdout": ho.metrics if ho else {},
            "holdout_method": ho.method if ho else "", "score": float(score) if math.isfinite(score) else math.inf,
            "se": se}


def _fit_task(task: dict) -> FitResult | str:
    model = Model(task["spec"], bounds=task["bounds"] or None, **task["settings"])
    try:
        return model.fit(task["meas"])
    except PerfModelError as exc:
        return str(exc)


# ----------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------
@dataclass
class Candidate:
    """One expression found by the search, validated and refitted on all data.

    ``cv`` and ``holdout`` are the metrics of :func:`cross_validate` and :func:`holdout`
    (MAPE etc., percent) with the search's DE settings; ``result`` is the refit on all data
    with the final settings (None for candidates that were only validated).
    """

    spec: str
    result: FitResult | None
    cv: dict
    holdout: dict
    score: float
    n_params: int
    se: float = 0.0
    bounds: dict = field(default_factory=dict)
    origin: str = "screened"  # "screened" (exponents fixed), "free exponents" or "preset"
    screen_score: float = float("nan")
    readability: int = 0  # readability cost, see readability_cost (0: library terms only)

    def model(self, **settings) -> Model:
        """A :class:`Model` of this expression (``settings`` override λ, loss, seed, DE ...)."""
        base = dict(self.result.settings) if self.result is not None else {}
        base = {k: v for k, v in base.items() if k not in ("terms", "preset", "bounds")}
        return Model(self.spec, bounds=self.bounds or None, **{**base, **settings})


@dataclass
class Selection:
    """The outcome of :func:`auto_select`.

    ``candidates``: within noise of the best score, simplest first (fewest parameters plus the
    readability cost, then that cost, then the score), at most ``n_best``, each refitted on all
    data; ``best`` is the first.
    ``evaluated``: every refined candidate by score. ``trace``: the screening steps.
    """

    candidates: list[Candidate]
    evaluated: list[Candidate]
    trace: list[dict]
    holdout_query: str | None
    k: int
    seed: int
    settings: dict
    pool: dict
    n_screened: int
    seconds: float
    workers: int
    stopped: bool = False
    noise: float = 0.0
    prior: str = ""  # why the paper's model is shown first without winning the validation (see module doc)

    @property
    def best(self) -> Candidate:
        if not self.candidates:
            raise PerfModelError("the automatic search found no usable model")
        return self.candidates[0]

    def table(self):
        """The refined candidates as a DataFrame (one row each, best score first)."""
        import pandas as pd

        chosen = {c.spec for c in self.candidates}
        rows = []
        for c in self.evaluated:
            rows.append({"expression": c.spec, "n_params": c.n_params, "readability": c.readability,
                         "score": c.score, "se": c.se,
                         "cv_mape": c.cv.get("mape", float("nan")),
                         "holdout_mape": c.holdout.get("mape", float("nan")),
                         "origin": c.origin, "within_noise": c.spec in chosen or
                         c.score <= self.evaluated[0].score + self.noise if self.evaluated else False,
                         "chosen": c.spec in chosen})
        return pd.DataFrame(rows)

    def report(self) -> str:
        """A sectioned text report: what was searched, the candidates, the best model."""
        s = self.settings
        lines = ["[[Automatic term selection]]",
                 f"    term pool: {self.pool.get('total', 0)} terms ({self.pool.get('library', 0)} library, "
                 f"{self.pool.get('pmnf', 0)} PMNF blocks, {self.pool.get('interaction', 0)} interactions)",
                 f"    screened {self.n_screened} term sets by exact least squares (beam {s.get('beam')}, "
                 f"up to {s.get('max_terms')} terms); refined {len(self.evaluated)} by differential evolution",
                 f"    validation: {self.k}-fold CV (seed {self.seed})" +
                 (f" + hold-out of the largest scale ({self.holdout_query})" if self.holdout_query else
                  " (no largest-scale hold-out: no factor p or N with >= 3 values)"),
                 "    score = " + ("½·CV MAPE + ½·hold-out MAPE" if self.holdout_query else "CV MAPE") +
                 f"; within noise: score <= best + {self.noise:.3g}",
                 f"    loss: {s.get('loss')}; lambda: {s.get('lam'):g}; {self.seconds:.1f} s on "
                 f"{self.workers} process(es)" + ("; STOPPED early" if self.stopped else "")]
        if self.prior:
            lines.append(f"    note: {self.prior}")
        lines.append("[[Candidates]]  (simplest first among those within noise of the best: parameters + "
                     "readability cost)")
        lines.append(f"    {'#':>2} {'params':>6} {'score':>8} {'CV MAPE':>8} {'hold-out':>8}  expression")
        for i, c in enumerate(self.candidates, 1):
            lines.append(f"    {i:>2} {c.n_params:>6} {c.score:>8.3f} {c.cv.get('mape', float('nan')):>8.3f} "
                         f"{c.holdout.get('mape', float('nan')):>8.3f}  {c.spec}")
        others = [c for c in self.evaluated if c.spec not in {d.spec for d in self.candidates}]
        if others:
            lines.append("[[Other refined candidates]]")
            for c in others[:8]:
                lines.append(f"       {c.n_params:>6} {c.score:>8.3f} {c.cv.get('mape', float('nan')):>8.3f} "
                             f"{c.holdout.get('mape', float('nan')):>8.3f}  {c.spec}")
        if self.candidates and self.best.result is not None:
            lines.append("[[Best model]]")
            lines += ["    " + line for line in self.best.result.report().splitlines()]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"candidates": [_cand_dict(c) for c in self.candidates],
                "evaluated": [_cand_dict(c, with_result=False) for c in self.evaluated],
                "trace": self.trace, "holdout_query": self.holdout_query, "k": self.k, "seed": self.seed,
                "settings": self.settings, "pool": self.pool, "n_screened": self.n_screened,
                "seconds": self.seconds, "workers": self.workers, "stopped": self.stopped,
                "noise": self.noise, "prior": self.prior}


def _cand_dict(c: Candidate, with_result: bool = True) -> dict:
    d = {"spec": c.spec, "bounds": {k: list(v) for k, v in c.bounds.items()}, "cv": c.cv,
         "holdout": c.holdout, "score": c.score, "se": c.se, "n_params": c.n_params, "origin": c.origin,
         "readability": c.readability}
    if with_result and c.result is not None:
        d["result"] = c.result.to_dict()
    return d


# ----------------------------------------------------------------------------------------
# the search
# ----------------------------------------------------------------------------------------
def _top_level_terms(spec: str, seps: str = "+") -> list[str]:
    """The summands of ``spec`` split at top-level ``+`` (or other ``seps``; not inside parentheses)."""
    out, depth, cur = [], 0, []
    for ch in spec:
        depth += ch == "("
        depth -= ch == ")"
        if ch in seps and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [t for t in out if t]


@functools.lru_cache(maxsize=64)
def _library_forms(symbols: tuple) -> dict[str, str]:
    """{term text without spaces: category} of every library term for ``symbols``, in its free form
    and with each gridded batch exponent (``I*b^0.8``, ``I*b``)."""
    out = {}
    for lt in _library(list(symbols)):
        out[lt.expr.replace(" ", "")] = lt.category
        if "e_b" in lt.expr:
            for e in _COMPUTE_GRID:
                out[lt.expr.replace("b^e_b", "b" if e == 1 else f"b^{e:g}").replace(" ", "")] = lt.category
    return out


def readability_cost(spec: str, factors) -> int:
    """How hard an expression is to explain (see the module doc, *Score*): 0 per library term
    (in any of its fixed or free forms), 1 per other term of one factor (a PMNF block), k per
    product of k factors (an interaction). Terms of a preset that are not library terms count
    the same way."""
    symbols = list(factors)
    readable = _library_forms(tuple(symbols))
    cost = 0
    for term in _top_level_terms(spec):
        if term.startswith(f"{OVERLAP}(") and term.endswith(")"):  # an overlap costs what its parts cost
            cost += sum(readability_cost(side, symbols)
                        for side in _top_level_terms(term[len(OVERLAP) + 1:-1], ",;")[:2])
            continue
        text = re.sub(r"(?<![A-Za-z0-9_])(e_b)\d*(?![A-Za-z0-9_])", "e_b", term.replace(" ", ""))
        if text in readable:
            continue
        cost += max(1, len(_term_factors(text, symbols)))
    return cost


def _simplest_first(c: "Candidate") -> tuple:
    """Order among candidates within noise of the best: fitted parameters plus readability cost,
    then the readability cost, then the score."""
    return (c.n_params + c.readability, c.readability, c.score)


#: Fewest configurations the hold-out split must train on for the validation to choose the model
#: (a constant and one scaling term fit 2 configurations exactly; see the module doc).
MIN_VALIDATION_CONFIGURATIONS = 3
_PRIOR_NOTE = ("the validation trains on {n} configuration(s), too few to choose between structures; the paper's "
               "generic data-parallel model is shown first, the validated candidates after it")


def _validation_configurations(meas: Measurements, splits) -> int:
    """Configurations the hold-out split trains on (without a hold-out: the smallest fold's)."""
    cfg = meas.configurations()
    held = [tr for name, tr, te in splits if name.startswith("hold-out")]
    trains = held or [tr for name, tr, te in splits if name != "all"]
    return min(len(np.unique(cfg[tr])) for tr in trains)


def _structural_prior(meas: Measurements, n_validation: int, evaluated: list["Candidate"]) -> "Candidate | None":
    """The data-parallel preset's candidate when the validation, training on ``n_validation``
    configurations, is too small to choose (else None)."""
    if n_validation >= MIN_VALIDATION_CONFIGURATIONS:
        return None
    specs = _preset_specs(meas, names=("data-parallel",))
    if not specs:
        return None
    return next((c for c in evaluated if c.origin == "preset" and c.spec == specs[0][0]), None)


#: A candidate of library terms alone is within noise of the best up to this many times the noise
#: (two standard errors instead of one; see the module doc, *Score*).
READABLE_BAND = 1.0


#: Ranges of the search's own settings: (least, largest). Beyond the largest the search would run
#: for hours (the screening grows with max_terms × beam × pool, the refinement with the candidates).
SEARCH_LIMITS = {"k": (2, MAX_FOLDS), "max_terms": (1, 10), "n_best": (1, 20), "beam": (1, 64),
                 "max_candidates": (1, 50), "n_free": (0, 10), "max_free": (0, 6)}


def _check_search_settings(**settings) -> None:
    for name, value in settings.items():
        lo, hi = SEARCH_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise PerfModelError(f"{name} must be a whole number, got {value!r}")
        if value < lo:
            raise PerfModelError(f"{name} must be at least {lo}, got {value}"
                                 + (" (k-fold cross-validation needs k >= 2)" if name == "k" else ""))
        if value > hi:
            raise PerfModelError(f"{name} {value} is above the limit {hi} (the search would run for hours)")


def _with_single_blas_thread(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _blas_single_thread():
            return fn(*args, **kwargs)
    return wrapper


def _overlap_variant(terms: Sequence[SearchTerm], factors) -> tuple[str, dict] | None:
    """``overlap(compute; communication; g) + start-up`` of a term set whose library terms include
    both compute and communication (see the module doc), with its bounds; else None."""
    category = _library_forms(tuple(factors))
    sides: dict[str, list[str]] = {"compute": [], "communication": [], "rest": []}
    for t in terms:
        kind = category.get(t.expr.replace(" ", "")) if t.kind == "library" else None
        sides[kind if kind in ("compute", "communication") else "rest"].append(t.expr)
    if not sides["compute"] or not sides["communication"]:
        return None
    g = next(name for name in ("g", "g_overlap", "gamma_overlap") if name not in factors)
    text = f"{OVERLAP}({' + '.join(sides['compute'])}, {' + '.join(sides['communication'])}; {g})"
    return " + ".join(sides["rest"] + [text]), {g: OVERLAP_BOUNDS}


def _spec(terms: Sequence[SearchTerm], free: Sequence[bool] | bool) -> tuple[str, dict, int]:
    """Expression text, bounds and count of free parameters for a term set.

    ``free``: per term (or for all), whether its exponents become free parameters; names
    that repeat get a suffix (e_b, e_b2, ...).
    """
    flags = [free] * len(terms) if isinstance(free, bool) else list(free)
    parts, bounds, used = [], {}, {}
    for t, f in zip(terms, flags):
        if f and t.free is not None:
            text = t.free
            for name, lo, hi in t.params:
                used[name] = used.get(name, 0) + 1
                new = name if used[name] == 1 else f"{name}{used[name]}"
                text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", new, text)
                bounds[new] = (float(lo), float(hi))
            parts.append(text)
        else:
            parts.append(t.expr)
    return " + ".join(parts), bounds, len(bounds)


@_with_single_blas_thread
def auto_select(meas: Measurements, *, lam: float = DEFAULT_LAM, loss: str = "relative", penalty: str = "l1",
                seed: int = 0, k: int = 5, n_best: int = 3, max_terms: int = 5, beam: int = 8,
                max_candidates: int = 10, n_free: int = 3, max_free: int = 3, holdout_query: str | None = "auto",
                search_de: dict | None = None, final_de: dict | None = None,
                progress: Callable | None = None, should_stop: Callable | None = None,
                workers: int | None = None) -> Selection:
    """Search small expressions for ``meas`` and return the best few (see the module doc).

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
        started only when the work left justifies it (:data:`POOL_THRESHOLD`).
    """
    t0 = _time.perf_counter()
    if not isinstance(meas, Measurements):
        raise PerfModelError(f"auto_select needs Measurements, got {type(meas).__name__}")
    if meas.n_configurations < 2:
        raise PerfModelError(f"{meas.n_configurations} distinct configuration(s): the automatic search needs at "
                             "least 2 to cross-validate; measure more configurations")
    _check_search_settings(k=k, max_terms=max_terms, n_best=n_best, beam=beam, max_candidates=max_candidates,
                           n_free=n_free, max_free=max_free)
    workers = n_workers(workers)
    search_de = {**SEARCH_DE, **(search_de or {})}
    final_de = dict(final_de or {})
    base = {"lam": lam, "loss": loss, "penalty": penalty, "seed": seed}
    Model("1", **base, **search_de)._check_settings()  # bad λ/loss/seed/DE fail here, with one message
    Model("1", **base, **final_de)._check_settings()
    if holdout_query == "auto":
        holdout_query = largest_scale_query(meas)
    stopped = [False]

    def stop() -> bool:
        if should_stop is not None and should_stop():
            stopped[0] = True
        return stopped[0]

    def tell(done, total, msg):
        if progress is not None:
            progress(done, total, msg)

    # -- pool and splits -------------------------------------------------------
    splits = _splits(meas, int(k), int(seed), holdout_query)
    cfg = meas.configurations()
    min_cfg = min(len(np.unique(cfg[tr])) for name, tr, te in splits)
    max_size = min_cfg - 1 if min_cfg > 1 else 1
    n_steps = max(1, int(max_terms))
    total = n_steps + 3
    varying = meas.varying()
    importance: dict[str, float] = {}
    if len(varying) > FULL_POOL_FACTORS:
        # screen the factors first: only those that matter get PMNF blocks and interactions
        terms, X = _pool_matrix(meas, search_terms(meas, singles=varying, pairs=(), triples=()))
        first = _Search(terms, _Screen(X, meas.y, loss, splits, max_size))
        first.run(max_terms, beam, stop, lambda step, msg: None, thorough=True)
        importance, threshold = first.factor_importance(meas, varying)
        active = [x for x in sorted(importance, key=lambda x: -importance[x]) if importance[x] > threshold]
        tell(1, total, f"screening factors: {len(active)} of {len(varying)} matter"
             + (f" ({', '.join(active)})" if active else ""))
        pool = search_terms(meas, singles=active, pairs=active[:MAX_PAIR_FACTORS],
                            triples=active[:MAX_TRIPLE_FACTORS])
    else:
        pool = search_terms(meas)
    terms, X = _pool_matrix(meas, pool)
    pool_counts = {"total": len(terms), **{kind: sum(t.kind == kind for t in terms)
                                            for kind in ("library", "pmnf", "interaction")}}
    if importance:  # how much each factor matters (score points), and those that do
        pool_counts["factors"] = {x: (round(v, 4) if math.isfinite(v) else str(v)) for x, v in importance.items()}
        pool_counts["matter"] = active
    screen = _Screen(X, meas.y, loss, splits, max_size)
    search = _Search(terms, screen)
    trace = search.run(max_terms, beam, stop, lambda step, msg: tell(1 + step, total, msg),
                       thorough=bool(importance))
    record, best_of = search.record, search.best_of
    feasible = [s for s in record if record[s].feasible]
    if not feasible:
        raise PerfModelError("no candidate model could be fitted on every validation split; "
                             "measure more configurations")
    best_set = min(feasible, key=lambda s: record[s].score)
    band = record[best_set].score + 2 * _noise(record[best_set].score, record[best_set].se) + 0.5
    shortlist: list[tuple] = []
    for m in sorted({len(s) for s in feasible}):
        inside = [s for s in best_of([s for s in feasible if len(s) == m], 2) if record[s].score <= band]
        shortlist += inside
    for s in sorted(feasible, key=lambda s: record[s].score):
        if len(shortlist) >= 4:
            break
        if s not in shortlist:
            shortlist.append(s)
    shortlist = sorted(shortlist, key=lambda s: record[s].score)[:max(1, int(max_candidates))]
    # the best set of library terms alone of each size; when it is within reach of the best, the
    # readable alternative the choice prefers when it is within noise (see readability_cost)
    lib_best = [b[0] for b in (best_of([s for s in feasible if len(s) == m and search.is_library(s)], 1)
                               for m in sorted({len(s) for s in feasible})) if b]
    for s in lib_best:
        if record[s].score <= band and s not in shortlist:
            shortlist.append(s)
    shortlist.sort(key=lambda s: (len(s), record[s].score))
    tell(n_steps + 2, total, f"screened {screen.n_evaluated} term sets")

    # -- refinement with DE, in a process pool ---------------------------------
    specs: list[tuple[str, dict, int, str, float]] = []  # (spec, bounds, n_params, origin, screen score)
    seen_specs = set()
    for s in shortlist:
        spec, bounds, nf = _spec([terms[i] for i in s], free=False)
        specs.append((spec, bounds, len(s), "screened", record[s].score))
        seen_specs.add(spec)
    # free-exponent variants. A set already within noise of the best screened score gains
    # nothing from freeing its exponents (it would only add parameters); the others may, when
    # their gridded exponent is off: the best set of each size (smallest first) that is not
    # hopeless (screened score <= 2 x best + 1 percentage point), then the shortlist by score.
    best_screen = record[best_set].score
    screen_noise = _noise(best_screen, record[best_set].se)
    by_size_best = []
    for m in sorted({len(s) for s in feasible}):
        top = best_of([s for s in feasible if len(s) == m], 1)
        if top and record[top[0]].score <= 2 * best_screen + 1.0:
            by_size_best.append(top[0])
    order = by_size_best + sorted((s for s in shortlist if s not in by_size_best), key=lambda s: record[s].score)
    n_done = 0
    for s in order:
        if n_done >= int(n_free):
            break
        if record[s].score <= best_screen + screen_noise:
            continue
        # free the exponents of the terms that carry the most time, at most max_free of them
        share = screen.shares(s)
        flags, n_params_free = [False] * len(s), 0
        for pos in np.argsort(-share):
            t = terms[s[pos]]
            if t.free is not None and n_params_free + len(t.params) <= int(max_free):
                flags[pos] = True
                n_params_free += len(t.params)
        spec, bounds, nf = _spec([terms[i] for i in s], flags)
        if nf and spec not in seen_specs and len(s) + nf <= screen.max_size:
            specs.append((spec, bounds, len(s) + nf, "free exponents", record[s].score))
            seen_specs.add(spec)
            n_done += 1
    # overlap variants: of the best set of each size, and of the best set of library terms alone of
    # each size (a plain sum of compute and synchronisation can fit overlapped data badly)
    for s in by_size_best + [s for s in lib_best if s not in by_size_best]:
        variant = _overlap_variant([terms[i] for i in s], meas.factors)
        if variant is not None and variant[0] not in seen_specs and len(s) + 1 <= screen.max_size:
            specs.append((*variant, len(s) + 1, "overlap", record[s].score))
            seen_specs.add(variant[0])
    for spec, bounds, n_params in _preset_specs(meas, int(max_terms) + int(max_free)):
        if spec not in seen_specs:
            specs.append((spec, bounds, n_params, "preset", float("nan")))
            seen_specs.add(spec)
    specs.sort(key=lambda sp: sp[3] == "screened")  # the costly DE fits first (see _run)
    settings = {**base, **search_de}
    tasks = [{"spec": sp, "bounds": bd, "settings": settings, "meas": meas, "k": int(k), "seed": int(seed),
              "query": holdout_query} for sp, bd, nf, origin, sc in specs]
    n_total = total + len(tasks) + int(n_best)

    def tick(offset, label):
        return lambda done: tell(offset + done, n_total, label)

    outcomes = [] if stopped[0] else _run(_validate_task, tasks, workers,
                                          tick(total - 1, "validating candidates"), stop)
    evaluated: list[Candidate] = []
    for (spec, bounds, n_params, origin, sc), out in zip(specs, outcomes):
        if out is None or "error" in out:
            continue
        evaluated.append(Candidate(spec, None, out["cv"], out["holdout"], out["score"], n_params, out["se"],
                                   bounds, origin, sc,
                                   0 if origin == "preset" else readability_cost(spec, meas.factors)))
    evaluated.sort(key=lambda c: (c.score, c.n_params))
    if not evaluated:
        if stopped[0]:
            raise PerfModelError("the automatic search was stopped before any candidate was validated")
        raise PerfModelError("no candidate model could be validated; measure more configurations")
    noise = _noise(evaluated[0].score, evaluated[0].se)
    # A model of library terms alone counts as within noise up to READABLE_BAND x the noise: the best
    # of thousands of screened opaque sets is scored optimistically (it was picked for its score),
    # a library model is one of the few structures the domain itself suggests.
    within = [c for c in evaluated if c.score <= evaluated[0].score + noise
              or (c.readability == 0 and c.score <= evaluated[0].score + READABLE_BAND * noise)]
    within.sort(key=_simplest_first)
    n_validation = _validation_configurations(meas, splits)
    prior = _structural_prior(meas, n_validation, evaluated)
    if prior is not None:
        within = [prior] + [c for c in within if c is not prior]
    chosen = within[:max(1, int(n_best))]

    # -- final refits ------------------------------------------------------------
    fits = [{"spec": c.spec, "bounds": c.bounds, "settings": {**base, **final_de}, "meas": meas}
            for c in chosen]
    results = _run(_fit_task, fits, workers, tick(total - 1 + len(tasks), "refitting the chosen models"), None)
    for c, res in zip(chosen, results):
        if isinstance(res, FitResult):
            res.validation = {f"{out_name}": m for out_name, m in
                              ((f"{k}-fold CV", c.cv), (f"hold-out ({holdout_query})", c.holdout)) if m}
            c.result = res
    chosen = [c for c in chosen if c.result is not None]
    tell(n_total, n_total, "done")
    return Selection(candidates=chosen, evaluated=evaluated, trace=trace, holdout_query=holdout_query,
                     k=int(k), seed=int(seed),
                     settings={**base, "max_terms": int(max_terms), "beam": int(beam), "n_best": int(n_best),
                               "max_candidates": int(max_candidates), "search_de": search_de,
                               "final_de": final_de},
                     pool=pool_counts, n_screened=screen.n_evaluated, seconds=_time.perf_counter() - t0,
                     workers=workers, stopped=stopped[0], noise=noise,
                     prior=_PRIOR_NOTE.format(n=n_validation) if prior else "")


def plausible(selection: Selection, shown: Candidate | None = None) -> tuple[FitResult, list[FitResult], dict]:
    """The displayed model of ``selection`` (``shown``, one of its candidates; default the best), the
    other plausible ones (its other candidates within noise of the best score) and the keyword
    arguments :meth:`perfmodel.FitResult.compute_intervals` needs for model averaging:
    ``candidates``, their validation ``scores`` (the displayed model's first), the score noise
    ``noise_scale``. When the validation was too small to choose (``selection.prior``),
    the paper's model shown first counts as plausible as the best validated one (its score is no
    evidence), so the intervals weigh them alike; the shown model still predicts. (Letting their
    ensemble predict instead was measured on the 61 short real series with 3 GPU counts: median error
    4.1 % against 3.5 %, 3 series above 20 % against 6.)"""
    shown = selection.best if shown is None else shown
    others = [c for c in selection.candidates if c is not shown and c.result is not None]
    score = {id(c): c.score for c in selection.candidates}
    if selection.prior:
        score[id(selection.best)] = min(score.values())
    scores = [score[id(shown)]] + [score[id(c)] for c in others]
    kwargs = {"candidates": [c.result for c in others] or None, "scores": scores if others else None,
              "noise_scale": float(selection.noise)}
    return shown.result, [c.result for c in others], kwargs


# ----------------------------------------------------------------------------------------
# λ chosen by validation
# ----------------------------------------------------------------------------------------
#: Default λ grid: 0 and 11 values from 1e-6 to 0.1 (λ acts on each term's share of the mean
#: time, so with the relative loss λ = 0.01 makes a term carrying the whole mean time cost as
#: much as a 10 % RMS error; see perfmodel.fit).
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

        df = pd.DataFrame({"lam": self.lams, "cv_mape": self.cv_mape, "cv_se": self.cv_se,
                           "fit_mape": self.fit_mape})
        for j, t in enumerate(self.terms):
            df[f"share:{t}"] = self.shares[:, j]
        for j, t in enumerate(self.terms):
            df[f"coef:{t}"] = self.coefficients[:, j]
        df["chosen"] = df["lam"] == self.chosen
        return df

    def to_dict(self) -> dict:
        return {"expression": self.expression, "lams": self.lams.tolist(), "terms": list(self.terms),
                "coefficients": self.coefficients.tolist(), "shares": self.shares.tolist(),
                "params": self.params, "cv_mape": self.cv_mape.tolist(), "cv_se": self.cv_se.tolist(),
                "fit_mape": self.fit_mape.tolist(), "lam_min": self.lam_min, "lam_1se": self.lam_1se,
                "chosen": self.chosen, "rule": self.rule, "k": self.k, "seed": self.seed,
                "errors": self.errors}


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
    return {"terms": res.terms, "coef": c, "share": share, "params": dict(res.params),
            "fit_mape": res.metrics["mape"], "cv_mape": cv.metrics["mape"],
            "cv_se": float(np.std(folds, ddof=1) / math.sqrt(len(folds))) if len(folds) > 1 else 0.0,
            "expression": res.expression}


def lambda_path(model: Model, meas: Measurements, lams: Sequence[float] | None = None, k: int = 5,
                seed: int = 0, *, rule: str = "1se", de: dict | None = None, progress: Callable | None = None,
                should_stop: Callable | None = None, workers: int | None = None) -> LambdaPath:
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
    grid = DEFAULT_LAMS if lams is None else lams
    try:
        grid = np.array(sorted({float(v) for v in grid}), float)
    except (TypeError, ValueError):
        raise PerfModelError(f"λ values must be numbers, got {lams!r}") from None
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise PerfModelError("λ values must be finite numbers >= 0 (and at least one)")
    if int(k) < 2:
        raise PerfModelError("k-fold cross-validation needs k >= 2")
    de = SEARCH_DE if de is None else de
    fast = exact_settings(model, meas)
    tasks = [{"model": model.clone(lam=float(lam), **{**de, **fast}), "meas": meas, "k": int(k), "seed": int(seed)}
             for lam in grid]
    tasks[0]["model"]._check_settings()
    total = len(tasks)

    def report(done):
        if progress is not None:
            progress(done, total, f"λ path: {done} of {total} values")

    outs = _run(_lambda_task, tasks, n_workers(workers), report, should_stop, adaptive=False)
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
    return LambdaPath(expression=outs[0]["expression"], lams=grid, terms=list(outs[0]["terms"]),
                      coefficients=np.vstack([o["coef"] for o in outs]),
                      shares=np.vstack([o["share"] for o in outs]), params=[o["params"] for o in outs],
                      cv_mape=cv, cv_se=se, fit_mape=np.array([o["fit_mape"] for o in outs]),
                      lam_min=float(grid[i_min]), lam_1se=float(grid[i_1se]), chosen=float(chosen), rule=rule,
                      k=int(k), seed=int(seed), errors=errors, seconds=_time.perf_counter() - t0)
