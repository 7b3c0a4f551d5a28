"""Safe parser for model expressions, compiled to vectorised numpy.

A model is a sum of terms, e.g. ``1 + N/(p*b)*b^e1 + N/(p*b)*log2(p) + p``. Top-level ``+``
separates terms (a top-level ``-`` enters the term negated); each term gets one fitted
coefficient and ``1`` is the intercept. Names are factor symbols, the derived iteration
count ``I`` (= E·ceil(N/(p·b))), or otherwise free parameters (exponents) fitted within
bounds, [-3, 3] unless set.

``overlap(A, B; g)`` = ``(A^g + B^g)^(1/g)`` says that two groups of terms overlap (e.g. compute
and communication); its terms keep their own coefficients, ``g`` is a free parameter in [1, 10].
See :mod:`perfmodel.language.overlap` for its rules and for how contributions split the overlapped time.

User text is parsed with :mod:`ast` against an allow-list and evaluated by walking the
tree over numpy arrays; it never reaches ``eval``/``exec``.

The lowest layer: imports from perfmodel.errors and perfmodel.language.overlap only.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import PerfModelError, did_you_mean
from . import overlap as _ov

MAX_LENGTH = 2000
MAX_NODES = 600
MAX_CONST_EXPONENT = 16.0
DEFAULT_PARAM_BOUNDS = (-3.0, 3.0)
ITERATIONS = "I"
#: The global batch (all workers together); when it is mapped and the per-worker batch b is not,
#: terms may use b, derived as B/p.
GLOBAL_BATCH = "B"


def _min(*args):
    return np.minimum.reduce(np.broadcast_arrays(*args))


def _max(*args):
    return np.maximum.reduce(np.broadcast_arrays(*args))


#: name -> (numpy function, min args, max args, one-line meaning)
FUNCTIONS: dict[str, tuple] = {
    "log2": (np.log2, 1, 1, "base-2 logarithm (tree depth)"),
    "log": (np.log, 1, 1, "natural logarithm"),
    "log10": (np.log10, 1, 1, "base-10 logarithm"),
    "sqrt": (np.sqrt, 1, 1, "square root"),
    "ceil": (np.ceil, 1, 1, "round up"),
    "floor": (np.floor, 1, 1, "round down"),
    "exp": (np.exp, 1, 1, "exponential"),
    "abs": (np.abs, 1, 1, "absolute value"),
    "min": (_min, 2, 8, "smallest argument"),
    "max": (_max, 2, 8, "largest argument"),
}
_DOMAIN = {"log2": "> 0", "log": "> 0", "log10": "> 0", "sqrt": ">= 0"}

_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
_OP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^"}
_FORBIDDEN_NAMES = {
    ast.Attribute: "attribute access ('.')",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.Subscript: "indexing ('[...]')",
    ast.IfExp: "'if' expressions",
    ast.Compare: "comparisons",
    ast.BoolOp: "'and'/'or'",
    ast.Starred: "'*' unpacking",
    ast.NamedExpr: "':=' assignment",
    ast.Await: "await",
    ast.Dict: "dicts",
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Set: "sets",
    ast.JoinedStr: "f-strings",
}
_ALLOWED_CHARS = re.compile(r"[A-Za-z0-9_\s+\-*/^().,;]")


def to_display(text: str) -> str:
    """Python source -> user syntax (``**`` shown as ``^``)."""
    return text.replace("**", "^")


def _fail(msg: str, source: str, node: ast.AST | None = None) -> PerfModelError:
    if node is not None and hasattr(node, "col_offset"):
        seg = ast.get_source_segment(source, node) or ""
        if seg:
            return PerfModelError(f"{msg} in {to_display(seg)!r}")
    return PerfModelError(msg)


def _lex_check(spec: str) -> str:
    if not isinstance(spec, str):
        raise PerfModelError("the expression must be text")
    if len(spec) > MAX_LENGTH:
        raise PerfModelError(f"the expression is {len(spec)} characters long; the limit is {MAX_LENGTH}")
    if not spec.strip():
        raise PerfModelError("the expression is empty; write terms such as '1 + N/p + log2(p)'")
    m = re.search(r"(?<![A-Za-z0-9_])_\w*", spec)
    if m:
        raise PerfModelError(f"name {m.group(0)!r} is not allowed (names may not start with '_')")
    for i, ch in enumerate(spec):
        if not _ALLOWED_CHARS.fullmatch(ch):
            raise PerfModelError(
                f"character {ch!r} at position {i + 1} is not allowed; use numbers, "
                "names, + - * / ^ ( ) and the functions "
                f"{', '.join(FUNCTIONS)}, overlap(A, B; g)"
            )
    if "**" in spec:
        raise PerfModelError("write powers as 'x^2', not 'x**2'")
    return _ov.pretokenise(spec).replace("^", "**")


def _user_position(spec: str, offset: int) -> int:
    """The 1-based position in the user's ``spec`` of ``offset`` (1-based) in the parsed source, which
    is ``spec`` with its leading blanks stripped and each ``^`` written as ``**``."""
    target = offset + (len(spec) - len(spec.lstrip()))  # the source was stripped
    length = 0
    for i, ch in enumerate(spec):
        length += 2 if ch == "^" else 1
        if length >= target:
            return i + 1
    return len(spec) + 1  # past the end: where a missing piece would go


def _number(value) -> float:
    """A literal's value as a float; integers too large for a float are infinite."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _call_name(node: ast.Call) -> str:
    """The function a call names: the parser admits calls of plain names only (``_validate``)."""
    if not isinstance(node.func, ast.Name):  # pragma: no cover - refused when parsed
        raise PerfModelError("only named functions can be called")
    return node.func.id


