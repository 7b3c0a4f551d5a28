"""The term library and presets.

Every term has a key, an expression, a category (start-up, compute, communication) and a
one-line meaning. Expressions adapt to the factors that are mapped: ``I`` (iterations,
E·ceil(N/(p·b))) needs N and b; without N the data size is fixed and I ∝ E/(p·b); without b
the batch is fixed and I ∝ E·N/p; without p the job runs on one worker (its communication
terms drop out); without E it runs one epoch.

The lowest layer: imports from perfmodel.errors only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PerfModelError


@dataclass(frozen=True)
class LibraryTerm:
    key: str
    expr: str
    category: str  # "start-up", "compute", "communication", "scaling"
    meaning: str


def effective_symbols(symbols) -> list[str]:
    """The symbols terms may use: the mapped ones, plus the per-worker batch b = B/p when only the
    global batch B is mapped."""
    out = list(symbols)
    if "B" in out and "b" not in out:
        out.append("b")
    return out


def iterations(symbols) -> str | None:
    """The iteration-count expression for the mapped symbols (None when nothing scales it).

    With the global batch B mapped instead of the per-worker b, an iteration takes B samples:
    I = E·ceil(N/B), or ∝ E/B without N."""
    s = set(symbols)
    derived_b = "B" in s and "b" not in s
    if "N" in s and ("b" in s or derived_b):
        return "I"
    num = [x for x in ("E", "N") if x in s]
    den = ["B"] if derived_b else [x for x in ("p", "b") if x in s]
    if not num and not den:
        return None
    top = "*".join(num) if num else "1"
    if not den:
        return top
    bottom = den[0] if len(den) == 1 else f"({'*'.join(den)})"
    return f"{top}/{bottom}"


def _times(it: str | None, factor: str) -> str:
    if it is None:
        return factor
    if it == "1":
        return factor
    if "/" in it and it.startswith("1/"):
        return f"{factor}/{it[2:]}"
    return f"{it}*{factor}"


def library(symbols) -> list[LibraryTerm]:
    """The library terms that make sense for the mapped ``symbols`` (b = B/p counts as mapped
    when the global batch B is)."""
    it = iterations(symbols)
    s = set(effective_symbols(symbols))
    out = [
        LibraryTerm(
            "constant", "1", "start-up", "fixed start-up/initialisation cost (Hashemi et al.: it dominates at scale)"
        )
    ]
    if it is not None:
        out.append(LibraryTerm("iterations", it, "compute", "fixed cost per iteration; I = E·ceil(N/(p·b)) iterations"))
    if "b" in s:
        out.append(
            LibraryTerm(
                "compute",
                _times(it, "b^e_b"),
                "compute",
                "per-iteration compute, batch^e (e < 1: larger batches are more efficient)",
            )
        )
    if "N" in s or "p" in s:
        work = "*".join(x for x in ("E", "N") if x in s) or "1"
        dp = f"{work}/p" if "p" in s else work
        out.append(
            LibraryTerm(
                "data-parallel", dp, "compute", "data-parallel compute: the samples split evenly over p workers"
            )
        )
    if "p" in s:
        out += [
            LibraryTerm(
                "tree-allreduce",
                _times(it, "log2(p)"),
                "communication",
                "per-iteration tree all-reduce: latency grows with log2(p)",
            ),
            LibraryTerm(
                "ring-allreduce",
                _times(it, "(p-1)/p"),
                "communication",
                "per-iteration ring all-reduce: bandwidth term 2(p-1)/p of the gradient size",
            ),
            LibraryTerm(
                "parameter-server",
                _times(it, "p"),
                "communication",
                "per-iteration central parameter server: its link carries p workers' traffic",
            ),
            LibraryTerm("worker-startup", "p", "start-up", "per-worker start-up: launching and connecting each worker"),
        ]
    return out


def library_by_key(symbols) -> dict[str, LibraryTerm]:
    return {t.key: t for t in library(symbols)}


def pmnf_term(symbol: str, i: float | str, j: float | str = 0) -> str:
    """Extra-P's performance-model normal form block ``x^i·log2(x)^j``."""
    parts = []
    if i not in (0, "0"):
        parts.append(symbol if i in (1, "1") else f"{symbol}^{_num(i)}")
    if j not in (0, "0"):
        parts.append(f"log2({symbol})" if j in (1, "1") else f"log2({symbol})^{_num(j)}")
    return "*".join(parts) or "1"


