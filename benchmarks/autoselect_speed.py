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

Many factors (issue 10): ``python -m perfmodel fit DATA --auto`` end to end (a subprocess: import,
search, intervals, JSON) on 300 rows of :func:`many_factor` with 3, 6, 8 and 12 factors. Target:
under 10 s with 8 factors on a 2-core machine. ``--baseline REV`` also runs the same commands with
the tree of git revision REV (extracted with ``git archive`` into a temporary folder), so before and
after are measured in the same run, under the same load; ``--timeout`` caps each run. The table
says whether the generating terms were found and no nuisance factor entered the model.

    python benchmarks/autoselect_speed.py --many-only --baseline 6df6af6 --timeout 400
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import timed

from perfmodel import Measurements, Model
from perfmodel.data.datasets import load_dataset
from perfmodel.parallel import n_workers
from perfmodel.search import auto_select, lambda_path


def synthetic(rows: int = 300, seed: int = 0) -> Measurements:
    rng = np.random.default_rng(seed)
    out = []
    for p in (1, 2, 4, 8, 16, 32):
        for n in (10_000, 20_000, 40_000, 80_000, 160_000):
            for b in (16, 32, 64, 128, 256):
                for _ in range(2):
                    it = np.ceil(n / (p * b))
                    t = 5 + 0.002 * it * b**0.83 + 0.01 * it * np.log2(p) + 0.5 * p
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
    base = [
        ("p", "gpus", (1, 2, 4, 8, 16, 32, 64)),
        ("N", "samples", (10_000, 20_000, 40_000, 80_000, 160_000)),
        ("b", "batch", (16, 32, 64, 128, 256)),
        ("E", "epochs", (1, 2, 3, 5)),
    ]
    n_cfg = rows // 2
    cols = {}
    for sym, _col, levels in base[: min(n_factors, 4)]:
        cols[sym] = rng.choice(levels, n_cfg)
    extras = EXTRA_FACTORS[: max(0, n_factors - 4)]
    for sym, _col, levels, _term, _share in extras:
        cols[sym] = rng.choice(levels, n_cfg)
    p, n, b = cols["p"], cols["N"], cols["b"]
    e = cols.get("E", np.ones(n_cfg))
    it = e * np.ceil(n / (p * b))
    t = 5 + 0.002 * it * b**0.8 + 0.01 * it * np.log2(p)
    scale = float(np.median(t))
    truth = {"1": 5.0, "I*b^0.8": 0.002, "I*log2(p)": 0.01}
    for _sym, _col, _levels, term, share in extras:
        if term is None:
            continue
        v = e * cols["s"] if term == "E*s" else cols["d"] ** 2.0
        c = share * scale / float(np.median(v))
        t = t + c * v
        truth[term] = c
    names = {sym: col for sym, col, _ in base[: min(n_factors, 4)]}
    names.update({sym: col for sym, col, *_ in extras})
    frame = pd.DataFrame({names[s]: np.repeat(v, 2) for s, v in cols.items()})
    frame["time_s"] = np.repeat(t, 2) * (1 + noise * rng.standard_normal(2 * n_cfg))
    return (
        Measurements.from_frame(frame, "time_s", {s: c for s, c in names.items()}, name=f"many-factor-{n_factors}"),
        truth,
    )


ROOT = Path(__file__).resolve().parent.parent


def _cli_run(tree: Path, meas, csv: Path, out: Path, timeout: float) -> tuple[float, dict | None]:
    """Wall seconds of ``python -m perfmodel fit CSV --auto`` run with the package in ``tree``, and
    the model JSON it wrote (None on a timeout or an error)."""
    cmd = [sys.executable, "-m", "perfmodel", "fit", str(csv), "--time", "time_s", "--auto", "--out", str(out)]
    for sym, col in meas.factors.items():
        cmd += ["--factor", f"{sym}={col}"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return float("inf"), None
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"  ({tree.name}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]})")
        return seconds, None
    return seconds, json.loads(out.read_text())


def _found(model: dict | None, meas, truth: dict) -> str:
    """Whether the model has every generating term (an ``I*b^e`` term for ``I*b^0.8``, within 0.15
    of the exponent when it is free) and no term of a nuisance factor."""
    if model is None:
        return "-"
    terms, params = set(model["terms"]), model.get("params", {})
    missing = []
    for t in truth:
        if t in terms:
            continue
        if t.startswith("I*b^"):
            e = float(t[4:])
            close = [
                u
                for u in terms
                if u.startswith("I*b^") and u[4:].replace(".", "", 1).isdigit() and abs(float(u[4:]) - e) <= 0.15
            ]
            free = [u for u in terms if u.startswith("I*b^e_b") and abs(params.get(u[4:], -9) - e) <= 0.15]
            if close or free:
                continue
        missing.append(t)
    nuisance = [sym for sym, col, levels, term, share in EXTRA_FACTORS if term is None and sym in meas.factors]
    extra = [t for t in terms if any(sym in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t) for sym in nuisance)]
    if not missing and not extra:
        return "yes"
    return "; ".join(
        ([f"missing {', '.join(missing)}"] if missing else []) + ([f"nuisance {', '.join(extra)}"] if extra else [])
    )


