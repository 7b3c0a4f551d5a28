"""Hold-out queries: comparisons over symbols (``p > 8``, ``p >= 16 and N < 1e6``) as a boolean mask.

Parsed the same safe way as model expressions (:mod:`perfmodel.language.expression`): :mod:`ast`
against an allow-list, evaluated by walking the tree over numpy arrays, never ``eval``.
"""

from __future__ import annotations

import ast
import re

import numpy as np

from ..errors import PerfModelError, did_you_mean
from .expression import _evaluate, _fail, _names, _validate

_CMP = {
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
}


def evaluate_query(query: str, env: dict[str, np.ndarray]) -> np.ndarray:
    """Boolean mask for a query such as ``p > 8`` or ``p >= 16 and N < 1e6``.

    Names are symbols or column names (``env`` keys); comparisons may be joined with
    ``and``/``or``/``not`` and use + - * / ^ and the allowed functions.
    """
    if not isinstance(query, str) or not query.strip():
        raise PerfModelError("the hold-out query is empty; write e.g. 'p > 8'")
    if len(query) > 500:
        raise PerfModelError("the hold-out query is too long (limit 500 characters)")
    m = re.search(r"[^A-Za-z0-9_\s+\-*/^().,<>=!&|]", query)
    if m:
        raise PerfModelError(f"character {m.group(0)!r} is not allowed in a query")
    if re.search(r"(?<![A-Za-z0-9_])_\w*", query):
        raise PerfModelError("names may not start with '_' in a query")
    source = query.replace("^", "**").replace("&&", " and ").replace("||", " or ")
    source = source.replace("&", " and ").replace("|", " or ").strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise PerfModelError(f"cannot parse the query {query!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise PerfModelError(f"the query {query!r} is nested too deeply") from None
    if not env:
        raise PerfModelError("the data has no numeric column a query could name")
    n = len(next(iter(env.values())))

    def ev(node):
        if isinstance(node, ast.BoolOp):
            vals = [ev(v) for v in node.values]
            f = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            return f.reduce(vals)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ~ev(node.operand)
        if isinstance(node, ast.Compare):
            left = arith(node.left)
            result = np.ones(n, bool)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                if type(op) not in _CMP:
                    raise _fail("only < <= > >= == != are allowed", source, node)
                right = arith(comp)
                result &= np.broadcast_to(_CMP[type(op)](left, right), (n,))
                left = right
            return result
        raise _fail("the query must be a comparison such as 'p > 8'", source, node)

    def arith(node):
        sub = ast.Expression(node)
        _validate(sub, source)
        for name in _names(node):
            if name not in env:
                raise PerfModelError(
                    f"unknown name {name!r} in the query{did_you_mean(name, list(env))}; known: {', '.join(env)}"
                )
        with np.errstate(all="ignore"):
            return _evaluate(node, env, {})

    mask = np.asarray(ev(tree.body), bool)
    return np.broadcast_to(mask, (n,)).copy()
