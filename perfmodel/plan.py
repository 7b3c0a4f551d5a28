"""Plan the run: time, GPU-hours, cost and the chance of meeting a deadline or a budget, per configuration.

A scaling curve is shown so that someone can decide how many GPUs to rent and whether the job fits a
deadline and a budget. :func:`plan` does that arithmetic with the model's uncertainty kept in it: for
every configuration of a grid (the fixed factors ``at``) the modelled unit (an epoch, a step, the
measured job) runs ``repeat`` times;

* ``time_s`` = repeat × the predicted time, ``time_low``/``time_high`` its interval at ``level``;
* ``gpu_hours`` = time × p / 3600 (p: the workers; 1 without a ``p`` factor), with ``_low``/``_high``;
* ``cost`` = GPU-hours × ``gpu_hour_price``, or node-hours × ``node_hour_price`` (nodes: the model's
  ``nodes`` factor when it has one, else ceil(p / GPUs per node)); without a price the cost is the
  GPU-hours themselves;
* ``efficiency`` = (time × p at the smallest p of the grid) / (time × p): 1 at the smallest p;
* ``p_deadline`` and ``p_budget``: the probability that the run meets the deadline / the budget,
  from simulated runs (:meth:`perfmodel.fitting.members.Uncertainty.draws`: a member replicate, the
  noise of a run and the extrapolation error, not a normal approximation). Without intervals stored
  in the model they are NaN and the intervals equal the point.

:func:`recommend` reads the table only (so the sentence always agrees with it): the cheapest
configuration that meets the deadline with probability at least ``level``, the fastest within the
budget with that probability, and the marginal price of speed along the efficient frontier (the
configurations no other is both faster and cheaper than).

A use of fitted models: imports from the fitting layer and perfmodel.errors only.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import PerfModelError
from .fitting.members import DEFAULT_LEVEL
from .wording import fmt_time, fmt_value

#: Simulated runs per configuration for the probabilities (their standard error is at most 0.8 points).
DRAWS = 4000
#: Replicate predictions or simulated runs held at once (per chunk of configurations).
CELLS = 2_000_000
MAX_CONFIGURATIONS = 10_000
_UNITS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*")


def parse_duration(text, what: str = "--deadline") -> float:
    """``"90m"``, ``"12h"``, ``"2d"``, ``"3600"`` (seconds) or a number -> seconds (> 0)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _DURATION.fullmatch(str(text).lower())
        if not m or m.group(2) not in {"", *_UNITS}:
            raise PerfModelError(
                f"{what}: {text!r} is not a duration; use seconds or a number with s, m, h or d (e.g. 90m, 12h, 2d)"
            )
        value = float(m.group(1)) * _UNITS.get(m.group(2), 1.0)
    if not (math.isfinite(value) and value > 0):
        raise PerfModelError(f"{what} must be a positive duration, got {text!r}")
    return value


