"""Extrapolation accuracy: fit on the smaller scales, predict the larger ones.

    python benchmarks/accuracy.py [--all] [--workers N]

For every bundled dataset with a processor factor ``p`` (``--all``: also the HPC, collective and
synthetic ones), the rows are split by :func:`perfmodel.evaluate.largest_scale_query` (the
largest ~30 % of the ``p`` values are held out, e.g. ``p > 8``); each model is chosen and fitted
on the smaller scales only and asked for the larger ones. Printed: the MAPE (%) on the held-out
rows of

* ``auto``: :func:`perfmodel.autoselect.auto_select` run on the training rows only;
* ``data-parallel`` and ``ernest``: the presets;
* ``PMNF``: the Extra-P-like search (:func:`perfmodel.compare.pmnf_search`) on the training rows;
* ``ernest-lsq``, ``PMNF-lsq``: the same two fitted as their authors do (least squares on the
  times: Ernest's NNLS, Extra-P's unconstrained least squares) instead of our relative loss;
* ``catalogue``: the expression the dataset catalogue suggests (chosen by a person who saw all
  the data, so it is not an honest extrapolation; a reference only).

The issue's target: on data-parallel training data with processor, data-size and batch-size
factors, ``auto`` <= 15 % and at least 3× lower than Ernest's and the PMNF search's MAPE.
The last lines say, per such dataset (``*``: p, N and b all varied; ``+``: p and b varied with
one data size), whether it is met.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import Model, PerfModelError  # noqa: E402
from perfmodel.autoselect import auto_select  # noqa: E402
from perfmodel.compare import pmnf_search  # noqa: E402
from perfmodel.datasets import list_datasets, load_dataset  # noqa: E402
from perfmodel.evaluate import evaluate_query, largest_scale_query, metrics  # noqa: E402

MODELS = ("auto", "data-parallel", "ernest", "PMNF", "ernest-lsq", "PMNF-lsq", "catalogue")


def split(meas, query):
    env = meas.env()
    mask = evaluate_query(query, env)
    return meas.subset(~mask), meas.subset(mask)


def fit_predict(name, train, test, dataset, workers):
    """(MAPE on test, expression) of model ``name`` chosen and fitted on ``train``."""
    if name == "auto":
        res = auto_select(train, n_best=1, workers=workers).best.result
    elif name in ("data-parallel", "ernest"):
        res = Model(preset=name).fit(train)
    elif name == "ernest-lsq":
        res = Model(preset="ernest", loss="absolute").fit(train)
    elif name == "PMNF":
        res = Model(pmnf_search(train).spec, nonneg=False).fit(train)
    elif name == "PMNF-lsq":
        res = Model(pmnf_search(train).spec, nonneg=False, loss="absolute").fit(train)
    elif name == "catalogue":
        res = Model(dataset.terms).fit(train)
    else:  # pragma: no cover
        raise ValueError(name)
    pred = res.predict(test)
    return metrics(test.y, pred)["mape"], res.expression


def target_kind(dataset, meas) -> str:
    """"*": training data whose processors, data size and batch size all vary (the issue's target);
    "+": training data with p and b varied but one data size (tf_cnn: ImageNet epochs); else ""."""
    if dataset.kind not in ("training", "sweep"):
        return ""
    varied = {s for s in meas.factors if len(np.unique(meas.values(s))) > 1}
    if {"p", "N", "b"} <= varied:
        return "*"
    if {"p", "b"} <= varied and "N" in meas.factors:
        return "+"
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also the HPC, collective and synthetic datasets")
    ap.add_argument("--workers", type=int, default=None, help="processes for the automatic search")
    ap.add_argument("--expressions", action="store_true", help="print the fitted expressions too")
    args = ap.parse_args(argv)
    rows = []
    t0 = time.perf_counter()
    for d in list_datasets():
        if (not args.all and d.kind not in ("training", "sweep")) or d.groups:  # a table of groups: one model each
            continue
        meas = load_dataset(d.name)
        if "p" not in meas.factors:
            continue
        query = largest_scale_query(meas)
        if query is None or not query.startswith("p"):
            continue
        train, test = split(meas, query)
        row = {"dataset": d.name, "split": query, "n": f"{train.n_configurations}/{test.n_configurations}",
               "target": target_kind(d, meas), "expr": {}}
        for name in MODELS:
            try:
                row[name], row["expr"][name] = fit_predict(name, train, test, d, args.workers)
            except PerfModelError as exc:
                row[name], row["expr"][name] = float("nan"), f"error: {exc}"
        rows.append(row)
    seconds = time.perf_counter() - t0

    def cell(v):
        return f"{v:8.1f}" if math.isfinite(v) else "       -"

    head = f"{'dataset':32s} {'hold-out':>10s} {'cfg':>6s} " + " ".join(f"{m:>8s}"[-8:] for m in MODELS)
    print("MAPE (%) on the held-out larger scales; cfg = configurations train/test")
    print("* = the issue's target data (p, N and b all varied); + = p and b varied, one data size N")
    print(head)
    print("-" * len(head))
    for r in rows:
        mark = r["target"] or " "
        print(f"{r['dataset'][:31]:31s}{mark} {r['split']:>10s} {r['n']:>6s} " + " ".join(cell(r[m]) for m in MODELS))
    print("-" * len(head))
    for label, sel in (("median, target datasets (*)", [r for r in rows if r["target"] == "*"]),
                       ("median, p-and-b datasets (+)", [r for r in rows if r["target"] == "+"]),
                       ("median, all rows above", rows)):
        if sel:
            print(f"{label:50s} " + " ".join(cell(float(np.nanmedian([r[m] for r in sel]))) for m in MODELS))
    print(f"\n{len(rows)} datasets in {seconds:.1f} s")
    print("\nIssue's target (auto <= 15 % and >= 3x lower than Ernest's and the PMNF search's), per dataset (*, +):")
    for r in rows:
        if not r["target"]:
            continue
        a = r["auto"]
        ratios = {m: r[m] / a if a > 0 else float("inf") for m in ("ernest", "PMNF", "ernest-lsq", "PMNF-lsq")}
        ok = a <= 15 and ratios["ernest"] >= 3 and ratios["PMNF"] >= 3
        print(f"  {r['target']} {r['dataset']:32s} auto {a:5.1f} %  Ernest/auto {ratios['ernest']:5.1f}x  PMNF/auto "
              f"{ratios['PMNF']:5.1f}x  (least-squares fits: {ratios['ernest-lsq']:.1f}x, {ratios['PMNF-lsq']:.1f}x)"
              f"  -> {'met' if ok else 'NOT met'}")
    if args.expressions:
        print()
        for r in rows:
            print(r["dataset"])
            for m in MODELS:
                print(f"    {m:14s} {r['expr'][m]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
