"""Extrapolation over every real series we hold: 90 % intervals and point predictions 1-3 doublings out.

    python benchmarks/extrapolation.py --quick                         # a short seeded slice (< 60 s)
    python benchmarks/extrapolation.py [--methods auto,pollux-ref] [--families mlperf,llm]
        [--sources relearn] [--max-splits-per-series K] [--seed S] [--workers N]
        [--time-budget SECONDS] [--out records.csv]
    python benchmarks/extrapolation.py --records records.csv           # the tables again, no fitting

The splits are :mod:`corpus`'s (``benchmarks/corpus.py``): every series of ``data/`` and
``../shared/refdata`` cut at each measured scale, trained on ``p <= cut``, tested on the rows 1-3
doublings beyond. Each method is fitted on the training rows only and predicts the test rows:

* ``auto``: what ``perfmodel fit --auto`` then ``predict --interval 0.9`` gives: the search with the
  CLI's settings (:func:`auto_select`, one process), :func:`plausible`, ``compute_intervals`` with
  the CLI's 200 replicates and the plausible candidates, ``predict(frame, interval=0.9)``;
* ``data-parallel``, ``ernest``, ``pollux``: the presets (``Model(preset=...)``), intervals the same way;
* ``pollux-ref``, ``optimus-ref``: Pollux's and Optimus's own fits (``benchmarks/peers.py``), point
  predictions only.

Only ``pollux`` is given the ``nodes`` symbol (its structure has inter-node terms); the others see
``p`` and the series' other factors, as a user's CSV would map them today (``--nodes-for all``
gives every method ``nodes``). The peers read the ``nodes`` column themselves.

Printed (per family and overall; by distance bucket; by whether the row needs more nodes than the
training rows had): coverage of the 90 % interval (share of held-out rows inside [low, high]; a
failed fit counts as a miss), median and 90th-percentile relative half-width (high - low) / 2 / pred
over rows, MAPE per split (median, 90th percentile, worst; a failed fit is inf) and the splits with
>= 3 training configurations over 100 % error; then issue 22's targets on this run (nothing is
learned from the corpus here: the intervals are without the population's prior) and the seconds per split
per method. ``--out`` writes one record per held-out row and method (source, family, series, cut,
n_train_configs, p, nodes, distance, crosses_nodes, y_true, pred, low, high, fit seconds,
expression, error; and for the interval methods the un-widened log band ``band_low``/``band_high``,
the fit's own distance ``d_model``, the series' evidence ``evidence``/``n_evidence`` and the row's
true ``crossing``): the input of ``scripts/learn_prior.py``, which learns the population's prior
leave-one-source-out. The benchmark's own intervals are computed without that prior (``prior=False``):
the baseline it is learned against. The splits run in
a fixed seeded order, so a run stopped by ``--time-budget`` is a random sample of them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
import peers

from perfmodel import Measurements, Model, compute_intervals
from perfmodel.fitting.extrapolation import efficiency_floor, series_evidence
from perfmodel.fitting.internode import crosses, iteration_values, per_iteration_time
from perfmodel.fitting.members import distance
from perfmodel.fitting.model import DEFAULT_PENALTY_REACH, PENALTY_REACHES
from perfmodel.search import auto_select, plausible
from perfmodel.search.laws import LAWS
from perfmodel.uncertainty.references import REFERENCE_PRESETS

METHODS = ("auto", "data-parallel", "ernest", "pollux", "loglog", "pollux-ref", "optimus-ref")
PRESET_METHODS = ("data-parallel", "ernest", "pollux")
POINT_ONLY = ("loglog", "pollux-ref", "optimus-ref")
LEVEL = 0.9
#: what `perfmodel fit --auto` passes by default (perfmodel/cli.py: --max-terms, --seed, DE flags, --replicates)
CLI_AUTO = {"seed": 0, "max_terms": 5}
CLI_DE = {"strategy": "best1bin", "popsize": 15, "maxiter": 1000, "tol": 0.01}
CLI_REPLICATES = 200
#: methods given the ``nodes`` symbol by default: the product reads it as topology (never a factor with an
#: exponent), and Pollux's structure has inter-node terms
NODES_FOR = ("auto", "pollux", "pollux-ref", "optimus-ref")
RECORD_COLUMNS = [
    "source",
    "family",
    "series",
    "cut",
    "n_train_scales",
    "n_train_configs",
    "n_train_rows",
    "max_train_nodes",
    "gpus_per_node",
    "topology_guessed",
    "method",
    "row",
    "p",
    "nodes",
    "distance",
    "bucket",
    "crosses_nodes",
    "y_true",
    "pred",
    "low",
    "high",
    "fit_seconds",
    "expression",
    "error",
    "crossing",
]
#: the learning columns (``auto`` and the presets; NaN for the point-only peers): the un-widened log
#: half-widths below and above the point (members + noise, before any widening for extrapolation),
#: the distance in doublings the fit itself measures, the series' own evidence (S, n) of
#: :func:`perfmodel.fitting.extrapolation.series_evidence`, the row's true crossing class, and each reference
#: structure's shift beyond its misfit (:meth:`perfmodel.fitting.members.Uncertainty.reference_shifts`,
#: from which scripts/learn_prior.py computes the point rule and the reach), and the backtest errors of
#: the model and each structure on the series' own larger worker counts
#: (:attr:`perfmodel.fitting.members.Uncertainty.backtest`, for the ``backtest-*`` point rules); and
#: the series' scaling shortfall over its last measured doubling (``shortfall``), and where the fit's
#: noise came from (``noise_source``: residuals, repeats, or the stated prior when the data has neither)
#: its relative size and degrees of freedom (``noise_sigma``; ``noise_df``, NaN for the prior); for
#: ``auto`` the law chosen (``law``) and every scaling law's own prediction (``law_<name>``), from
#: which scripts/learn_prior.py learns the rule among them
LEARN_COLUMNS = (
    (
        "band_low",
        "band_high",
        "d_model",
        "evidence",
        "n_evidence",
        "shortfall",
        "noise_source",
        "noise_sigma",
        "noise_df",
        "law",
        "efficiency_bound",
        "internode_unit",
    )
    + tuple(f"shift_{s}" for s in REFERENCE_PRESETS)
    + tuple(f"law_{s}" for s in LAWS)
)
RECORD_COLUMNS += list(LEARN_COLUMNS)


# ----------------------------------------------------------------------------------------
# method runners: (train, test) -> (pred, low, high, expression); low/high NaN for point-only
# ----------------------------------------------------------------------------------------
def without_nodes(meas: Measurements) -> Measurements:
    """The same rows without the ``nodes`` symbol (the column stays in the frame)."""
    return Measurements(meas.frame, meas.time, {k: v for k, v in meas.factors.items() if k != "nodes"}, [], meas.name)


def _interval(res, test: Measurements, train: Measurements | None = None):
    """(pred, low, high, learning columns) at the test rows: ``predict(interval=0.9)`` as the fit
    was given (the benchmark computes its intervals without the population's prior: the baseline the
    prior is learned against), and what learning needs (:data:`LEARN_COLUMNS`)."""
    out = res.predict(test.frame, interval=LEVEL)
    unc = res._uncertainty()
    env = res._env(test.frame)
    with np.errstate(all="ignore"):
        t, lo0, hi0 = unc.interval(env, LEVEL, widen=False)
        S, n = series_evidence(unc.calibration)
        learn = {
            "band_low": np.log(t / lo0),
            "band_high": np.log(hi0 / t),
            "d_model": distance(unc.factor_ranges, env),
            "evidence": np.full(len(t), S),
            "n_evidence": np.full(len(t), n),
            "shortfall": np.full(len(t), np.nan if unc.scaling_shortfall is None else unc.scaling_shortfall),
            "noise_source": np.full(len(t), unc.noise.source, dtype=object),
            "noise_sigma": np.full(len(t), float(unc.noise.sigma)),
            "noise_df": np.full(len(t), np.nan if unc.noise.df is None else float(unc.noise.df)),
        }
        # the efficiency floor (no slack) and the inter-node term's value per unit ρ at each row, from
        # which scripts/learn_prior.py learns the slack and ρ
        learn["efficiency_bound"] = efficiency_floor(unc.efficiency_ref, env)
        learn["internode_unit"] = np.zeros(len(t))
        if train is not None and "nodes" in train.factors and float(train.values("nodes").max()) <= 1:
            t_it = per_iteration_time(res.predict, train)
            learn["internode_unit"] = t_it * iteration_values(list(res.factors), env) * crosses(env)
        shifts = unc.reference_shifts(env, t) if unc.references else np.zeros((0, len(t)))
        for m, a in zip(unc.references or [], shifts, strict=True):
            learn[f"shift_{m.label}"] = a
    return (
        out["predicted_time"].to_numpy(float),
        out["predicted_low"].to_numpy(float),
        out["predicted_high"].to_numpy(float),
        learn,
    )


def _penalty_reach() -> None:
    """``--penalty-reach R`` (set in the environment, so the worker processes see it too): every fit's
    default :data:`perfmodel.fitting.model.DEFAULT_PENALTY_REACH`, to compare the penalty's reaches."""
    import perfmodel.fitting.model as fitting_model

    reach = os.environ.get("PERFMODEL_BENCH_REACH")
    if reach:
        fitting_model.DEFAULT_PENALTY_REACH = reach


