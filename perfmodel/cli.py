"""Command line: ``python -m perfmodel fit|predict|show|datasets|sweep``.

Bad input exits with code 2 and one line naming the problem; never a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


from .data import Measurements, READERS, measurements_from_extrap, read_table
from .errors import PerfModelError
from .expression import parse_bounds
from .fit import LOSSES, PENALTIES, STRATEGIES, Model
from .result import FitResult
from .terms import PRESETS


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise PerfModelError(f"{self.prog}: {message}")


def _factor(text: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.+?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} must look like SYM=COLUMN, e.g. p=processors")
    return m.group(1), m.group(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m perfmodel",
                     description="Fit interpretable execution-time models to measured run times.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, required=True)

    f = sub.add_parser("fit", help="fit a model to measurements and save it as JSON",
                       description="Fit T = sum of c_k * term_k to DATA (a CSV or Extra-P text file, "
                                   "or a bundled dataset name; see `datasets`).")
    f.add_argument("data", nargs="?", help="CSV / Extra-P text file, or a bundled dataset name")
    f.add_argument("--dataset", metavar="NAME", help="a bundled dataset by name (instead of DATA; see `datasets`)")
    f.add_argument("--time", help="time column (seconds); not needed for Extra-P files or bundled datasets")
    f.add_argument("--factor", action="append", type=_factor, default=[], metavar="SYM=COL",
                   help="map a symbol to a column, e.g. --factor p=processors (repeatable)")
    how = f.add_mutually_exclusive_group()
    how.add_argument("--terms", help="expression, e.g. '1 + N/(p*b)*b^e1 + N/(p*b)*log2(p) + p'")
    how.add_argument("--preset", choices=sorted(PRESETS), help="a preset expression")
    how.add_argument("--auto", action="store_true", help="search the term library for a good small model")
    f.add_argument("--max-terms", type=int, default=5, help="with --auto: most terms in a model (intercept included)")
    f.add_argument("--lambda", dest="lam", type=float, default=0.0, help="regularisation weight λ >= 0")
    f.add_argument("--penalty", choices=PENALTIES, default="l1")
    f.add_argument("--loss", choices=LOSSES, default="relative")
    f.add_argument("--bounds", action="append", default=[], metavar="NAME=LO:HI",
                   help="bounds of a free parameter (e1=0:2) or coefficient (c1=-10:10)")
    f.add_argument("--allow-negative", action="store_true", help="coefficients may be negative")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--format", choices=sorted(READERS), help="input format (guessed when omitted)")
    f.add_argument("--region", help="Extra-P region to fit (default: the first)")
    f.add_argument("--metric", help="Extra-P metric to fit (default: the first)")
    f.add_argument("--strategy", choices=STRATEGIES, default="best1bin")
    f.add_argument("--popsize", type=int, default=15)
    f.add_argument("--maxiter", type=int, default=1000)
    f.add_argument("--tol", type=float, default=0.01)
    f.add_argument("--cv", type=int, default=0, metavar="K", help="also report K-fold cross-validation")
    f.add_argument("--holdout", metavar="QUERY", help="also fit without rows matching QUERY (e.g. 'p > 8') "
                   "and report the error on them")
    f.add_argument("--out", required=True, help="model JSON to write")

    p = sub.add_parser("predict", help="predict times for new configurations")
    p.add_argument("model", help="model JSON written by `fit`")
    p.add_argument("data", help="CSV with the factor columns (or symbol names)")
    p.add_argument("--out", required=True, help="CSV to write: DATA's rows plus predicted_time")
    p.add_argument("--contributions", action="store_true", help="add one column per term")

    s = sub.add_parser("show", help="print a fitted model: formula and each term's share")
    s.add_argument("model", help="model JSON written by `fit`")
    s.add_argument("--latex", action="store_true", help="print the formula as LaTeX")
    s.add_argument("--python", action="store_true", help="print the formula as a numpy expression")

    sub.add_parser("datasets", help="list the bundled real datasets")
    try:
        from . import sweep
    except ImportError:  # pragma: no cover - sweep ships with the package
        sweep = None
    if sweep is not None and hasattr(sweep, "add_parser"):
        sweep.add_parser(sub)
    return parser


def _load_measurements(args) -> tuple[Measurements, str | None]:
    """Measurements for `fit`, and the catalogue's suggested terms when DATA is a dataset name."""
    factors = dict(args.factor)
    if (args.data is None) == (args.dataset is None):
        raise PerfModelError("give either DATA (a file or dataset name) or --dataset NAME")
    name = args.dataset
    if name is None and not Path(args.data).exists():
        name = args.data  # not a file: perhaps a bundled dataset's name
    if name is not None:
        from . import datasets

        names = [d.name for d in datasets.list_datasets()]
        if name not in names:
            what = "a bundled dataset" if args.dataset else "a file nor a bundled dataset"
            raise PerfModelError(f"{name!r} is neither {what}; datasets: {', '.join(names)}")
        ds = datasets.get_dataset(name)
        if factors or args.time:
            frame = datasets.load_frame(name)
            meas = Measurements.from_frame(frame, args.time or ds.time_column, factors or dict(ds.factors),
                                           name=ds.name)
        else:
            meas = datasets.load_dataset(name)
        return meas, ds.terms
    path = Path(args.data)
    frame = read_table(path, args.format)
    is_extrap = {"region", "metric", "repetition", "time"} <= set(frame.columns) and \
        (args.format == "extrap" or args.format is None and list(frame.columns)[-1] == "time"
         and "region" in frame.columns)
    if is_extrap and not factors and not args.time:
        return measurements_from_extrap(frame, args.region, args.metric, name=path.name), None
    if not args.time:
        raise PerfModelError("name the time column with --time COL (columns: "
                             f"{', '.join(map(str, frame.columns))})")
    return Measurements.from_frame(frame, args.time, factors, name=path.name), None


