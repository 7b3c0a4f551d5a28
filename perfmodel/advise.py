"""What to measure next: the configuration that shrinks the interval at a target most per second.

Ernest (Venkataraman et al., NSDI'16) chooses its training runs by optimal experiment design; here
the question is answered with the fit's own uncertainty. The bootstrap members of a fit
(:mod:`perfmodel.uncertainty`) are a sample of models the measurements cannot tell apart. A new
measurement at a candidate configuration ``c`` would tell them apart: members whose prediction at
``c`` is far from what is measured become implausible. For each candidate, every member is taken
in turn as the truth; the others are reweighted by the likelihood of the measurement it would give
(``exp(-(log c_s - log c_h)² / 2σ²)``, σ the noise of one measurement), and the spread of the
reweighted members' predictions at the target is averaged over these hypothetical truths. A
measurement also extends the measured range, so the extrapolation part of the interval at the
target (``κ`` per doubling beyond the range) shrinks when ``c`` lies between the range and the
target; a target on more nodes than measured carries the node-crossing κ of the population's prior,
which a first run across the boundary (on at least the target's nodes) replaces by the same-node κ. The expected half-width of the target's interval after measuring ``c`` is compared with
today's; the gain divided by the resources the run of ``c`` uses ranks the candidates: its GPU-hours
(p × predicted time) by default, its cost with a price, or its wall time on request. With a budget
the ranked list is taken greedily while the predicted times fit in it.

A use of fitted models: imports from the fitting layer only (never from plots, report or the CLI).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re

import numpy as np
import pandas as pd

from .errors import PerfModelError
from .fitting.extrapolation import extended, normal_quantile
from .fitting.members import DEFAULT_LEVEL, distance
from .plan import pricing_for, refuse_non_finite, single_values
from .uncertainty.ranges import range_at

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def parse_assignments(text: str, what: str = "--target") -> dict[str, float]:
    """``"p=64,b=32"`` -> {"p": 64.0, "b": 32.0}."""
    out: dict[str, float] = {}
    for part in str(text).split(","):
        m = re.fullmatch(rf"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*({_NUM})\s*", part)
        if not m:
            raise PerfModelError(f"{what}: {part.strip()!r} must look like SYM=NUMBER, e.g. p=64")
        if m.group(1) in out:
            raise PerfModelError(f"{what}: {m.group(1)} is given twice")
        value = float(m.group(2))
        if not np.isfinite(value):
            raise PerfModelError(f"{what}: {m.group(2)!r} ({m.group(1)}) is not a finite number")
        out[m.group(1)] = value
    return out


def parse_grid(items) -> dict[str, list[float]]:
    """``["p=1,2,4", "b=32,64"]`` -> {"p": [1, 2, 4], "b": [32, 64]}."""
    out: dict[str, list[float]] = {}
    for item in items:
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*", str(item))
        if not m:
            raise PerfModelError(f"--grid {item!r} must look like SYM=v1,v2,..., e.g. p=1,2,4,8")
        name = m.group(1)
        if name in out:
            raise PerfModelError(f"--grid {name} is given twice")
        vals = []
        for v in m.group(2).split(","):
            if not re.fullmatch(rf"\s*{_NUM}\s*", v):
                raise PerfModelError(f"--grid {name}: {v.strip()!r} is not a number")
            if not np.isfinite(float(v)):
                raise PerfModelError(f"--grid {name}: {v.strip()!r} is not a finite number")
            vals.append(float(v))
        out[name] = sorted(set(vals))
    return out


#: Configurations a grid may have (the product of its value counts, checked before building it).
MAX_CANDIDATES = 100_000


def candidates(result, target: dict, grid: dict) -> pd.DataFrame:
    """Every combination of ``grid`` (symbols it leaves out take the target's value), one row each."""
    factors = [s for s in result.factors if s in result.target_factors() or s in target or s in grid]
    missing = [s for s in factors if s not in target]
    if missing:
        raise PerfModelError(
            f"the target needs a value for {', '.join(missing)} (the model's factors: {', '.join(factors)})"
        )
    unknown = [s for s in list(target) + list(grid) if s not in factors]
    if unknown:
        raise PerfModelError(f"{unknown[0]!r} is not a factor of the model ({', '.join(factors)})")
    if not grid:
        raise PerfModelError("give the configurations one could run: --grid p=1,2,4,8 (repeatable)")
    axes = [grid.get(s, [target[s]]) for s in factors]
    count = math.prod(len(a) for a in axes)  # counted before any combination is built
    if count > MAX_CANDIDATES:
        raise PerfModelError(f"the grid has {count:,} configurations; at most {MAX_CANDIDATES:,}")
    return result.with_nodes(pd.DataFrame(list(itertools.product(*axes)), columns=factors))


#: How candidates are ranked: gain per GPU-hour (p × time, the resources a run uses: default), per
#: unit of money (a price per GPU-hour, or per node-hour with the GPUs per node), or per hour of wall time.
RANKINGS = ("gpu-hours", "cost", "wall-time")


#: advise weighs at most this many replicates against each other (each member thinned in proportion)
MAX_REPLICATES = 2000
TRUTH_CHUNK = 256  # hypothetical truths per block: at most TRUTH_CHUNK × MAX_REPLICATES numbers at once
CELLS = 4_000_000  # replicate predictions (replicates × candidates) held at once
#: Pairs of replicates advise weighs against each other in all (candidates × thinned replicates²),
#: checked before it starts: about a minute (100 candidates of a 500,000-replicate file: 4e8, 80 s).
MAX_COMPARISONS = 1_000_000_000


def thinned(unc, cap: int = MAX_REPLICATES):
    """``unc`` with at most ``cap`` replicates in all: each member keeps evenly spaced rows in
    proportion to its count (at least one); weights are per member, so they are unchanged."""
    total = sum(len(m.coefficients) for m in unc.members)
    if total <= cap:
        return unc
    members = []
    for m in unc.members:
        R = len(m.coefficients)
        keep = np.unique(np.linspace(0, R - 1, max(1, int(R * cap / total))).round().astype(int))
        members.append(dataclasses.replace(m, coefficients=m.coefficients[keep], params=m.params[keep]))
    return dataclasses.replace(unc, members=members)


def _intervals(unc, env: dict, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(point, low, high) at each configuration of ``env``, in chunks of at most CELLS replicate predictions."""
    n = len(next(iter(env.values())))
    S = sum(len(m.coefficients) for m in unc.members)
    step = max(1, CELLS // max(S, 1))
    parts = [unc.interval({s: v[i : i + step] for s, v in env.items()}, level) for i in range(0, n, step)]
    point, low, high = (np.concatenate([p[k] for p in parts]) for k in range(3))
    return point, low, high


def advise(
    result,
    target: dict,
    grid: dict | pd.DataFrame,
    *,
    budget: float | None = None,
    level: float = DEFAULT_LEVEL,
    rank_by: str = "gpu-hours",
    gpu_hour_price: float | None = None,
    node_hour_price: float | None = None,
    gpus_per_node: float | None = None,
) -> pd.DataFrame:
    """Rank candidate configurations by how much measuring each would narrow the target's interval.

    ``target``: {symbol: value} of the configuration to predict (all of the model's factors; one
    measured at a single value only may be left out and is taken at it, listed in ``attrs["filled"]``);
    ``grid``: {symbol: [values]} (or a DataFrame of candidate configurations, one per row);
    ``budget``: seconds of measurement one can spend. Returns one row per candidate, best first:
    the factors, ``predicted_time`` / ``predicted_low`` / ``predicted_high`` (the candidate's own
    run), ``target_halfwidth_pct`` (expected half-width of the target's interval after measuring
    it, percent of the prediction), ``gain_pct`` (how much narrower than today, percentage points),
    ``gain_per_hour`` (``gain_pct`` per hour of predicted run time), ``gpu_hours`` (p × time) and
    ``gain_per_gpu_hour``, with a price ``cost`` and ``gain_per_cost``, and with a budget ``in_plan``
    and ``cumulative_s``. ``rank_by`` (:data:`RANKINGS`): ``"gpu-hours"`` (default: a 128-GPU run
    costs 16× the resources of an 8-GPU run of the same length), ``"cost"`` (needs a price) or
    ``"wall-time"``. ``frame.attrs`` holds the target's interval today and the ranking.
    """
    if rank_by not in RANKINGS:
        raise PerfModelError(f"--rank-by must be one of {', '.join(RANKINGS)}, got {rank_by!r}")
    if rank_by == "cost" and gpu_hour_price is None and node_hour_price is None:
        raise PerfModelError(
            "--rank-by cost needs a price: --gpu-hour-price, or --node-hour-price with --gpus-per-node"
        )
    pricing = (
        pricing_for(result, gpu_hour_price, node_hour_price, gpus_per_node)
        if gpu_hour_price is not None or node_hour_price is not None
        else None
    )
    unc = result._uncertainty(required=True)
    filled = single_values(result, [*target, *(grid if not isinstance(grid, pd.DataFrame) else grid.columns)])
    target = {**filled, **target}  # a factor measured at one value only: taken at it
    cand = grid if isinstance(grid, pd.DataFrame) else candidates(result, target, grid)
    cand = cand[list(result.factors)].reset_index(drop=True)
    target = result.with_nodes(pd.DataFrame({s: [v] for s, v in target.items()})).iloc[0].to_dict()
    result.check_work(len(cand) + 1, "the grid (and the target)")
    thin = min(result.n_replicates, MAX_REPLICATES)
    if len(cand) * thin**2 > MAX_COMPARISONS:
        raise PerfModelError(
            f"the grid has {len(cand):,} configurations, each weighing {thin:,} replicates against each other: "
            f"{len(cand) * thin**2:,} comparisons, above the limit {MAX_COMPARISONS:,}; give at most "
            f"{max(1, MAX_COMPARISONS // thin**2):,} configurations at once"
        )
    tgt = {s: np.array([float(target[s])]) for s in result.factors}
    result.check_defined(tgt, describe=lambda i: "the target")
    result.check_defined(
        cand,
        describe=lambda i: "the grid's configuration " + ", ".join(f"{s}={cand[s].iloc[i]:g}" for s in result.factors),
    )
    z = normal_quantile(level)
    q = unc.noise.quantile(level)
    kappa = float(unc.kappas(tgt, level)[0])  # a target across the node boundary: the crossing's κ
    # The posterior spread: every replicate in turn taken as the truth; at most MAX_REPLICATES of them
    # (each member thinned in proportion, its weight kept), the truths taken in chunks of TRUTH_CHUNK.
    small = thinned(unc, MAX_REPLICATES)
    preds_t, w, points_t = small.member_predictions(tgt)  # (S, 1) replicates at the target
    today = range_at(result, target, level)  # the interval every view quotes for the target
    assert today is not None  # the fit has intervals: _uncertainty(required=True) above
    t_point = today.point
    if not t_point > 0:
        raise PerfModelError("the model predicts no positive time at the target")
    lt = np.log(np.maximum(preds_t[:, 0], 1e-300))
    w = w / w.sum()
    var0 = float(np.sum(w * (lt - np.sum(w * lt)) ** 2))
    d0 = float(distance(unc.factor_ranges, tgt)[0])
    scale = unc.band_scale()  # the members' and the noise's band as the intervals scale it
    # the reference structures' reach at the target (the wider side), shrinking with the distance
    # still to go once a run nearer the target is measured
    below, above = unc.structures(tgt, unc.point(points_t))
    reach = unc.structure_scale(level) * float(max(below[0], above[0]))
    half0 = float(np.sqrt(scale**2 * (z * z * var0 + q * q) + (z * kappa * d0) ** 2 + reach**2))
    # Today's figure is range_at's. The thinned sample's half-width differs from the full ensemble's
    # by sampling noise, and range_at's low end may stop at the efficiency bound (a band cut on one
    # side): every "after" is scaled by the same ratio, so a run that leaves today's band unchanged
    # leaves today's figure, and none is below zero (shifted by the difference instead, a run at the
    # target of the default dataset, whose band the bound cuts, printed a half-width of -16 %).
    ratio = today.halfwidth_log / half0 if half0 > 0 else 1.0
    half0 = today.halfwidth_log
    env = {s: cand[s].to_numpy(float) for s in result.factors}
    t_c, low_c, high_c = _intervals(unc, env, level)
    sigma = max(unc.noise.sigma, 1e-3)
    after = np.empty(len(cand))
    C = len(cand)
    step = max(1, CELLS // max(len(w), 1))
    for c0 in range(0, C, step):
        sub = {s: v[c0 : c0 + step] for s, v in env.items()}
        with np.errstate(all="ignore"):
            lc_all = np.log(np.maximum(small.member_predictions(sub)[0], 1e-300))  # (S, chunk)
        for jj in range(lc_all.shape[1]):
            j = c0 + jj
            lc = lc_all[:, jj]
            post_var = 0.0
            for h0 in range(0, len(w), TRUTH_CHUNK):
                diff = lc[None, :] - lc[h0 : h0 + TRUTH_CHUNK, None]  # (hypothetical truth h, member s)
                lik = np.exp(-0.5 * (diff / sigma) ** 2) * w[None, :]
                lik /= lik.sum(axis=1, keepdims=True)
                mean = lik @ lt
                var = lik @ (lt**2) - mean**2
                post_var += float(np.sum(w[h0 : h0 + TRUTH_CHUNK] * np.maximum(var, 0.0)))
            ranges = {s: (min(lo, env[s][j]), max(hi, env[s][j])) for s, (lo, hi) in unc.factor_ranges.items()}
            d1 = float(distance(ranges, tgt)[0])
            kappa1 = float(unc.kappas(tgt, level, extended(unc.topology, env, j))[0])  # a first run across
            reach1 = reach * (d1 / d0 if d0 > 0 else 0.0)
            after[j] = np.sqrt(
                scale**2 * (z * z * post_var + q * q)
                + (z * kappa1 * d1) ** 2  # the boundary
                + reach1**2
            )  # lifts κ
    out = cand.copy()
    out["predicted_time"] = t_c
    out["predicted_low"] = low_c
    out["predicted_high"] = high_c
    after = after * ratio
    out["target_halfwidth_pct"] = (np.exp(after) - 1) * 100
    out["gain_pct"] = np.maximum((np.exp(half0) - np.exp(after)) * 100, 0.0)  # estimator noise can dip below 0
    p = out["p"].to_numpy(float) if "p" in out else np.ones(len(out))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # an overflow is refused below
        out["gpu_hours"] = out["predicted_time"] / 3600.0 * p
        out["gain_per_hour"] = out["gain_pct"] / (out["predicted_time"] / 3600.0)
        out["gain_per_gpu_hour"] = out["gain_pct"] / out["gpu_hours"]
        if pricing is not None:
            nodes = out["nodes"].to_numpy(float) if "nodes" in out else None
            out["cost"] = pricing.cost(out["predicted_time"].to_numpy(), p, nodes)
            out["gain_per_cost"] = out["gain_pct"] / out["cost"]
    refuse_non_finite(
        out,
        ["predicted_time", "predicted_low", "predicted_high", "gpu_hours", "cost", "target_halfwidth_pct"],
        list(result.factors),
        "the configuration is too large for the model's numbers; leave it out of the grid",
    )
    key = {"gpu-hours": "gain_per_gpu_hour", "cost": "gain_per_cost", "wall-time": "gain_per_hour"}[rank_by]
    out = out.sort_values([key, "gain_pct"], ascending=False, kind="stable").reset_index(drop=True)
    if budget is not None:
        if not (float(budget) > 0):
            raise PerfModelError(f"--budget must be a positive number of seconds, got {budget!r}")
        cum, plan = 0.0, []
        for t, gain in zip(out["predicted_time"], out["gain_pct"], strict=True):
            ok = gain > 0 and cum + t <= float(budget)
            cum += t if ok else 0.0
            plan.append(ok)
        out["in_plan"] = plan
        out["cumulative_s"] = np.where(plan, np.cumsum(np.where(plan, out["predicted_time"], 0.0)), np.nan)
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    out.attrs.update(
        target=dict(target),
        target_time=t_point,
        target_halfwidth_pct=(np.exp(half0) - 1) * 100,
        level=level,
        rank_by=rank_by,
        rank_column=key,
        filled=filled,
    )
    return out