def _with_prior() -> bool:
    """``--with-prior`` (set in the environment, so the worker processes see it too): the shipped prior,
    as the product uses it — to check the product against what scripts/learn_prior.py computes."""
    return os.environ.get("PERFMODEL_BENCH_PRIOR") == "1"


def _law_prior(source: str) -> dict | bool:
    """The prior whose law rule ``auto`` follows: the rule learned without ``source`` when
    ``--law-rules FILE`` gives one per source (leave one source out), else the shipped prior."""
    path = os.environ.get("PERFMODEL_BENCH_RULES")
    if not path:
        return True
    rules = json.loads(Path(path).read_text())
    return {"law_rule": rules[source]} if source in rules else True


def run_auto(train: Measurements, test: Measurements, source: str = ""):
    """``fit --auto`` (one process) then ``predict --interval 0.9``; every scaling law's own prediction
    is recorded beside it."""
    selection = auto_select(
        train, final_de=dict(CLI_DE), workers=1, prior=_law_prior(source), validate=False, **CLI_AUTO
    )
    res, _, averaging = plausible(selection)
    compute_intervals(res, train, replicates=CLI_REPLICATES, prior=_with_prior(), **averaging)
    pred, low, high, learn = _interval(res, test, train)
    learn["law"] = np.full(
        len(pred), selection.best.origin.removeprefix("law: ") if selection.rule else "search", dtype=object
    )
    for c in selection.candidates:
        if c.origin.startswith("law: ") and c.result is not None:
            with np.errstate(all="ignore"):
                learn[f"law_{c.origin[5:]}"] = np.asarray(c.result.predict(test.frame), float)
    return pred, low, high, learn, res.expression


