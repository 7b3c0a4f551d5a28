"""Overlap of two groups of terms: ``overlap(A, B; g)`` = ``(A^g + B^g)^(1/g)``.

A and B are sums of terms, each term with its own fitted coefficient, e.g. compute and
communication of one training step: ``overlap(I + I*b, I*log2(p); g)``. ``g`` is a free
parameter (γ, bounds [1, 10] unless set): g = 1 is the plain sum A + B (no overlap), large g
tends to max(A, B) (perfect overlap); this is Pollux's step-time model (AdaptDL, ``goodput.py``).
``overlap(A, B, g)`` with a comma is the same. A factor may multiply the whole overlap,
``I*overlap(1 + b, log2(p); g)``: the overlap is homogeneous, ``F·overlap(A, B) =
overlap(F·A, F·B)`` for F >= 0, so the factor is multiplied into every inner term.

Rules: an overlap is a whole term of the sum (optionally times such a factor), it is not nested,
not negated, its ``g`` is a name that is no factor symbol and appears nowhere else. A side whose
sum is below zero counts as zero.

**How contributions split the overlapped time.** With a = Σ_{k∈A} c_k·term_k and b likewise,
the overlap's value O = (a^g + b^g)^(1/g) is split between the sides in proportion to a^g and b^g
(side A gets O·a^g/(a^g + b^g)), and within a side between its terms in proportion to their
plain values c_k·term_k. So contributions still sum exactly to the prediction, each side's part
is never more than its own time, and at g = 1 every term's contribution is its plain c_k·term_k.
The time the overlap hides, a + b − O, is reported by :func:`saved` (e.g. in the charts' hover).

The lowest layer: imports from perfmodel.errors only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PerfModelError

NAME = "overlap"
DEFAULT_BOUNDS = (1.0, 10.0)


@dataclass(frozen=True)
class Overlap:
    """One overlap group: term indices of side A and side B, and its parameter name."""

    a: tuple
    b: tuple
    param: str

    @property
    def terms(self) -> tuple:
        return self.a + self.b


def pretokenise(spec: str) -> str:
    """``overlap(A, B; g)`` -> ``overlap(A, B, g)``: a ';' is allowed only as the separator of
    an overlap's parameter, directly inside its parentheses, once."""
    if ";" not in spec:
        return spec
    out = list(spec)
    stack: list[list] = []  # [function name, commas so far, ';' seen]
    name = ""
    for i, ch in enumerate(spec):
        if ch.isalnum() or ch == "_":
            name += ch
            continue
        if ch == "(":
            stack.append([name, 0, False])
        elif ch == ")":
            if stack:
                stack.pop()
        elif ch == "," and stack:
            stack[-1][1] += 1
        elif ch == ";":
            if not stack or stack[-1][0] != NAME:
                raise PerfModelError(f"';' at position {i + 1} is only allowed in overlap(A, B; g)")
            if stack[-1][2]:
                raise PerfModelError(f"second ';' at position {i + 1}: write overlap(A, B; g)")
            if stack[-1][1] != 1:
                raise PerfModelError(f"';' at position {i + 1} must follow A, B: write overlap(A, B; g)")
            stack[-1][2] = True
            stack[-1][1] += 1
            out[i] = ","
        if not ch.isspace():
            name = ""
    return "".join(out)


def _side(parts: np.ndarray, idx: tuple) -> np.ndarray:
    return np.maximum(np.sum(parts[list(idx)], axis=0), 0.0)


def _gamma(theta, i: int, ndim: int):
    theta = np.asarray(theta, float)
    g = theta[i]
    return g[:, None] if theta.ndim == 2 and ndim >= 2 else g


def _norms(a: np.ndarray, b: np.ndarray, g):
    """(O, weight of A, weight of B) computed without overflow: O = m·((a/m)^g + (b/m)^g)^(1/g)."""
    with np.errstate(all="ignore"):
        m = np.maximum(a, b)
        safe = np.where(m > 0, m, 1.0)
        ra, rb = (a / safe) ** g, (b / safe) ** g
        s = ra + rb
        o = np.where(m > 0, m * s ** (1.0 / g), 0.0)
        wa = np.where(s > 0, ra / np.where(s > 0, s, 1.0), 0.0)
    return o, wa, 1.0 - wa


