"""Honest intervals: coverage and width of 90 % intervals at larger scales than fitted on.

    python benchmarks/intervals.py [--level 0.9] [--models data-parallel,auto] [--replicates 200]

For every bundled real dataset with a processor factor ``p`` (training runs, the sweep and the
collectives), the largest ~30 % of the ``p`` values are held out
(:func:`perfmodel.evaluate.largest_scale_query`); the model is chosen, fitted and given its
intervals on the smaller scales only, then asked for the held-out ones. Printed per dataset and
model: coverage (share of held-out measured runs inside their interval), the median half-width
as a share of the prediction, and the MAPE of the point prediction; then the pooled coverage and
the median width over all held-out runs. The issue's targets: coverage >= 85 %, median
half-width <= 30 %. Also timed: intervals for a 6-parameter model on 300 rows, 200 replicates,
against the fit itself.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import Measurements, Model, PerfModelError  # noqa: E402
from perfmodel.autoselect import auto_select, plausible  # noqa: E402
from perfmodel.datasets import list_datasets, load_dataset  # noqa: E402
from perfmodel.evaluate import evaluate_query, largest_scale_query  # noqa: E402


def fit_with_intervals(name: str, train: Measurements, replicates: int):
    if name == "auto":
        sel = auto_select(train, n_best=3, workers=1)
        res, others, scores, noise = plausible(sel)
        return res.compute_intervals(train, candidates=others, scores=scores, noise_scale=noise,
                                     replicates=replicates)
    return Model(preset=name).fit(train).compute_intervals(train, replicates=replicates)


def speed(replicates: int) -> None:
    rng = np.random.default_rng(0)
    import pandas as pd

    p = rng.choice([1, 2, 4, 8, 16, 32], 300)
    b = rng.choice([16, 32, 64, 128], 300)
    N = rng.choice([1e5, 2e5, 4e5], 300)
    I = np.ceil(N / (p * b))
    t = (20 + 0.002 * I * b ** 0.85 + 0.01 * I * np.log2(p) + 0.5 * p) * rng.lognormal(0, 0.03, 300)
    meas = Measurements.from_frame(pd.DataFrame({"p": p, "b": b, "N": N, "t": t}), "t",
                                   {"p": "p", "b": "b", "N": "N"})
    model = Model("1 + I*b^e + I*log2(p) + p + I", bounds={"e": (0, 2)})
    t0 = time.perf_counter()
    res = model.fit(meas)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    res.compute_intervals(meas, replicates=replicates, calibrate=False)
    t_boot = time.perf_counter() - t0
    t0 = time.perf_counter()
    res.compute_intervals(meas, replicates=replicates)
    t_all = time.perf_counter() - t0
    print(f"\nspeed: 6 parameters (2 free exponents... {res.n_params} fitted), 300 rows, {replicates} replicates")
    print(f"  fit (differential evolution)          {t_fit:6.3f} s   1.00x")
    print(f"  bootstrap refits                      {t_boot:6.3f} s   {t_boot / t_fit:5.2f}x the fit")
    print(f"  bootstrap + extrapolation calibration {t_all:6.3f} s   {t_all / t_fit:5.2f}x the fit")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--models", default="data-parallel,auto")
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args(argv)
    models = args.models.split(",")
    pooled = {m: {"cov": [], "width": []} for m in models}
    print(f"nominal {args.level:.0%} intervals, fitted on the smaller p, tested on the larger")
    head = f"{'dataset':32s} {'hold-out':>9s} {'runs':>5s} " + " ".join(f"{m[:13]:>13s} cover  width   MAPE" for m in models)
    print(head)
    print("-" * len(head))
    t0 = time.perf_counter()
    for d in list_datasets():
        if d.kind not in ("training", "sweep", "collective"):
            continue
        meas = load_dataset(d.name)
        query = largest_scale_query(meas)
        if "p" not in meas.factors or query is None or not query.startswith("p"):
            continue
        mask = evaluate_query(query, meas.env())
        train, test = meas.subset(~mask), meas.subset(mask)
        cells = []
        for m in models:
            try:
                res = fit_with_intervals(m, train, args.replicates)
                out = res.predict(test, interval=args.level)
            except PerfModelError as exc:
                cells.append(f"{'error: ' + str(exc)[:27]:>34s}")
                continue
            inside = (test.y >= out["predicted_low"]) & (test.y <= out["predicted_high"])
            width = (out["predicted_high"] - out["predicted_low"]) / 2 / out["predicted_time"]
            mape = float(np.mean(np.abs(out["predicted_time"] / test.y - 1)) * 100)
            pooled[m]["cov"] += list(inside)
            pooled[m]["width"] += list(width)
            cells.append(f"{'':13s} {inside.mean() * 100:4.0f}% {np.median(width) * 100:5.1f}% {mape:5.1f}%")
        print(f"{d.name[:32]:32s} {query:>9s} {test.n_rows:5d} " + " ".join(cells))
    print("-" * len(head))
    for m in models:
        c, w = np.array(pooled[m]["cov"], float), np.array(pooled[m]["width"], float)
        if c.size:
            print(f"{m:16s} pooled coverage {c.mean() * 100:5.1f} % of {c.size} held-out runs "
                  f"(target >= 85 %), median half-width {np.median(w) * 100:5.1f} % (target <= 30 %)")
    print(f"{time.perf_counter() - t0:.0f} s")
    if not args.no_speed:
        speed(args.replicates)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
