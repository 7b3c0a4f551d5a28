"""Leaving factors that are constant in the data out of an expression.

A factor with one value cannot be told apart from the intercept: :func:`without_constant_factors`
folds the multiplicative pieces that depend only on such factors into the coefficient and drops a
term that becomes a constant. Works on the parsed expression tree (no text is evaluated).

Imports from :mod:`perfmodel.language.expression` only.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import numpy as np

from ..errors import PerfModelError
from .expression import ITERATIONS, _evaluate, _lex_check, _names, _render, _split_terms, with_iterations


def _factors_of(node: ast.expr, invert: bool = False) -> list[tuple[bool, ast.expr]]:
    """Top-level multiplicative pieces of a term: ``[(in_denominator, node), ...]``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors_of(node.left, invert) + _factors_of(node.right, invert)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _factors_of(node.left, invert) + _factors_of(node.right, not invert)
    return [(invert, node)]


def _product(nodes: list[ast.expr]) -> ast.expr | None:
    out: ast.expr | None = None
    for n in nodes:
        out = n if out is None else ast.BinOp(out, ast.Mult(), n)
    return out


def without_constant_factors(spec: str, symbols: Sequence[str], constant: dict[str, float]) -> tuple[str, list[str]]:
    """``spec`` with the factors in ``constant`` (symbol -> its one value) left out.

    Each term's multiplicative pieces that depend only on constant symbols (``b^e1`` when ``b`` is
    constant; ``I`` when N, b, p and E all are) are folded into the term's coefficient; a term left
    with no varying piece is a constant, i.e. the intercept, and is dropped (or becomes ``1`` when
    the model has no intercept); a term that turns into a copy of an earlier one is dropped.
    Returns ``(new_spec, changes)`` with one line per change; ``spec`` unchanged when nothing
    depends on a constant factor.
    """
    const = set(constant)
    if not const:
        return spec, []
    mapped = set(symbols)
    iteration_deps = {s for s in ITERATION_SYMBOLS if s in mapped}

    def symbols_of(names: set[str]) -> set[str]:
        syms = {n for n in names if n in mapped}
        if ITERATIONS in names:
            syms |= iteration_deps
        return syms

    def uses_symbols(names: set[str]) -> bool:
        return bool({n for n in names if n in mapped} or ITERATIONS in names)

    env = {s: np.array([float(v)]) for s, v in constant.items()}
    if iteration_deps <= const and {"N", "b"} <= iteration_deps:
        env = with_iterations(env, (ITERATIONS,))
    tree = ast.parse(_lex_check(spec).strip(), mode="eval")
    kept: list[tuple[float, str, bool]] = []
    changes: list[str] = []
    folded_into_intercept = False
    for sign, node in _split_terms(tree.body):
        before = _render(node)
        names = _names(node)
        if not uses_symbols(names) or not (symbols_of(names) & const):
            kept.append((sign, before, uses_symbols(names)))
            continue
        num: list[ast.expr] = []
        den: list[ast.expr] = []
        zero = None
        for in_den, piece in _factors_of(node):
            pnames = _names(piece)
            if uses_symbols(pnames) and not symbols_of(pnames) - const:
                if not in_den and _value(piece, env) == 0:
                    zero = _render(piece)
                continue  # depends only on constant factors: part of the coefficient now
            (den if in_den else num).append(piece)
        if zero is not None:
            changes.append(f"term {before} is 0 here ({zero} = 0): dropped")
            continue
        if not any(uses_symbols(_names(p)) for p in num + den):
            changes.append(f"term {before} is constant here: dropped (the intercept carries it)")
            folded_into_intercept = True
            continue
        top = _product(num) or ast.Constant(1)
        bottom = _product(den)
        after = _render(top if bottom is None else ast.BinOp(top, ast.Div(), bottom))
        if after != before:
            changes.append(f"{before} -> {after}")
        kept.append((sign, after, True))
    seen: set[str] = set()
    unique = []
    for sign, text, varies in kept:
        if text in seen:
            changes.append(f"term {text} appears twice after that: kept once")
            continue
        seen.add(text)
        unique.append((sign, text, varies))
    if folded_into_intercept and all(varies for _, _, varies in unique):
        unique.insert(0, (1.0, "1", False))
    if not changes:
        return spec, []
    out = ""
    for i, (sign, text, _) in enumerate(unique):
        if i == 0:
            out = ("-" if sign < 0 else "") + text
        else:
            out += (" - " if sign < 0 else " + ") + text
    return out, changes


def _value(node: ast.AST, env: dict) -> float | None:
    """Value of a piece over constant symbols only (None when it has free parameters)."""
    try:
        with np.errstate(all="ignore"):
            return float(np.asarray(_evaluate(node, env, {})).ravel()[0])
    except (KeyError, PerfModelError):
        return None


#: Symbols the iteration count ``I = E·ceil(N/(p·b))`` depends on.
ITERATION_SYMBOLS = ("N", "b", "p", "E")
