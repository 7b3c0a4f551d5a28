"""Coverage of 90 % prediction intervals on a known formula: the long run of the test's slice.

    python benchmarks/interval_coverage.py [--datasets 200] [--seed 2024] [--short]

Each of ``--datasets`` seeded datasets is T = 5 + 0.02·N/p + 0.4·log2(p) at p = 1..16, two N, with
5 % log-normal noise; ``1 + N/p + log2(p)`` is fitted (λ = 0) and given 100-replicate intervals,
then a new noisy run at p = 3 (interpolated), 16 (measured), 32 and 64 (2x and 4x beyond) is
checked against its 90 % interval. Prints the coverage after every 20 datasets and the median
relative half-width per p; exits 1 when the coverage is outside 85-95 % or the widths do not grow
with the distance beyond the data. tests/test_uncertainty.py runs the first datasets of the same
seeded sequence (:func:`coverage_run`).

``--short``: series as short as users measure them, where the noise rests on one or two degrees of
freedom and the band takes the prior's ``few_dof_band_scale`` (:func:`short_run`): one run at each of
3 or 4 GPU counts (1, 2, 4[, 8]) of a known scaling law (Amdahl, a power law, a data-parallel
formula) with 2 % log-normal noise, fitted as ``fit --auto`` does it; a new run at each measured p is
checked against its 90 % interval (the distance beyond is the corpus's to judge: the prior is learned
there). Exits 1 outside 85-95 %.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from perfmodel import Measurements, Model, compute_intervals
from perfmodel.search import auto_select, plausible

#: The generating constants (the fitted model is exactly the simulated one).
TRUE = {"c0": 5.0, "c1": 0.02, "c2": 0.4}
NEW = pd.DataFrame({"p": [3.0, 16.0, 32.0, 64.0] * 2, "N": [2e4] * 4 + [4e4] * 4})


def truth(p, N):
    return TRUE["c0"] + TRUE["c1"] * N / p + TRUE["c2"] * np.log2(p)


def simulated(rng, sigma=0.05, ps=(1, 2, 4, 8, 16), Ns=(2e4, 4e4), reps=1):
    rows = [(p, N) for p in ps for N in Ns for _ in range(reps)]
    p = np.array([r[0] for r in rows], float)
    N = np.array([r[1] for r in rows], float)
    t = truth(p, N) * np.exp(rng.normal(0, sigma, len(p)))
    return Measurements.from_frame(pd.DataFrame({"p": p, "N": N, "t": t}), "t", {"p": "p", "N": "N"})


def coverage_run(datasets: int, seed: int = 2024):
    """(inside: datasets × 8 booleans, the new runs inside their 90 % interval; widths: datasets × 8
    upper bound / prediction), the new runs in the order of :data:`NEW`."""
    rng = np.random.default_rng(seed)
    inside, widths = [], []
    for i in range(datasets):
        meas = simulated(rng)
        res = Model("1 + N/p + log2(p)", lam=0, seed=i).fit(meas)
        compute_intervals(res, meas, replicates=100)
        out = res.predict(NEW, interval=0.9)
        y = truth(NEW["p"].to_numpy(), NEW["N"].to_numpy()) * np.exp(rng.normal(0, 0.05, len(NEW)))
        inside.append(((y >= out["predicted_low"]) & (y <= out["predicted_high"])).to_numpy())
        widths.append((out["predicted_high"] / out["predicted_time"]).to_numpy())
    return np.array(inside), np.array(widths)


#: The scaling laws of :func:`short_run` (time against p), one of each kind the search fits.
SHORT_LAWS = (
    lambda p: 30 + 100 / p,  # Amdahl: start-up and parallel work
    lambda p: 100 * p**-0.9,  # a power law, 93 % efficiency per doubling
    lambda p: 5 + 200 / p + 2 * np.log2(p),  # data-parallel: compute and a log2(p) all-reduce
)


def short_run(datasets: int, seed: int = 2024, sigma: float = 0.02) -> np.ndarray:
    """The new runs at the measured p inside their 90 % interval, one boolean each, over ``datasets``
    short series (cycling through :data:`SHORT_LAWS` and 3 or 4 GPU counts), fitted as ``fit --auto``."""
    rng = np.random.default_rng(seed)
    inside = []
    for i in range(datasets):
        law = SHORT_LAWS[i % len(SHORT_LAWS)]
        p = np.array((1, 2, 4, 8)[: 3 + (i // len(SHORT_LAWS)) % 2], float)
        t = law(p) * np.exp(rng.normal(0, sigma, len(p)))
        meas = Measurements.from_frame(pd.DataFrame({"p": p, "t": t}), "t", {"p": "p"})
        res, _, averaging = plausible(auto_select(meas, seed=i, workers=1))
        compute_intervals(res, meas, replicates=100, **averaging)
        out = res.predict(pd.DataFrame({"p": p}), interval=0.9)
        y = law(p) * np.exp(rng.normal(0, sigma, len(p)))
        inside.extend(((y >= out["predicted_low"]) & (y <= out["predicted_high"])).to_numpy())
    return np.array(inside)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--short", action="store_true", help="short series of 3-4 GPU counts, fitted with --auto")
    args = ap.parse_args()
    if args.short:
        inside = short_run(args.datasets, args.seed)
        ok = 0.85 <= inside.mean() <= 0.95
        print(
            f"short series: coverage {inside.mean():.3f} over {inside.size} new runs at the measured p: "
            + ("ok" if ok else "OUTSIDE 85-95 %")
        )
        return 0 if ok else 1
    inside, widths = coverage_run(args.datasets, args.seed)
    for n in range(20, args.datasets + 1, 20):
        print(f"first {n:>4} datasets: coverage {inside[:n].mean():.3f}")
    w = np.median(widths, axis=0)
    print("median upper bound / prediction at p = 3, 16, 32, 64 (N = 2e4):", " ".join(f"{v:.3f}" for v in w[:4]))
    ok = 0.85 <= inside.mean() <= 0.95 and w[1] < w[2] < w[3]
    print(
        f"coverage {inside.mean():.3f} over {inside.size} new runs: {'ok' if ok else 'OUTSIDE 85-95 % or widths not growing'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
