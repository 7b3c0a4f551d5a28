"""Honest intervals: coverage and width of 90 % intervals at larger scales than fitted on.

    python benchmarks/intervals.py [--level 0.9] [--models data-parallel,auto] [--replicates 200]

For every bundled real dataset with a processor factor ``p`` (training runs, the sweep and the
collectives), the largest ~30 % of the ``p`` values are held out
(:func:`perfmodel.fitting.evaluate.largest_scale_query`); the model is chosen, fitted and given its
intervals on the smaller scales only, then asked for the held-out ones. Printed per dataset and
model: coverage (share of held-out measured runs inside their interval), the median half-width
as a share of the prediction, and the MAPE of the point prediction; then the pooled coverage and
the median width over all held-out runs. The issue's targets: coverage >= 85 %, median
half-width <= 30 %. Also timed: intervals for a 6-parameter model on 300 rows, 200 replicates,
against the fit itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel import Measurements, Model, PerfModelError, compute_intervals
from perfmodel.data.datasets import list_datasets, load_dataset
from perfmodel.fitting.evaluate import largest_scale_query
from perfmodel.language.query import evaluate_query
from perfmodel.search import auto_select, plausible


def fit_with_intervals(name: str, train: Measurements, replicates: int):
    """(fit with intervals, the displayed model's own point predictor or None)."""
    if name == "auto":
        sel = auto_select(train, n_best=3, workers=1)
        res, others, averaging = plausible(sel)
        compute_intervals(res, train, replicates=replicates, **averaging)
        return res, dataclasses.replace(res, uncertainty={}) if others else None
    return compute_intervals(Model(preset=name).fit(train), train, replicates=replicates), None


def cases(kind: str):
    """[(name, split, train, test)]: the bundled datasets split at their largest p, or short series."""
    out = []
    if kind == "datasets":
        for d in list_datasets():
            if d.kind not in ("training", "sweep", "collective") or d.groups:  # a table of groups: one model each
                continue
            meas = load_dataset(d.name)
            query = largest_scale_query(meas)
            if "p" not in meas.factors or query is None or not query.startswith("p"):
                continue
            mask = evaluate_query(query, meas.env())
            out.append((d.name, query, meas.subset(~mask), meas.subset(mask)))
    else:
        from short_series import cut, series

        for name, meas in series():
            for k in (3, 4):
                parts = cut(meas, k)
                if parts is not None:
                    out.append((name, f"first {k} p", *parts))
    return out


def speed(replicates: int) -> None:
    rng = np.random.default_rng(0)
    import pandas as pd

    p = rng.choice([1, 2, 4, 8, 16, 32], 300)
    b = rng.choice([16, 32, 64, 128], 300)
    N = rng.choice([1e5, 2e5, 4e5], 300)
    iters = np.ceil(N / (p * b))
    t = (20 + 0.002 * iters * b**0.85 + 0.01 * iters * np.log2(p) + 0.5 * p) * rng.lognormal(0, 0.03, 300)
    meas = Measurements.from_frame(pd.DataFrame({"p": p, "b": b, "N": N, "t": t}), "t", {"p": "p", "b": "b", "N": "N"})
    model = Model("1 + I*b^e + I*log2(p) + p + I", bounds={"e": (0, 2)})
    t0 = time.perf_counter()
    res = model.fit(meas)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    compute_intervals(res, meas, replicates=replicates, calibrate=False)
    t_boot = time.perf_counter() - t0
    t0 = time.perf_counter()
    compute_intervals(res, meas, replicates=replicates)
    t_all = time.perf_counter() - t0
    print(f"\nspeed: {res.n_params} fitted parameters (one a free exponent), 300 rows, {replicates} replicates")
    print(f"  fit (differential evolution)          {t_fit:6.3f} s   1.00x")
    print(f"  bootstrap refits                      {t_boot:6.3f} s   {t_boot / t_fit:5.2f}x the fit")
    print(f"  bootstrap + extrapolation calibration {t_all:6.3f} s   {t_all / t_fit:5.2f}x the fit")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--models", default="auto,data-parallel")
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--series", action="store_true", help="also the short series of benchmarks/small_data.py")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args(argv)
    models = args.models.split(",")
    t0 = time.perf_counter()
    for kind in ["datasets"] + (["series"] if args.series else []):
        pooled = {m: {"cov": [], "width": [], "err": [], "err_best": [], "ds_width": []} for m in models}
        print(f"\n{kind}: nominal {args.level:.0%} intervals, fitted on the smaller p, tested on the larger")
        head = f"{'case':36s} {'split':>11s} {'runs':>4s} " + " ".join(
            f"{m[:14]:>14s} cover width  MAPE" for m in models
        )
        print(head)
        print("-" * len(head))
        for name, split, train, test in cases(kind):
            cells = []
            for m in models:
                try:
                    res, single = fit_with_intervals(m, train, args.replicates)
                    out = res.predict(test, interval=args.level)
                except PerfModelError as exc:
                    cells.append(f"{'error: ' + str(exc)[:25]:>33s}")
                    continue
                inside = (test.y >= out["predicted_low"]) & (test.y <= out["predicted_high"])
                width = (out["predicted_high"] - out["predicted_low"]) / 2 / out["predicted_time"]
                err = float(np.mean(np.abs(out["predicted_time"] / test.y - 1)) * 100)
                best = float(np.mean(np.abs(single.predict(test) / test.y - 1)) * 100) if single else err
                for key, v in (("cov", list(inside)), ("width", list(width))):
                    pooled[m][key] += v
                pooled[m]["err"].append(err)
                pooled[m]["err_best"].append(best)
                pooled[m]["ds_width"].append(float(np.median(width)))
                mark = " "  # the point is always the displayed model's (issue 31)
                cells.append(f"{'':14s} {inside.mean() * 100:4.0f}% {np.median(width) * 100:4.0f}% {err:5.1f}{mark}")
            print(f"{name[:36]:36s} {split:>11s} {test.n_rows:4d} " + " ".join(cells))
        print("-" * len(head))
        for m in models:
            c, w = np.array(pooled[m]["cov"], float), np.array(pooled[m]["width"], float)
            e, eb = np.array(pooled[m]["err"]), np.array(pooled[m]["err_best"])
            if not c.size:
                continue
            print(
                f"{m:14s} coverage {c.mean() * 100:5.1f} % of {c.size} held-out runs (target >= 85 %); median "
                f"half-width {np.median(w) * 100:5.1f} % over runs, {np.median(pooled[m]['ds_width']) * 100:5.1f} % "
                f"over cases (target <= 30 %)"
            )
            print(
                f"{'':14s} MAPE median {np.median(e):5.1f} %, cases off by > 20 %: {int(np.sum(e > 20))} of "
                f"{len(e)}"
                + (
                    f" (the displayed model alone: median {np.median(eb):5.1f} %, {int(np.sum(eb > 20))} cases > 20 %)"
                    if m == "auto"
                    else ""
                )
            )
    print(f"\n{time.perf_counter() - t0:.0f} s; * = predicted by the ensemble of plausible models")
    if not args.no_speed:
        speed(args.replicates)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
