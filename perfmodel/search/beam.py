"""The beam search over one term pool: single terms and library sets, a beam adding one term at a
time, residual-guided growth and exchange on large pools, backward pruning, and the factors'
importance (see :mod:`perfmodel.search`, *How it is searched*).

Imports from :mod:`perfmodel.search.pool` and :mod:`perfmodel.search.screening` only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from ..data.measurements import Measurements
from .pool import SearchTerm, term_factors
from .screening import Score, Screen, score_noise

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


class BeamSearch:
    """The exact screening of term sets over one pool (see the module doc, *How it is searched*):
    every single term and every set of library terms, a beam search adding one term at a time,
    then backward pruning. ``record`` maps each screened set (sorted pool indices) to its score."""

    def __init__(self, terms: list[SearchTerm], screen: Screen):
        self.terms, self.screen = terms, screen
        self.record: dict[tuple, Score] = {}
        self.const = next((i for i, t in enumerate(terms) if t.expr == "1"), None)
        # at most one exponent of a gridded library family (one I·b^e) per set: several would be
        # nearly collinear, fit the noise and make the penalised fits slow
        self.family = [t.free if t.kind == "library" and t.free else None for t in terms]
        self._diag: np.ndarray | None = None

    def evaluate(self, sets) -> None:
        sets = [s for s in dict.fromkeys(sets) if s not in self.record]
        by_size: dict[int, list[tuple]] = {}
        for s in sets:
            by_size.setdefault(len(s), []).append(s)
        for group in by_size.values():
            for s, sc in zip(group, self.screen.evaluate(np.array(group, dtype=int)), strict=True):
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
            free = terms[i].free
            if free is not None:
                families.setdefault(free, []).append(i)
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

    def run(
        self,
        max_terms: int,
        beam: int,
        stop: Callable[[], bool],
        tell: Callable[[int, str], None],
        thorough: bool = False,
    ) -> list[dict]:
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
                grow = [
                    tuple(sorted(set(s) | {j}))
                    for s in beams
                    for j in range(P)
                    if j not in s and not (family[j] and family[j] in {family[i] for i in s})
                ]
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
                beams = new + [
                    s for s in self.best_of([s for s in size_sets if self.is_library(s)], LIBRARY_BEAM) if s not in new
                ]
            b = record[beams[0]]
            trace.append(
                {
                    "terms": step,
                    "best": " + ".join(terms[i].expr for i in beams[0]),
                    "score": b.score,
                    "cv_mape": b.cv,
                    "holdout_mape": b.holdout,
                    "screened": self.screen.n_evaluated,
                }
            )
            tell(step - 1, f"screening: best {step}-term set scores {b.score:.3g}")
        # exchange: the best set of each size and the final beam, terms swapped while that helps
        sizes = sorted({len(s) for s in record if len(s) > 1})
        if thorough and not stop():
            self.exchange(
                [b for m in sizes for b in self.best_of([s for s in record if len(s) == m], 1)] + beams[:EXCHANGE_BEAM]
            )
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
            self._members: dict[str, list[int]] = {}
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
        out = corr**2 / np.maximum(left, 1e-9 * self._diag)
        out[rest] = -1.0
        for f in {f for f in (self.family[x] for x in rest) if f}:
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
            for j in np.argsort(-corr)[: int(top)]:
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
        noise of S's score (:func:`score_noise`)."""
        record = self.record
        feasible = [s for s in record if record[s].feasible]
        if not feasible:
            return {x: math.inf for x in factors}, 0.0
        best = min(feasible, key=lambda s: (record[s].score, len(s)))
        base = record[best].score
        uses = {i: term_factors(self.terms[i].expr, meas.factors) for i in range(len(self.terms))}
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
                sets = [
                    tuple(sorted(best + (j,))) for j, t in enumerate(self.terms) if t.kind == "pmnf" and uses[j] == {x}
                ]
                self.evaluate(sets)
                scores = [record[s].score for s in sets if record[s].feasible]
                out[x] = base - min(scores) if scores else -math.inf
        return out, score_noise(base, record[best].se)
