"""The fitted formula as text: numbers as people read them and as Python literals.

:func:`python_text` writes a fit as a plain Python/numpy expression (names, numbers, operators and
``numpy.<function>`` calls only), which :meth:`perfmodel.fitting.result.FitResult.python_expression` returns.
"""

from __future__ import annotations

import math
import re

from ..language.overlap import assemble


def _literal(v: float) -> str:
    """A Python literal for a float (``float('nan')`` and ``float('inf')`` where repr has no literal)."""
    return repr(v) if math.isfinite(v) else f"float({str(v)!r})"


def _fmt(v: float, digits: int) -> str:
    if v == 0:
        return "0"
    if not math.isfinite(v):
        return str(v)
    return f"{v:.{digits}g}"


def _replace_name(text: str, name: str, value: str) -> str:
    return re.sub(rf"(?<![A-Za-z0-9_.]){re.escape(name)}(?![A-Za-z0-9_(])", value, text)


def _replace_call(text: str, name: str, value: str) -> str:
    return re.sub(rf"(?<![A-Za-z0-9_.]){re.escape(name)}\(", value + "(", text)


def python_text(result, numpy: str = "np") -> str:
    """:meth:`FitResult.python_expression`: the fitted model as Python over the factor symbols."""
    expr = result._expression()
    parts = []
    for k, term in enumerate(expr.terms):
        c = _literal(term.sign * float(result.coefficients[f"c{k}"]))
        parts.append(c if term.text == "1" else f"{c} * ({term.text})")
    # overlap(A, B; g) = (A^g + B^g)^(1/g), a side below zero counting as zero (perfmodel.language.overlap)
    text = assemble(
        expr.overlaps,
        len(expr.terms),
        parts,
        lambda items: " + ".join(items) or "0.0",
        lambda a, b, g: f"(max(({a}), 0) ^ {g} + max(({b}), 0) ^ {g}) ^ (1 / {g})",
    )
    text = text.replace("^", "**")
    for name in expr.params:
        text = _replace_name(text, name, f"({_literal(float(result.params[name]))})")
    for fn in ("log2", "log10", "log", "sqrt", "ceil", "floor", "exp", "abs", "min", "max"):
        np_fn = {"min": "minimum", "max": "maximum"}.get(fn, fn)
        text = _replace_call(text, fn, f"{numpy}.{np_fn}")
    used = expr.symbols
    if "I" in used:
        epochs = "E * " if "E" in result.factors else ""
        workers = "p * " if "p" in result.factors else ""
        text = _replace_name(text, "I", f"({epochs}{numpy}.ceil(N / ({workers}b)))")
    if "b" not in result.factors and "B" in result.factors and ("b" in used or "I" in used):
        text = _replace_name(text, "b", "(B / p)" if "p" in result.factors else "B")  # per-worker batch
    return text
