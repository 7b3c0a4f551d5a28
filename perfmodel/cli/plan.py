"""``perfmodel plan MODEL.json``: time, GPU-hours, cost and the chance of meeting a deadline and a
budget per configuration (:func:`perfmodel.plan.plan`), a short table and the recommendations.

The top layer: may import from every layer; nothing in perfmodel imports it.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from .. import wording
from ..advise import parse_assignments, parse_grid
from ..errors import PerfModelError
from ..fitting.result import FitResult
from ..plan import configurations, default_grid, fmt_cost, fmt_duration, parse_duration, plan, recommend, single_values
from ..spreadsheet import to_csv


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "plan",
        help="time, GPU-hours, cost and the chance of meeting a deadline, per configuration",
        description="Plan a run: for each configuration of the grid, the predicted time, GPU-hours "
        "and cost with their intervals, and the probability of meeting the deadline "
        "and the budget (from the model's members and the noise of a run).",
    )
    p.add_argument("model", help="model JSON written by `fit`")
    add_plan_arguments(p)
    return p


def add_plan_arguments(p, out: bool = True) -> None:
    """The plan's options (shared by ``plan`` and ``report``)."""
    p.add_argument(
        "--at",
        default="",
        metavar="SYM=V,...",
        help="the fixed factors, e.g. 'N=1281167,b=32' (a factor measured at one value only: that value)",
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="SYM=v1,v2,...",
        help="configurations to consider, e.g. --grid p=8,16,32,64 (repeatable)",
    )
    p.add_argument(
        "--repeat",
        type=float,
        default=1,
        metavar="K",
        help="how many times the modelled unit runs (epochs or steps; default 1)",
    )
    p.add_argument("--gpu-hour-price", type=float, metavar="X", help="price of one GPU-hour")
    p.add_argument("--node-hour-price", type=float, metavar="X", help="price of one node-hour (with --gpus-per-node)")
    p.add_argument("--gpus-per-node", type=float, metavar="G", help="GPUs per node, for --node-hour-price")
    p.add_argument("--deadline", metavar="DURATION", help="seconds, or 90m, 12h, 2d")
    p.add_argument("--budget", type=float, metavar="COST", help="in the cost's unit (GPU-hours without a price)")
    p.add_argument("--interval", type=float, default=0.9, metavar="LEVEL", help="interval level (default 0.9)")
    if out:
        p.add_argument("--out", metavar="CSV", help="write the plan, one row per configuration")


def plan_inputs(args) -> tuple[dict, dict]:
    """(the fixed factors of ``--at``, the grid of ``--grid``)."""
    at = parse_assignments(args.at, "--at") if args.at.strip() else {}
    return at, parse_grid(args.grid)


def grid_frame(result: FitResult, items: list) -> pd.DataFrame:
    """The configurations of ``predict --grid``: every combination of the values given, parsed and built
    as for ``advise`` and ``plan`` (:func:`perfmodel.advise.parse_grid`, :func:`perfmodel.plan.configurations`),
    a factor named by its symbol or its column, the columns named as in the data the model was fitted to."""
    from ..advise import parse_grid
    from ..plan import MAX_CONFIGURATIONS

    symbol_of = {c: s for s, c in result.factors.items()}
    work = (result.rate or {}).get("work")
    work = work if isinstance(work, str) and work not in symbol_of and work not in result.factors else None
    grid, works = {}, None
    for name, values in parse_grid(f"{name}={text}" for name, text in items).items():
        if name == work:  # a throughput's work per run, a column of its own: predict gives the rate with it
            works = values
            continue
        sym = symbol_of.get(name, name)
        if sym in grid:
            raise PerfModelError(f"--grid: {name} is given twice")
        grid[sym] = values
    filled = single_values(result, grid)  # a factor measured at one value only: taken at it
    missing = [
        f"{s} (column {c!r})"
        for s, c in result.factors.items()
        if s not in grid and s not in filled and s in result.target_factors()
    ]
    if missing:
        raise PerfModelError(f"--grid: give every factor of the model; missing {', '.join(missing)}")
    frame = configurations(result, filled, grid).rename(columns=result.factors)
    if works is not None:
        if len(frame) * len(works) > MAX_CONFIGURATIONS:
            raise PerfModelError(
                f"the grid has {len(frame) * len(works):,} configurations; at most {MAX_CONFIGURATIONS:,}"
            )
        frame = frame.merge(pd.DataFrame({work: works}), how="cross")
    frame.attrs["filled"] = filled
    return frame