def _num(v) -> str:
    if isinstance(v, str):
        return v
    v = float(v)
    if v.is_integer():
        return str(int(v))
    return f"({v:.6g})" if v < 0 else f"{v:.6g}"


#: name -> one-line description
PRESETS = {
    "data-parallel": "generic data-parallel DL model: start-up + per-iteration compute I·b^e + "
    "tree all-reduce I·log2(p) + per-worker start-up p",
    "ernest": "Ernest (Venkataraman et al., NSDI'16): θ0 + θ1·N/p + θ2·log(p) + θ3·p",
    "pmnf": "Extra-P style: constant + one x^i·log2(x)^j block per factor, exponents free",
    "pollux": "Pollux (Qiao et al., OSDI'21; AdaptDL goodput.py): iterations × (T_acc^γ + T_net^γ)^(1/γ), "
    "T_acc = α_c + β_c·b, T_net = α + β·max(p−2, 0) within one node or across nodes (symbol nodes)",
    "optimus": "Optimus (Peng et al., EuroSys'18; scheduler/estimator.py): iterations × (a·b + b0 + c·p/servers "
    "+ d·p + e·servers) with parameter servers (symbol servers), a·b + b0 + d·p without",
}

#: The symbol of the number of machines the workers are spread over (Pollux's inter-node terms).
NODES = "nodes"
#: The symbol of the number of parameter servers (Optimus).
SERVERS = "servers"


def preset_spec(name: str, symbols, positive_symbols=None, varying=None, env=None) -> str:
    """The expression of preset ``name`` for the mapped ``symbols``.

    ``positive_symbols``: symbols whose values are all >= 1, for which the PMNF preset may
    use log2 blocks (default: all symbols). ``varying``: symbols with more than one value in the
    data (default: all). A factor that never varies cannot be told apart from a constant, so it
    gets no term of its own and no exponent (the batch-size exponent of ``I·b^e_b`` included);
    it still enters the iteration count ``I``. ``env`` ({symbol: values of the rows}) lets ``pollux`` keep
    only the network terms the data can identify (see :func:`pollux_spec`).
    """
    s = [x for x in symbols]
    if varying is None and env is not None and name in ("pollux", "optimus"):
        varying = [x for x in s if x in env and np.ptp(np.asarray(env[x], float)) > 0]
    vary = set(s if varying is None else varying)
    if name == "data-parallel":
        derived_b = "B" in s and "b" not in s
        if derived_b and vary & {"B", "p"}:
            vary.add("b")  # the per-worker batch b = B/p varies with either
        it = iterations(s)
        s = effective_symbols(s)
        terms = ["1"]
        if it is not None:
            terms.append(_times(it, "b^e_b") if "b" in vary else it)
        if "p" in vary:
            terms += [_times(it, "log2(p)"), "p"]
        extra = [x for x in s if x not in ("p", "N", "b", "E") and x in vary and not (x == "B" and derived_b)]
        terms += [f"{x}^e_{x}" for x in extra]
        return " + ".join(terms)
    if name == "ernest":
        if "p" in vary:
            work = "N/p" if "N" in s else "1/p"
            terms = ["1", work, "log(p)", "p"]
        else:
            terms = ["1", "N"] if "N" in vary else ["1"]
        return " + ".join(terms)  # Ernest's own terms only: a term for another factor is a variant
    if name == "pmnf":
        pos = set(s if positive_symbols is None else positive_symbols)
        terms = ["1"]
        for x in s:
            if x in vary:
                terms.append(f"{x}^i_{x}*log2({x})^j_{x}" if x in pos else f"{x}^i_{x}")
        return " + ".join(terms)
    if name == "pollux":
        return pollux_spec(s, vary, env)
    if name == "optimus":
        return optimus_spec(s, vary)
    raise PerfModelError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")


def _per_step(it: str | None, terms: list[str]) -> list[str]:
    """Per-step terms times the iteration count (``1`` becomes the count itself)."""
    if it is None:
        return terms
    return [
        it if t == "1" else f"{it}/{t[2:]}" if t.startswith("1/") and "/" not in it else _times(it, t) for t in terms
    ]


def _varying_b(s: list[str], vary: set) -> set:
    if "B" in s and "b" not in s and vary & {"B", "p"}:
        return vary | {"b"}  # the per-worker batch b = B/p varies with either
    return vary