def combine(groups: list[Overlap], params: tuple, parts: np.ndarray, theta) -> np.ndarray:
    """Contributions of every term, shape of ``parts``, from its plain values ``parts``
    (K, ...) = c_k·term_k; their sum over the first axis is the prediction.

    ``theta`` holds the free parameters in ``params`` order: (M,) or (M, S) for a population,
    where ``parts`` is (K, S, G)."""
    parts = np.asarray(parts, float)
    if not groups:
        return parts
    out = parts.copy()
    with np.errstate(all="ignore"):
        for grp in groups:
            g = _gamma(theta, params.index(grp.param), parts.ndim - 1)
            a, b = _side(parts, grp.a), _side(parts, grp.b)
            o, wa, wb = _norms(a, b, g)
            for idx, side, w in ((grp.a, a, wa), (grp.b, b, wb)):
                scale = np.where(side > 0, o * w / np.where(side > 0, side, 1.0), 0.0)
                for k in idx:
                    out[k] = parts[k] * scale
    return out


def gradient_weights(groups: list[Overlap], params: tuple, parts: np.ndarray, theta) -> np.ndarray:
    """d prediction / d parts_k, shape of ``parts``: 1 for plain terms, (side/O)^(g-1) inside an overlap."""
    parts = np.asarray(parts, float)
    out = np.ones_like(parts)
    with np.errstate(all="ignore"):
        for grp in groups:
            g = _gamma(theta, params.index(grp.param), parts.ndim - 1)
            a, b = _side(parts, grp.a), _side(parts, grp.b)
            o, _, _ = _norms(a, b, g)
            for idx, side in ((grp.a, a), (grp.b, b)):
                w = np.where(o > 0, (side / np.where(o > 0, o, 1.0)) ** (g - 1.0), 0.0)
                for k in idx:
                    out[k] = np.broadcast_to(w, parts[k].shape)
    return out


def saved(groups: list[Overlap], params: tuple, parts: np.ndarray, theta) -> list[np.ndarray]:
    """Per group, the time the overlap hides: a + b − O (0 at g = 1), shape of one part."""
    out = []
    with np.errstate(all="ignore"):
        for grp in groups:
            g = _gamma(theta, params.index(grp.param), np.asarray(parts).ndim - 1)
            a, b = _side(parts, grp.a), _side(parts, grp.b)
            out.append(a + b - _norms(a, b, g)[0])
    return out


def assemble(groups: list[Overlap], n_terms: int, pieces: list, join, group) -> str:
    """Text of a sum whose term k is ``pieces[k]`` (None: left out), with every overlap group
    rendered by ``group(text_a, text_b, param)``; ``join(list)`` joins the items of a sum."""
    first = {grp.terms[0]: grp for grp in groups}
    inside = {k for grp in groups for k in grp.terms}
    items = []
    for k in range(n_terms):
        if k in first:
            grp = first[k]
            side_a = join([pieces[i] for i in grp.a if pieces[i] is not None])
            side_b = join([pieces[i] for i in grp.b if pieces[i] is not None])
            items.append(group(side_a, side_b, grp.param))
        elif k not in inside and pieces[k] is not None:
            items.append(pieces[k])
    return join(items)


def join_signed(items: list) -> str:
    """'a + b - c' from (negative, text) items ("0" for none)."""
    out = ""
    for i, (neg, text) in enumerate(items):
        out += (("-" if neg else "") if i == 0 else (" - " if neg else " + ")) + text
    return out or "0"


def partner_text(groups: list[Overlap], terms: list[str], k: int) -> str | None:
    """'X + Y', the other side's terms, for a term inside an overlap; else None."""
    for grp in groups:
        if k in grp.terms:
            other = grp.b if k in grp.a else grp.a
            return " + ".join(terms[i] for i in other)
    return None
