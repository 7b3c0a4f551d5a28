"""What ``scripts/learn_prior.py`` learns about the point before the bands: the rule among the scaling laws,
the inter-node step and the efficiency slack, each leave one source out.

* **The law rule** (:func:`learn_rule`): series are put in cells by the efficiency class of their last
  measured doubling and by their number of worker counts (:func:`perfmodel.search.laws.law_cell`); each
  cell takes the law with the smallest median split error over the training sources' deep-learning
  series in it (:data:`DL_FAMILIES`: the product's users), a cell with fewer than :data:`MIN_CELL_SPLITS`
  splits taking its efficiency class's, then the power law. The weighted power law, the power law's
  formula fitted closer to the largest scales, is offered only where the series still scaled
  (:func:`perfmodel.search.laws.rule_laws`) and replaces the power law only when it is better by more
  than one standard error (:func:`_within_se`). The benchmark records every law's own
  prediction (``law_<name>``), so the rule is learned and scored from the same records.
* **The inter-node step ρ** (:func:`learn_rho`): on the training sources' deep-learning rows that first
  cross from one node to several, the ρ ≥ 0 at which the median log error of ``t + ρ·unit`` is 0
  (``internode_unit``: the term ``I·min(nodes − 1, 1)`` at ρ = 1, :mod:`perfmodel.fitting.internode`).
* **The efficiency slack** (:func:`learn_slack`): on the training sources' deep-learning rows where the
  measured work bounds the time (``efficiency_bound``, least GPU-seconds / p, less the noise of one run
  as the band has it: :func:`noise_floor`), the 99th percentile of how far the true time fell below it
  (floor / y − 1, 0 at least): super-linear steps exist but are rare.

:func:`apply` makes the records as the product would print them with what was learned without each row's
source: the chosen law's point, the inter-node step added to it (its band moved with it), and the floor
the band's low end may not pass (``floor_s``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.fitting.extrapolation import DEFAULT_LEVEL, noise_quantile
from perfmodel.search.laws import (
    DEFAULT_LAW,
    EFFICIENCY_CLASSES,
    LAWS,
    REFINEMENT_SE,
    WEIGHTED_LAW,
    efficiency_class,
    rule_laws,
)

#: the families of deep-learning training the rules are chosen on (the HPC families are scored, not used)
DL_FAMILIES = ("dle", "llm", "mlperf", "tf-cnn", "other")
#: fewest training splits a cell needs for a law of its own (else its efficiency class's, then the power law)
MIN_CELL_SPLITS = 5
#: resamples of the paired bootstrap that tells whether the weighted power law beats the power law
BOOTSTRAP = 200
#: the share of the training rows the efficiency floor may cut
SLACK_QUANTILE = 0.99


def split_table(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per split of the ``auto`` records: source, family, cell, the law the run used, and each
    law's split error (mean |pred / y − 1| over its held-out rows; inf for a failed or non-positive one)."""
    a = raw[raw["method"] == "auto"].copy()
    a["split"] = a["source"] + "|" + a["series"].astype(str) + "|" + a["cut"].astype(str)
    y = pd.to_numeric(a["y_true"], errors="coerce")
    cols = {}
    for law in LAWS:
        c = f"law_{law}"
        pred = pd.to_numeric(a[c], errors="coerce") if c in a else pd.Series(np.nan, index=a.index)
        ape = (pred / y - 1).abs().where(pred > 0, np.inf)
        cols[law] = ape.groupby(a["split"]).mean()
    t = pd.DataFrame(cols)
    first = a.groupby("split").first()
    eff = 2.0 ** -pd.to_numeric(first["shortfall"], errors="coerce")
    t["source"], t["family"], t["law_used"] = first["source"], first["family"], first["law"]
    t["cls"] = [efficiency_class(None if not np.isfinite(v) else float(v)) for v in eff]
    t["scales"] = np.where(pd.to_numeric(first["n_train_scales"]) <= 2, "2", "3+")
    # a series with more worker counts than the rule covers ran the term search: its laws were not fitted
    t.loc[~t["law_used"].isin(LAWS), list(LAWS)] = np.nan
    return t


