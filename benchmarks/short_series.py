"""Short real series shared by the benchmarks: one curve of run time against GPU count each.

The most common real case is a handful of runs, e.g. at 1, 2 and 4 GPUs with one batch size,
asked for 8. :func:`series` takes curves from the bundled tables as a user would have them:

* TF CNN benchmarks 2017: every platform x model x (synthetic | real) x per-GPU batch, one curve
  of seconds per epoch against GPUs (1, 2, 4, 8; the K80 cluster 1, 8, 16, 32, 64);
* MLPerf Training: time to train against accelerators (global batch grows with scale);
* with ``sweep=True`` also the sweep measured on this machine (p = 1..4): the whole table (p, b
  and N varied) and each (b, N) curve on its own.

:func:`cut` splits a curve after its first ``k`` GPU counts; :func:`splits` gives the splits of
the accuracy benchmark (``benchmarks/accuracy.py --series``): 3 to 6 measured GPU counts, the
next one or two to predict.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import Measurements
from perfmodel.data.datasets import DATA_DIR, list_datasets, load_dataset


def series(sweep: bool = False):
    """[(name, Measurements)] of one curve each, ordered by GPU count."""
    out = []
    tf = pd.read_csv(DATA_DIR / "tf_cnn" / "tf_cnn_benchmarks_2017.csv")
    for key, g in tf.groupby(["platform", "model", "data", "batch_per_gpu"]):
        if g["gpus"].nunique() < 4:
            continue
        meas = Measurements.from_frame(
            g, "epoch_time_s", {"p": "gpus", "b": "batch_per_gpu", "N": "samples"}, name="/".join(map(str, key))
        )
        out.append((meas.name, meas))
    for d in list_datasets():
        if d.name.startswith("mlperf-"):
            meas = load_dataset(d.name)
            if len(np.unique(meas.values("p"))) >= 4:
                out.append((d.name, meas))
    if sweep:
        for d in list_datasets():
            if d.kind != "sweep":
                continue
            meas = load_dataset(d.name)
            out.append((d.name, meas))
            f = meas.frame
            for (b, n), _g in f.groupby([meas.factors["b"], meas.factors["N"]]):
                mask = ((f[meas.factors["b"]] == b) & (f[meas.factors["N"]] == n)).to_numpy()
                out.append((f"{d.name}/b={b:g}/N={n:g}", meas.subset(mask)))
    return out


def cut(meas: Measurements, k: int, ahead: int | None = None):
    """(train, test): the rows at the first ``k`` GPU counts, and the rows at the next ``ahead``
    counts (default: all larger ones); None when the curve has no more than ``k`` counts."""
    ps = np.unique(meas.values("p"))
    if len(ps) <= k:
        return None
    p = meas.values("p")
    train = p <= ps[k - 1]
    test = (p > ps[k - 1]) if ahead is None else ((p > ps[k - 1]) & (p <= ps[min(k - 1 + ahead, len(ps) - 1)]))
    return meas.subset(train), meas.subset(test)


def splits(ks=(3, 4, 5, 6), ahead: int = 2, sweep: bool = True):
    """[(name, k, train, test)]: every series cut after its first k GPU counts (k in ``ks``, as
    long as a larger count is left), the next ``ahead`` counts to predict."""
    out = []
    for name, meas in series(sweep=sweep):
        for k in ks:
            parts = cut(meas, k, ahead)
            if parts is not None:
                out.append((name, k, *parts))
    return out
