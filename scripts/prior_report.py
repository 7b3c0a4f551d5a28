"""The tables ``scripts/learn_prior.py`` prints: the point rules' and the peers' split errors, the
leave-one-source-out intervals' coverage and half-widths by family, distance, crossing and class, the
hindsight floors, and what was learned without each source.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from prior_records import LEVEL, prepare, source_weights, split_errors  # beside it; it puts the repository on the path


def point_report(splits: pd.DataFrame, scored: pd.DataFrame, peers: pd.DataFrame | None) -> str:
    """Markdown: per family (and the deep-learning families pooled), the median split error of the
    product's point (``auto``: the law the rule learned without the source picks, the inter-node step
    added), of each scaling law on its own, and of the peers recorded beside it (the log-log trend line,
    Pollux's and Optimus's own fits); auto's ratio to the log-log line and to Pollux's own fit; splits with
    ≥ 3 training configurations over 100 % error and the worst split."""
    from prior_laws import DL_FAMILIES

    from perfmodel.search.laws import LAWS

    auto = split_errors(scored)
    auto["key"] = auto["source"] + "|" + auto["series"].astype(str) + "|" + auto["cut"].astype(str)
    cols = {"auto": auto.set_index("key")["ape"]}
    for law in LAWS:
        cols[law] = splits[law] * 100
    for name, g in peers.groupby("method") if peers is not None and len(peers) else []:
        e = split_errors(prepare(g))
        cols[name] = e.set_index(e["source"] + "|" + e["series"].astype(str) + "|" + e["cut"].astype(str))["ape"]
    t = pd.DataFrame(cols)
    meta = auto.set_index("key")[["family", "n_train_configs"]]
    t = t.join(meta, how="inner")
    groups = [(f, t[t["family"] == f]) for f in sorted(t["family"].unique())]
    groups.append(("deep learning", t[t["family"].isin(DL_FAMILIES)]))
    names = [c for c in cols if c in t]
    lines = [
        "| family | splits | " + " | ".join(names) + " | auto / log-log | auto / pollux-ref | auto > 100 % | worst % |",
        "|---|---:|" + "---:|" * (len(names) + 4),
    ]
    for fam, g in groups:
        med = {c: float(g[c].median()) for c in names}
        ratio = [f"{med['auto'] / med[c]:.2f}" if c in med and med[c] > 0 else "-" for c in ("loglog", "pollux-ref")]
        bad = int(((g["auto"] > 100) & (g["n_train_configs"] >= 3)).sum())
        lines.append(
            f"| {fam} | {len(g)} | "
            + " | ".join(f"{med[c]:.1f}" for c in names)
            + f" | {ratio[0]} | {ratio[1]} | {bad} | {g['auto'].max():.0f} |"
        )
    return "\n".join(lines)


VARIANTS = {
    "no prior": ("low", "high"),
    "LOSO prior, crossing known": ("low_known", "high_known"),
    "LOSO prior, crossing unknown": ("low_unknown", "high_unknown"),
}


def metrics(r: pd.DataFrame, low: str, high: str) -> dict:
    y, t = r["y_true"].to_numpy(float), r["pred"].to_numpy(float)
    lo, hi = r[low].to_numpy(float), r[high].to_numpy(float)
    with np.errstate(all="ignore"):
        inside = (y >= lo) & (y <= hi)  # NaN bounds (a failed fit) compare False: a miss
        hw = (hi - lo) / 2 / t
    hw = hw[np.isfinite(hw)]
    w = source_weights(r)
    return {
        "rows": len(r),
        "coverage": 100 * inside.mean(),
        "coverage_sw": 100 * float(w @ inside) / w.sum(),
        "hw_median": 100 * float(np.median(hw)) if hw.size else np.nan,
        "hw_p90": 100 * float(np.quantile(hw, 0.9)) if hw.size else np.nan,
    }


def breakdown(r: pd.DataFrame, by: str | None) -> str:
    """Markdown: one row per group with coverage / median / p90 half-width for each variant."""
    groups = [("all", r)] if by is None else list(r.groupby(by, sort=True))
    head = (
        "| "
        + (by or "overall")
        + " | rows | "
        + " | ".join(f"{v}: coverage % | median hw % | p90 hw %" for v in VARIANTS)
        + " |"
    )
    lines = [head, "|---|---:|" + "---:|" * (3 * len(VARIANTS))]
    for g, sub in groups:
        cells = []
        for low, high in VARIANTS.values():
            m = metrics(sub, low, high)
            cells += [f"{m['coverage']:.1f}", f"{m['hw_median']:.1f}", f"{m['hw_p90']:.1f}"]
        lines.append(f"| {g} | {len(sub)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def hindsight_halfwidths(r: pd.DataFrame, by: list) -> np.ndarray:
    """Each usable row's relative half-width sinh(κ·d) of the band exp(±κ·d) whose κ is, in hindsight,
    the 90th percentile of |log error| / d over the rows of its group (``by``: e.g. its source, or its
    split): as narrow as a band of the prior's form could be had it known the group's errors."""
    u = r[r["ok"]]
    d = np.maximum(u["d_model"].to_numpy(float), 1e-3)
    k = (
        pd.Series(np.abs(u["z"].to_numpy(float)) / d, index=u.index)
        .groupby([u[c] for c in by])
        .transform(lambda v: np.quantile(v, LEVEL))
    )
    return np.sinh(k.to_numpy(float) * d)


def hindsight_report(r: pd.DataFrame) -> str:
    """Markdown: per family, the median |error| of the point and the median half-width of 90 % bands of
    the prior's form that knew, in hindsight, each source's or each split's errors (a floor for any
    calibration of the same point), beside the LOSO prior's."""
    u = r[r["ok"]].assign(
        source_hw=hindsight_halfwidths(r, ["source"]), split_hw=hindsight_halfwidths(r, ["source", "series", "cut"])
    )
    with np.errstate(all="ignore"):
        u = u.assign(ape=np.abs(np.expm1(-u["z"])), loso_hw=(u["high_known"] - u["low_known"]) / 2 / u["pred"])
    lines = [
        "| family | rows | median error % | hindsight κ per source: median hw % | per split: median hw % "
        "| LOSO prior: median hw % |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for fam, g in [*u.groupby("family", sort=True), ("all", u)]:
        lines.append(
            f"| {fam} | {len(g)} | {100 * g['ape'].median():.1f} | {100 * g['source_hw'].median():.1f} | "
            f"{100 * g['split_hw'].median():.1f} | {100 * g['loso_hw'].median():.1f} |"
        )
    return "\n".join(lines)


def loso_report(r: pd.DataFrame, learned: dict) -> str:
    r = r.assign(**{"family · crossing": r["family"] + " · " + r["crossing"]})
    parts = [
        breakdown(r, "family"),
        breakdown(r, None),
        breakdown(r, "bucket"),
        breakdown(r, "crossing"),
        breakdown(r, "family · crossing"),
        breakdown(r.assign(**{"scaling class": r["scaling_class"].replace("", "none")}), "scaling class"),
    ]
    sw = [
        "Source-weighted coverage over all rows (every source the same weight): "
        + ", ".join(f"{v} {metrics(r, *cols)['coverage_sw']:.1f} %" for v, cols in VARIANTS.items())
    ]
    lines = [
        "| held-out source | rows | κ same | κ cross | κ unknown | n0 | band scale | few-dof band scale | γ | η |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for src, fit in learned.items():
        for name, f in [("", fit)] + list(fit.get("classes", {}).items()):
            k = f["kappa"]
            what = f"{src} · {name}" + ("" if f.get("own", True) else " (= all)") if name else src
            lines.append(
                f"| {what} | {int(((r['source'] == src) & ((r['scaling_class'] == name) | (name == ''))).sum())} | "
                f"{k['same_nodes']:.3f} | {k['crosses_nodes']:.3f} | {k['unknown']:.3f} | "
                f"{f['n0']:g} | {f['band_scale']:g} | {f['few_dof_band_scale']:g} | {f['structure_scale']:g} | "
                f"{f['shortfall_scale']:g} |"
            )
    noise = [
        f"  {src}: σ0 {100 * fit['noise']['sigma']:.2f} %, ν0 {fit['noise']['df']:.3g} ({fit['noise']['n_fits']} fits)"
        for src, fit in learned.items()
        if fit.get("noise")
    ]
    bounds = [
        "Hindsight floors (κ per doubling set by each source's, or each split's, own held-out errors):\n"
        + hindsight_report(r)
    ]
    return "\n\n".join(
        parts
        + sw
        + bounds
        + ["Prior learned without each source:\n" + "\n".join(lines)]
        + (["Noise prior learned without each source:\n" + "\n".join(noise)] if noise else [])
    )
