"""Speed of the automatic search (5-fold validation, 300 rows, three factors) and of the λ path.

    python benchmarks/autoselect_speed.py [--repeat 3]

Target (issue 6): the automatic search with 5-fold validation on 300 rows and three factors in
under 10 s on a 2-core machine. Each case runs serially in this process (``workers=1``, the
baseline) and with the default ``workers=None`` (a process pool over all cores, started once the
work left justifies it, see ``autoselect.POOL_THRESHOLD``), ``--repeat`` times each;
the table gives the median wall time, the speed-up, and checks that both found the same model.

Cases:
* ``synthetic-dp``: 300 runs of a data-parallel job (p, N, b; 150 configurations × 2 repeats,
  2 % noise) generated here from the term library;
* the same with λ = 0.01 (the app's default λ: L1-penalised fits are slower);
* ``relearn-main``: the real RELeARN measurements in data/ (p, n, theta; 244 runs);
* ``λ path``: :func:`lambda_path` of a 6-term model over the default 12 λ values on the
  synthetic data (12 × 6 fits).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import timed  # noqa: E402
from perfmodel import Measurements, Model  # noqa: E402
from perfmodel.autoselect import auto_select, lambda_path, n_workers  # noqa: E402
from perfmodel.datasets import load_dataset  # noqa: E402


def synthetic(rows: int = 300, seed: int = 0) -> Measurements:
    rng = np.random.default_rng(seed)
    out = []
    for p in (1, 2, 4, 8, 16, 32):
        for n in (10_000, 20_000, 40_000, 80_000, 160_000):
            for b in (16, 32, 64, 128, 256):
                for _ in range(2):
                    it = np.ceil(n / (p * b))
                    t = 5 + 0.002 * it * b ** 0.83 + 0.01 * it * np.log2(p) + 0.5 * p
                    out.append({"gpus": p, "samples": n, "batch": b, "time_s": t * (1 + 0.02 * rng.standard_normal())})
    df = pd.DataFrame(out[:rows])
    return Measurements.from_frame(df, "time_s", {"p": "gpus", "N": "samples", "b": "batch"}, name="synthetic-dp")


#: Further factors of :func:`many_factor`, in the order they are added: (symbol, column, levels,
#: generating term or None for a nuisance factor). The ones that matter add time of their own
#: (a checkpoint written per epoch of size s; data-loading per sample from a remote store whose
#: latency grows with its distance class d): single-factor PMNF blocks of the pool.
EXTRA_FACTORS = (
    ("s", "ckpt_gb", (1, 2, 3, 4, 6, 8), "E*s", 0.8),
    ("q", "prefetch", (1, 2, 4, 8), None, 0),
    ("d", "store_tier", (1, 2, 3, 4, 5), "d^2", 0.6),
    ("r", "lr_x1000", (1, 3, 5, 10), None, 0),
    ("w", "loader_workers", (1, 2, 4, 8, 16), None, 0),
    ("h", "hour_of_day", (0, 6, 12, 18), None, 0),
    ("m", "mem_gb", (16, 32, 40, 80), None, 0),
    ("k", "kernel_ver", (1, 2, 3), None, 0),
)


def many_factor(n_factors: int, rows: int = 300, seed: int = 0, noise: float = 0.02):
    """Measurements of a data-parallel job with ``n_factors`` factors, and its generating terms.

    Factors: p, N, b (3), then E (epochs), then :data:`EXTRA_FACTORS` in order (some matter, the
    rest are pure nuisance). Each of ``rows // 2`` configurations draws every factor's level at
    random and is measured twice with ``noise`` relative Gaussian noise. The time is
    ``5 + 0.002·I·b^0.8 + 0.01·I·log2(p) + Σ c·term(extra)``, I = E·ceil(N/(p·b)),
    with the extras' coefficients scaled so that each carries about ``share`` of the median time
    of the library part. Returns ``(Measurements, {generating term: coefficient})``.
    """
    rng = np.random.default_rng(seed)
    base = [("p", "gpus", (1, 2, 4, 8, 16, 32, 64)), ("N", "samples", (10_000, 20_000, 40_000, 80_000, 160_000)),
            ("b", "batch", (16, 32, 64, 128, 256)), ("E", "epochs", (1, 2, 3, 5))]
    n_cfg = rows // 2
    cols = {}
    for sym, col, levels in base[:min(n_factors, 4)]:
        cols[sym] = rng.choice(levels, n_cfg)
    extras = EXTRA_FACTORS[:max(0, n_factors - 4)]
    for sym, col, levels, term, share in extras:
        cols[sym] = rng.choice(levels, n_cfg)
    p, n, b = cols["p"], cols["N"], cols["b"]
    e = cols.get("E", np.ones(n_cfg))
    it = e * np.ceil(n / (p * b))
    t = 5 + 0.002 * it * b ** 0.8 + 0.01 * it * np.log2(p)
    scale = float(np.median(t))
    truth = {"1": 5.0, "I*b^0.8": 0.002, "I*log2(p)": 0.01}
    for sym, col, levels, term, share in extras:
        if term is None:
            continue
        v = e * cols["s"] if term == "E*s" else cols["d"] ** 2.0
        c = share * scale / float(np.median(v))
        t = t + c * v
        truth[term] = c
    names = {sym: col for sym, col, _ in base[:min(n_factors, 4)]}
    names.update({sym: col for sym, col, *_ in extras})
    frame = pd.DataFrame({names[s]: np.repeat(v, 2) for s, v in cols.items()})
    frame["time_s"] = np.repeat(t, 2) * (1 + noise * rng.standard_normal(2 * n_cfg))
    return (Measurements.from_frame(frame, "time_s", {s: c for s, c in names.items()},
                                    name=f"many-factor-{n_factors}"), truth)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    cores = n_workers(None)
    print(f"{os.cpu_count()} CPUs, {cores} usable; median of {args.repeat} runs; "
          f"load average {os.getloadavg()[0]:.2f} at start\n")
    syn = synthetic()
    relearn = load_dataset("relearn-main")
    cases = [
        ("auto_select synthetic-dp", syn, lambda m, w: auto_select(m, k=5, workers=w)),
        ("auto_select synth. λ=0.01", syn, lambda m, w: auto_select(m, k=5, lam=0.01, workers=w)),
        ("auto_select relearn-main", relearn, lambda m, w: auto_select(m, k=5, workers=w)),
        ("lambda_path synthetic-dp", syn,
         lambda m, w: lambda_path(Model("1 + I*b^e_b + I*log2(p) + p + N/p + I*p", bounds={"e_b": (0, 2)}),
                                  m, k=5, workers=w)),
    ]
    head = (f"{'case':27s} {'rows':>5s} {'factors':>8s} {'serial (s)':>11s} {'pool (s)':>9s} {'speed-up':>9s} "
            f"{'< 10 s':>7s}  result (< 10 s: the default, pool)")
    print(head)
    print("-" * (len(head) + 30))
    for name, meas, run in cases:
        t1, r1 = timed(lambda: run(meas, 1), args.repeat)
        t2, r2 = timed(lambda: run(meas, None), args.repeat)
        if hasattr(r1, "best"):
            same = r1.best.spec == r2.best.spec
            what = f"{r1.best.spec}  (CV MAPE {r1.best.cv['mape']:.2f} %, {r1.n_screened} sets screened, " \
                   f"{len(r1.evaluated)} refined)"
        else:
            same = r1.chosen == r2.chosen
            what = f"chosen λ = {r1.chosen:g} (CV MAPE {r1.cv_mape[list(r1.lams).index(r1.chosen)]:.2f} %)"
        print(f"{name:27s} {meas.n_rows:>5d} {len(meas.factors):>8d} {t1:>11.2f} {t2:>9.2f} {t1 / t2:>8.2f}x "
              f"{'yes' if t2 < 10 else 'NO':>7s}  {'same' if same else 'DIFFERENT'}: {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