def run_preset(name: str, train: Measurements, test: Measurements):
    """``fit --preset NAME`` then ``predict --interval 0.9``."""
    res = Model(preset=name, seed=CLI_AUTO["seed"], **CLI_DE).fit(train)
    compute_intervals(res, train, replicates=CLI_REPLICATES, prior=_with_prior())
    return (*_interval(res, test), res.expression)


def run_peer(name: str, train: Measurements, test: Measurements):
    """Pollux's or Optimus's own fit, or a spreadsheet's log-log trend line (point predictions only)."""
    fit = {"pollux-ref": peers.fit_pollux, "optimus-ref": peers.fit_optimus, "loglog": peers.fit_loglog}[name](train)
    pred = np.asarray(fit.predict(test), float)
    nan = np.full(len(pred), np.nan)
    return pred, nan, nan, {}, fit.expression


def run_method(name: str, train: Measurements, test: Measurements, source: str = ""):
    if name == "auto":
        return run_auto(train, test, source)
    if name in PRESET_METHODS:
        return run_preset(name, train, test)
    if name in POINT_ONLY:
        return run_peer(name, train, test)
    raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")


# ----------------------------------------------------------------------------------------
# one split, every method -> records
# ----------------------------------------------------------------------------------------
def run_split(task) -> list[dict]:
    """Records (one per test row and method) of one split: ``task`` = (split, methods, nodes_for)."""
    split, methods, nodes_for = task
    _penalty_reach()
    base = {
        "source": split.source,
        "family": split.family,
        "series": split.series,
        "cut": split.cut,
        "n_train_scales": split.n_train_scales,
        "n_train_configs": split.n_train_configs,
        "n_train_rows": split.train.n_rows,
        "max_train_nodes": float(split.train.values("nodes").max()),
        "gpus_per_node": split.gpus_per_node,
        "topology_guessed": split.topology_guessed,
    }
    p, nodes, y = split.test.values("p"), split.test.values("nodes"), split.test.y
    out = []
    for m in methods:
        keep = m in nodes_for
        train = split.train if keep else without_nodes(split.train)
        test = split.test if keep else without_nodes(split.test)
        t0 = time.perf_counter()
        error, expr = "", ""
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                pred, low, high, learn, expr = run_method(m, train, test, split.source)
        except Exception as exc:
            pred = low = high = np.full(len(y), np.nan)
            learn = {}
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        seconds = time.perf_counter() - t0
        for i in range(len(y)):
            out.append(
                {
                    **base,
                    "method": m,
                    "row": i,
                    "p": p[i],
                    "nodes": nodes[i],
                    "distance": float(split.distance[i]),
                    "bucket": corpus.bucket(split.distance[i]),
                    "crosses_nodes": bool(split.crosses_nodes[i]),
                    "y_true": y[i],
                    "pred": pred[i],
                    "low": low[i],
                    "high": high[i],
                    "fit_seconds": seconds,
                    "expression": expr,
                    "error": error,
                    "crossing": "crosses_nodes" if split.crosses_nodes[i] else "same_nodes",
                    **{
                        c: (learn[c][i] if isinstance(learn[c][i], str) else float(learn[c][i]))
                        if c in learn
                        else np.nan
                        for c in LEARN_COLUMNS
                    },
                }
            )
    return out