def learn_rule(t: pd.DataFrame, held_out: str | None = None) -> dict:
    """{cell key: {"law", "errors" {law: median %}, "n_splits"}} from the training splits of ``t``
    (deep-learning families, ``held_out`` left out); see the module doc."""
    tr = t[t["family"].isin(DL_FAMILIES) & t["law_used"].isin(LAWS)]
    if held_out is not None:
        tr = tr[tr["source"] != held_out]
    rule = {}
    for cls, _ in EFFICIENCY_CLASSES:
        for scales in ("2", "3+"):
            cell = tr[(tr["cls"] == cls) & (tr["scales"] == scales)]
            if len(cell) < MIN_CELL_SPLITS:
                cell = tr[tr["cls"] == cls]
            if len(cell) < MIN_CELL_SPLITS:
                continue
            med = cell[list(rule_laws(cls))].median() * 100
            rule[f"{cls}|{scales}"] = {
                "law": _pick(cell, med),
                "errors": {k: round(float(v), 2) for k, v in med.items()},
                "n_splits": int(len(cell)),
            }
    return rule


def _within_se(cell: pd.DataFrame, a: str, b: str) -> bool:
    """True when law ``a``'s median split error exceeds law ``b``'s by at most
    :data:`~perfmodel.search.laws.REFINEMENT_SE` standard errors of that difference (a paired bootstrap
    of :data:`BOOTSTRAP` resamples of the cell's splits, seeded)."""
    ea, eb = cell[a].to_numpy(float), cell[b].to_numpy(float)
    ok = np.isfinite(ea) & np.isfinite(eb)
    ea, eb = ea[ok], eb[ok]
    if not ea.size:
        return False
    idx = np.random.default_rng(0).integers(0, ea.size, (BOOTSTRAP, ea.size))
    diffs = np.median(ea[idx], axis=1) - np.median(eb[idx], axis=1)
    return float(np.median(ea) - np.median(eb)) <= REFINEMENT_SE * float(np.std(diffs))


def _pick(cell: pd.DataFrame, med: pd.Series) -> str:
    """The law of a cell: the smallest median error; the weighted power law only where it beats the
    power law by more than :data:`~perfmodel.search.laws.REFINEMENT_SE` standard errors."""
    if not np.isfinite(med.min()):
        return DEFAULT_LAW
    best = str(med.idxmin())
    if best == WEIGHTED_LAW and _within_se(cell, DEFAULT_LAW, best):
        return DEFAULT_LAW
    return best


def chosen_law(rule: dict, cls: str, scales: str) -> str:
    entry = rule.get(f"{cls}|{scales}")
    return entry["law"] if entry else DEFAULT_LAW


def learn_rho(r: pd.DataFrame, held_out: str | None = None) -> dict:
    """{"rho", "n_splits", "n_rows"}: the inter-node step on the first crossings of the training sources'
    deep-learning rows (bisection on the median log error of t + ρ·unit; 0 when it is already >= 0)."""
    col = "pred0" if "pred0" in r else "pred"  # the law's own point, before any step was added
    m = (r["internode_unit"] > 0) & r["family"].isin(DL_FAMILIES) & np.isfinite(r[col]) & (r[col] > 0)
    if held_out is not None:
        m &= r["source"] != held_out
    sub = r[m]
    if not len(sub):
        return {"rho": 0.0, "n_splits": 0, "n_rows": 0}
    y, t, u = sub["y_true"].to_numpy(float), sub[col].to_numpy(float), sub["internode_unit"].to_numpy(float)

    def median_err(rho):
        return float(np.median(np.log(y / (t + rho * u))))

    rho = 0.0
    if median_err(0.0) > 0:  # the law alone under-predicts the crossings: find the step that centres them
        lo, hi = 0.0, 10.0
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if median_err(mid) > 0 else (lo, mid)
        rho = hi
    return {
        "rho": round(float(rho), 4),
        "n_splits": int(sub.groupby(["source", "series", "cut"]).ngroups),
        "n_rows": int(len(sub)),
    }


def noise_floor(a: pd.DataFrame) -> np.ndarray:
    """The records' efficiency floor (least measured GPU-seconds / p) less the noise of one run at the
    band's level, exp(−σ·t_df): the time a run may reach at the best measured efficiency, as
    :meth:`perfmodel.fitting.members.Uncertainty.efficiency_bound` has it before the slack."""
    bound = pd.to_numeric(a["efficiency_bound"], errors="coerce").to_numpy(float)
    if "noise_sigma" not in a:
        return bound
    sigma = pd.to_numeric(a["noise_sigma"], errors="coerce").fillna(0.0).to_numpy(float)
    df = pd.to_numeric(a["noise_df"], errors="coerce").to_numpy(float)
    return bound * np.exp(-noise_quantile(sigma, df, DEFAULT_LEVEL))