def _const_value(node: ast.AST) -> float | None:
    """Value of a subtree made only of numbers and operators, else None."""
    with np.errstate(all="ignore"):
        return _const_value_of(node)


def _const_value_of(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            return None
        return _number(node.value)
    if isinstance(node, ast.UnaryOp):
        v = _const_value_of(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp):
        a, b = _const_value_of(node.left), _const_value_of(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Pow):
            if abs(b) > MAX_CONST_EXPONENT:
                return math.inf
            try:
                return float(a**b) if not (a < 0 and b != int(b)) else math.nan
            except (OverflowError, ZeroDivisionError):
                return math.inf
        try:
            return float(_BINOPS[type(node.op)](a, b))
        except ZeroDivisionError:
            return math.inf
    return None


def _validate(tree: ast.AST, source: str) -> None:
    count = 0
    for node in ast.walk(tree):
        count += 1
        if count > MAX_NODES:
            raise PerfModelError(f"the expression has more than {MAX_NODES} parts; simplify it")
        kind = type(node)
        if kind in _FORBIDDEN_NAMES:
            raise _fail(f"{_FORBIDDEN_NAMES[kind]} is not allowed", source, node)
        if isinstance(node, (ast.Expression, ast.Load)) or kind in _BINOPS or kind in _OP_TEXT:
            continue
        if isinstance(node, (ast.USub, ast.UAdd)):
            continue
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise _fail("only + - * / ^ are allowed as operators", source, node)
            if isinstance(node.op, ast.Pow):
                e = _const_value(node.right)
                if e is not None and (not math.isfinite(e) or abs(e) > MAX_CONST_EXPONENT):
                    raise _fail(f"exponent too large (limit {MAX_CONST_EXPONENT:g})", source, node)
                if (
                    isinstance(node.right, ast.BinOp)
                    and isinstance(node.right.op, ast.Pow)
                    and _const_value(node.right) is not None
                ):
                    raise _fail("stacked constant powers like 9^9^9 are not allowed", source, node)
            continue
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise _fail("only '-' is allowed as a sign", source, node)
            continue
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise _fail("only plain numbers are allowed as constants", source, node)
            if not math.isfinite(_number(node.value)) or abs(_number(node.value)) > 1e300:
                raise _fail("number out of range (limit 1e300)", source, node)
            continue
        if isinstance(node, ast.Name):
            continue
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise _fail("only named functions can be called", source, node)
            name = node.func.id
            if name == _ov.NAME:
                _validate_overlap(node, source)
                continue
            if name not in FUNCTIONS:
                raise _fail(
                    f"function {name!r} is not allowed{did_you_mean(name, list(FUNCTIONS))}; "
                    f"allowed: {', '.join(FUNCTIONS)}",
                    source,
                    node,
                )
            if node.keywords:
                raise _fail(f"{name}() takes no keyword arguments", source, node)
            _, lo, hi, _ = FUNCTIONS[name]
            if not lo <= len(node.args) <= hi:
                want = f"{lo}" if lo == hi else f"{lo} to {hi}"
                raise _fail(f"{name}() takes {want} argument(s), got {len(node.args)}", source, node)
            continue
        raise _fail(f"{kind.__name__} is not allowed", source, node)


def _validate_overlap(node: ast.Call, source: str) -> None:
    if node.keywords or len(node.args) != 3:
        raise _fail(
            f"overlap() takes three arguments, overlap(A, B; g), got {len(node.args) + len(node.keywords)}",
            source,
            node,
        )
    g = node.args[2]
    if not isinstance(g, ast.Name):
        raise _fail(
            f"the last argument of overlap() must be a parameter name such as g, got "
            f"{to_display(ast.get_source_segment(source, g) or '?')!r}",
            source,
            node,
        )
    for side in node.args[:2]:
        for inner in ast.walk(side):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == _ov.NAME:
                raise _fail("overlap() cannot be nested inside another overlap()", source, inner)
        if g.id in _names(side):
            raise _fail(f"overlap parameter {g.id!r} is also used inside the overlap", source, node)


def _is_overlap(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == _ov.NAME


def _contains_overlap(node: ast.AST) -> bool:
    return any(_is_overlap(n) for n in ast.walk(node))


def _overlap_piece(node: ast.AST, source: str):
    """(overlap call, multiplier node or None) when ``node`` is a whole-term overlap, else None."""
    if _is_overlap(node):
        return node, None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for call, other in ((node.right, node.left), (node.left, node.right)):
            if _is_overlap(call) and not _contains_overlap(other):
                return call, other
    if _contains_overlap(node):
        raise _fail(
            "overlap(A, B; g) must be a term of its own, optionally times a factor (I*overlap(A, B; g))", source, node
        )
    return None


def _scaled(node: ast.expr, factor: ast.expr | None) -> ast.expr:
    if factor is None:
        return node
    if _const_value(node) is not None:
        return factor
    return ast.BinOp(left=factor, op=ast.Mult(), right=node)


def _names(node: ast.AST) -> set[str]:
    calls = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in calls}


def _base_names(node: ast.AST) -> set[str]:
    """Names of ``node`` outside every exponent (the right side of ``^``) and outside function names."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _base_names(node.left)
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Call):
        return set().union(*(_base_names(a) for a in node.args))
    return set().union(set(), *(_base_names(c) for c in ast.iter_child_nodes(node)))


def unmapped_names(expr: Expression) -> list[str]:
    """Free parameters that stand where a factor would (``q`` in ``1 + q*p``), not as an exponent
    (``b^e1``) or an overlap's parameter: most likely a factor that is not mapped or a typo; the fit
    keeps them as free parameters, so callers warn with :func:`unmapped_name_notice`."""
    bases = set().union(set(), *(_base_names(t.node) for t in expr.terms))
    return [n for n in expr.params if n in bases]


def unmapped_name_notice(name: str) -> str:
    """The warning for one of :func:`unmapped_names`."""
    return f"{name} is not a factor; fitted as a free parameter"


def _split_terms(node: ast.expr, sign: float = 1.0) -> list[tuple[float, ast.expr]]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        right_sign = sign if isinstance(node.op, ast.Add) else -sign
        return _split_terms(node.left, sign) + _split_terms(node.right, right_sign)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _split_terms(node.operand, -sign)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return _split_terms(node.operand, sign)
    return [(sign, node)]


def _render(node: ast.AST) -> str:
    """Compact user-syntax text of a subtree (``^`` for powers, minimal parentheses)."""
    return _render_prec(node)[0]


def _render_prec(node: ast.AST) -> tuple[str, int]:
    prec = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.Pow: 4}
    if isinstance(node, ast.Constant):
        v = _number(node.value)
        return (str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)), 5
    if isinstance(node, ast.Name):
        return node.id, 5
    if isinstance(node, ast.Call):
        return f"{_call_name(node)}({', '.join(_render(a) for a in node.args)})", 5
    if isinstance(node, ast.UnaryOp):
        text, p = _render_prec(node.operand)
        return "-" + (f"({text})" if p < 3 else text), 3
    if isinstance(node, ast.BinOp):
        p = prec[type(node.op)]
        left, lp = _render_prec(node.left)
        right, rp = _render_prec(node.right)
        if lp < p or (p == 4 and lp == 4):
            left = f"({left})"
        if rp < p or (rp == p and isinstance(node.op, (ast.Sub, ast.Div))):
            right = f"({right})"
        sep = " " if p == 1 else ""
        return f"{left}{sep}{_OP_TEXT[type(node.op)]}{sep}{right}", p
    raise PerfModelError(f"cannot render {type(node).__name__}")  # pragma: no cover


@dataclass
class Term:
    """One additive term: ``sign * node``; ``text`` is its user-syntax form."""

    text: str
    node: ast.expr
    sign: float
    names: frozenset
    params: tuple  # free parameters it uses, in expression order

    @property
    def is_constant(self) -> bool:
        """True for a term with no names at all (the intercept ``1``)."""
        return not self.names


@dataclass
class Expression:
    """A parsed model: terms, factor symbols, free parameters and their bounds."""

    spec: str
    terms: list[Term]
    symbols: tuple  # factor symbols used (and the derived I)
    params: tuple  # free parameter names, in order of appearance
    bounds: dict = field(default_factory=dict)  # param -> (lo, hi)
    overlaps: list = field(default_factory=list)  # overlap groups (perfmodel.language.overlap.Overlap)

    @property
    def is_linear(self) -> bool:
        """True when the model is linear in its constants (no free parameters)."""
        return not self.params

    def text(self) -> str:
        """The normalised expression in user syntax."""
        pieces = [(t.sign < 0, t.text) for t in self.terms]
        return _ov.assemble(
            self.overlaps, len(self.terms), pieces, _ov.join_signed, lambda a, b, g: (False, f"overlap({a}, {b}; {g})")
        )

    def combine(self, parts: np.ndarray, theta) -> np.ndarray:
        """Contributions (K, ...) from the terms' plain values ``parts`` = c_k·term_k (K, ...):
        ``parts`` itself without overlaps; see :func:`perfmodel.language.overlap.combine`."""
        return _ov.combine(self.overlaps, self.params, parts, theta)

    def predict_from(self, parts: np.ndarray, theta) -> np.ndarray:
        """The prediction, Σ_k of the contributions, from the plain values ``parts`` (K, ...)."""
        return self.combine(parts, theta).sum(axis=0)

    # -- evaluation ----------------------------------------------------------
    def term_values(
        self, env: dict[str, np.ndarray], theta: np.ndarray | None = None, only: list[int] | None = None
    ) -> list[np.ndarray]:
        """Values of each term (sign included).

        ``env`` maps symbols to arrays of shape (n,). ``theta`` holds the free parameters
        in ``self.params`` order: shape (M,) gives arrays (n,), shape (M, S) a population
        and arrays broadcastable to (S, n).
        """
        env = with_iterations(env, self.symbols)
        pvals: dict[str, np.ndarray] = {}
        if self.params:
            if theta is None:
                raise PerfModelError(f"values needed for free parameter(s) {', '.join(self.params)}")
            theta = np.asarray(theta, dtype=float)
            for i, name in enumerate(self.params):
                pvals[name] = theta[i] if theta.ndim == 1 else theta[i][:, None]
        out: list = []  # arrays, and None for a term left out by ``only``
        with np.errstate(all="ignore"):
            for k, term in enumerate(self.terms):
                if only is not None and k not in only:
                    out.append(None)
                    continue
                val = _evaluate(term.node, env, pvals)
                out.append(term.sign * np.asarray(val, dtype=float))
        return out

    def check_domain(self, env: dict[str, np.ndarray], rows: np.ndarray | None = None) -> None:
        """Refuse logs of values <= 0 (and square roots of negatives) that come from the data."""
        env = with_iterations(env, self.symbols)
        n = len(next(iter(env.values()))) if env else 0
        rows = np.arange(1, n + 1) if rows is None else rows
        for term in self.terms:
            for node in ast.walk(term.node):
                if not (isinstance(node, ast.Call) and _call_name(node) in _DOMAIN):
                    continue
                if _names(node.args[0]) & set(self.params):
                    continue
                with np.errstate(all="ignore"):
                    arg = np.broadcast_to(np.asarray(_evaluate(node.args[0], env, {}), float), (n,))
                bad = arg <= 0 if _DOMAIN[_call_name(node)] == "> 0" else arg < 0
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise PerfModelError(
                        f"{_render(node)} needs its argument {_DOMAIN[_call_name(node)]}, but it is "
                        f"{arg[i]:g} at row {rows[i]} (term {term.text!r}); "
                        f"{int(bad.sum())} row(s) affected"
                    )


def with_iterations(env: dict[str, np.ndarray], symbols) -> dict[str, np.ndarray]:
    """Add the derived symbols the expression uses: the per-worker batch b = B/p when only the
    global batch B is mapped, and the iteration count I = E·ceil(N/(p·b))."""
    if "b" not in env and GLOBAL_BATCH in env and ({"b", ITERATIONS} & set(symbols)):
        n = len(env[GLOBAL_BATCH])
        with np.errstate(all="ignore"):
            env = {**env, "b": np.asarray(env[GLOBAL_BATCH], float) / env.get("p", np.ones(n))}
    if ITERATIONS not in symbols or ITERATIONS in env:
        return env
    missing = [s for s in ("N", "b") if s not in env]
    if missing:
        raise PerfModelError(
            f"'I' (iterations = E·ceil(N/(p·b))) needs the symbol(s) "
            f"{', '.join(m if m != 'b' else 'b (or the global batch B)' for m in missing)} "
            "mapped to columns"
        )
    n = len(env["N"])
    p = env.get("p", np.ones(n))
    e = env.get("E", np.ones(n))
    with np.errstate(all="ignore"):
        it = e * np.ceil(env["N"] / (p * env["b"]))
    return {**env, ITERATIONS: it}


def _evaluate(node: ast.AST, env: dict, pvals: dict):
    if isinstance(node, ast.Constant):
        return _number(node.value)
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        return pvals[node.id]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_evaluate(node.left, env, pvals), _evaluate(node.right, env, pvals))
    if isinstance(node, ast.UnaryOp):
        v = _evaluate(node.operand, env, pvals)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call):
        name = _call_name(node)
        if name not in FUNCTIONS:  # overlap(): only a whole term of a model (see parse_expression)
            raise PerfModelError(f"{name}() can only be a term of a model, not part of a value")
        func = FUNCTIONS[name][0]
        return func(*[_evaluate(a, env, pvals) for a in node.args])
    raise PerfModelError(f"cannot evaluate {type(node).__name__}")  # pragma: no cover


def parse_expression(
    spec: str, symbols, bounds: dict | None = None, columns: list[str] | None = None
) -> tuple[Expression, dict]:
    """Parse and validate ``spec`` for the given factor ``symbols``.

    Returns ``(expression, leftover)``: ``leftover`` holds the entries of ``bounds`` that
    name no free parameter (coefficient bounds such as ``c1``, checked by the fitter).

    ``bounds`` sets (lo, hi) of free parameters (default [-3, 3]). ``columns`` (the data's
    column names) turns a name that is an unmapped column into a clear error instead of
    a silently free parameter.
    """
    symbols = set(symbols)
    if GLOBAL_BATCH in symbols:
        symbols.add("b")  # derived: b = B/p (see with_iterations)
    source = _lex_check(spec)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        where = f" at position {_user_position(spec, exc.offset)}" if exc.offset else ""
        raise PerfModelError(f"cannot parse the expression{where}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise PerfModelError("the expression is nested too deeply; simplify it") from None
    source = source.strip()
    _validate(tree, source)
    pieces, groups = _expand_overlaps(_split_terms(tree.body), source, symbols)
    terms: list[Term] = []
    params: list[str] = []
    used: list[str] = []
    seen_text: set[str] = set()
    last_of_group = {grp[1][-1]: grp[0] for grp in groups}
    for index, (sign, node) in enumerate(pieces):
        names = _names(node)
        for name in sorted(names, key=lambda n: source.find(n)):
            if name in FUNCTIONS:
                raise _fail(f"{name!r} is a function; call it like {name}(x)", source, node)
            if name in symbols or name == ITERATIONS:
                if name not in used:
                    used.append(name)
            else:
                if columns is not None and name in columns:
                    raise PerfModelError(
                        f"{name!r} in term {to_display(ast.get_source_segment(source, node) or _render(node))!r}"
                        f" is a data column, not a mapped symbol; map it "
                        f"(e.g. {name}={name}) or use its symbol"
                    )
                if name not in params:
                    params.append(name)
        const = _const_value(node)
        if const is not None and const != 1.0:
            if not math.isfinite(const):
                raise _fail("this constant term is not a finite number", source, node)
            node = ast.Constant(1)  # a constant term is the intercept; its scale is fitted
        text = _render(node)
        if text in seen_text:
            raise PerfModelError(f"term {text!r} appears twice")
        seen_text.add(text)
        tparams = tuple(n for n in params if n in names)
        if not names and const is None:  # pragma: no cover - a nameless term is constant
            raise _fail("term has no value", source, node)
        terms.append(Term(text, node, 1.0 if const is not None else sign, frozenset(names), tparams))
        if index in last_of_group:
            gname = last_of_group[index]
            if gname in params:
                raise PerfModelError(
                    f"overlap parameter {gname!r} is also used by another term; "
                    "give each overlap its own parameter name"
                )
            if columns is not None and gname in columns:
                raise PerfModelError(f"overlap parameter {gname!r} is a data column; use another name such as g")
            params.append(gname)
    overlaps = [
        _ov.Overlap(tuple(a), tuple(b), g)
        for g, a, b in ((grp[0], grp[1][: grp[2]], grp[1][grp[2] :]) for grp in groups)
    ]
    inner = {p for grp in overlaps for k in grp.terms for p in terms[k].params}
    for grp in overlaps:
        if grp.param in inner or any(grp.param in t.names for t in terms):
            raise PerfModelError(
                f"overlap parameter {grp.param!r} is also used by another term; "
                "give each overlap its own parameter name"
            )
    for t in terms:
        if any(n in symbols or n == ITERATIONS for n in t.names):
            continue
        if t.names:
            raise PerfModelError(
                f"term {t.text!r} uses no factor symbol, only free parameter(s) "
                f"{', '.join(sorted(t.names))}: it would be a constant; "
                f"known symbols: {', '.join(sorted(symbols)) or 'none mapped'}"
            )
    all_bounds: dict[str, tuple] = {}
    bounds = dict(bounds or {})
    gammas = {grp.param for grp in overlaps}
    for name in params:
        lo, hi = bounds.pop(name, _ov.DEFAULT_BOUNDS if name in gammas else DEFAULT_PARAM_BOUNDS)
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise PerfModelError(f"bounds of {name!r} must be finite with low < high, got {lo:g}:{hi:g}")
        all_bounds[name] = (lo, hi)
        if name in gammas and lo < 0:
            raise PerfModelError(f"bounds of overlap parameter {name!r} must be >= 0, got {lo:g}:{hi:g}")
    return Expression(
        spec=spec, terms=terms, symbols=tuple(used), params=tuple(params), bounds=all_bounds, overlaps=overlaps
    ), bounds


def _expand_overlaps(pieces: list, source: str, symbols: set) -> tuple[list, list]:
    """Top-level pieces with every overlap replaced by its inner terms (a multiplier distributed);
    returns (pieces, groups) with groups ``(param, [piece indices of A then B], len(A))``."""
    out: list = []
    groups: list = []
    for sign, node in pieces:
        found = _overlap_piece(node, source)
        if found is None:
            out.append((sign, node))
            continue
        call, factor = found
        if sign < 0:
            raise _fail("an overlap cannot be subtracted", source, node)
        gname = call.args[2].id
        if gname in symbols or gname == ITERATIONS:
            raise _fail(f"the overlap parameter {gname!r} is a factor symbol; use a free name such as g", source, call)
        if gname in FUNCTIONS or gname == _ov.NAME:
            raise _fail(f"the overlap parameter {gname!r} is a function name; use a free name such as g", source, call)
        if any(gname == g for g, _, _ in groups):
            raise _fail(f"overlap parameter {gname!r} is used by two overlaps; give each its own name", source, call)
        idx = []
        sides = [_split_terms(call.args[0]), _split_terms(call.args[1])]
        for side in sides:
            for s, inner in side:
                idx.append(len(out))
                out.append((s, _scaled(inner, factor)))
        groups.append((gname, idx, len(sides[0])))
    return out, groups


def parse_bounds(items) -> dict[str, tuple[float, float]]:
    """Parse ``NAME=LO:HI`` strings (or a dict) into {name: (lo, hi)}."""
    if isinstance(items, dict):
        return {k: (float(v[0]), float(v[1])) for k, v in items.items()}
    out: dict[str, tuple[float, float]] = {}
    for item in items or []:
        m = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*([^:]+):([^:]+)\s*", item)
        if not m:
            raise PerfModelError(f"bounds {item!r} must look like NAME=LO:HI, e.g. e1=0:2")
        try:
            lo, hi = float(m.group(2)), float(m.group(3))
        except ValueError:
            raise PerfModelError(f"bounds {item!r}: LO and HI must be numbers") from None
        if not lo < hi:
            raise PerfModelError(f"bounds {item!r}: LO must be below HI")
        out[m.group(1)] = (lo, hi)
    return out
