"""LaTeX rendering of expressions (symbolic, or with fitted numbers).

Imports from the model language only.
"""

from __future__ import annotations

import ast

from .expression import Expression, _call_name, _number
from .overlap import assemble

_FUNC = {"log2": r"\log_2", "log": r"\ln", "log10": r"\log_{10}", "exp": r"\exp", "min": r"\min", "max": r"\max"}


def _num(v: float, digits: int) -> str:
    text = f"{v:.{digits}g}"
    if "e" in text:
        mant, exp = text.split("e")
        return rf"{mant}\times 10^{{{int(exp)}}}"
    return text


def _sym(name: str) -> str:
    if len(name) == 1:
        return name
    if "_" in name:
        head, tail = name.split("_", 1)
        return rf"{_sym(head)}_{{\mathrm{{{tail}}}}}"
    if name[0].isalpha() and name[1:].isdigit():
        return rf"{name[0]}_{{{name[1:]}}}"
    return rf"\mathrm{{{name}}}"


def node_latex(node: ast.AST, params: dict | None = None, digits: int = 4) -> tuple[str, int]:
    """(LaTeX, precedence) of an expression subtree; free parameters replaced by ``params``."""
    params = params or {}
    if isinstance(node, ast.Constant):
        return _num(_number(node.value), digits), 5
    if isinstance(node, ast.Name):
        if node.id in params:
            return _num(params[node.id], digits), 5
        return _sym(node.id), 5
    if isinstance(node, ast.Call):
        args = [node_latex(a, params, digits)[0] for a in node.args]
        name = _call_name(node)
        if name == "sqrt":
            return rf"\sqrt{{{args[0]}}}", 5
        if name == "ceil":
            return rf"\left\lceil {args[0]} \right\rceil", 5
        if name == "floor":
            return rf"\left\lfloor {args[0]} \right\rfloor", 5
        if name == "abs":
            return rf"\left| {args[0]} \right|", 5
        return rf"{_FUNC[name]}\left({', '.join(args)}\right)", 5
    if isinstance(node, ast.UnaryOp):
        text, p = node_latex(node.operand, params, digits)
        return "-" + (rf"\left({text}\right)" if p < 3 else text), 3
    if isinstance(node, ast.BinOp):
        left, lp = node_latex(node.left, params, digits)
        right, rp = node_latex(node.right, params, digits)
        if isinstance(node.op, ast.Div):
            return rf"\frac{{{left}}}{{{right}}}", 5
        if isinstance(node.op, ast.Pow):
            if lp < 5 or (isinstance(node.left, ast.Call) and _call_name(node.left) in _FUNC):
                left = rf"\left({left}\right)"
            return f"{left}^{{{right}}}", 4
        if isinstance(node.op, ast.Mult):
            left = rf"\left({left}\right)" if lp < 2 else left
            right = rf"\left({right}\right)" if rp < 3 else right
            return rf"{left} \cdot {right}", 2
        op = "+" if isinstance(node.op, ast.Add) else "-"
        if isinstance(node.op, ast.Sub) and rp <= 1:
            right = rf"\left({right}\right)"
        return f"{left} {op} {right}", 1
    raise ValueError(type(node).__name__)  # pragma: no cover


def to_latex(expr: Expression, coefficients=None, params: dict | None = None, digits: int = 4) -> str:
    """``T = ...`` in LaTeX; symbolic constants ``c_k`` when ``coefficients`` is None."""
    pieces: list[tuple[bool, str] | None] = []  # None: a dropped term
    for k, term in enumerate(expr.terms):
        body, prec = node_latex(term.node, params, digits)
        if coefficients is None:
            coef, negative = f"c_{{{k}}}", term.sign < 0
        else:
            value = term.sign * float(coefficients[k])
            if value == 0 and len(expr.terms) > 1:  # a dropped term leaves the formula
                pieces.append(None)
                continue
            coef, negative = _num(abs(value), digits), value < 0
        if term.is_constant:
            text = coef
        else:
            body = rf"\left({body}\right)" if prec < 2 else body
            text = rf"{coef} \, {body}"
        pieces.append((negative, text))

    def join(items):
        out = []
        for neg, text in items:
            out.append((("- " if neg else "+ ") if out else ("-" if neg else "")) + text)
        return " ".join(out) or "0"

    def group(a, b, g):  # overlap(A, B; g) = (A^g + B^g)^(1/g)
        gl = _num(params[g], digits) if params and g in params else _sym(g)
        return False, (
            rf"\left( \left({a}\right)^{{{gl}}} + \left({b}\right)^{{{gl}}} "
            rf"\right)^{{1/{gl}}}"
        )

    return "T = " + assemble(expr.overlaps, len(expr.terms), pieces, join, group)
