"""Does following `advise` shrink the error at the target faster than measuring the next power of two?

    python benchmarks/advise_sim.py [--seeds 50] [--steps 3] [--noise 0.05]

A known formula with a parameter-server term that only shows at scale,
``T = 30 + 0.002·N/p + 1.5·log2(p) + 0.3·p`` (seconds, N = 1e6 samples), is measured with
log-normal noise at p = 1, 2, 4 (two runs each). The target is p = 64. Each step adds one run:

* ``advise``: the top configuration of :func:`perfmodel.advise.advise` (candidates p = 1 ... 32);
* ``powers of two``: p = 8, then 16, then 32 (what people usually do next).

After each step the model (the generating terms, default λ) is refitted with its intervals; printed
are the mean absolute error at the target (against the noiseless formula), the mean half-width of
the target's 90 % interval, the share of seeds whose interval covers the truth, and the seconds
spent measuring, per strategy, with the ratio advise / powers of two.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import Measurements, Model, compute_intervals
from perfmodel.advise import advise

TERMS = "1 + N/p + log2(p) + p"
N = 1e6
TARGET = 64.0
GRID = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def truth(p):
    p = np.asarray(p, float)
    return 30 + 0.002 * N / p + 1.5 * np.log2(p) + 0.3 * p


def measure(rng, p, noise):
    return float(truth(p) * np.exp(rng.normal(0, noise)))


def fit(runs):
    frame = pd.DataFrame(runs, columns=["p", "t"]).assign(N=N)
    meas = Measurements.from_frame(frame, "t", {"p": "p", "N": "N"})
    return compute_intervals(Model(TERMS).fit(meas), meas, replicates=100)


def state(res):
    out = res.predict({"p": [TARGET], "N": [N]}, interval=0.9)
    t, lo, hi = (float(out[c][0]) for c in ("predicted_time", "predicted_low", "predicted_high"))
    true = float(truth(TARGET))
    return abs(t / true - 1) * 100, (hi - lo) / 2 / t * 100, lo <= true <= hi


def run(seed: int, steps: int, noise: float) -> dict:
    out = {}
    for strategy in ("advise", "powers of two"):
        rng = np.random.default_rng(seed)
        runs = [(p, measure(rng, p, noise)) for p in (1.0, 2.0, 4.0) for _ in range(2)]
        res = fit(runs)
        trace = [state(res) + (0.0,)]
        spent = 0.0
        for step in range(steps):
            if strategy == "advise":
                p = float(advise(res, {"p": TARGET, "N": N}, {"p": GRID}).loc[0, "p"])
            else:
                p = 8.0 * 2**step
            t = measure(rng, p, noise)
            spent += t
            runs.append((p, t))
            res = fit(runs)
            trace.append(state(res) + (spent,))
        out[strategy] = trace
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.05)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    results = [run(s, args.steps, args.noise) for s in range(args.seeds)]
    print(f"{args.seeds} seeds, noise {args.noise:.0%}, target p = {TARGET:g} (true {float(truth(TARGET)):.1f} s)")
    head = (
        f"{'runs added':>10s} {'strategy':>14s} {'error %':>8s} {'± % (90%)':>10s} {'covered':>8s} "
        f"{'seconds':>8s} {'error ratio':>12s}"
    )
    print(head)
    print("-" * len(head))
    for step in range(args.steps + 1):
        errs = {}
        for strategy in ("advise", "powers of two"):
            e = np.array([r[strategy][step] for r in results], float)
            errs[strategy] = e[:, 0].mean()
            ratio = f"{errs['advise'] / errs['powers of two']:12.2f}" if strategy == "powers of two" else ""
            print(
                f"{step:10d} {strategy:>14s} {e[:, 0].mean():8.2f} {e[:, 1].mean():10.1f} "
                f"{e[:, 2].mean() * 100:7.0f}% {e[:, 3].mean():8.0f} {ratio}"
            )
    print(f"\n{time.perf_counter() - t0:.0f} s; error ratio = advise / powers of two (below 1: the advice wins)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
