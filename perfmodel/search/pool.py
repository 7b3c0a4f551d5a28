"""The search's term pool: library terms, the peers' terms, PMNF blocks and interactions.

:func:`search_terms` builds the pool for the factors present (see :mod:`perfmodel.search`, *What is
searched*); :func:`pool_matrix` evaluates it on the data and drops constant, non-finite and
duplicate columns; :func:`preset_specs` gives the presets that compete with the searched sets.
:func:`readability_cost` says how hard an expression is to explain, and :func:`term_set_spec` /
:func:`overlap_variant` turn a term set into an expression.

Imports from the model language, data and fitting layers only.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..language.expression import FUNCTIONS, GLOBAL_BATCH, ITERATIONS, parse_expression
from ..language.overlap import DEFAULT_BOUNDS as OVERLAP_BOUNDS, NAME as OVERLAP
from ..language.terms import (
    PRESETS,
    LibraryTerm,
    _times,
    effective_symbols,
    iterations,
    library,
    pmnf_term,
    preset_bounds,
    preset_spec,
)

# PMNF blocks (i, j) = x^i·log2(x)^j.
_SINGLE_POLY = (0, 0.5, 1, 1.5, 2, 2.5, 3)


_SINGLE_LOG = (0, 1, 2)


_STRONG = ((-1, 0), (-0.5, 0), (-2, 0), (-1, 1))


_PAIR_BLOCKS = ((1, 0), (0, 1), (0.5, 0), (1.5, 0), (2, 0), (1, 1), (-1, 0), (-2, 0))


_TRIPLE_BLOCKS = ((1, 0), (0, 1), (-1, 0), (2, 0), (-2, 0))


COMPUTE_GRID = tuple(round(0.1 * i, 1) for i in range(1, 20))  # 0.1 .. 1.9


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
    (
        "pollux-sync-latency",
        "min(p-1,1)",
        ("p",),
        "Pollux: per-iteration synchronisation latency, on more than one worker",
    ),
    (
        "pollux-sync-growth",
        "max(p-2,0)",
        ("p",),
        "Pollux: per-iteration synchronisation growing with the workers beyond two",
    ),
    (
        "optimus-server-load",
        "p/servers",
        ("p", "servers"),
        "Optimus: per-iteration traffic of the workers spread over the parameter servers",
    ),
    (
        "optimus-servers",
        "servers",
        ("servers",),
        "Optimus: per-iteration cost of each parameter server (its connection and update overhead)",
    ),
)


def pool_library(symbols) -> list:
    """The term library (:func:`perfmodel.language.terms.library`) plus :data:`PEER_TERMS` for ``symbols``."""
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


def search_terms(
    meas: Measurements,
    singles: Sequence[str] | None = None,
    pairs: Sequence[str] | None = None,
    triples: Sequence[str] | None = None,
) -> list[SearchTerm]:
    """The term pool searched by :func:`auto_select` for ``meas``'s factors (see module doc).

    ``singles``, ``pairs``, ``triples``: the factors that get PMNF blocks of their own, and
    among which two- and three-factor interactions are built (default: every factor with
    more than one value; those without are dropped in any case). The library terms are always
    in the pool.
    """
    varying = meas.scaling_factors()

    def subset(chosen):
        return varying if chosen is None else [x for x in varying if x in set(chosen)]

    symbols = subset(singles)
    out: list[SearchTerm] = []
    for t in pool_library(meas.factors):
        if "e_b" in t.expr:
            lo, hi = preset_bounds("data-parallel", meas.factors)["e_b"]
            for e in COMPUTE_GRID:
                fixed = t.expr.replace("b^e_b", "b" if e == 1 else f"b^{e:g}")
                out.append(SearchTerm(fixed, "library", t.meaning, t.expr, (("e_b", lo, hi),)))
        else:
            out.append(SearchTerm(t.expr, "library", t.meaning))
    exponents = [(i, j) for i in _SINGLE_POLY for j in _SINGLE_LOG if (i, j) != (0, 0)] + list(_STRONG)
    exponents.sort(key=lambda ij: (ij[1] > 0, abs(ij[0]) != 1, ij[0] < 0, abs(ij[0]), ij[1]))

    def product(blocks, kind, meaning):
        expr = "*".join(pmnf_term(x, i, j) for x, i, j in blocks)
        free = "*".join(pmnf_term(x, f"e_{x}" if i else 0, j) for x, i, j in blocks)
        params = tuple((f"e_{x}", i - 1.0, i + 1.0) for x, i, j in blocks if i)
        return SearchTerm(expr, kind, meaning, free if params else None, params, tuple(blocks))

    for x in symbols:
        for i, j in _blocks(meas.values(x), exponents):
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
                    out.append(
                        product(
                            [(x, *blk) for x, blk in zip(xs, blks, strict=True)],
                            "interaction",
                            f"interaction of {', '.join(xs)}",
                        )
                    )
    return out


def pool_matrix(meas: Measurements, terms: list[SearchTerm]) -> tuple[list[SearchTerm], np.ndarray]:
    """Evaluate the pool on the data; drop constant, non-finite and duplicate columns."""
    env = meas.env()
    n = meas.n_rows
    kept: list[SearchTerm] = []
    cols: list[np.ndarray] = []
    seen: set[bytes] = set()
    block_cache: dict[tuple, np.ndarray | float] = {}

    def block(x: str, i: float, j: float) -> np.ndarray | float:
        if (x, i, j) not in block_cache:
            xv = env[x].astype(float)
            with np.errstate(all="ignore"):
                block_cache[(x, i, j)] = (xv**i if i else 1.0) * (np.log2(xv) ** j if j else 1.0)
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
#: :data:`perfmodel.language.terms.PRESETS` is skipped.
PRESET_CANDIDATES = ("data-parallel", "pollux", "optimus")


def preset_specs(
    meas: Measurements, max_params: int | None = None, names: Sequence[str] | None = None
) -> list[tuple[str, dict, int]]:
    """[(spec, bounds, n_params)] of :data:`PRESET_CANDIDATES` for ``meas``'s factors: those known
    to :data:`perfmodel.language.terms.PRESETS` (others are skipped) with at most ``max_params`` parameters."""
    symbols = list(meas.factors)
    positive = [x for x in symbols if meas.values(x).min() >= 1]
    varying = meas.scaling_factors()
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


def term_factors(expr: str, factors) -> set[str]:
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


def top_level_terms(spec: str, seps: str = "+") -> list[str]:
    """The summands of ``spec`` split at top-level ``+`` (or other ``seps``; not inside parentheses)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
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
def library_forms(symbols: tuple) -> dict[str, str]:
    """{term text without spaces: category} of every library term for ``symbols``, in its free form
    and with each gridded batch exponent (``I*b^0.8``, ``I*b``)."""
    out = {}
    for lt in pool_library(list(symbols)):
        out[lt.expr.replace(" ", "")] = lt.category
        if "e_b" in lt.expr:
            for e in COMPUTE_GRID:
                out[lt.expr.replace("b^e_b", "b" if e == 1 else f"b^{e:g}").replace(" ", "")] = lt.category
    return out


