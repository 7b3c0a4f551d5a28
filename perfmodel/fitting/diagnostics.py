"""Honest warnings about a fit and about the configurations it is asked to predict.

Fit-time (:func:`fit_warnings`, stored in ``FitResult.warnings``):

* a term whose coefficient is 0 (set to zero by the penalty, or stuck at its bound) leaves the
  displayed formula and is listed as dropped; every term but the constant dropped at λ > 0 means λ
  is too large for the data;
* a free exponent whose term was dropped is not determined by the data;
* collinear or unidentifiable terms: the term matrix over the measured configurations is
  (nearly) rank-deficient, so how the time is split between the terms involved is arbitrary
  (``N/p + 2*N/p``, or a term that only repeats the constant because its factor never varies);
* a factor that has one value in the data.

Prediction-time (:func:`prediction_warnings`): extrapolation far beyond the measured range (more
than :data:`FAR` times the largest or smaller than 1/FAR of the smallest measured value), a target off
the directions the measured runs varied in (:func:`factor_span`: e.g. runs that grew the global batch
with the workers, B = 256·p, and a target with B/p = 32), and a per-worker batch below one sample
(``b < 1``, or ``B/p < 1`` for a global batch ``B`` fixed while the workers ``p`` grow).

Imports from the fitting layer's members only (and numpy).
"""

from __future__ import annotations

import numpy as np

from ..data.time_units import TIME_UNITS
from .extrapolation import crossings, efficiency_floor

#: Extrapolation "far beyond the measured range": this many times past it.
FAR = 4.0
#: Condition number of the column-scaled term matrix above which terms count as collinear.
COLLINEAR = 1e7


#: A target this many doublings (log2 units) off the measured directions is said (a factor of √2).
OFF_DIRECTIONS = 0.5


def factor_span(configurations: dict) -> dict:
    """The directions the measured configurations varied in, in log2 units: ``{"symbols", "center",
    "directions"}`` (an orthonormal basis of the span of the configurations' log2 factors around their
    mean, by SVD), for :func:`off_directions`; {} when a factor is not positive. ``configurations``:
    symbol -> array of its value per run (repeats count once; ``nodes``, the topology, is left out)."""
    syms = [s for s in configurations if s != "nodes"]
    if not syms:
        return {}
    x = np.column_stack([np.asarray(configurations[s], float) for s in syms])
    if not (np.isfinite(x).all() and (x > 0).all()):
        return {}
    logs = np.unique(np.log2(x), axis=0)
    center = logs.mean(axis=0)
    if len(logs) > 1:
        _, sv, vt = np.linalg.svd(logs - center, full_matrices=False)
        basis = vt[sv > 1e-9 * max(float(sv.max()), 1.0)]
    else:
        basis = np.zeros((0, len(syms)))
    return {"symbols": syms, "center": center.tolist(), "directions": basis.tolist()}


def off_directions(span: dict, env: dict) -> np.ndarray | None:
    """Per target, the log2 deviation (n, symbols) from the span of the measured directions
    (:func:`factor_span`); None when it cannot be told (no span, a symbol missing or not positive)."""
    if not span or any(s not in env for s in span["symbols"]):
        return None
    k = len(span["symbols"])
    center = np.asarray(span["center"], float)
    basis = np.asarray(span["directions"], float)
    if center.shape != (k,) or (basis.size and (basis.ndim != 2 or basis.shape[1] != k)):
        return None  # a stored span of the wrong shape says nothing
    basis = basis.reshape(-1, k)
    try:  # a scalar beside arrays is the same value for every target
        x = np.column_stack(np.broadcast_arrays(*[np.atleast_1d(np.asarray(env[s], float)) for s in span["symbols"]]))
    except ValueError:
        return None
    if not (np.isfinite(x).all() and (x > 0).all()):
        return None
    dev = np.log2(x) - center
    return dev - dev @ basis.T @ basis