def _positive(value, what: str) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PerfModelError(f"{what} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise PerfModelError(f"{what} must be a positive number, got {value!r}")
    return v


def default_grid(result) -> list[float]:
    """The p values a plan compares by default (the app's Plan page and ``perfmodel report``): the smallest
    measured p, then the powers of two above it up to 8 × the largest measured p."""
    lo, hi = (float(v) for v in result.factor_ranges["p"])
    lo = lo if lo > 0 else 1.0
    out, v = [lo], 2.0 ** math.ceil(math.log2(lo) + 1e-9)
    while v <= 8 * hi * (1 + 1e-9):
        if v > lo:
            out.append(v)
        v *= 2
    return out


def single_values(result, given=()) -> dict[str, float]:
    """{symbol: value} of the model's factors measured at one value only (e.g. a fixed per-GPU batch) and
    not among ``given``: a configuration that leaves them out takes that value (and says so:
    :func:`perfmodel.wording.single_value_note`)."""
    out = {}
    targets = result.target_factors() if hasattr(result, "target_factors") else list(result.factors)
    for s in targets:  # the nodes of each p follow from it, never a measured one's
        lo, hi = (float(v) for v in (getattr(result, "factor_ranges", None) or {}).get(s, (np.nan, np.nan)))
        if s not in given and math.isfinite(lo) and lo == hi:
            out[s] = lo
    return out


def configurations(result, at: dict, grid: dict) -> pd.DataFrame:
    """Every combination of ``grid`` with the fixed factors ``at``, one row each (all the model's factors)."""
    factors = list(result.factors)
    unknown = [s for s in list(at) + list(grid) if s not in factors]
    if unknown:
        raise PerfModelError(f"{unknown[0]!r} is not a factor of the model ({', '.join(factors)})")
    twice = [s for s in grid if s in at]
    if twice:
        raise PerfModelError(f"{twice[0]} is given both in --at and in --grid")
    derived = [s for s in factors if s not in result.target_factors() and s not in at and s not in grid]
    factors = [s for s in factors if s not in derived]  # the nodes p workers span follow from p
    missing = [s for s in factors if s not in at and s not in grid]
    if missing:
        raise PerfModelError(
            f"give a value for {', '.join(missing)} with --at (the model's factors: {', '.join(factors)})"
        )
    sizes = [len(grid.get(s, [0])) for s in factors]
    if math.prod(sizes) > MAX_CONFIGURATIONS:
        raise PerfModelError(f"the grid has {math.prod(sizes)} configurations; at most {MAX_CONFIGURATIONS:,}")
    rows = list(itertools.product(*[grid[s] if s in grid else [at[s]] for s in factors]))
    frame = pd.DataFrame(rows, columns=factors, dtype=float)
    for s in factors:  # whole numbers stay whole in the CSV (p = 32, not 32.0)
        v = frame[s].to_numpy()
        if np.all(np.isfinite(v) & (v == np.round(v)) & (np.abs(v) < 2**53)):
            frame[s] = v.astype(np.int64)
    return result.with_nodes(frame) if derived else frame


@dataclass(frozen=True)
class Pricing:
    """How a run is priced: per GPU-hour, or per node-hour (the nodes: the model's ``nodes`` factor when it
    has one, ``nodes_factor``, else ceil(p / GPUs per node)); neither: GPU-hours. Each given number must
    be positive and finite (a 0 GPUs per node would price infinite nodes)."""

    gpu_hour: float | None = None
    node_hour: float | None = None
    gpus_per_node: float | None = None
    nodes_factor: bool = False

    def __post_init__(self):
        for what, value in (
            ("--gpu-hour-price", self.gpu_hour),
            ("--node-hour-price", self.node_hour),
            ("--gpus-per-node", self.gpus_per_node),
        ):
            _positive(value, what)
        if self.gpu_hour is not None and self.node_hour is not None:
            raise PerfModelError("give a GPU-hour price or a node-hour price, not both")
        if self.node_hour is not None and self.nodes_factor and self.gpus_per_node is not None:
            raise PerfModelError(
                "--gpus-per-node: the model has a nodes factor, which gives each configuration's nodes; "
                "leave --gpus-per-node out"
            )
        if self.node_hour is not None and self.gpus_per_node is None and not self.nodes_factor:
            raise PerfModelError("a node-hour price needs the GPUs per node (--gpus-per-node) or a nodes factor")

    @property
    def unit(self) -> str:
        return "GPU-hours" if self.gpu_hour is None and self.node_hour is None else "money"

    def cost(self, seconds: np.ndarray, p: np.ndarray, nodes: np.ndarray | None = None) -> np.ndarray:
        """Cost of runs of ``seconds`` on ``p`` GPUs (and ``nodes`` nodes, the nodes factor's values)."""
        if self.node_hour is not None:
            count = nodes if self.nodes_factor and nodes is not None else np.ceil(p / self.gpus_per_node)
            return seconds / 3600.0 * count * self.node_hour
        return seconds / 3600.0 * p * (self.gpu_hour if self.gpu_hour is not None else 1.0)


def pricing_for(result, gpu_hour=None, node_hour=None, gpus_per_node=None) -> Pricing:
    """The :class:`Pricing` of runs of ``result``'s model: by its ``nodes`` factor when it has one (a
    GPUs per node equal to the one the model made its nodes from says nothing more)."""
    g = getattr(result, "gpus_per_node", None)
    if "nodes" in result.factors and "nodes" not in result.target_factors() and gpus_per_node is not None:
        if g is not None and math.isclose(float(gpus_per_node), float(g)):
            gpus_per_node = None
        elif node_hour is not None:
            raise PerfModelError(
                f"--gpus-per-node: the model has a nodes factor, which gives each configuration's nodes (from its "
                f"own {float(g or 0):g} GPUs per node, not {float(gpus_per_node):g}); leave --gpus-per-node out"
            )
    return Pricing(gpu_hour, node_hour, gpus_per_node, nodes_factor="nodes" in result.factors)


def refuse_non_finite(frame: pd.DataFrame, columns, factors, why: str) -> None:
    """A PerfModelError naming the first of ``columns`` that is not finite, and its configuration (the
    ``factors``' values), with ``why`` (what overflowed): a plan never prints ``inf``."""
    for col in columns:
        if col not in frame:
            continue
        v = frame[col].to_numpy(float)
        bad = ~np.isfinite(v) & ~np.isnan(v) if col.startswith("p_") else ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            where = ", ".join(f"{s} = {float(frame[s].iloc[i]):g}" for s in factors)
            raise PerfModelError(f"{col} is {v[i]:g} at {where}: {why}")


def plan(
    result,
    at: dict | None = None,
    grid: dict | None = None,
    *,
    repeat: float = 1,
    price: float | None = None,
    node_price: float | None = None,
    gpus_per_node: float | None = None,
    deadline=None,
    budget=None,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    draws: int = DRAWS,
) -> pd.DataFrame:
    """The plan table (see the module doc), one row per configuration in grid order.

    ``at``: {symbol: value} of the fixed factors; ``grid``: {symbol: [values]}; ``repeat``: how many
    times the modelled unit runs; ``price``: per GPU-hour (``node_price``: per node-hour, with
    ``gpus_per_node``); ``deadline``: seconds or a duration text ("12h"); ``budget``: in the cost's
    unit. A factor measured at one value only that neither ``at`` nor ``grid`` gives is taken at that
    value (listed in ``frame.attrs["filled"]``). ``frame.attrs`` keeps the settings, so :func:`recommend`
    needs the frame alone."""
    at, grid = dict(at or {}), dict(grid or {})
    repeat = _positive(repeat, "--repeat") or 1.0  # None: the default, once
    pricing = pricing_for(result, price, node_price, gpus_per_node)
    deadline = None if deadline is None else parse_duration(deadline)
    budget = _positive(budget, "--budget")
    if not 0 < float(level) < 1:
        raise PerfModelError(f"--interval must be between 0 and 1 (e.g. 0.9), got {level!r}")
    filled = single_values(result, [*at, *grid])  # a factor measured at one value: taken at it
    at = {**filled, **at}
    cfg = configurations(result, at, grid)
    if result.has_intervals:
        result.check_work(len(cfg))
    env = {s: cfg[s].to_numpy(float) for s in result.factors}
    p = env["p"] if "p" in env else np.ones(len(cfg))
    if not (p > 0).all():  # GPU-hours, cost and efficiency count workers: a run needs one
        raise PerfModelError(f"a plan needs at least one worker; the grid has p = {p[~(p > 0)][0]:g}")
    result.check_defined(env, describe=lambda i: _label(cfg.iloc[i]))
    nodes = env.get("nodes")
    out = cfg.copy()
    if result.has_intervals:
        pred = result.predict(env, interval=level)
        t, lo, hi = (pred[c].to_numpy() for c in ("predicted_time", "predicted_low", "predicted_high"))
    else:
        t = np.asarray(result.predict(env), float)
        lo = hi = t
    if not np.all(np.isfinite(t) & (t > 0)):
        bad = int(np.flatnonzero(~(np.isfinite(t) & (t > 0)))[0])
        raise PerfModelError(f"the model predicts no positive time at {_label(cfg.iloc[bad])}")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, naming it
        for name, v in (("time_s", t), ("time_low", lo), ("time_high", hi)):
            out[name] = repeat * v
        for name, v in (("gpu_hours", t), ("gpu_hours_low", lo), ("gpu_hours_high", hi)):
            out[name] = repeat * v / 3600.0 * p
        for name, v in (("cost", t), ("cost_low", lo), ("cost_high", hi)):
            out[name] = pricing.cost(repeat * v, p, nodes)
        ref = int(np.argmin(p))
        out["efficiency"] = (t[ref] * p[ref]) / (t * p)
    refuse_non_finite(
        out,
        ["time_s", "time_low", "time_high", "gpu_hours", "gpu_hours_low", "gpu_hours_high", "cost", "cost_low"]
        + ["cost_high", "efficiency"],
        list(result.factors),
        f"the time × --repeat ({repeat:g}) × the workers overflows; plan fewer repeats or fewer workers",
    )
    out["p_deadline"], out["p_budget"] = _probabilities(
        result, env, p, repeat, pricing, deadline, budget, level, seed, draws
    )
    out.attrs.update(
        level=float(level),
        deadline=deadline,
        budget=budget,
        repeat=repeat,
        cost_unit=pricing.unit,
        at=at,
        factors=result.target_factors(),  # nodes made from p are a column, not a setting
        filled=filled,
    )
    return out


def _probabilities(result, env, p, repeat, pricing, deadline, budget, level, seed, draws):
    n = len(p)
    if not result.has_intervals or (deadline is None and budget is None):
        return np.full(n, np.nan), np.full(n, np.nan)
    unc = result._uncertainty()
    rng = np.random.default_rng(seed)
    # configurations in chunks of at most CELLS replicate predictions and simulated runs each (a probability
    # is per configuration: the chunks' draws are as good as one block's, and the memory is the chunk's)
    step = max(1, CELLS // max(result.n_replicates, int(draws), 1))
    sims = repeat * np.hstack(
        [unc.draws({s: v[i : i + step] for s, v in env.items()}, draws, rng, level) for i in range(0, n, step)]
    )  # (draws, n)
    pd_ = np.mean(sims <= deadline, axis=0) if deadline is not None else np.full(n, np.nan)
    nodes = env.get("nodes")
    nodes = None if nodes is None else nodes[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        costs = pricing.cost(sims, p[None, :], nodes) if budget is not None else None
    pb = np.mean(costs <= budget, axis=0) if budget is not None else np.full(n, np.nan)
    return pd_, pb


def efficient(frame: pd.DataFrame) -> np.ndarray:
    """Mask of the configurations on the efficient frontier: no other is faster and no more costly, or
    cheaper and no slower."""
    t, c = frame["time_s"].to_numpy(), frame["cost"].to_numpy()
    return np.array([not np.any(((t < t[i]) & (c <= c[i])) | ((t <= t[i]) & (c < c[i]))) for i in range(len(t))])


def _label(row) -> str:
    return ", ".join(f"{k} = {float(v):g}" for k, v in row.items())


def fmt_duration(seconds: float, low: float | None = None, high: float | None = None) -> str:
    """3.2 h, 47 min, 35 s: one unit by magnitude (:func:`perfmodel.wording.fmt_time`), with the range in
    the same unit when given: ``27 min (25–32 min)``."""
    return fmt_time(seconds, low, high)


def fmt_cost(frame: pd.DataFrame, v: float, low: float | None = None, high: float | None = None) -> str:
    """Money with 2 decimals (GPU-hours: ``GPU-h`` after it), and its range when given."""
    unit = " GPU-h" if frame.attrs.get("cost_unit") == "GPU-hours" else ""
    if low is None or high is None:
        return f"{v:.2f}{unit}"
    return f"{v:.2f}{unit} ({low:.2f}–{high:.2f}{unit})"


def _cfg(frame: pd.DataFrame, i: int) -> str:
    """The configuration of row ``i`` by its varying factors: ``p = 1024``."""
    row = frame.iloc[i]
    factors = [s for s in frame.attrs.get("factors", []) if s not in frame.attrs.get("at", {})]
    return ", ".join(f"{s} = {fmt_value(row[s])}" for s in factors)


def _what(frame: pd.DataFrame, i: int) -> str:
    row = frame.iloc[i]
    return (
        f"{_cfg(frame, i)} — {fmt_duration(row['time_s'], row['time_low'], row['time_high'])}, "
        f"{fmt_cost(frame, row['cost'], row['cost_low'], row['cost_high'])}"
    )


def recommend(frame: pd.DataFrame) -> list[str]:
    """The recommendations, each one line with its ranges, read from the plan table alone (numbers in
    the words of :mod:`perfmodel.wording`; :func:`perfmodel.wording.sentence` makes a line a sentence
    for the app, the CLI and the report alike)."""
    level = frame.attrs.get("level", DEFAULT_LEVEL)
    out = []
    chosen = None
    if frame.attrs.get("deadline") is not None:
        ok = np.flatnonzero(frame["p_deadline"].to_numpy() >= level)
        if len(ok):
            chosen = int(ok[np.argmin(frame["cost"].to_numpy()[ok])])
            out.append(
                f"cheapest meeting the deadline ({fmt_duration(frame.attrs['deadline'])}) with ≥ {level:.0%}: "
                f"{_what(frame, chosen)}"
            )
        else:
            best = int(np.argmax(frame["p_deadline"].to_numpy()))
            out.append(
                f"no configuration meets the deadline ({fmt_duration(frame.attrs['deadline'])}) with ≥ "
                f"{level:.0%}; the likeliest is {_what(frame, best)}, "
                f"{frame['p_deadline'].iloc[best]:.0%}"
            )
    if frame.attrs.get("budget") is not None:
        ok = np.flatnonzero(frame["p_budget"].to_numpy() >= level)
        if len(ok):
            fast = int(ok[np.argmin(frame["time_s"].to_numpy()[ok])])
            out.append(
                f"fastest within the budget ({fmt_cost(frame, frame.attrs['budget'])}) with ≥ {level:.0%}: "
                f"{_what(frame, fast)}"
            )
            chosen = fast if chosen is None else chosen
        else:
            out.append(
                f"no configuration stays within the budget ({fmt_cost(frame, frame.attrs['budget'])}) "
                f"with ≥ {level:.0%}"
            )
    front = np.flatnonzero(efficient(frame))
    front = front[np.argsort(frame["time_s"].to_numpy()[front])[::-1]]  # slowest (cheapest) first
    if chosen is None and len(front):
        chosen = int(front[0])
    if chosen is not None:
        faster = [i for i in front if frame["time_s"].iloc[i] < frame["time_s"].iloc[chosen]]
        if faster:
            nxt = int(faster[0])
            saved = frame["time_s"].iloc[chosen] - frame["time_s"].iloc[nxt]
            more = frame["cost"].iloc[nxt] - frame["cost"].iloc[chosen]
            out.append(f"{_cfg(frame, nxt)} saves {fmt_duration(saved)} for {fmt_cost(frame, more)} more")
    return out
