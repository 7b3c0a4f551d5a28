"""``perfmodel report MODEL.json [--data DATA] [--out report.html]``: the standalone HTML report the app's
Export page writes (:func:`perfmodel.report.html_report`: the headline or the verdict on a poor fit, the
formula, metrics, constants, the charts, and the plan when one is asked for), so a pipeline can publish it.

The measured runs come from ``--data`` (read with the model's own mapping: its time, throughput or time
unit, and factors), else from the bundled dataset or the file (in the current directory) the model names;
without them the report has the charts of the model alone and says so.

The top layer: may import from every layer; nothing in perfmodel imports it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..data.measurements import Measurements, measurements_from_extrap
from ..data.readers import read_table
from ..data.throughput import time_from_throughput
from ..data.time_units import time_in_seconds, unit_from_name
from ..errors import PerfModelError
from ..fitting.result import FitResult
from ..plan import default_grid, parse_duration, plan
from .plan import add_plan_arguments, plan_inputs


def add_parser(sub) -> argparse.ArgumentParser:
    r = sub.add_parser(
        "report",
        help="write the standalone HTML report of a fitted model (as the app's Export page)",
        description="Write the HTML report of MODEL (headline or poor-fit verdict, formula, metrics, constants, "
        "interactive charts; plotly.js inlined, so it opens offline). With a deadline, a budget, a price or a "
        "grid it has the plan too (as `plan` computes it).",
    )
    r.add_argument("model", help="model JSON written by `fit`")
    r.add_argument(
        "--data",
        help="the measured runs the model was fitted to (CSV or Extra-P; default: the bundled dataset or the "
        "file the model names, when there is one)",
    )
    r.add_argument("--out", default="report.html", help="HTML file to write (default report.html; '-': stdout)")
    r.add_argument("--along", metavar="SYM", help="the factor of the scaling charts (default p)")
    r.add_argument(
        "--extend",
        type=float,
        default=4.0,
        metavar="K",
        help="draw the scaling curve to K × the largest measured value (default 4, as the app)",
    )
    add_plan_arguments(r, out=False)
    r.add_argument("--plan", action="store_true", help="add the plan with its defaults (no deadline, no price)")
    return r


def _measurements(result: FitResult, path: Path) -> Measurements:
    """The runs of ``path`` as the model reads them: its time (made from its throughput, or read in seconds
    from another unit) and its factors."""
    frame = read_table(path)
    if {"region", "metric", "repetition", "time"} <= set(frame.columns) and "time" == list(frame.columns)[-1]:
        m = re.search(r"\[(.*?)(?: / (.*))?\]$", result.dataset or "")
        region, metric = m.groups() if m else (None, None)
        return measurements_from_extrap(frame, region, metric, name=path.name)
    time = result.time
    if result.rate:
        frame, time = time_from_throughput(frame, result.rate["column"], result.rate["work"])
    elif time not in frame.columns and time.endswith(" in s"):  # "step_time_ms in s": read in seconds again
        source = time[: -len(" in s")]
        frame, time = time_in_seconds(frame, source, unit_from_name(source) or "s")
    factors = dict(result.factors)
    # nodes the fit made from p (no nodes column in the file): made again from the GPUs per node
    derived = factors.get("nodes") not in (None, *frame.columns) and bool(result.gpus_per_node) and "p" in factors
    if derived:
        del factors["nodes"]
    meas = Measurements.from_frame(frame, time, factors, name=path.name)
    return meas.with_nodes(float(result.gpus_per_node or 0)) if derived else meas


def _find_data(result: FitResult, given: str | None) -> tuple[Measurements | None, str]:
    """(the measurements, a note for stderr)."""
    if given is not None:
        return _measurements(result, Path(given)), ""
    from ..data import datasets

    name = result.dataset or ""
    if name in {d.name for d in datasets.list_datasets()}:
        return datasets.load_dataset(name), ""
    plain = re.sub(r"\s*\[.*\]$", "", name)
    if plain and Path(plain).is_file():
        return _measurements(result, Path(plain)), f"note: the measured runs read from {plain}"
    return None, (
        f"note: the data {name!r} is not at hand: the report has the model's own charts only "
        "(give the measured runs with --data FILE)"
    )


def run(args) -> int:
    from .. import report

    result = FitResult.load(args.model)
    meas, note = _find_data(result, args.data)
    if note:
        print(note, file=sys.stderr)
    if not (args.extend >= 1):
        raise PerfModelError(f"--extend must be 1 or more, got {args.extend:g}")
    along = args.along or ("p" if "p" in result.factors else next(iter(result.factors), None))
    if along is not None and along not in result.factors:
        raise PerfModelError(f"--along: {along!r} is not a factor of the model ({', '.join(result.factors)})")
    scaling = {}
    if along is not None:
        at, _ = plan_inputs(args)
        scaling = {
            "symbol": along,
            "fixed": {s: v for s, v in at.items() if s != along and s in result.factors},
            "x_max": result.factor_ranges[along][1] * args.extend,
        }
    table = None
    asked = args.plan or args.grid or args.deadline or args.budget or args.gpu_hour_price or args.node_hour_price
    if asked:
        if "p" not in result.factors:
            raise PerfModelError("a plan compares numbers of workers: the model has no factor p")
        at, grid = plan_inputs(args)
        table = plan(
            result,
            at,
            grid or {"p": default_grid(result)},
            repeat=args.repeat,
            price=args.gpu_hour_price,
            node_price=args.node_hour_price,
            gpus_per_node=args.gpus_per_node,
            deadline=parse_duration(args.deadline) if args.deadline is not None else None,
            budget=args.budget,
            level=args.interval,
        )
    text = report.html_report(result, meas, scaling=scaling, plan=table)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}" + (" (with the plan)" if table is not None else ""))
    return 0
