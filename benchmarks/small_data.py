"""Short real series: fit on the first 3 or 4 measured GPU counts, predict the next ones.

    python benchmarks/small_data.py [--lams 0,1e-4,1e-3,1e-2] [--preset data-parallel]

The most common real case is a handful of runs, e.g. at 1, 2 and 4 GPUs with one batch size,
asked for 8. The series (TF CNN benchmark curves, MLPerf time to train) are built by
``benchmarks/short_series.py``, shared with ``accuracy.py --series`` and ``intervals.py --series``.

Each series is cut after its first ``k`` GPU counts (k = 3, 4); the preset is fitted on those at
each λ and asked for the next GPU counts. Printed per λ: the number of fits, how many failed, the
median and 90th percentile of the absolute percentage error at the next larger scales, and the
share of series off by more than 20 %. This is the table behind ``perfmodel.fitting.DEFAULT_LAM``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from short_series import cut, series

from perfmodel import Model, PerfModelError


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lams", default="0,1e-5,1e-4,3e-4,1e-3,3e-3,1e-2,3e-2")
    ap.add_argument("--preset", default="data-parallel")
    ap.add_argument("--ks", default="3,4")
    args = ap.parse_args(argv)
    lams = [float(v) for v in args.lams.split(",")]
    ks = [int(v) for v in args.ks.split(",")]
    data = series()
    t0 = time.perf_counter()
    print(
        f"{len(data)} real series; preset {args.preset}; fit on the first k GPU counts, "
        "absolute % error at the larger ones"
    )
    head = f"{'λ':>8s} {'k':>2s} {'fits':>5s} {'refused':>8s} {'median %':>9s} {'p90 %':>7s} {'> 20 %':>7s}"
    print(head)
    print("-" * len(head))
    for lam in lams:
        for k in ks:
            errs, refused, n = [], 0, 0
            for _name, meas in data:
                parts = cut(meas, k)
                if parts is None:
                    continue
                train, test = parts
                n += 1
                try:
                    res = Model(preset=args.preset, lam=lam).fit(train)
                except PerfModelError:
                    refused += 1
                    continue
                pred = res.predict(test)
                errs.append(float(np.max(np.abs(pred - test.y) / test.y * 100)))
            e = np.array(errs)
            if e.size:
                print(
                    f"{lam:8.0e} {k:2d} {n:5d} {refused:8d} {np.median(e):9.1f} {np.percentile(e, 90):7.1f} "
                    f"{np.mean(e > 20) * 100:6.0f}%"
                )
            else:
                print(f"{lam:8.0e} {k:2d} {n:5d} {refused:8d} {'-':>9s} {'-':>7s} {'-':>7s}")
    print(f"\n{time.perf_counter() - t0:.1f} s; error per series = the largest error over its held-out GPU counts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
