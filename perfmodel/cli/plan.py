"""``perfmodel plan MODEL.json``: time, GPU-hours, cost and the chance of meeting a deadline and a
budget per configuration (:func:`perfmodel.plan.plan`), a short table and the recommendations.

The top layer: may import from every layer; nothing in perfmodel imports it.
"""

from __future__ import annotations

import argparse

import pandas as pd

from ..advise import parse_assignments, parse_grid
from ..fitting.result import FitResult
from ..plan import fmt_cost, fmt_duration, parse_duration, plan, recommend
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
    p.add_argument("--at", default="", metavar="SYM=V,...", help="the fixed factors, e.g. 'N=1281167,b=32'")
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
    p.add_argument("--out", metavar="CSV", help="write the plan, one row per configuration")
    return p


def run(args) -> int:
    result = FitResult.load(args.model)
    at = parse_assignments(args.at, "--at") if args.at.strip() else {}
    deadline = parse_duration(args.deadline) if args.deadline is not None else None
    table = plan(
        result,
        at,
        parse_grid(args.grid),
        repeat=args.repeat,
        price=args.gpu_hour_price,
        node_price=args.node_hour_price,
        gpus_per_node=args.gpus_per_node,
        deadline=deadline,
        budget=args.budget,
        level=args.interval,
    )
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
        print(line)
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
        f"{fmt_duration(t)} ({fmt_duration(lo)}–{fmt_duration(hi)})"
        for t, lo, hi in zip(table["time_s"], table["time_low"], table["time_high"], strict=True)
    ]
    view["GPU-hours"] = [f"{v:.1f}" for v in table["gpu_hours"]]
    view["cost"] = [
        f"{fmt_cost(table, c)} ({lo:.2f}–{hi:.2f})"
        for c, lo, hi in zip(table["cost"], table["cost_low"], table["cost_high"], strict=True)
    ]
    view["efficiency"] = [f"{e:.0%}" for e in table["efficiency"]]
    if table.attrs.get("deadline") is not None:
        view["P(deadline)"] = [f"{v:.0%}" for v in table["p_deadline"]]
    if table.attrs.get("budget") is not None:
        view["P(budget)"] = [f"{v:.0%}" for v in table["p_budget"]]
    return view
