"""An inter-node cost that appears past one node: its term, and its size when no multi-node run was measured.

A job measured on one machine says nothing about the network it will cross on two: its fitted formula has
no term that sees ``nodes``. The product adds one, ``c_x·I·min(nodes − 1, 1)`` (a cost per iteration
``I`` that appears once the workers span more than one machine, as Pollux's ``α_n``), and sizes it from
the corpus: ``c_x = ρ·t_it``, ``t_it`` the fitted time per iteration at the largest measured worker count
and ``ρ`` how much longer an iteration became, in the median, when the corpus's deep-learning series first
crossed a node boundary (learned leave-one-source-out by ``scripts/learn_prior.py``; the prior's
``internode``). The term is part of the displayed formula, so the point and the band carry it, and the
report says it was not measured.

Imports from the model language and data layers only.
"""

from __future__ import annotations

import numpy as np

from ..data.measurements import Measurements
from ..language.expression import parse_expression
from ..language.terms import NODES, iterations


def iteration_expression(symbols) -> str:
    """The iteration count for ``symbols`` (the topology left out): ``I``, ``E*N/(p*b)``, ..., or ``1/p``
    (the work per worker) when nothing else scales it."""
    return iterations([s for s in symbols if s != NODES]) or "1/p"


def internode_term(symbols) -> str:
    """The inter-node term of the term language for ``symbols``: ``I*min(nodes - 1, 1)``, in the form
    that suits the iteration count (``min(nodes - 1, 1)/p`` with only ``p``)."""
    it = iteration_expression(symbols)
    if it.startswith("1/"):
        return f"min({NODES} - 1, 1)/{it[2:]}"
    return f"{it}*min({NODES} - 1, 1)"


def iteration_values(symbols, env: dict) -> np.ndarray:
    """The iteration count at each configuration of ``env``, shape (n,)."""
    expr, _ = parse_expression(iteration_expression(symbols), [s for s in symbols if s != NODES])
    n = len(next(iter(env.values()))) if env else 0
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(expr.term_values(env, np.zeros(0))[0], float), (n,)).copy()


def per_iteration_time(predict, meas: Measurements) -> float:
    """``t_it``: the time per iteration at the largest measured worker count (the mean over its
    configurations of the fitted time ``predict(env)`` over the iteration count there)."""
    env = meas.env()
    p = np.asarray(env["p"], float)
    top = p == p.max()
    sub = {k: np.asarray(v, float)[top] for k, v in env.items()}
    with np.errstate(all="ignore"):
        t = np.asarray(predict(sub), float) / iteration_values(list(meas.factors), sub)
    t = t[np.isfinite(t) & (t > 0)]
    return float(np.mean(t)) if t.size else float("nan")


def crosses(env: dict) -> np.ndarray:
    """1 where a configuration spans more than one node, else 0 (0 everywhere without ``nodes``)."""
    n = len(next(iter(env.values()))) if env else 0
    if NODES not in env:
        return np.zeros(n)
    return np.minimum(np.maximum(np.asarray(env[NODES], float) - 1.0, 0.0), 1.0)
