"""``perfmodel sweep``: run a command over a grid (or a plan file) and record wall-clock times
(:func:`perfmodel.sweep.run_sweep`).

The top layer: may import from every layer; nothing in perfmodel imports it.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ..errors import PerfModelError
from ..spreadsheet import read_cell
from ..sweep import MAX_RUNS, STATUSES, SweepInterrupted, parse_grid_option, placeholders, run_sweep
from .terminal import discard_pending, one_line

#: Rows of a ``--plan`` file read at most (a plan is a list of runs, not a data set).
MAX_PLAN_ROWS = MAX_RUNS


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``sweep`` sub-command to an ``argparse`` subparsers object."""
    parser = subparsers.add_parser(
        "sweep",
        help="run a command over a grid of configurations and record wall-clock times to a CSV",
        description=(
            "Run COMMAND once per configuration of the grid (one at a time), time the whole "
            "process, and append one row per run to --out. Rerun the same command to resume "
            "an interrupted sweep. Rows whose status is not 'ok' are kept but not fitted."
        ),
        epilog=(
            'example: sweep --command "python examples/dp_sgd.py --workers {p} --batch-size {b}" '
            "--grid p=1,2,4 --grid b=32,128 --repeat 3 --out timings.csv"
        ),
    )
    parser.add_argument(
        "--command",
        dest="sweep_command",
        required=True,
        metavar="COMMAND",
        help="command template; {name} is replaced by the value of grid factor name "
        "(inside each argument after shell-like splitting; {{ }} = literal braces)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=v1,v2,...",
        help="a factor and its values; repeat for more factors (all combinations are run)",
    )
    parser.add_argument(
        "--plan",
        metavar="CSV",
        help="run the configurations listed in CSV (one per row, a column per placeholder; "
        "e.g. the output of `advise --out`) instead of a --grid",
    )
    parser.add_argument("--repeat", type=int, default=1, help="repetitions per configuration (default 1)")
    parser.add_argument("--out", default="timings.csv", help="output CSV (appended to; default timings.csv)")
    parser.add_argument("--warmup", action="store_true", help="one untimed warm-up run before the sweep")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="kill a run after this many seconds and record it as 'timeout'",
    )
    parser.add_argument(
        "--shell", action="store_true", help="run the substituted command with /bin/sh (default: no shell)"
    )
    parser.set_defaults(func=run_cli)
    return parser


def _plan_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """(header, rows of fields) of a plan CSV; blank lines are skipped, a ragged row is refused."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, strict=True)
            header = next(reader, None)
            while header is not None and not any(f.strip() for f in header):
                header = next(reader, None)
            if header is None:
                raise PerfModelError(
                    f"--plan {path}: the file is empty (expected a header row with a column "
                    "per placeholder, then one configuration per row)"
                )
            rows: list[list[str]] = []
            for fields in reader:
                if not any(f.strip() for f in fields):
                    continue
                if len(fields) != len(header):
                    raise PerfModelError(
                        f"--plan {path}: row {len(rows) + 1} (line {reader.line_num}) has "
                        f"{len(fields)} fields, the header has {len(header)}"
                    )
                if len(rows) >= MAX_PLAN_ROWS:
                    raise PerfModelError(f"--plan {path}: more than {MAX_PLAN_ROWS:,} configurations")
                rows.append(fields)
    except UnicodeDecodeError:
        raise PerfModelError(f"--plan {path}: not a UTF-8 text file") from None
    except csv.Error as exc:
        raise PerfModelError(f"--plan {path}: line {reader.line_num}: not valid CSV ({exc})") from None
    return [h.strip() for h in header], rows


def read_plan(path: str | Path, names) -> tuple[dict[str, list[str]], list[dict[str, str]]]:
    """(grid, configurations) from a CSV with one configuration per row and a column per placeholder."""
    path = Path(path)
    if not path.is_file():
        raise PerfModelError(f"--plan {path}: file not found")
    header, rows = _plan_rows(path)
    missing = [n for n in names if n not in header]
    if missing:
        raise PerfModelError(
            f"--plan {path}: no column for placeholder {{{missing[0]}}} (columns: {', '.join(header)})"
        )
    col = {n: header.index(n) for n in [*names, "in_plan"] if n in header}
    if "in_plan" in col:  # advise's table: only the planned rows
        rows = [f for f in rows if f[col["in_plan"]].strip().lower() == "true"]

    def clean(v: str) -> str:  # 32.0 from a float column is the configuration 32
        v = read_cell(v)  # a text value as written before perfmodel.spreadsheet made it inert
        try:
            f = float(v)
        except ValueError:
            return v
        return str(int(f)) if f.is_integer() else v

    configs = [{n: clean(f[col[n]]) for n in names} for f in rows]
    grid = {n: list(dict.fromkeys(c[n] for c in configs)) for n in names}
    return grid, configs


def run_cli(args: argparse.Namespace) -> int:
    """Run the ``sweep`` sub-command; 0 on success, 2 on bad input (one line on stderr), 130 on Ctrl-C."""
    try:
        grid: dict[str, list[str]] = {}
        for item in args.grid:
            name, values = parse_grid_option(item)
            if name in grid:
                raise PerfModelError(f"--grid {name} given twice")
            grid[name] = values
        plan = None
        if args.plan:
            if grid:
                raise PerfModelError("give either --plan or --grid, not both")
            grid, plan = read_plan(args.plan, placeholders(args.sweep_command))
        frame = run_sweep(
            args.sweep_command,
            grid,
            repeat=args.repeat,
            out=args.out,
            warmup=args.warmup,
            timeout=args.timeout,
            shell=args.shell,
            plan=plan,
        )
    except PerfModelError as exc:
        discard_pending(sys.stderr)
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except SweepInterrupted as exc:
        print(
            f"sweep stopped by {exc}; the run in progress was stopped and recorded as 'interrupted'; "
            f"rerun the same command to resume ({args.out})",
            file=sys.stderr,
        )
        return 128 + exc.signum
    except KeyboardInterrupt:
        print(f"\nsweep interrupted; rerun the same command to resume ({args.out})", file=sys.stderr)
        return 130
    except OSError as exc:
        discard_pending(sys.stderr)
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    counts = frame["status"].value_counts().to_dict()
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES)
    print(f"sweep done: {len(frame)} rows in {args.out} ({summary}); fit only the 'ok' rows", file=sys.stderr)
    return 0