def _direction_warnings(result, env: dict) -> list[str]:
    """A target that changes the factors in a combination the measured runs never did, and how far off
    (doublings) it lies."""
    span = getattr(result, "factor_span", None) or {}
    res = off_directions(span, env)
    if res is None:
        return []
    off = np.linalg.norm(res, axis=1)
    i = int(np.argmax(off))
    if off[i] <= OFF_DIRECTIONS:
        return []
    syms = span["symbols"]
    moved = [s for s, v in zip(syms, np.abs(res[i]), strict=True) if v > 0.25 * np.abs(res[i]).max()]
    at = ", ".join(f"{s} = {np.broadcast_to(np.atleast_1d(np.asarray(env[s], float)), len(off))[i]:g}" for s in syms)
    if len(moved) == 1:
        lo, hi = result.factor_ranges.get(moved[0], (None, None))
        what = (
            f"{moved[0]}, which the measured runs held at {lo:g}"
            if lo is not None and lo == hi
            else f"{moved[0]}, which the measured runs did not vary on its own"
        )
    elif len(moved) == 2:
        what = f"{moved[0]} and {moved[1]} apart, where the measured runs changed them together"
    else:
        what = f"{', '.join(moved)} in a combination the measured runs never had"
    return [
        f"the target ({at}) changes {what}: it lies {off[i]:.2g} doublings off the directions the "
        "measurements varied in, so the data cannot tell those factors' effects apart there and the "
        "prediction rests on the formula's assumption about them"
    ]


def dropped_terms(result) -> list[str]:
    """Terms whose fitted coefficient is 0 (left out of the displayed formula)."""
    return [t for k, t in enumerate(result.terms) if result.coefficients[f"c{k}"] == 0]


def fit_warnings(result, meas, term_matrix: np.ndarray) -> list[str]:
    """Warnings about ``result`` fitted on ``meas``; ``term_matrix`` (K, G) its terms per configuration."""
    out = []
    lam = float(result.settings.get("lam", 0.0))
    dropped = dropped_terms(result)
    constant_only = all(t == "1" for t in result.terms if t not in dropped) and len(dropped) > 0
    if dropped and lam > 0 and constant_only:
        out.append(
            f"every term but the constant was set to zero: λ = {lam:g} is too large for this data; "
            "choose a smaller λ (the λ path picks one by validation)"
        )
    elif dropped:
        why = (
            f"set to zero by the penalty (λ = {lam:g}) or at their lower bound"
            if lam > 0
            else "at their lower bound 0 (the data asks for a negative coefficient or none)"
        )
        out.append(f"dropped from the formula, {why}: {', '.join(dropped)}")
    terms = result._expression().terms
    for name in result.params:
        users = [k for k, t in enumerate(terms) if name in t.params]
        if users and all(result.coefficients[f"c{k}"] == 0 for k in users):
            out.append(f"{name} is not determined by the data: the term(s) it belongs to were dropped")
    for sym in result.factors:
        vals = np.unique(meas.values(sym))
        if len(vals) == 1 and sym != "nodes":  # the topology: one node measured is said by the crossing notes
            out.append(
                f"{sym} ({result.factors[sym]}) has one value in the data ({vals[0]:g}): the model cannot "
                f"tell how the time depends on it"
            )
    out += _batch_warnings(result, meas)
    groups = collinear_groups(term_matrix, result.terms)
    for g in groups:
        out.append(
            "collinear terms " + ", ".join(g) + ": on the measured configurations one is (nearly) a "
            "combination of the others, so the split of the time between them is arbitrary; "
            "remove one or measure configurations that tell them apart"
        )
    return out


def _batch_warnings(result, meas) -> list[str]:
    """``b`` (per worker) and ``B`` (global) both mapped where B ≠ b·p on some run: the symbols say
    b = B/p, so at least one column means something else (tokens for sequences, a micro-batch)."""
    if not {"b", "B", "p"} <= set(result.factors):
        return []
    b, B, p = (np.asarray(meas.values(s), float) for s in ("b", "B", "p"))
    with np.errstate(all="ignore"):
        off = np.flatnonzero(~np.isclose(b * p, B, rtol=0.01))
    if not off.size:
        return []
    i = int(off[0])
    col = result.factors
    return [
        f"b ({col['b']}) × p ({col['p']}) is not B ({col['B']}) on {off.size} of {len(B)} runs (e.g. b = "
        f"{b[i]:g}, p = {p[i]:g}, B = {B[i]:g}): the symbols mean b = B/p, so one of the columns counts "
        "something else (tokens for sequences, a micro-batch); map only the one that is the batch"
    ]


def collinear_groups(T: np.ndarray, terms: list[str]) -> list[list[str]]:
    """Groups of terms that are (nearly) linearly dependent over the configurations ``T`` (K, G)."""
    T = np.asarray(T, float)
    K = T.shape[0]
    if K < 2:
        return []
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.sum(T**2, axis=1))
        ok = np.isfinite(norms) & (norms > 0)
        if ok.sum() < 2:
            return []
        X = (T[ok] / norms[ok, None]).T  # (G, K'), unit columns
        if X.shape[0] < X.shape[1]:
            return []  # more terms than configurations: reported as underdetermined, not collinear
        _, s, vt = np.linalg.svd(X, full_matrices=False)
    idx = np.flatnonzero(ok)
    out = []
    for j in np.flatnonzero(s < s[0] / COLLINEAR):
        members = idx[np.abs(vt[j]) > 0.1]
        group = [terms[i] for i in members]
        if len(group) >= 2 and group not in out:
            out.append(group)
    return out


