"""``perfmodel fit --group-by``: the command line's table (a file or a bundled dataset), split and
fitted by :func:`perfmodel.groups.fit_groups`, with a progress bar and the summary written out.

The top layer: may import from every layer; nothing in perfmodel imports it.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..data import datasets
from ..data.measurements import complete_roles, guess_roles, sparse_columns
from ..data.readers import read_table
from ..data.throughput import (
    guess_throughput,
    looks_per_worker,
    positive_work,
    rate_unit_from_name,
    throughput_from_time,
    time_from_throughput,
    work_per_run,
)
from ..data.time_units import check_unit, time_in_seconds, unit_from_name
from ..errors import PerfModelError, did_you_mean
from ..fitting.quality import POOR_MAPE, POOR_R2, judge
from ..groups import fit_groups
from ..language.expression import parse_bounds, unmapped_name_notice, unmapped_names
from ..parallel import dashboard_address, dask_client, executor_name
from .terminal import raw


def warn_unmapped(results) -> None:
    """``warning: q is not a factor; fitted as a free parameter`` on stderr, once per name."""
    names = dict.fromkeys(n for r in results if r is not None for n in unmapped_names(r._expression()))
    for name in names:
        print(f"warning: {unmapped_name_notice(name)}", file=sys.stderr)


def guessed_columns(
    frame: pd.DataFrame,
    time: str | None,
    factors: dict | None,
    throughput: str | None = None,
    work="1",
    time_unit: str | None = None,
    rate_unit: str | None = None,
) -> tuple[pd.DataFrame, str, dict, dict, str]:
    """``(frame, time, factors, rate, note)`` of a file's table: the time column (made from a throughput
    column when one is given, or when no column reads as a time and one reads as a rate), the factors,
    those not given guessed from the column names (:func:`perfmodel.data.measurements.complete_roles`),
    ``rate`` the throughput it came from ({} for a measured time, else stored with the fit), and the note
    that says what was guessed ("" when nothing was), for stderr once the table is read. A measured time
    is read in seconds: in ``time_unit``, else the unit its name states (``step_time_ms``), else seconds
    (:mod:`perfmodel.data.time_units`); a throughput is per ``rate_unit``, else per the unit its name
    divides by (``images/min``), else per second."""
    guessed = []
    if throughput is None and not time and "time" not in guess_roles(frame.columns):
        throughput = guess_throughput(frame.columns)
        if throughput is not None:
            guessed.append(f"throughput = {throughput!r}")
    rate = {}
    if throughput is not None:
        if time:
            raise PerfModelError("give either --time or --throughput, not both")
        if time_unit:
            raise PerfModelError(
                "--time-unit is for a measured time; the time unit a throughput is per is --rate-unit "
                "(images/min: --rate-unit min)"
            )
        per = check_unit(rate_unit) if rate_unit else rate_unit_from_name(throughput)
        frame, time = time_from_throughput(frame, throughput, work, per or "s")
        rate = {"column": throughput, "work": work_per_run(work), **({"unit": per} if per not in (None, "s") else {})}
        if not rate_unit and per != "s":
            guessed.append(
                f"{throughput!r} per {per} (from its name; --rate-unit sets it)"
                if per
                else f"{throughput!r} per second (its name states no time unit; --rate-unit sets it)"
            )
    elif rate_unit:
        raise PerfModelError("--rate-unit is for a throughput (--throughput COL); a time's unit is --time-unit")
    factors = factors or {}
    cols = [c for c in map(str, frame.columns) if c not in (rate.get("column"), rate.get("work"))]
    time, factors, more = complete_roles(cols, time, factors, sparse_columns(frame[cols]))
    guessed += more
    unit = check_unit(time_unit) if time_unit else None
    unit = unit or (None if rate else unit_from_name(time))
    if unit and unit != "s":
        read = time
        frame, time = time_in_seconds(frame, time, unit)
        guessed.append(
            f"{read!r} in {unit}"
            + ("" if time_unit else " (from its name; --time-unit sets it)")
            + f", fitted in seconds as {time!r}"
        )
    note = ""
    if guessed:
        note = (
            f"note: guessed from the column names: {', '.join(guessed)} (set them with --time COL or "
            "--throughput COL, and --factor SYM=COL)"
        )
    if rate:
        note += ("\n" if note else "") + (
            f"note: fitted to the time {time!r}: the work per run over the job's "
            f"whole rate {throughput!r} (--work sets the work per run)"
        )
        if throughput is not None and looks_per_worker(throughput):  # rate came from it
            note += (
                f"\nwarning: {throughput!r} reads as a rate per GPU or per worker: the time is the work over "
                "the whole job's rate, so multiply it by the workers first"
            )
    return frame, time, factors, rate, note


#: Why the unit flags are refused for an Extra-P file: its values are taken as they are.
EXTRAP_UNITS = "an Extra-P file's values are taken as they are (its metric names no unit to convert from)"


def refuse_unit_flags(why: str, throughput=None, time_unit=None, rate_unit=None) -> None:
    """A PerfModelError naming the first of ``--throughput``, ``--time-unit`` and ``--rate-unit`` given,
    with ``why`` it does not apply: for a bundled dataset or an Extra-P file, with or without
    ``--group-by``, rather than ignore it."""
    for flag, value in (("--throughput", throughput), ("--time-unit", time_unit), ("--rate-unit", rate_unit)):
        if value:
            raise PerfModelError(f"{flag}: {why}")


def add_rates(out: pd.DataFrame, frame: pd.DataFrame, rate: dict) -> None:
    """Add the predicted rate (``predicted <column>``, and its interval's ends when there are) to ``out``
    for a model fitted to a throughput: the work over the predicted time (the low time gives the high rate)."""
    work = rate["work"]
    if isinstance(work, str):
        if work not in frame.columns:
            raise PerfModelError(
                f"the model was fitted to {work} / {rate['column']}: the data needs the "
                f"column {work!r} to give the rate (with --grid: --grid {work}=VALUES)"
            )
        ok = positive_work(frame[work])
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            v = frame[work].iloc[i]
            v = v.item() if isinstance(v, np.generic) else v  # 0, not np.int64(0)
            shown = "(an empty cell)" if v is None or v == "" or (isinstance(v, float) and np.isnan(v)) else repr(v)
            raise PerfModelError(
                f"row {i + 1}, column {work!r}: the work per run {shown} is not a positive "
                f"number, so no rate can be given (the model was fitted to {work} / {rate['column']})"
            )
        work = pd.to_numeric(frame[work], errors="coerce").to_numpy(float)
    col = f"predicted {rate['column']}"
    unit = rate.get("unit", "s")
    out[col] = throughput_from_time(out["predicted_time"], work, unit)
    if "predicted_low" in out:
        out[f"{col} low"] = throughput_from_time(out["predicted_high"], work, unit)
        out[f"{col} high"] = throughput_from_time(out["predicted_low"], work, unit)


@dataclass
class Table:
    """A table to group: rows, time column, symbol -> column mapping, suggested terms and groups."""

    frame: pd.DataFrame
    time: str
    factors: dict
    name: str
    terms: str | None = None
    groups: tuple = ()
    rate: dict = field(default_factory=dict)


_EXTRAP_COLUMNS = ("region", "metric", "repetition", "time")


def load_table(
    data: str | None,
    dataset: str | None = None,
    time: str | None = None,
    factors: dict | None = None,
    fmt: str | None = None,
    throughput: str | None = None,
    work="1",
    time_unit: str | None = None,
    rate_unit: str | None = None,
) -> Table:
    """The table of a file (CSV or Extra-P text) or a bundled dataset, for :func:`fit_groups`.

    An Extra-P file's long table has ``region`` and ``metric`` columns (group by them to fit every
    REGION/METRIC block) and its PARAMETERs as factors; a dataset brings its suggested time
    column, mapping, terms and group columns; ``time`` and ``factors`` override them.
    """

    factors = dict(factors or {})
    if (data is None) == (dataset is None):
        raise PerfModelError("give either DATA (a file or dataset name) or --dataset NAME")
    name = dataset
    if data is not None and not Path(data).exists():
        name = data
    if name is not None:
        known = [d.name for d in datasets.list_datasets()]
        if name not in known:
            raise PerfModelError(
                f"{name!r} is neither a file nor a bundled dataset{did_you_mean(name, known)}; "
                f"datasets: {', '.join(known)}"
            )
        ds = datasets.get_dataset(name)
        refuse_unit_flags(
            f"the bundled dataset {name!r} is measured as times in seconds already", throughput, time_unit, rate_unit
        )
        return Table(
            datasets.load_frame(name),
            time or ds.time_column,
            factors or dict(ds.factors),
            ds.name,
            ds.terms,
            tuple(getattr(ds, "groups", ()) or ()),
        )
    assert data is not None  # exactly one of DATA and --dataset (checked above), and no dataset
    path = Path(data)
    frame = read_table(path, fmt)
    if set(_EXTRAP_COLUMNS) <= set(frame.columns) and list(frame.columns)[-1] == "time" and fmt != "csv":
        refuse_unit_flags(EXTRAP_UNITS, throughput, time_unit, rate_unit)
        params = [c for c in frame.columns if c not in _EXTRAP_COLUMNS]
        return Table(frame, time or "time", factors or {p: p for p in params}, path.name, None, ("region", "metric"))
    frame, time, factors, rate, note = guessed_columns(frame, time, factors, throughput, work, time_unit, rate_unit)
    if note:
        print(note, file=sys.stderr)
    return Table(frame, time, factors, path.name, rate=rate)


#: Groups printed in the terminal's table; summary.csv has every group.
TABLE_ROWS = 50


def group_table(summary: pd.DataFrame, limit: int = TABLE_ROWS) -> str:
    """The terminal's per-group table: group, status, MAPE and cross-validated MAPE in %, and the
    formula (or why the group was skipped), one row per group (the first ``limit``)."""

    def pct(v) -> str:
        return "–" if v is None or pd.isna(v) else f"{v:.2f}"

    def column(name: str) -> list:
        return list(summary[name]) if name in summary else [None] * len(summary)

    def status(s, m, cv, r2) -> str:  # a fitted group too poor to compare is marked so
        poor = s == "ok" and judge({"mape": m, "r2": r2}, {"mape": cv}).poor
        return f"{s}, poor fit" if poor else str(s)

    rows = [
        (str(g), status(s, m, cv, r2), pct(m), pct(cv), str(f) if s == "ok" else str(r))
        for g, s, m, cv, r2, f, r in zip(
            column("group"),
            column("status"),
            column("mape"),
            column("cv_mape"),
            column("r2"),
            column("formula"),
            column("reason"),
            strict=True,
        )
    ][:limit]
    head = ("group", "status", "MAPE %", "CV MAPE %", "formula (or reason skipped)")
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(4)]
    lines = []
    for row in [head, *rows]:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3].rjust(widths[3])]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    if any(", poor fit" in row[1] for row in rows):
        lines.append(
            f"(poor fit: CV MAPE above {POOR_MAPE:g} % or R² below {POOR_R2:g}, too poor to compare; "
            "group by more columns or change the terms)"
        )
    return "\n".join(lines)


def run_cli(args) -> int:
    """``perfmodel fit DATA --group-by COL ... --out DIR`` (the arguments of ``fit``)."""
    if args.holdout:
        raise PerfModelError("--holdout is not available with --group-by; use --cv K")
    table = load_table(
        args.data,
        args.dataset,
        args.time,
        dict(args.factor),
        args.format,
        args.throughput,
        args.work,
        args.time_unit,
        args.rate_unit,
    )
    frame = table.frame
    for column, value in (("region", args.region), ("metric", args.metric)):
        if value is not None:
            if column not in frame.columns:
                raise PerfModelError(f"--{column} needs an Extra-P file (no {column!r} column)")
            frame = frame[frame[column] == value]
            if frame.empty:
                raise PerfModelError(f"no rows with {column} {value!r}")
    de = dict(strategy=args.strategy, popsize=args.popsize, maxiter=args.maxiter, tol=args.tol)
    cv = 5 if args.cv is None else int(args.cv)
    if args.auto:
        how = dict(
            auto=True,
            lam=args.lam,
            loss=args.loss,
            penalty=args.penalty,
            seed=args.seed,
            max_terms=args.max_terms,
            final_de=de,
        )
    else:
        terms = args.terms if args.terms is not None or args.preset is not None else table.terms
        if terms is None and args.preset is None:
            raise PerfModelError("choose the model: --terms 'SPEC', --preset NAME or --auto")
        how = dict(
            terms=terms,
            preset=args.preset,
            lam=args.lam,
            penalty=args.penalty,
            loss=args.loss,
            bounds=parse_bounds(args.bounds) or None,
            nonneg=not args.allow_negative,
            seed=args.seed,
            scale_weight=args.scale_weight,
            **de,
        )
    with contextlib.ExitStack() as stack:
        executor = "processes" if args.workers is None or args.workers > 1 else "serial"
        if args.dask:
            executor = stack.enter_context(dask_client(args.dask, args.workers))
            link = dashboard_address(executor)
            if link:
                print(f"Dask dashboard: {link}", file=sys.stderr, flush=True)  # now: the fits take a while
        bar = stack.enter_context(
            tqdm(
                total=None,
                unit="group",
                desc="fitting groups",
                file=raw(sys.stderr),
                disable=not sys.stderr.isatty(),
                dynamic_ncols=True,
            )
        )

        def progress(done: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
            bar.update(done - bar.n)

        fits = fit_groups(
            frame,
            args.group_by,
            time=table.time,
            factors=table.factors,
            cv=cv,
            min_configurations=args.min_configurations,
            executor=executor,
            workers=args.workers,
            replicates=args.replicates,
            gpus_per_node=args.gpus_per_node,
            progress=progress,
            name=table.name,
            **how,
        )
        where = executor_name(executor)
    for o in fits.outcomes:
        if o.result is not None:
            o.result.rate = dict(table.rate)
    path = fits.save(args.out)
    if fits.removed:
        print(
            f"note: removed {len(fits.removed)} model file(s) of the previous run in {args.out} that this run "
            f"did not fit (e.g. {fits.removed[0]}); summary.csv lists every model file there",
            file=sys.stderr,
        )
    warn_unmapped(o.result for o in fits.outcomes)
    skipped = [o for o in fits.outcomes if o.status != "ok"]
    print(group_table(fits.summary, TABLE_ROWS))
    if len(fits) > TABLE_ROWS:
        print(f"... and {len(fits) - TABLE_ROWS} more group(s); see {path}")
    if fits.dropped:
        print(f"warning: {len(fits.dropped)} row(s) dropped (see the notes and reasons in {path})", file=sys.stderr)
    rate = len(fits) / fits.seconds if fits.seconds > 0 else float("inf")
    print(
        f"fitted {fits.n_ok} of {len(fits)} group(s) by {', '.join(args.group_by)} ({len(skipped)} skipped) "
        f"in {fits.seconds:.1f} s ({rate:.1f} groups/s, {where})"
    )
    print(f"saved {path} and {fits.n_ok} model file(s) in {args.out}")
    return 0