def pollux_spec(symbols, vary: set, env=None) -> str:
    """Pollux's step-time model (AdaptDL ``goodput.py``) times the iteration count.

    T_step = (T_acc^γ + T_net^γ)^(1/γ) with T_acc = α_c + β_c·b (b = per-worker batch) and T_net = 0 for
    one worker, α_r + β_r·max(p−2, 0) for p workers on one machine, α_n + β_n·max(p−2, 0) across
    machines (``nodes`` > 1; without ``nodes`` all workers are on one machine). Indicators are written
    with min/max: [p > 1] = min(p−1, 1), [nodes > 1] = min(nodes−1, 1), [nodes = 1] = max(2−nodes, 0).

    Like Pollux's fit, parameters the data cannot identify are pinned (here: their terms left out):
    the inter-node pair without multi-machine rows, the intra-node pair without single-machine rows with
    p > 1, a β without two worker counts (one above 2) in its regime, and β_c when b has one value
    (Pollux then splits the measured compute time half and half; we have no compute time, so α_c
    carries it). Without ``env`` every term is kept.
    """
    s = effective_symbols(symbols)
    vary = _varying_b(list(symbols), set(vary))
    it = iterations(symbols)
    compute = ["1"] + (["b"] if "b" in s and "b" in vary else [])
    network = []
    if "p" in s:
        p = None if env is None or "p" not in env else np.asarray(env["p"], float)
        nodes = None if env is None or NODES not in env else np.asarray(env[NODES], float)

        def regime(mask):  # (α, β) identifiable from the rows of one regime (mask None: all rows)
            if p is None:
                return True, True
            rows = (p > 1) if mask is None else (p > 1) & mask
            ps = np.unique(p[rows])
            return bool(rows.any()), bool(len(ps) >= 2 and ps.max() > 2)

        if NODES in s:
            intra = regime(None if nodes is None else nodes <= 1)
            inter = regime(None if nodes is None else nodes > 1)
            for keep, term in zip(
                intra + inter,
                (
                    "min(p - 1, 1)*max(2 - nodes, 0)",
                    "max(p - 2, 0)*max(2 - nodes, 0)",
                    "min(nodes - 1, 1)",
                    "max(p - 2, 0)*min(nodes - 1, 1)",
                ),
                strict=True,
            ):
                if keep:
                    network.append(term)
        else:
            alpha, beta = regime(None)
            network = (["min(p - 1, 1)"] if alpha else []) + (["max(p - 2, 0)"] if beta else [])
    if not network:
        return " + ".join(_per_step(it, compute))
    body = f"overlap({' + '.join(compute)}, {' + '.join(network)}; g)"
    if it is None:
        return body
    return f"{it if '/' not in it else f'({it})'}*{body}"


def optimus_spec(symbols, vary: set) -> str:
    """Optimus's synchronous speed model (``scheduler/estimator.py``) as time: iterations × 1/speed,
    1/speed = a·B/w + b + c·w/s + d·w + e·s with w = p workers, s = ``servers`` parameter servers and
    B/w the per-worker batch b; without ``servers`` (all-reduce) a·b + b + d·p. A term of a factor
    with one value in the data is left out (it cannot be told apart from the constant b)."""
    s = effective_symbols(symbols)
    vary = _varying_b(list(symbols), set(vary))
    terms = (["b"] if "b" in s and "b" in vary else []) + ["1"]
    if SERVERS in s:
        if "p" in s and SERVERS in vary:  # with one server count, c·p/s is d·p
            terms.append(f"p/{SERVERS}")
        elif "p" not in s and SERVERS in vary:
            terms.append(f"1/{SERVERS}")
    if "p" in s and "p" in vary:
        terms.append("p")
    if SERVERS in s and SERVERS in vary:
        terms.append(SERVERS)
    return " + ".join(_per_step(iterations(symbols), terms))


def preset_bounds(name: str, symbols) -> dict[str, tuple[float, float]]:
    """Default bounds for a preset's free parameters (PMNF exponents are non-negative)."""
    if name == "pmnf":
        out = {}
        for x in symbols:
            out[f"i_{x}"] = (0.0, 3.0)
            out[f"j_{x}"] = (0.0, 2.0)
        return out
    if name == "data-parallel":
        return {"e_b": (0.0, 2.0)}
    if name == "pollux":
        return {"g": (1.0, 10.0)}  # Pollux's own bounds of γ
    return {}