def _in(seconds: float, unit: str) -> str:
    """A time in ``unit`` (a key of :data:`perfmodel.data.time_units.TIME_UNITS`), 4 significant digits."""
    return f"{seconds / TIME_UNITS[unit]:.4g} {unit}"


def prediction_warnings(result, env: dict, unit: str = "s") -> list[str]:
    """Warnings for predicting ``result`` at the configurations ``env`` (symbol -> array); times in
    ``unit`` (the app's charts' unit; the command line's seconds)."""
    out = []
    topo = getattr(result._uncertainty(), "topology", None) if result.uncertainty else None
    nodes_symbol = (topo or {}).get("nodes_symbol")
    for sym, (lo, hi) in result.factor_ranges.items():
        x = np.asarray(env.get(sym, []), float)
        if not x.size or (sym == nodes_symbol and np.any(x > hi)):
            continue  # more nodes than measured: the node-crossing warning says it
        far_hi = x[x > FAR * hi] if hi > 0 else x[:0]
        far_lo = x[(x > 0) & (x < lo / FAR)] if lo > 0 else x[:0]
        if far_hi.size:
            out.append(
                f"{sym} = {far_hi.max():g} is {far_hi.max() / hi:.3g}× the largest measured {sym} ({hi:g}): "
                "far beyond the measured range, where the interval rests on the extrapolation calibration"
            )
        if far_lo.size:
            out.append(f"{sym} = {far_lo.min():g} is far below the smallest measured {sym} ({lo:g})")
    out += _direction_warnings(result, env)
    out += _topology_warnings(result, env)
    out += _efficiency_warnings(result, env, unit)
    out += _crossing_warnings(result, env)
    out += _structure_warnings(result, env, unit)
    if "b" in env:
        b = np.asarray(env["b"], float)
        if np.any(b < 1):
            out.append(f"per-worker batch b = {b[b < 1].min():g} is below one sample")
    elif "B" in env and "p" in env:
        per = np.asarray(env["B"], float) / np.asarray(env["p"], float)
        if np.any(per < 1):
            i = int(np.argmin(per))
            out.append(
                f"per-worker batch B/p = {per[i]:.3g} is below one sample (global batch B = "
                f"{np.asarray(env['B'])[i]:g} on p = {np.asarray(env['p'])[i]:g} workers)"
            )
    return out


#: A reference structure is named in a warning when, beyond the measurements, its prediction departs
#: from the formula's by more than this (relative, beyond its own misfit where measured).
STRUCTURE_NOTE = 0.10


def _structure_warnings(result, env: dict, unit: str = "s") -> list[str]:
    """Beyond the measurements, the reference structures fitted to the same runs (data-parallel,
    Ernest, Pollux, a power law) that predict otherwise than the formula by more than
    :data:`STRUCTURE_NOTE`: each named with its prediction at the configuration where they disagree
    most. The number stays the formula's; the interval reaches towards them as the prior says."""
    unc = result._uncertainty() if result.uncertainty else None
    if unc is None or not unc.references:
        return []
    try:
        env = {k: np.atleast_1d(np.asarray(v, float)) for k, v in env.items()}
        formula = unc.point(unc.point_predictions(env))
        with np.errstate(all="ignore"):
            shifts = unc.reference_shifts(env, formula)  # (J, n), 0 where they agree as well as measured
            ratios = np.exp(unc.reference_logratios(env, formula))
    except (KeyError, TypeError, ValueError):
        return []
    off = np.abs(np.expm1(shifts)) > STRUCTURE_NOTE
    if not off.any():
        return []
    i = int(np.argmax(np.where(off, np.abs(shifts), 0.0).max(axis=0)))
    at = ", ".join(f"{result.factors.get(k, k)} = {float(v[i]):g}" for k, v in env.items() if k in result.factors)
    named = "; ".join(
        f"{m.label} {_in(formula[i] * ratios[j, i], unit)} ({ratios[j, i]:.2f}×)"
        for j, m in enumerate(unc.references)
        if off[j, i] and np.isfinite(ratios[j, i])
    )
    g = unc.structure_scale(0.9)
    return [
        f"beyond the measurements other structures fitted to the same runs predict otherwise at {at}: {named}, "
        f"where the formula gives {_in(formula[i], unit)}"
        + (
            f"; its interval reaches towards them by {g:.2g} × their spread from it (the corpus's structure scale)"
            if g
            else ""
        )
    ]


