"""Command line: ``python -m perfmodel fit|predict|show|advise|plan|report|datasets|sweep``.

Bad input exits with code 2 and one line naming the problem; never a traceback.

The top layer: may import from every layer; nothing in perfmodel imports it.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from .. import wording
from ..data.measurements import Measurements, configuration_ids, measurements_from_extrap
from ..data.readers import read_csv, read_table
from ..errors import PerfModelError
from ..fitting.defaults import default_model
from ..fitting.model import Model
from ..fitting.result import FitResult
from ..language.expression import parse_bounds
from ..spreadsheet import to_csv
from ..uncertainty import compute_intervals
from ..uncertainty.prior import describe, with_topology
from . import plan as plan_cli, report as report_cli, sweep as sweep_cli
from .groups import EXTRAP_UNITS, add_rates, guessed_columns, refuse_unit_flags, warn_unmapped
from .parser import build_parser, program_name
from .terminal import discard_pending, escaped_output, one_line, raw


def _check_limits(args) -> None:
    """Refuse settings that would run for hours, naming the flag (the library checks the same
    limits; this names the flag instead of the setting)."""
    from ..fitting.evaluate import MAX_FOLDS
    from ..fitting.problem import MAX_DE_WORK, MAX_MAXITER, MAX_POPSIZE
    from ..search import SEARCH_LIMITS

    why = "it would run for hours"
    for flag, value, limit in (
        ("--popsize", args.popsize, MAX_POPSIZE),
        ("--maxiter", args.maxiter, MAX_MAXITER),
        ("--max-terms", args.max_terms, SEARCH_LIMITS["max_terms"][1]),
        ("--cv", args.cv, MAX_FOLDS),
    ):
        if value is not None and value > limit:
            raise PerfModelError(f"{flag} {value} is above the limit {limit} ({why})")
    if args.popsize * args.maxiter > MAX_DE_WORK:
        raise PerfModelError(
            f"--popsize × --maxiter = {args.popsize * args.maxiter} is above the limit {MAX_DE_WORK} ({why})"
        )


@contextlib.contextmanager
def _auto_progress(stream, enabled: bool = True):
    """A progress callback for ``auto_select`` that draws the stage and the fraction done on
    ``stream`` (a tqdm bar; nothing when not ``enabled``, e.g. stderr is not a terminal)."""
    with tqdm(
        total=1,
        file=stream,
        disable=not enabled,
        leave=False,
        dynamic_ncols=True,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} steps [{elapsed}]",
    ) as bar:

        def progress(done: int, total: int, message: str) -> None:
            if bar.total != total:
                bar.total = total
            bar.set_description_str(f"automatic search: {message}", refresh=False)
            bar.update(max(0, done - bar.n))

        yield progress


def _load_measurements(args) -> tuple[Measurements, str | None, dict]:
    """Measurements for `fit`, the catalogue's suggested terms when DATA is a dataset name, and the
    throughput the time was made from ({} for a measured time)."""
    factors = dict(args.factor)
    if (args.data is None) == (args.dataset is None):
        raise PerfModelError("give either DATA (a file or dataset name) or --dataset NAME")
    name = args.dataset
    if name is None and not Path(args.data).exists():
        name = args.data  # not a file: perhaps a bundled dataset's name
    if name is not None:
        from ..data import datasets

        names = [d.name for d in datasets.list_datasets()]
        if name not in names:
            what = "a bundled dataset" if args.dataset else "a file nor a bundled dataset"
            raise PerfModelError(f"{name!r} is neither {what}; datasets: {', '.join(names)}")
        ds = datasets.get_dataset(name)
        refuse_unit_flags(
            f"the bundled dataset {name!r} is measured as times in seconds already",
            args.throughput,
            args.time_unit,
            args.rate_unit,
        )
        if factors or args.time:
            frame = datasets.load_frame(name)
            meas = Measurements.from_frame(
                frame, args.time or ds.time_column, factors or dict(ds.factors), name=ds.name
            )
        else:
            meas = datasets.load_dataset(name)
        return meas, ds.terms, {}
    path = Path(args.data)
    frame = read_table(path, args.format)
    is_extrap = {"region", "metric", "repetition", "time"} <= set(frame.columns) and (
        args.format == "extrap"
        or args.format is None
        and list(frame.columns)[-1] == "time"
        and "region" in frame.columns
    )
    if is_extrap and not factors and not args.time and not args.throughput:
        refuse_unit_flags(EXTRAP_UNITS, args.throughput, args.time_unit, args.rate_unit)
        return measurements_from_extrap(frame, args.region, args.metric, name=path.name), None, {}
    frame, time, factors, rate, note = guessed_columns(
        frame, args.time, factors, args.throughput, args.work, args.time_unit, args.rate_unit
    )
    try:
        meas = Measurements.from_frame(frame, time, factors, name=path.name)
    except PerfModelError as e:  # still one line: with the guess that may have led to it
        guess = next((line for line in note.splitlines() if line.startswith("note: guessed")), "")
        if guess:
            raise PerfModelError(f"{e}; {guess[len('note: ') :]}") from None
        raise
    if note:
        print(note, file=sys.stderr)
    return meas, None, rate


def _cmd_fit(args) -> int:
    try:
        return _fit(args)
    except PerfModelError as exc:
        dropped = getattr(args, "_dropped", None)
        if dropped:  # the one error line says what the warnings before it would have
            raise PerfModelError(f"{exc} ({len(dropped)} row(s) were dropped, e.g. {dropped[0]})") from None
        raise


def _fit(args) -> int:
    _check_limits(args)
    args.replicates = 200 if args.replicates is None else args.replicates
    if args.replicates < 0:
        raise PerfModelError(f"--replicates must be >= 0, got {args.replicates}")
    from ..fitting.members import MAX_STORED_REPLICATES
    from ..parallel import check_dask_address, n_workers

    if args.replicates > MAX_STORED_REPLICATES:
        raise PerfModelError(
            f"--replicates {args.replicates} is above the limit {MAX_STORED_REPLICATES} "
            "(it would run for hours and the model file would not load)"
        )
    if not args.group_by:
        given = [
            flag
            for flag, v in (
                ("--workers", args.workers),
                ("--dask", args.dask),
                ("--min-configurations", args.min_configurations),
            )
            if v is not None
        ]
        if given:
            raise PerfModelError(f"{given[0]} needs --group-by COL (it sets how the groups are fitted)")
    if args.gpus_per_node is not None and not (np.isfinite(args.gpus_per_node) and args.gpus_per_node >= 1):
        raise PerfModelError(
            f"--gpus-per-node: GPUs per node must be a number >= 1, got {args.gpus_per_node:g}; without it, "
            "8 is guessed when p's column names GPUs (shown as a guess)"
        )
    if args.workers is not None:
        cap = 4 * n_workers()
        if not 1 <= args.workers <= cap:
            raise PerfModelError(
                f"--workers must be from 1 to {cap} (4 × the {n_workers()} core(s)), got {args.workers}"
            )
    if args.dask is not None:
        check_dask_address(args.dask)
    if args.auto and args.scale_weight != 1:
        raise PerfModelError("--scale-weight is for a model you name (--terms or --preset); --auto weighs its own laws")
    if args.group_by:
        from .groups import run_cli

        return run_cli(args)
    meas, suggested, rate = _load_measurements(args)
    args._dropped = list(meas.dropped)
    for d in meas.dropped:
        print(f"warning: dropped {d}", file=sys.stderr)
    meas = with_topology(meas, args.gpus_per_node)
    de = dict(strategy=args.strategy, popsize=args.popsize, maxiter=args.maxiter, tol=args.tol)
    common = dict(
        lam=args.lam,
        penalty=args.penalty,
        loss=args.loss,
        bounds=parse_bounds(args.bounds),
        nonneg=not args.allow_negative,
        seed=args.seed,
        scale_weight=args.scale_weight,
        **de,
    )
    averaging: dict = {}  # compute_intervals's extra arguments for the search's candidates
    if args.auto:
        from ..search import auto_select, plausible

        with _auto_progress(raw(sys.stderr), enabled=sys.stderr.isatty()) as progress:
            selection = auto_select(
                meas,
                lam=args.lam,
                loss=args.loss,
                penalty=args.penalty,
                seed=args.seed,
                max_terms=args.max_terms,
                final_de=de,
                progress=progress,
            )
        result, _, averaging = plausible(selection)
        model, report = None, selection.report()
    else:
        if args.terms is None and args.preset is None:
            if suggested is None:  # the app's first model for this data (data-parallel from 3 configurations)
                args.terms, bounds = default_model(meas)
                common["bounds"] = {**bounds, **common["bounds"]}
                print(
                    f"note: no model given: fitting {args.terms!r}, the dashboard's first model for this data "
                    "(the data-parallel preset; choose another with --terms, --preset or --auto)",
                    file=sys.stderr,
                )
            else:
                args.terms = suggested
        model = Model(args.terms, preset=args.preset, **common)
        result = model.fit(meas)
        report = None
        warn_unmapped([result])
    if args.auto and (args.cv or args.holdout):
        # The chosen terms, refitted with the same settings on each split; the search saw every row.
        model = selection.best.model(**de)
        print(
            "note: --cv/--holdout with --auto validate the chosen terms; the search that chose them saw every row",
            file=sys.stderr,
        )
    if args.cv:
        from ..fitting.evaluate import cross_validate

        v = cross_validate(model, meas, k=args.cv, seed=args.seed)
        result.validation[v.method] = v.metrics
    if args.holdout:
        from ..fitting.evaluate import holdout

        _, v = holdout(model, meas, args.holdout)
        result.validation[v.method] = v.metrics
    if args.replicates:
        compute_intervals(result, meas, replicates=args.replicates, **averaging)
    result.rate = rate
    result.save(args.out)
    print(report or result.report())
    if report and result.has_intervals:
        print(result.intervals_report())
    if result.has_intervals:
        print(f"topology: {describe(result._uncertainty().topology)}")
    verdict = wording.poor_fit(result)
    if verdict:
        print(
            f"warning: {verdict[:1].lower()}{verdict[1:].rstrip('.')}; fit one model per "
            "group (--group-by COL), add terms (or --auto), or map a factor the time depends on",
            file=sys.stderr,
        )
    for name in result.params:
        if any(w.startswith(f"{name} = ") and "at its bound" in w for w in result.warnings):
            print(f"hint: widen the bounds of {name} with --bounds {name}=LO:HI", file=sys.stderr)
    print(f"saved {args.out}")
    return 0


def _refuse_output_names(frame: pd.DataFrame, result: FitResult, args) -> None:
    """A PerfModelError when DATA has a column named as one predict writes (``predicted_time``,
    ``predicted_low``, ``predicted_high``, a rate's, a term's): it would be overwritten, or a stale
    ``predicted_low`` would stand beside a new ``predicted_time``."""
    names = ["predicted_time", "predicted_low", "predicted_high"]
    if result.rate:
        rate = f"predicted {result.rate['column']}"
        names += [rate, f"{rate} low", f"{rate} high"]
    if args.contributions:
        names += [f"term: {t}" for t in result.terms]
    taken = [str(c) for c in frame.columns if str(c) in names]
    if taken:
        raise PerfModelError(
            f"DATA has a column {taken[0]!r}, a name predict writes its output under; rename or drop it "
            "(it would be overwritten, or stand beside the new predictions as if it were one)"
        )


def _cmd_predict(args) -> int:
    result = FitResult.load(args.model)
    if (args.data is None) == (not args.grid):
        raise PerfModelError("give either DATA (a CSV of configurations) or --grid SYM=v1,v2,...")
    frame = (
        read_csv(Path(args.data), min_columns=1) if args.data is not None else plan_cli.grid_frame(result, args.grid)
    )
    _refuse_output_names(frame, result, args)
    filled = frame.attrs.get("filled") or (plan_cli.fill_columns(result, frame) if args.data is not None else {})
    plan_cli.prediction_notes(result, filled)
    out = frame.copy()
    result.check_defined(frame)
    if args.interval is not None:
        env = result._env(frame)
        n = int(configuration_ids(list(env.values())).max()) + 1 if env and len(frame) else 1
        result.check_work(n, "the grid" if args.grid else "DATA")
        pred = result.predict(frame, interval=args.interval)
        ends = pred[["predicted_low", "predicted_high"]].to_numpy(float)
        unbounded = np.flatnonzero(~np.isfinite(ends).all(axis=1))
        if unbounded.size:  # e.g. cores = 1e-300: the time is finite, its interval overflows
            i = int(unbounded[0])
            raise PerfModelError(
                f"row {i + 1}: the {args.interval:.0%} interval is not finite (predicted "
                f"{pred['predicted_time'].iloc[i]:.4g} s, from {ends[i, 0]:.4g} to {ends[i, 1]:.4g}): "
                "the configuration is too far beyond the measured range for the model's members"
            )
        for col in pred.columns:
            out[col] = pred[col].to_numpy()
    else:
        out["predicted_time"] = result.predict(frame)
    if result.rate:
        add_rates(out, frame, result.rate)
    if args.contributions:
        contrib = result.contributions(frame)
        for term in contrib.columns:
            out[f"term: {term}"] = contrib[term].to_numpy()
    outside = result.outside_range(frame)
    if outside.any():
        print(
            f"note: {int(outside.sum())} of {len(frame)} row(s) lie outside the measured range (extrapolation)",
            file=sys.stderr,
        )
    for w in result.prediction_warnings(frame):
        print(f"warning: {w}", file=sys.stderr)
    if args.out == "-":  # the rows as they are into a pipe; on a terminal, their control characters escaped
        to_csv(out, sys.stdout if sys.stdout.isatty() else raw(sys.stdout))
    else:
        to_csv(out, args.out)
        print(f"wrote {len(out)} predictions to {args.out}")
    return 0


def _cmd_show(args) -> int:
    result = FitResult.load(args.model)
    if args.latex:
        print(result.latex())
        return 0
    if args.python:
        print(result.python_expression())
        return 0
    print(result.formula())
    width = max(len(t) for t in result.terms)
    ci = result.constant_intervals(args.interval) if result.has_intervals else {}
    si = result.share_intervals(args.interval) if result.has_intervals else {}

    def rng(d, key, scale=1.0, fmt=".4g"):
        return f" [{d[key][0] * scale:{fmt}}, {d[key][1] * scale:{fmt}}]" if key in d else ""

    if ci:
        print(f"  ({args.interval:.0%} intervals in brackets)")
    for k, term in enumerate(result.terms):
        share = result.shares.get(term, float("nan")) * 100
        c = result.coefficients[f"c{k}"]
        print(
            f"  {term:<{width}}  c{k} = {c:.6g}{rng(ci, f'c{k}')}  share {share:.1f} %"
            f"{rng(si, term, 100, '.1f')}" + ("  (dropped: coefficient 0)" if c == 0 else "")
        )
    for name, v in result.params.items():
        print(f"  {name} = {v:.6g}{rng(ci, name)}")
    m = result.metrics
    print(
        f"in-sample: MAPE {m['mape']:.2f} %, R² {m['r2']:.4f}, {result.n_rows} rows "
        f"({result.n_configurations} configurations)"
        + (f"; fitted with {result.weighting}" if result.weighting else "")
    )
    if result.rate:
        print(
            f"time: {result.time!r}, made from the throughput {result.rate['column']!r} (`predict` gives the rate back)"
        )
    for method, vm in result.validation.items():
        print(f"{method}: MAPE {vm['mape']:.2f} %")
    if result.has_intervals:
        note = result._uncertainty().members_note
        if note:
            print(note)
    else:
        print("no intervals stored (fitted with --replicates 0)")
    for w in result.warnings:
        print(f"warning: {w}")
    return 0


def _cmd_advise(args) -> int:
    from ..advise import advise, parse_assignments, parse_grid
    from ..uncertainty.ranges import range_at

    result = FitResult.load(args.model)
    target = parse_assignments(args.target)
    table = advise(
        result,
        target,
        parse_grid(args.grid),
        budget=args.budget,
        level=args.interval,
        rank_by=args.rank_by,
        gpu_hour_price=args.gpu_hour_price,
        node_hour_price=args.node_hour_price,
        gpus_per_node=args.gpus_per_node,
    )
    a = table.attrs
    plan_cli.prediction_notes(result, a.get("filled") or {})
    target = {**(a.get("filled") or {}), **target}
    target = {s: target[s] for s in result.factors if s in target}
    shown = ", ".join(f"{k}={v:g}" for k, v in target.items())
    today = range_at(result, target, args.interval)
    assert today is not None  # advise refused a fit without intervals above
    print(
        f"target {shown}: predicted {wording.fmt_time(today.point, today.low, today.high)}, "
        f"{wording.fmt_band(today.point, today.low, today.high)} ({args.interval:.0%} interval) today"
    )
    for w in result.prediction_warnings({k: [v] for k, v in target.items()}):
        print(f"warning: {w}")
    rank = table.attrs["rank_column"]
    cols = (
        list(result.factors)
        + ["predicted_time", "gpu_hours"]
        + (["cost"] if "cost" in table else [])
        + ["target_halfwidth_pct", "gain_pct", rank]
    )
    cols += ["in_plan", "cumulative_s"] if args.budget is not None else []
    view = table.head(max(1, args.top))[["rank"] + cols].copy()
    print(view.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-"))  # '-': not in the plan
    per = {
        "gain_per_gpu_hour": "GPU-hour of the run (p × predicted time)",
        "gain_per_cost": "unit of money",
        "gain_per_hour": "hour of predicted wall time",
    }[rank]
    print(
        f"ranked by {rank}: the narrowing of the target's interval (percentage points) per {per}; "
        "target_halfwidth_pct: the half-width expected after measuring that configuration"
    )
    if args.out:
        keep = table[table["in_plan"]] if args.budget is not None else table
        to_csv(keep, args.out)
        print(
            f"wrote {len(keep)} configurations to {args.out} (run them with `{program_name()} sweep --plan {args.out}`)"
        )
    return 0


def _cmd_datasets(args) -> int:
    from ..data import datasets

    for ds in datasets.list_datasets():
        mapping = ", ".join(f"{k}={v}" for k, v in ds.factors.items())
        print(f"{ds.name:<34} {ds.title}\n{'':<34} factors: {mapping}; terms: {ds.terms}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command. Numerical warnings are caught: on success each distinct one is printed as
    one ``warning:`` line, on an error only the error line is printed."""
    with escaped_output():  # text from data reaches the terminal with its control characters escaped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            code = _main(argv)
        if code == 0:
            lines = [f"warning: {w.category.__name__}: {(str(w.message).splitlines() or [''])[0]}" for w in caught]
            for text in dict.fromkeys(lines):  # each distinct warning once, in order
                print(text, file=sys.stderr)
    return code


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "interval", None) is not None:
            from ..fitting.stored_checks import check_level

            args.interval = check_level(args.interval, "--interval")
        handler = {
            "fit": _cmd_fit,
            "predict": _cmd_predict,
            "show": _cmd_show,
            "advise": _cmd_advise,
            "plan": plan_cli.run,
            "report": report_cli.run,
            "datasets": _cmd_datasets,
        }.get(args.command)
        if handler is None:
            return sweep_cli.run_cli(args)
        return handler(args)
    except PerfModelError as exc:
        discard_pending(sys.stderr)  # the error is the one line: not the notes that led to it
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        discard_pending(sys.stderr)
        print(one_line(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line, and a distinct exit code
        discard_pending(sys.stderr)
        print(one_line(f"internal error: {type(exc).__name__}: {exc} (please report this)"), file=sys.stderr)
        return 1
