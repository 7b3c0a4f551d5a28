"""How each term of a fit is classed: start-up, compute, communication or other.

A library term has its category; another term is judged from its values (a term that grows with
``p`` is communication-like), and inside an overlap the side that names the workers is
communication. The charts colour terms by it and the group fits sum shares by it.

Imports from the model language only.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import PerfModelError
from ..language.expression import parse_expression
from ..language.terms import LibraryTerm, library


def canonical_term(term_text: str, params) -> str:
    out = term_text
    for p in sorted(params, key=len, reverse=True):
        out = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(p)}(?![A-Za-z0-9_])", "#", out)
    return out


def library_canon(symbols) -> dict[str, LibraryTerm]:
    out = {}
    for t in library(symbols):
        try:
            expr, _ = parse_expression(t.expr, symbols)
        except PerfModelError:  # pragma: no cover - the library only uses mapped symbols
            continue
        out[canonical_term(expr.terms[0].text, expr.params)] = t
    return out


def term_category(result, k: int) -> str:
    """Category of a term that is not in the library, judged from its values.

    A constant is start-up; a term that grows with ``p`` at the middle of the measured range
    is communication-like (overhead that parallelism adds); anything else is compute.
    """
    term = result.terms[k]
    if term == "1":
        return "start-up"
    if "p" not in result.factors or not re.search(r"(?<![A-Za-z0-9_])p(?![A-Za-z0-9_])", term):
        return "compute"
    mid = {
        s: [float(np.sqrt(max(lo, 1e-12) * max(hi, 1e-12))) if lo > 0 else (lo + hi) / 2] * 2
        for s, (lo, hi) in result.factor_ranges.items()
    }
    lo, hi = result.factor_ranges["p"]
    mid["p"] = [max(lo, 1.0), max(hi, 2 * max(lo, 1.0))]
    try:
        v = result.term_values(mid)[k]
    except (PerfModelError, ValueError, KeyError):
        return "other"
    if not np.all(np.isfinite(v)):
        return "other"
    return "communication" if abs(v[1]) > abs(v[0]) * 1.0001 else "compute"


_NETWORK_SYMBOL = re.compile(r"(?<![A-Za-z0-9_])(p|nodes|servers)(?![A-Za-z0-9_])")


def overlap_category(overlaps, terms: list, k: int) -> str | None:
    """Inside an overlap whose sides differ in that, the side that names the workers p (or nodes,
    servers) is communication and the other compute (Pollux: compute ∥ network); else None."""
    for grp in overlaps:
        if k not in grp.terms:
            continue
        uses = [any(_NETWORK_SYMBOL.search(terms[i]) for i in side) for side in (grp.a, grp.b)]
        if uses[0] == uses[1]:
            return None
        mine = uses[0] if k in grp.a else uses[1]
        return "communication" if mine else ("start-up" if terms[k] == "1" else "compute")
    return None


#: The categories, in the order the charts stack them.
CATEGORIES = ("start-up", "compute", "communication", "other")


def library_matches(result) -> tuple[list, list]:
    """(the library term each of ``result``'s terms is, or None; the expression's overlaps)."""
    symbols = list(result.factors)
    canon = library_canon(symbols)
    try:
        expr, _ = parse_expression(result.expression, symbols, {k: tuple(v) for k, v in result.param_bounds.items()})
        term_params = [t.params for t in expr.terms]
        overlaps = expr.overlaps
    except PerfModelError:  # pragma: no cover - a FitResult holds a valid expression
        term_params = [() for _ in result.terms]
        overlaps = []
    return [canon.get(canonical_term(text, term_params[k])) for k, text in enumerate(result.terms)], overlaps


def term_categories(result) -> list[str]:
    """The category of each of ``result``'s terms, in term order: a library term's own, else the side of
    an overlap it is on, else judged from its values (:func:`term_category`)."""
    libs, overlaps = library_matches(result)
    out = []
    for k, lib in enumerate(libs):
        category = (
            lib.category
            if lib is not None
            else (overlap_category(overlaps, result.terms, k) or term_category(result, k))
        )
        out.append(category if category in CATEGORIES else "other")
    return out