def fill_columns(result: FitResult, frame: pd.DataFrame) -> dict:
    """Add to a CSV of configurations the column of each factor measured at one value only that it lacks
    (taken at that value); {symbol: value} of those added."""
    have = {str(c) for c in frame.columns}
    filled = {
        s: v
        for s, v in single_values(result).items()
        if result.factors[s] not in have and s not in have  # a column by its name or its symbol
    }
    for s, v in filled.items():
        frame[result.factors[s]] = v
    return filled


def prediction_notes(result: FitResult, filled: dict) -> None:
    """The notes ``predict``, ``plan`` and ``advise`` print (on stderr) before their numbers: the factors
    taken at their only measured value, and the verdict on a fit too poor to quote (:mod:`perfmodel.wording`)."""
    if filled:
        print(f"note: {wording.single_value_note(filled)}", file=sys.stderr)
    verdict = wording.poor_fit(result)
    if verdict:
        print(
            f"warning: {verdict[:1].lower()}{verdict[1:].rstrip('.')}; the numbers below are what it predicts, "
            "not what a run will take",
            file=sys.stderr,
        )


def run(args) -> int:
    result = FitResult.load(args.model)
    at, grid = plan_inputs(args)
    note = ""
    if "p" in result.factors and "p" not in grid and "p" not in at:  # as the app's Plan page
        grid["p"] = default_grid(result)
        note = f"note: p = {', '.join(f'{v:g}' for v in grid['p'])} (give others with --grid p=...)"
    deadline = parse_duration(args.deadline) if args.deadline is not None else None
    table = plan(
        result,
        at,
        grid,
        repeat=args.repeat,
        price=args.gpu_hour_price,
        node_price=args.node_hour_price,
        gpus_per_node=args.gpus_per_node,
        deadline=deadline,
        budget=args.budget,
        level=args.interval,
    )
    if note:  # once the plan is made: an error stays one line
        print(note, file=sys.stderr)
    prediction_notes(result, table.attrs.get("filled") or {})
    print(_view(table).to_string(index=False))
    unit = table.attrs["cost_unit"]
    print(
        f"({args.interval:.0%} intervals; cost in {'GPU-hours (no price given)' if unit == 'GPU-hours' else unit}; "
        f"efficiency against the smallest p of the grid)"
    )
    warnings = result.prediction_warnings({s: table[s].to_numpy(float) for s in result.factors})
    for w in dict.fromkeys(warnings):
        print(f"warning: {w}")
    for line in recommend(table):
        print(wording.sentence(line))
    if args.out:
        to_csv(table, args.out)
        print(f"wrote {len(table)} configurations to {args.out}")
    return 0


def _view(table: pd.DataFrame) -> pd.DataFrame:
    """The terminal's table: the varying factors, times in h/min, money with 2 decimals, probabilities."""
    at = table.attrs.get("at", {})
    cols = [s for s in table.attrs["factors"] if s not in at]
    view = table[cols].copy()
    for s in cols:
        view[s] = [f"{v:g}" for v in table[s]]
    view["time"] = [
        fmt_duration(t, lo, hi)
        for t, lo, hi in zip(table["time_s"], table["time_low"], table["time_high"], strict=True)
    ]
    view["GPU-hours"] = [f"{v:.1f}" for v in table["gpu_hours"]]
    view["cost"] = [
        fmt_cost(table, c, lo, hi)
        for c, lo, hi in zip(table["cost"], table["cost_low"], table["cost_high"], strict=True)
    ]
    view["efficiency"] = [f"{e:.0%}" for e in table["efficiency"]]
    if table.attrs.get("deadline") is not None:
        view["P(deadline)"] = [f"{v:.0%}" for v in table["p_deadline"]]
    if table.attrs.get("budget") is not None:
        view["P(budget)"] = [f"{v:.0%}" for v in table["p_budget"]]
    return view