def readability_cost(spec: str, factors) -> int:
    """How hard an expression is to explain (see the module doc, *Score*): 0 per library term
    (in any of its fixed or free forms), 1 per other term of one factor (a PMNF block), k per
    product of k factors (an interaction). Terms of a preset that are not library terms count
    the same way."""
    symbols = list(factors)
    readable = library_forms(tuple(symbols))
    cost = 0
    for term in top_level_terms(spec):
        if term.startswith(f"{OVERLAP}(") and term.endswith(")"):  # an overlap costs what its parts cost
            cost += sum(
                readability_cost(side, symbols) for side in top_level_terms(term[len(OVERLAP) + 1 : -1], ",;")[:2]
            )
            continue
        text = re.sub(r"(?<![A-Za-z0-9_])(e_b)\d*(?![A-Za-z0-9_])", "e_b", term.replace(" ", ""))
        if text in readable:
            continue
        cost += max(1, len(term_factors(text, symbols)))
    return cost


def overlap_variant(terms: Sequence[SearchTerm], factors) -> tuple[str, dict] | None:
    """``overlap(compute; communication; g) + start-up`` of a term set whose library terms include
    both compute and communication (see the module doc), with its bounds; else None."""
    category = library_forms(tuple(factors))
    sides: dict[str, list[str]] = {"compute": [], "communication": [], "rest": []}
    for t in terms:
        kind = category.get(t.expr.replace(" ", "")) if t.kind == "library" else None
        sides[kind if kind in ("compute", "communication") else "rest"].append(t.expr)
    if not sides["compute"] or not sides["communication"]:
        return None
    g = next(name for name in ("g", "g_overlap", "gamma_overlap") if name not in factors)
    text = f"{OVERLAP}({' + '.join(sides['compute'])}, {' + '.join(sides['communication'])}; {g})"
    return " + ".join(sides["rest"] + [text]), {g: OVERLAP_BOUNDS}


def term_set_spec(terms: Sequence[SearchTerm], free: Sequence[bool] | bool) -> tuple[str, dict, int]:
    """Expression text, bounds and count of free parameters for a term set.

    ``free``: per term (or for all), whether its exponents become free parameters; names
    that repeat get a suffix (e_b, e_b2, ...).
    """
    flags = [free] * len(terms) if isinstance(free, bool) else list(free)
    parts: list[str] = []
    bounds: dict[str, tuple[float, float]] = {}
    used: dict[str, int] = {}
    for t, f in zip(terms, flags, strict=True):
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