def many_factor_table(factor_counts, baseline: str | None, timeout: float) -> None:
    print(
        f"python -m perfmodel fit DATA --auto, 300 rows, end to end; {time.strftime('%Y-%m-%d %H:%M %Z')}; "
        f"load average {os.getloadavg()[0]:.2f} at start"
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old_tree = None
        if baseline:
            old_tree = tmp / "baseline"
            old_tree.mkdir()
            archive = subprocess.run(["git", "archive", baseline], cwd=ROOT, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old_tree)], input=archive, check=True)
        head = f"{'factors':>7} {'configs':>7}  {'after (s)':>9} {'< 10 s':>6}  {'found':<28}"
        if old_tree:
            head += f" {'before (s)':>10} {'found before':<28} {'speed-up':>8}"
        print(head + "  chosen model (after)")
        print("-" * (len(head) + 40))
        for n in factor_counts:
            meas, truth = many_factor(n)
            csv = tmp / f"many-{n}.csv"
            meas.frame.to_csv(csv, index=False)
            t_new, m_new = _cli_run(ROOT, meas, csv, tmp / f"new-{n}.json", timeout)
            line = (
                f"{n:>7} {meas.n_configurations:>7}  {t_new:>9.1f} {'yes' if t_new < 10 else 'NO':>6}  "
                f"{_found(m_new, meas, truth):<28}"
            )
            if old_tree:
                t_old, m_old = _cli_run(old_tree, meas, csv, tmp / f"old-{n}.json", timeout)
                old_txt = f">{timeout:.0f}" if not np.isfinite(t_old) else f"{t_old:.1f}"
                line += (
                    f" {old_txt:>10} {_found(m_old, meas, truth):<28} "
                    f"{(t_old / t_new if np.isfinite(t_old) else float('inf')):>7.1f}x"
                )
            print(line + "  " + (m_new["expression"] if m_new else "-"), flush=True)
        print("generating terms: " + "; ".join(f"{n}: " + " + ".join(many_factor(n)[1]) for n in factor_counts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--factors", default="3,6,8,12", help="factor counts of the many-factor table")
    ap.add_argument("--baseline", metavar="REV", help="also time git revision REV (before)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run of the many-factor table")
    ap.add_argument("--many-only", action="store_true", help="only the many-factor table")
    args = ap.parse_args(argv)
    many_factor_table([int(v) for v in args.factors.split(",")], args.baseline, args.timeout)
    if args.many_only:
        return 0
    print()
    cores = n_workers(None)
    print(
        f"{os.cpu_count()} CPUs, {cores} usable; median of {args.repeat} runs; "
        f"load average {os.getloadavg()[0]:.2f} at start\n"
    )
    syn = synthetic()
    relearn = load_dataset("relearn-main")
    cases = [
        ("auto_select synthetic-dp", syn, lambda m, w: auto_select(m, k=5, workers=w)),
        ("auto_select synth. λ=0.01", syn, lambda m, w: auto_select(m, k=5, lam=0.01, workers=w)),
        ("auto_select relearn-main", relearn, lambda m, w: auto_select(m, k=5, workers=w)),
        (
            "lambda_path synthetic-dp",
            syn,
            lambda m, w: lambda_path(
                Model("1 + I*b^e_b + I*log2(p) + p + N/p + I*p", bounds={"e_b": (0, 2)}), m, k=5, workers=w
            ),
        ),
    ]
    head = (
        f"{'case':27s} {'rows':>5s} {'factors':>8s} {'serial (s)':>11s} {'pool (s)':>9s} {'speed-up':>9s} "
        f"{'< 10 s':>7s}  result (< 10 s: the default, pool)"
    )
    print(head)
    print("-" * (len(head) + 30))
    for name, meas, run in cases:
        t1, r1 = timed(lambda run=run, meas=meas: run(meas, 1), args.repeat)
        t2, r2 = timed(lambda run=run, meas=meas: run(meas, None), args.repeat)
        if hasattr(r1, "best"):
            same = r1.best.spec == r2.best.spec
            what = (
                f"{r1.best.spec}  (CV MAPE {r1.best.cv['mape']:.2f} %, {r1.n_screened} sets screened, "
                f"{len(r1.evaluated)} refined)"
            )
        else:
            same = r1.chosen == r2.chosen
            what = f"chosen λ = {r1.chosen:g} (CV MAPE {r1.cv_mape[list(r1.lams).index(r1.chosen)]:.2f} %)"
        print(
            f"{name:27s} {meas.n_rows:>5d} {len(meas.factors):>8d} {t1:>11.2f} {t2:>9.2f} {t1 / t2:>8.2f}x "
            f"{'yes' if t2 < 10 else 'NO':>7s}  {'same' if same else 'DIFFERENT'}: {what}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