def _efficiency_warnings(result, env: dict, unit: str = "s") -> list[str]:
    """A prediction faster than the best measured parallel efficiency allows (beyond the noise of one
    run and the corpus's slack): the number stays the formula's, and this says it implies a
    super-linear speed-up."""
    unc = result._uncertainty() if result.uncertainty else None
    if unc is None:
        return []
    try:
        env = {k: np.atleast_1d(np.asarray(v, float)) for k, v in env.items()}
        bound = unc.efficiency_bound(env)
        t = unc.point(unc.point_predictions(env))
    except (KeyError, TypeError, ValueError):
        return []
    with np.errstate(all="ignore"):
        off = np.flatnonzero(np.isfinite(bound) & (t < bound * (1 - 1e-9)))
    if not off.size:
        return []
    i = int(off[np.argmin(t[off] / bound[off])])
    slack = float(unc.prior.get("efficiency_slack", 0.0))
    best = efficiency_floor(unc.efficiency_ref, {k: v[i : i + 1] for k, v in env.items()})[0]
    allowance = "the noise of one run" + (f" and the corpus's {100 * slack:.0f} % slack" if slack >= 0.005 else "")
    return [
        f"at p = {float(env['p'][i]):g} the formula predicts {_in(t[i], unit)}, faster than the best parallel "
        f"efficiency measured for this work allows ({_in(best, unit)}; {_in(bound[i], unit)} with {allowance}): "
        "a super-linear speed-up the corpus's runs rarely showed, so the interval reaches no lower than the "
        f"formula there ({len(off)} configuration(s) like it)"
    ]


def _topology_warnings(result, env: dict) -> list[str]:
    """A target whose (GPUs, nodes) combination was never measured in kind: its nodes are not
    ceil(p / GPUs per node) of the measured runs (e.g. 16 GPUs on 4 nodes where every measured node held 8)."""
    g = getattr(result, "gpus_per_node", None)
    if not g or "nodes" not in env or "p" not in env:
        return []
    p = np.atleast_1d(np.asarray(env["p"], float))
    nodes = np.atleast_1d(np.asarray(env["nodes"], float))
    with np.errstate(all="ignore"):
        off = np.flatnonzero(np.isfinite(p) & np.isfinite(nodes) & (nodes != np.ceil(p / g - 1e-9)))
    if not off.size:
        return []
    i = int(off[0])
    return [
        f"p = {p[i]:g} on {nodes[i]:g} node(s) ({p[i] / nodes[i]:.3g} per node) is a combination the measured runs "
        f"never had: they put up to {g:g} on a node ({len(off)} configuration(s) like it); the model's nodes "
        f"for p = {p[i]:g} would be {np.ceil(p[i] / g - 1e-9):g}"
    ]


def _crossing_warnings(result, env: dict) -> list[str]:
    """A target on more nodes than were measured: its interval carries the node-crossing error that
    real series showed (the corpus's prior), and the point prediction knows nothing of the network."""
    if not result.uncertainty:
        return []
    unc = result._uncertainty()
    topo = getattr(unc, "topology", None)
    if not topo:
        return []
    try:
        cross = crossings(topo, {k: np.atleast_1d(np.asarray(v, float)) for k, v in env.items()})
    except (KeyError, TypeError, ValueError):
        return []
    if not np.any(cross == "crosses_nodes"):
        return []
    if topo.get("nodes_symbol"):
        nodes = np.atleast_1d(np.asarray(env[topo["nodes_symbol"]], float))
    else:
        nodes = np.ceil(np.atleast_1d(np.asarray(env["p"], float)) / topo["gpus_per_node"])
    # nodes derived from a guessed node size (a nodes column made from p) still say it is a guess
    said = topo.get("gpus_per_node") and (not topo.get("nodes_symbol") or topo.get("guessed"))
    per = (
        (f" at {topo['gpus_per_node']:g} GPUs per node" + (" (a guess)" if topo.get("guessed") else "")) if said else ""
    )
    kappa = f"; κ = {unc.kappa(0.9, 'crosses_nodes')[0]:.2f} per doubling" if unc.prior else ""
    return [
        f"the target needs {nodes.max():g} nodes{per}, the measurements reach {topo['max_nodes']:g}: "
        "a run across the node boundary adds inter-node communication that the measured runs cannot show; "
        f"the interval is widened by the error real series showed at such crossings{kappa}"
    ]