def ordered(splits: list, seed: int) -> list:
    """The splits in a fixed seeded order (a prefix is a random sample of them)."""
    rng = np.random.default_rng(seed)
    return [splits[i] for i in rng.permutation(len(splits))]


def run_all(
    splits: list,
    methods,
    nodes_for=NODES_FOR,
    workers: int = 1,
    out: str | None = None,
    time_budget: float | None = None,
    progress=sys.stderr,
) -> pd.DataFrame:
    """Records of every split (in the given order); with ``out``, appended to that CSV as they come;
    with ``time_budget`` (seconds), no new split is started after it."""
    tasks = [(s, tuple(methods), tuple(nodes_for)) for s in splits]
    if out:
        pd.DataFrame(columns=RECORD_COLUMNS).to_csv(out, index=False)
    records, t0 = [], time.perf_counter()

    def take(i, recs):
        records.extend(recs)
        if out:
            pd.DataFrame(recs, columns=RECORD_COLUMNS).to_csv(out, mode="a", header=False, index=False)
        if progress is not None and (i + 1) % 10 == 0:
            print(f"  {i + 1}/{len(tasks)} splits, {time.perf_counter() - t0:.0f} s", file=progress, flush=True)

    if workers > 1:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = []
            for t in tasks:
                futures.append(pool.submit(run_split, t))
            for i, f in enumerate(futures):
                if time_budget is not None and time.perf_counter() - t0 > time_budget:
                    for g in futures[i:]:
                        g.cancel()
                    break
                take(i, f.result())
    else:
        for i, t in enumerate(tasks):
            if time_budget is not None and time.perf_counter() - t0 > time_budget:
                break
            take(i, run_split(t))
    return pd.DataFrame(records, columns=RECORD_COLUMNS)