def _cmd_fit(args) -> int:
    meas, suggested = _load_measurements(args)
    for d in meas.dropped:
        print(f"warning: dropped {d}", file=sys.stderr)
    de = dict(strategy=args.strategy, popsize=args.popsize, maxiter=args.maxiter, tol=args.tol)
    common = dict(lam=args.lam, penalty=args.penalty, loss=args.loss, bounds=parse_bounds(args.bounds),
                  nonneg=not args.allow_negative, seed=args.seed, **de)
    if args.auto:
        from .autoselect import auto_select

        selection = auto_select(meas, lam=args.lam, loss=args.loss, penalty=args.penalty, seed=args.seed,
                                max_terms=args.max_terms, final_de=de)
        result, model, report = selection.best.result, None, selection.report()
    else:
        if args.terms is None and args.preset is None:
            if suggested is None:
                raise PerfModelError("choose the model: --terms 'SPEC', --preset NAME or --auto")
            args.terms = suggested
        model = Model(args.terms, preset=args.preset, **common)
        result = model.fit(meas)
        report = None
    if args.cv and model is not None:
        from .evaluate import cross_validate

        v = cross_validate(model, meas, k=args.cv, seed=args.seed)
        result.validation[v.method] = v.metrics
    if args.holdout and model is not None:
        from .evaluate import holdout

        _, v = holdout(model, meas, args.holdout)
        result.validation[v.method] = v.metrics
    Path(args.out).write_text(result.to_json())
    print(report or result.report())
    for name in result.params:
        if any(w.startswith(f"{name} = ") and "at its bound" in w for w in result.warnings):
            print(f"hint: widen the bounds of {name} with --bounds {name}=LO:HI", file=sys.stderr)
    print(f"saved {args.out}")
    return 0


def _cmd_predict(args) -> int:
    result = FitResult.load(args.model)
    frame = read_table(Path(args.data), "csv")
    out = frame.copy()
    out["predicted_time"] = result.predict(frame)
    if args.contributions:
        contrib = result.contributions(frame)
        for term in contrib.columns:
            out[f"term: {term}"] = contrib[term].to_numpy()
    outside = result.outside_range(frame)
    if outside.any():
        print(f"note: {int(outside.sum())} of {len(frame)} row(s) lie outside the measured range "
              "(extrapolation)", file=sys.stderr)
    out.to_csv(args.out, index=False)
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
    for k, term in enumerate(result.terms):
        share = result.shares.get(term, float("nan")) * 100
        print(f"  {term:<{width}}  c{k} = {result.coefficients[f'c{k}']:<12.6g} share {share:5.1f} %")
    for name, v in result.params.items():
        print(f"  {name} = {v:.6g}")
    m = result.metrics
    print(f"in-sample: MAPE {m['mape']:.2f} %, R² {m['r2']:.4f}, {result.n_rows} rows "
          f"({result.n_configurations} configurations)")
    for method, vm in result.validation.items():
        print(f"{method}: MAPE {vm['mape']:.2f} %")
    return 0


def _cmd_datasets(args) -> int:
    from . import datasets

    for ds in datasets.list_datasets():
        mapping = ", ".join(f"{k}={v}" for k, v in ds.factors.items())
        print(f"{ds.name:<34} {ds.title}\n{'':<34} factors: {mapping}; terms: {ds.terms}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        handler = {"fit": _cmd_fit, "predict": _cmd_predict, "show": _cmd_show,
                   "datasets": _cmd_datasets}.get(args.command)
        if handler is None:
            from . import sweep

            return sweep.run_cli(args)
        return handler(args)
    except PerfModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line, and a distinct exit code
        print(f"internal error: {type(exc).__name__}: {exc} (please report this)", file=sys.stderr)
        return 1
