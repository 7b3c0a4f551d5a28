"""Short real series: fit on the first 3 or 4 measured GPU counts, predict the next ones.

    python benchmarks/small_data.py [--lams 0,1e-4,1e-3,1e-2] [--preset data-parallel]

The most common real case is a handful of runs, e.g. at 1, 2 and 4 GPUs with one batch size,
asked for 8. Series are taken from the bundled tables as a user would have them:

* TF CNN benchmarks 2017: every platform x model x (synthetic | real) x per-GPU batch, one curve
  of seconds per epoch against GPUs (1, 2, 4, 8; the K80 cluster 1, 8, 16, 32, 64);
* MLPerf Training: time to train against accelerators (global batch grows with scale).

Each series is cut after its first ``k`` GPU counts (k = 3, 4); the preset is fitted on those at
each λ and asked for the next GPU counts. Printed per λ: the number of fits, how many failed, the
median and 90th percentile of the absolute percentage error at the next larger scales, and the
share of series off by more than 20 %. This is the table behind ``perfmodel.fit.DEFAULT_LAM``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import Measurements, Model, PerfModelError  # noqa: E402
from perfmodel.datasets import DATA_DIR, list_datasets, load_dataset  # noqa: E402


def series():
    """[(name, Measurements)] of one curve each, ordered by GPU count."""
    out = []
    tf = pd.read_csv(DATA_DIR / "tf_cnn" / "tf_cnn_benchmarks_2017.csv")
    for key, g in tf.groupby(["platform", "model", "data", "batch_per_gpu"]):
        if g["gpus"].nunique() < 4:
            continue
        meas = Measurements.from_frame(g, "epoch_time_s", {"p": "gpus", "b": "batch_per_gpu", "N": "samples"},
                                       name="/".join(map(str, key)))
        out.append((meas.name, meas))
    for d in list_datasets():
        if d.name.startswith("mlperf-"):
            meas = load_dataset(d.name)
            if len(np.unique(meas.values("p"))) >= 4:
                out.append((d.name, meas))
    return out


def cut(meas: Measurements, k: int):
    ps = np.unique(meas.values("p"))
    if len(ps) <= k:
        return None
    train = meas.values("p") <= ps[k - 1]
    return meas.subset(train), meas.subset(~train)


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
    print(f"{len(data)} real series; preset {args.preset}; fit on the first k GPU counts, "
          "absolute % error at the larger ones")
    head = f"{'λ':>8s} {'k':>2s} {'fits':>5s} {'refused':>8s} {'median %':>9s} {'p90 %':>7s} {'> 20 %':>7s}"
    print(head)
    print("-" * len(head))
    for lam in lams:
        for k in ks:
            errs, refused, n = [], 0, 0
            for name, meas in data:
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
                print(f"{lam:8.0e} {k:2d} {n:5d} {refused:8d} {np.median(e):9.1f} {np.percentile(e, 90):7.1f} "
                      f"{np.mean(e > 20) * 100:6.0f}%")
            else:
                print(f"{lam:8.0e} {k:2d} {n:5d} {refused:8d} {'-':>9s} {'-':>7s} {'-':>7s}")
    print(f"\n{time.perf_counter() - t0:.1f} s; error per series = the largest error over its held-out GPU counts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