# ----------------------------------------------------------------------------------------
# scoring
# ----------------------------------------------------------------------------------------
def scored(records: pd.DataFrame) -> pd.DataFrame:
    """Records plus ``ape`` (|pred / y - 1|, inf when pred is not a positive finite number),
    ``covered`` (y in [low, high]; False for a failed fit; NaN for point-only methods) and
    ``halfwidth`` ((high - low) / 2 / pred)."""
    r = records.copy()
    for c in ("y_true", "pred", "low", "high", "distance", "cut", "n_train_configs"):
        r[c] = pd.to_numeric(r[c], errors="coerce")
    r["crosses_nodes"] = r["crosses_nodes"].astype(str).str.lower().isin(("true", "1"))
    ok = np.isfinite(r["pred"]) & (r["pred"] > 0)
    r["ape"] = np.where(ok, np.abs(r["pred"] / r["y_true"] - 1), np.inf)
    has = ~r["method"].isin(POINT_ONLY)
    inside = (r["y_true"] >= r["low"]) & (r["y_true"] <= r["high"])
    r["covered"] = np.where(has, inside.astype(float), np.nan)
    r["halfwidth"] = np.where(has & ok, (r["high"] - r["low"]) / 2 / r["pred"], np.nan)
    r["failed"] = r["error"].notna() & (r["error"].astype(str).str.strip() != "")
    r["split"] = r["source"] + "|" + r["series"].astype(str) + "|" + r["cut"].astype(str)
    return r


def group_metrics(r: pd.DataFrame) -> dict:
    """Metrics of one group of scored records (one method)."""
    per_split = r.groupby("split").agg(mape=("ape", "mean"), cfg=("n_train_configs", "first"), failed=("failed", "any"))
    mape = per_split["mape"].to_numpy(float) * 100
    hw = r["halfwidth"].to_numpy(float)
    hw = hw[np.isfinite(hw)]
    cov = r["covered"].to_numpy(float)
    return {
        "splits": len(per_split),
        "rows": len(r),
        "coverage": float(np.nanmean(cov)) * 100 if np.isfinite(cov).any() else np.nan,
        "hw_median": float(np.median(hw)) * 100 if hw.size else np.nan,
        "hw_p90": float(np.quantile(hw, 0.9)) * 100 if hw.size else np.nan,
        "mape_median": float(np.median(mape)) if mape.size else np.nan,
        "mape_p90": float(np.quantile(mape, 0.9, method="higher")) if mape.size else np.nan,
        "mape_worst": float(np.max(mape)) if mape.size else np.nan,
        "over100_3cfg": int(np.sum((mape > 100) & (per_split["cfg"].to_numpy() >= 3))),
        "splits_3cfg": int(np.sum(per_split["cfg"].to_numpy() >= 3)),
        "failed": int(per_split["failed"].sum()),
    }


def summarize(r: pd.DataFrame, by: str | None, methods) -> pd.DataFrame:
    """One row per (group of ``by``, method) with :func:`group_metrics`; ``by`` None: all rows."""
    rows = []
    groups = [("all", r)] if by is None else list(r.groupby(by, sort=True))
    for g, sub in groups:
        for m in methods:
            s = sub[sub["method"] == m]
            if len(s):
                rows.append({"group": str(g), "method": m, **group_metrics(s)})
    return pd.DataFrame(rows)


