"""The command line's parser: every command, flag and help text of ``python -m perfmodel``.

A parse error is one line naming the problem (a PerfModelError the entry point prints), never
argparse's usage dump and exit.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..data.readers import READERS
from ..data.time_units import TIME_UNITS
from ..errors import PerfModelError
from ..fitting.model import DEFAULT_LAM, LOSSES, MAX_SEED, PENALTIES
from ..fitting.problem import STRATEGIES
from ..language.terms import PRESETS
from . import plan as plan_cli, report as report_cli, sweep as sweep_cli


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise PerfModelError(f"{self.prog}: {message}")


def _factor(text: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.+?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} must look like SYM=COLUMN, e.g. p=processors")
    return m.group(1), m.group(2)


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text} is outside [0, {MAX_SEED}]")
    return value


def program_name(argv0: str | None = None) -> str:
    """The command as the user typed it: ``python -m perfmodel`` when run as a module (argv[0] is
    the package's ``__main__.py``), else the script's name (``perfmodel``)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    name = Path(argv0 or "perfmodel").name
    if name in ("__main__.py", "-m", "-c", "") or name.endswith((".py", ".pyc")):
        return "python -m perfmodel"
    return name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog or program_name(), description="Fit interpretable execution-time models to measured run times."
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, required=True)

    f = sub.add_parser(
        "fit",
        help="fit a model to measurements and save it as JSON",
        description="Fit T = sum of c_k * term_k to DATA (a CSV or Extra-P text file, "
        "or a bundled dataset name; see `datasets`).",
    )
    f.add_argument("data", nargs="?", help="CSV / Extra-P text file, or a bundled dataset name")
    f.add_argument("--dataset", metavar="NAME", help="a bundled dataset by name (instead of DATA; see `datasets`)")
    f.add_argument(
        "--time",
        help="time column (seconds, or see --time-unit); not needed for Extra-P files or bundled datasets, "
        "and guessed from the column names when not given (the guess is said)",
    )
    f.add_argument(
        "--throughput",
        metavar="COL",
        help="the runs' rate of work (images/s, tokens/s, ...) instead of a time column: the model "
        "is fitted to --work / COL, and `predict` gives the rate back as well as the time",
    )
    f.add_argument(
        "--work",
        default="1",
        metavar="W|COL",
        help="with --throughput: the units of work per run, a number or a column (default 1: seconds per unit of work)",
    )
    f.add_argument(
        "--time-unit",
        choices=tuple(TIME_UNITS),
        default=None,
        help="the unit of the time column (default: the unit its name states as a unit, e.g. step_time_ms "
        "or 'time (min)', else seconds); it is read in seconds",
    )
    f.add_argument(
        "--rate-unit",
        choices=tuple(TIME_UNITS),
        default=None,
        help="with --throughput: the time unit the rate is per (default: the unit its name divides by, "
        "e.g. images/min, else seconds)",
    )
    f.add_argument(
        "--factor",
        action="append",
        type=_factor,
        default=[],
        metavar="SYM=COL",
        help="map a symbol to a column, e.g. --factor p=processors (repeatable; without any, "
        "the factors are guessed from the column names)",
    )
    how = f.add_mutually_exclusive_group()
    how.add_argument("--terms", help="expression, e.g. '1 + N/(p*b)*b^e1 + N/(p*b)*log2(p) + p'")
    how.add_argument("--preset", choices=sorted(PRESETS), help="a preset expression")
    how.add_argument("--auto", action="store_true", help="search the term library for a good small model")
    f.add_argument("--max-terms", type=int, default=5, help="with --auto: most terms in a model (intercept included)")
    f.add_argument(
        "--lambda",
        dest="lam",
        type=float,
        default=DEFAULT_LAM,
        help=f"regularisation weight λ >= 0 (default {DEFAULT_LAM:g}, as in the app and the library; "
        "λ > 0 lets a model have more fitted parameters than configurations)",
    )
    f.add_argument("--penalty", choices=PENALTIES, default="l1")
    f.add_argument("--loss", choices=LOSSES, default="relative")
    f.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="NAME=LO:HI",
        help="bounds of a free parameter (e1=0:2) or coefficient (c1=-10:10)",
    )
    f.add_argument("--allow-negative", action="store_true", help="coefficients may be negative")
    f.add_argument(
        "--scale-weight",
        type=float,
        default=1.0,
        metavar="R",
        help="each larger measured worker count p weighs R times the one before in the loss (default 1: "
        "every run alike; above 1 the fit follows the largest scales; not with --auto, whose weighted "
        "power law sets its own)",
    )
    f.add_argument("--seed", type=_seed, default=0, help=f"random seed, 0 to {MAX_SEED}")
    f.add_argument("--format", choices=sorted(READERS), help="input format (guessed when omitted)")
    f.add_argument("--region", help="Extra-P region to fit (default: the first)")
    f.add_argument("--metric", help="Extra-P metric to fit (default: the first)")
    f.add_argument("--strategy", choices=STRATEGIES, default="best1bin")
    f.add_argument("--popsize", type=int, default=15)
    f.add_argument("--maxiter", type=int, default=1000)
    f.add_argument("--tol", type=float, default=0.01)
    f.add_argument(
        "--cv",
        type=int,
        default=None,
        metavar="K",
        help="also report K-fold cross-validation (with --group-by: default 5, 0 for none)",
    )
    f.add_argument(
        "--holdout",
        metavar="QUERY",
        help="also fit without rows matching QUERY (e.g. 'p > 8') and report the error on them",
    )
    f.add_argument(
        "--replicates",
        type=int,
        default=None,
        help="bootstrap replicates stored for prediction intervals (default 200; 0: no intervals, "
        "e.g. for thousands of groups, as they cost about 0.5 s a model)",
    )
    f.add_argument(
        "--gpus-per-node",
        type=float,
        metavar="K",
        help="GPUs (workers) per node, to tell a target on more nodes than measured when there is no "
        "nodes column (default: 8 when p's column names GPUs or accelerators, shown as a guess)",
    )
    f.add_argument("--out", required=True, help="model JSON to write (with --group-by: a directory)")
    g = f.add_argument_group(
        "groups",
        "fit the same model to every group of rows; writes OUT/summary.csv and one model JSON per fitted group",
    )
    g.add_argument(
        "--group-by",
        action="append",
        default=[],
        metavar="COL",
        help="group by this column (repeatable; Extra-P files: region, metric)",
    )
    g.add_argument("--min-configurations", type=int, metavar="K", help="skip groups with fewer configurations")
    g.add_argument("--workers", type=int, metavar="N", help="worker processes (default: all cores)")
    g.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the fits on a Dask cluster: a scheduler address "
        "(tcp://host:8786) or 'local' for a LocalCluster on this machine",
    )

    p = sub.add_parser("predict", help="predict times for new configurations")
    p.add_argument("model", help="model JSON written by `fit`")
    p.add_argument("data", nargs="?", help="CSV with the factor columns (or symbol names); or give --grid")
    p.add_argument(
        "--grid",
        action="append",
        type=_factor,
        default=[],
        metavar="SYM=v1,v2,...",
        help="configurations to predict instead of a CSV: every combination of the values given, "
        "e.g. --grid p=16,32,64 --grid b=64 (a symbol or a column; repeatable), as in advise and plan",
    )
    p.add_argument(
        "--out",
        default="-",
        help="CSV to write: DATA's rows plus predicted_time (default or '-': "
        "print it to stdout; messages go to stderr)",
    )
    p.add_argument("--contributions", action="store_true", help="add one column per term")
    p.add_argument(
        "--interval",
        type=float,
        metavar="LEVEL",
        help="add predicted_low and predicted_high, a LEVEL prediction interval (e.g. 0.9)",
    )

    s = sub.add_parser("show", help="print a fitted model: formula and each term's share")
    s.add_argument("model", help="model JSON written by `fit`")
    s.add_argument("--latex", action="store_true", help="print the formula as LaTeX")
    s.add_argument("--python", action="store_true", help="print the formula as a numpy expression")
    s.add_argument(
        "--interval",
        type=float,
        default=0.9,
        metavar="LEVEL",
        help="level of the intervals printed beside each constant (default 0.9)",
    )

    plan_cli.add_parser(sub)
    report_cli.add_parser(sub)
    a = sub.add_parser(
        "advise",
        help="rank the configurations worth measuring next for a target",
        description="Rank candidate configurations by how much measuring each would narrow "
        "the prediction interval at the target, per hour of its predicted run time.",
    )
    a.add_argument("model", help="model JSON written by `fit`")
    a.add_argument("--target", required=True, help="the configuration to predict, e.g. 'p=64,b=32'")
    a.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="SYM=v1,v2,...",
        help="values one could run, e.g. --grid p=1,2,4,8,16,32 (repeatable; other factors: the target's value)",
    )
    a.add_argument("--budget", type=float, metavar="SECONDS", help="seconds of measurement to plan for")
    a.add_argument("--interval", type=float, default=0.9, metavar="LEVEL", help="interval level (default 0.9)")
    a.add_argument("--top", type=int, default=15, help="rows to print (default 15)")
    a.add_argument(
        "--rank-by",
        choices=("gpu-hours", "cost", "wall-time"),
        default="gpu-hours",
        help="rank by the gain per GPU-hour of the run (p × time; default), per unit of money (with a "
        "price), or per hour of wall time",
    )
    a.add_argument("--gpu-hour-price", type=float, metavar="X", help="price of one GPU-hour (adds a cost column)")
    a.add_argument("--node-hour-price", type=float, metavar="X", help="price of one node-hour (with --gpus-per-node)")
    a.add_argument("--gpus-per-node", type=float, metavar="G", help="GPUs per node, for --node-hour-price")
    a.add_argument("--out", help="CSV of the ranked configurations (the plan with --budget), for `sweep --plan`")

    sub.add_parser("datasets", help="list the bundled real datasets")
    sweep_cli.add_parser(sub)
    return parser