def learn_slack(r: pd.DataFrame, held_out: str | None = None) -> dict:
    """{"slack", "n_rows"}: the :data:`SLACK_QUANTILE` quantile over the training sources' deep-learning
    rows with a floor of how far their true time fell below it (0 at least)."""
    m = np.isfinite(r["floor"]) & (r["floor"] > 0) & r["family"].isin(DL_FAMILIES)
    if held_out is not None:
        m &= r["source"] != held_out
    sub = r[m]
    if not len(sub):
        return {"slack": None, "n_rows": 0}
    excess = np.maximum(sub["floor"].to_numpy(float) / sub["y_true"].to_numpy(float) - 1.0, 0.0)
    return {"slack": round(float(np.quantile(excess, SLACK_QUANTILE)), 4), "n_rows": int(len(sub))}


def apply(raw: pd.DataFrame) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """(the ``auto`` records as the product would print them with what was learned without each row's
    source, {held-out source: learned}, the split table with the LOSO law of each split). A split whose
    recorded law (the shipped rule's) differs from the LOSO rule's takes the LOSO law's recorded point,
    its band moved with it by the same ratio (counted in ``mismatch``; for intervals around the LOSO law's
    own point, record with ``extrapolation.py --law-rules`` from ``learn_prior.py --rules-out``); a split
    that ran the term search keeps its point."""
    a = raw[raw["method"] == "auto"].copy().reset_index(drop=True)
    for c in ("y_true", "pred", "low", "high", "internode_unit", "efficiency_bound"):
        a[c] = pd.to_numeric(a[c], errors="coerce") if c in a else np.nan
    a["internode_unit"] = a["internode_unit"].fillna(0.0)
    a["floor"] = noise_floor(a)
    a["pred0"] = a["pred"]
    t = split_table(raw)
    split_of = a["source"] + "|" + a["series"].astype(str) + "|" + a["cut"].astype(str)
    learned, mismatch = {}, 0
    t["law_loso"] = ""
    for src in sorted(a["source"].unique()):
        rule = learn_rule(t, src)
        rho = learn_rho(a, src)
        slack = learn_slack(a, src)
        learned[src] = {"law_rule": rule, "internode": rho, "efficiency_slack": slack}
        mt = t["source"] == src
        t.loc[mt, "law_loso"] = [
            chosen_law(rule, c, s) for c, s in zip(t.loc[mt, "cls"], t.loc[mt, "scales"], strict=True)
        ]
        swap = mt & t["law_used"].isin(LAWS) & (t["law_loso"] != t["law_used"])
        mismatch += int(swap.sum())
        for key, law in t.loc[swap, "law_loso"].items():
            r = (split_of == key).to_numpy(bool)
            old = a.loc[r, "pred"].to_numpy(float)
            new = pd.to_numeric(a.loc[r, f"law_{law}"], errors="coerce").to_numpy(float)
            with np.errstate(all="ignore"):
                ratio = np.where((old > 0) & (new > 0), new / old, np.nan)
            a.loc[r, "pred"] = new  # pred0, which the inter-node step is learned from, stays as recorded
            a.loc[r, "low"] = a.loc[r, "low"].to_numpy(float) * ratio
            a.loc[r, "high"] = a.loc[r, "high"].to_numpy(float) * ratio
        m = (a["source"] == src).to_numpy(bool)
        old = a.loc[m, "pred"].to_numpy(float)
        new = old + rho["rho"] * a.loc[m, "internode_unit"].to_numpy(float)
        with np.errstate(all="ignore"):
            ratio = np.where(old > 0, new / old, 1.0)
        a.loc[m, "pred"] = new
        a.loc[m, "low"] = a.loc[m, "low"].to_numpy(float) * ratio
        a.loc[m, "high"] = a.loc[m, "high"].to_numpy(float) * ratio
        s = slack["slack"]
        a.loc[m, "floor_s"] = a.loc[m, "floor"].to_numpy(float) / (1 + s) if s is not None else np.nan
    t.attrs["mismatch"] = mismatch
    a["split"] = split_of
    return a, learned, t


def report(learned: dict, t: pd.DataFrame) -> str:
    """What was learned without each source: the law of each cell, ρ and the slack."""
    lines = [
        "| held-out source | laws by cell | ρ (first-crossing splits) | efficiency slack (rows) |",
        "|---|---|---:|---:|",
    ]
    for src, f in learned.items():
        laws = ", ".join(f"{k} {v['law']}" for k, v in f["law_rule"].items())
        rho, sl = f["internode"], f["efficiency_slack"]
        lines.append(f"| {src} | {laws} | {rho['rho']:.3f} ({rho['n_splits']}) | {sl['slack']} ({sl['n_rows']}) |")
    return "\n".join(lines)