def _f(v, digits=1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def table(summary: pd.DataFrame, title: str) -> str:
    """A markdown table of :func:`summarize`'s rows."""
    head = (
        "| " + title + " | method | splits | rows | coverage % | half-width median % | p90 % | MAPE median % | "
        "p90 % | worst % | > 100 % (≥ 3 cfg) | failed |"
    )
    lines = [head, "|---|---|" + "---:|" * 10]
    for _, s in summary.iterrows():
        lines.append(
            f"| {s['group']} | {s['method']} | {s['splits']} | {s['rows']} | {_f(s['coverage'])} | "
            f"{_f(s['hw_median'])} | {_f(s['hw_p90'])} | {_f(s['mape_median'])} | {_f(s['mape_p90'])} | "
            f"{_f(s['mape_worst'])} | {s['over100_3cfg']} of {s['splits_3cfg']} | {s['failed']} |"
        )
    return "\n".join(lines)


def timing(r: pd.DataFrame, methods) -> str:
    """Seconds per split per method (fit + intervals + prediction)."""
    per = r.groupby(["method", "split"])["fit_seconds"].first().reset_index()
    lines = ["| method | splits | mean s / split | median | p90 | max | total s |", "|---|" + "---:|" * 6]
    for m in methods:
        s = per.loc[per["method"] == m, "fit_seconds"].to_numpy(float)
        if s.size:
            lines.append(
                f"| {m} | {s.size} | {s.mean():.2f} | {np.median(s):.2f} | {np.quantile(s, 0.9):.2f} | "
                f"{s.max():.1f} | {s.sum():.0f} |"
            )
    return "\n".join(lines)


def targets(r: pd.DataFrame, methods) -> list[str]:
    """Issue 22's 'done when', read on these records for ``auto`` (a baseline: nothing learned yet)."""
    if "auto" not in methods:
        return []
    a = r[r["method"] == "auto"]
    out = []
    fam = summarize(a, "family", ["auto"])
    for _, s in fam.iterrows():
        if s["rows"] >= 20:
            ok = 85 <= s["coverage"] <= 95
            out.append(
                f"coverage 85-95 % on {s['group']} ({s['rows']} rows): {_f(s['coverage'])} % "
                f"{'met' if ok else 'MISSED'}"
            )
    cross = a[a["crosses_nodes"]]
    if len(cross):
        c = group_metrics(cross)["coverage"]
        out.append(f"coverage >= 80 % on node-crossing rows ({len(cross)}): {_f(c)} % {'met' if c >= 80 else 'MISSED'}")
    allm = group_metrics(a)
    out.append(f"median half-width <= 25 %: {_f(allm['hw_median'])} % {'met' if allm['hw_median'] <= 25 else 'MISSED'}")
    if "pollux-ref" in methods:
        pol = summarize(r[r["method"] == "pollux-ref"], "family", ["pollux-ref"]).set_index("group")
        for _, s in fam.iterrows():
            if s["splits"] >= 10 and s["group"] in pol.index:
                ref = pol.loc[s["group"], "mape_median"]
                ok = s["mape_median"] <= 0.85 * ref
                out.append(
                    f"median MAPE <= 0.85 x pollux-ref on {s['group']} ({s['splits']} splits): "
                    f"{_f(s['mape_median'])} % vs {_f(ref)} % (ratio {s['mape_median'] / ref:.2f}) "
                    f"{'met' if ok else 'MISSED'}"
                )
    out.append(
        f"no split with >= 3 training configurations over 100 %: {allm['over100_3cfg']} "
        f"{'met' if allm['over100_3cfg'] == 0 else 'MISSED'}"
    )
    return out


def report(records: pd.DataFrame, methods=None, by_source: bool = False) -> str:
    """Every table of a run (or of saved records); ``by_source``: also one per source."""
    r = scored(records)
    methods = [m for m in (methods or METHODS) if m in set(r["method"])]
    parts = [
        table(summarize(r, "family", methods), "family"),
        table(summarize(r, None, methods), "overall"),
        table(summarize(r, "bucket", methods), "distance (doublings)"),
        table(
            summarize(
                r.assign(crossing=np.where(r["crosses_nodes"], "crosses nodes", "same nodes")), "crossing", methods
            ),
            "node boundary",
        ),
        table(
            summarize(
                r.assign(fc=r["family"] + " · " + np.where(r["crosses_nodes"], "crosses", "same")), "fc", methods
            ),
            "family · nodes",
        ),
    ]
    if by_source:
        parts.append(table(summarize(r, "source", methods), "source"))
    t = targets(r, methods)
    if t:
        parts.append(
            "Issue 22's targets for auto on this run (baseline: nothing learned from the corpus yet):\n"
            + "\n".join(f"  - {line}" for line in t)
        )
    parts.append("Seconds per split (fit + intervals + prediction, one process):\n" + timing(r, methods))
    return "\n\n".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    ap.add_argument("--families", default=None, help="comma-separated families (default: all)")
    ap.add_argument("--sources", default=None, help="comma-separated sources (default: all)")
    ap.add_argument("--max-splits-per-series", type=int, default=None, help="a seeded subset of each series' cuts")
    ap.add_argument("--seed", type=int, default=0, help="seed of the subsets and of the split order")
    ap.add_argument("--quick", action="store_true", help="a short seeded slice: 2 small splits per family")
    ap.add_argument("--workers", type=int, default=1, help="processes (each runs whole splits)")
    ap.add_argument("--time-budget", type=float, default=None, help="seconds; no new split after it")
    ap.add_argument(
        "--nodes-for",
        default=",".join(NODES_FOR),
        help="methods given the nodes symbol ('all', 'none' or a list; default: " + ",".join(NODES_FOR) + ")",
    )
    ap.add_argument(
        "--law-rules",
        default=None,
        help="JSON {source: law rule} (scripts/learn_prior.py --rules-out): auto follows the rule learned "
        "without the split's source (leave one source out) instead of the shipped prior's",
    )
    ap.add_argument("--out", default=None, help="CSV of one record per held-out row and method")
    ap.add_argument("--records", default=None, help="print the tables of saved records instead of fitting")
    ap.add_argument("--by-source", action="store_true", help="also print one table row per source and method")
    ap.add_argument(
        "--with-prior",
        action="store_true",
        help="intervals with the shipped prior, as the product gives them (default: without, the "
        "baseline scripts/learn_prior.py learns from)",
    )
    ap.add_argument(
        "--penalty-reach",
        default=None,
        choices=PENALTY_REACHES,
        help=f"where every fit's penalty weighs its terms (default: the library's, {DEFAULT_PENALTY_REACH})",
    )
    args = ap.parse_args(argv)
    if args.with_prior:
        os.environ["PERFMODEL_BENCH_PRIOR"] = "1"
    if args.penalty_reach:
        os.environ["PERFMODEL_BENCH_REACH"] = args.penalty_reach
    if args.law_rules:
        os.environ["PERFMODEL_BENCH_RULES"] = str(Path(args.law_rules).resolve())
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            ap.error(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    if args.records:
        records = pd.read_csv(
            args.records, keep_default_na=False, na_values=[""], dtype={"series": str, "expression": str, "error": str}
        )
        print(f"Extrapolation benchmark, from {args.records} ({records['method'].nunique()} methods)\n")
        print(report(records, methods, args.by_source))
        return 0
    nodes_for = (
        METHODS if args.nodes_for == "all" else () if args.nodes_for == "none" else tuple(args.nodes_for.split(","))
    )
    t0 = time.perf_counter()
    series = corpus.load_series(args.sources and args.sources.split(","), args.families and args.families.split(","))
    splits = corpus.make_splits(series, args.max_splits_per_series, args.seed)
    if args.quick:
        splits = corpus.quick_splits(splits, per_family=2, seed=args.seed)
    splits = ordered(splits, args.seed)
    print(
        f"{len(series)} series, {len(splits)} splits, {sum(s.test.n_rows for s in splits)} held-out rows; "
        f"methods {', '.join(methods)}; nodes symbol for {', '.join(nodes_for) or 'none'}",
        file=sys.stderr,
    )
    records = run_all(splits, methods, nodes_for, workers=args.workers, out=args.out, time_budget=args.time_budget)
    seconds = time.perf_counter() - t0
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    done = records["split"].nunique() if "split" in records else scored(records)["split"].nunique()
    print(
        f"Extrapolation benchmark: {done} of {len(splits)} splits, {len(methods)} methods, "
        f"{args.workers} process(es), {seconds:.0f} s; {now}\n"
    )
    print(report(records, methods, args.by_source))
    if args.out:
        print(f"\nrecords: {args.out} ({len(records)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
