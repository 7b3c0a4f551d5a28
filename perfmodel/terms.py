"""The term library and presets.

Every term has a key, an expression, a category (start-up, compute, communication) and a
one-line meaning. Expressions adapt to the factors that are mapped: ``I`` (iterations,
E·ceil(N/(p·b))) needs N and b; without N the data size is fixed and I ∝ E/(p·b); without b
the batch is fixed and I ∝ E·N/p; without p the job runs on one worker (its communication
terms drop out); without E it runs one epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import PerfModelError


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
    out = [LibraryTerm("constant", "1", "start-up",
                       "fixed start-up/initialisation cost (Hashemi et al.: it dominates at scale)")]
    if it is not None:
        out.append(LibraryTerm("iterations", it, "compute",
                               "fixed cost per iteration; I = E·ceil(N/(p·b)) iterations"))
    if "b" in s:
        out.append(LibraryTerm("compute", _times(it, "b^e_b"), "compute",
                               "per-iteration compute, batch^e (e < 1: larger batches are more efficient)"))
    if "N" in s or "p" in s:
        work = "*".join(x for x in ("E", "N") if x in s) or "1"
        dp = f"{work}/p" if "p" in s else work
        out.append(LibraryTerm("data-parallel", dp, "compute",
                               "data-parallel compute: the samples split evenly over p workers"))
    if "p" in s:
        out += [
            LibraryTerm("tree-allreduce", _times(it, "log2(p)"), "communication",
                        "per-iteration tree all-reduce: latency grows with log2(p)"),
            LibraryTerm("ring-allreduce", _times(it, "(p-1)/p"), "communication",
                        "per-iteration ring all-reduce: bandwidth term 2(p-1)/p of the gradient size"),
            LibraryTerm("parameter-server", _times(it, "p"), "communication",
                        "per-iteration central parameter server: its link carries p workers' traffic"),
            LibraryTerm("worker-startup", "p", "start-up",
                        "per-worker start-up: launching and connecting each worker"),
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
}


def preset_spec(name: str, symbols, positive_symbols=None, varying=None) -> str:
    """The expression of preset ``name`` for the mapped ``symbols``.

    ``positive_symbols``: symbols whose values are all >= 1, for which the PMNF preset may
    use log2 blocks (default: all symbols). ``varying``: symbols with more than one value in the
    data (default: all). A factor that never varies cannot be told apart from a constant, so it
    gets no term of its own and no exponent (the batch-size exponent of ``I·b^e_b`` included);
    it still enters the iteration count ``I``.
    """
    s = [x for x in symbols]
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
        terms += [x for x in s if x not in ("p", "N") and x in vary]
        return " + ".join(terms)
    if name == "pmnf":
        pos = set(s if positive_symbols is None else positive_symbols)
        terms = ["1"]
        for x in s:
            if x in vary:
                terms.append(f"{x}^i_{x}*log2({x})^j_{x}" if x in pos else f"{x}^i_{x}")
        return " + ".join(terms)
    raise PerfModelError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")


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
    return {}
