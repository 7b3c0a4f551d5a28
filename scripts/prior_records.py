"""The corpus benchmark's records as ``scripts/learn_prior.py`` learns from them: one row per held-out
run of ``benchmarks/extrapolation.py``, its point made by a point rule from the recorded shifts of the
reference structures, its log error ``z``, its scaling class; the weights of learning (a source as the
square root of its rows) and of the report (every source the same); each split's error.

``CLASSES`` and ``STRUCTURES`` are set by ``learn_prior.py``'s command line (``--classes``, ``--structures``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from perfmodel.fitting.extrapolation import few_noise_dof, scaling_shortfall, structure_reach  # noqa: E402
from perfmodel.uncertainty.prior import efficiency  # noqa: E402

LEVEL = 0.9
#: Scaling classes (name, lowest parallel efficiency per doubling of the series' last measured doubling,
#: perfmodel.uncertainty.prior.efficiency), from the highest; each learns its own prior on its rows. The
#: bounds are round numbers (90 %: near-linear; below 70 %: a doubling cut the time by less than 29 %, or
#: it grew), not fitted. ``--classes ''`` learns one prior for every series.
CLASSES = (("scales well", 0.9), ("scales partly", 0.7), ("scaling stopped", 0.0))


def load_records(path, method: str = "auto") -> pd.DataFrame:
    """The learning rows of a records CSV (one method), with ``ok`` (a usable fit: positive point,
    band and distance finite) and ``z`` = log(y / t), t the model's own prediction."""
    r = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"series": str, "expression": str, "error": str})
    return prepare(r[r["method"] == method])


#: the reference structures whose recorded shifts are used (None: every one recorded); --structures
STRUCTURES: tuple | None = None


def structures(r: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(below, above) of each row: how far the reference structures reach around the model's prediction,
    from their recorded shifts, by the product's own :func:`perfmodel.fitting.extrapolation.structure_reach`
    (a structure without a record at a row, e.g. not fitted, is left out)."""
    cols = [c for c in r.columns if c.startswith("shift_") and (STRUCTURES is None or c[len("shift_") :] in STRUCTURES)]
    shifts = np.array([pd.to_numeric(r[c], errors="coerce").to_numpy(float) for c in cols]).reshape(-1, len(r))
    return structure_reach(shifts)


def prepare(r: pd.DataFrame) -> pd.DataFrame:
    r = r.reset_index(drop=True).copy()
    for c in (
        "y_true",
        "pred",
        "low",
        "high",
        "band_low",
        "band_high",
        "d_model",
        "evidence",
        "n_evidence",
        "distance",
    ):
        r[c] = pd.to_numeric(r[c], errors="coerce")
    r["below"], r["above"] = structures(r)
    with np.errstate(all="ignore"):
        r["z"] = np.log(r["y_true"] / r["pred"])
    ok = (
        np.isfinite(r["pred"])
        & (r["pred"] > 0)
        & np.isfinite(r["z"])
        & np.isfinite(r["d_model"])
        & r["band_low"].notna()
        & r["band_high"].notna()
        & np.isfinite(r["evidence"])
    )
    r["ok"] = ok.to_numpy(bool)
    r["band_low"] = r["band_low"].fillna(0.0)
    r["band_high"] = r["band_high"].fillna(0.0)
    r["n_evidence"] = r["n_evidence"].fillna(0).astype(int)
    r["evidence"] = r["evidence"].fillna(0.0)
    if "bucket" not in r:
        r["bucket"] = ""
    u = pd.to_numeric(r["shortfall"], errors="coerce") if "shortfall" in r else pd.Series(np.nan, index=r.index)
    r["scaling_class"] = [row_class(v) for v in u]
    mtn = pd.to_numeric(r["max_train_nodes"], errors="coerce") if "max_train_nodes" in r else np.nan
    r["first_crossing"] = ((r["crossing"] == "crosses_nodes") & (mtn <= 1)).to_numpy(bool)
    r["shortfall"] = u.fillna(0.0)
    if "noise_source" in r:
        df = pd.to_numeric(r["noise_df"], errors="coerce") if "noise_df" in r else pd.Series(np.nan, index=r.index)
        r["few_dof"] = [
            few_noise_dof(s, None if pd.isna(v) else float(v)) if isinstance(s, str) else False
            for s, v in zip(r["noise_source"], df, strict=True)
        ]
    else:
        r["few_dof"] = False
    return r


def row_class(shortfall) -> str:
    """The scaling class of a series' row by its shortfall (:data:`CLASSES`, as
    :func:`perfmodel.uncertainty.prior.for_series` tells it); "" without one or without classes."""
    e = efficiency(None if shortfall is None or pd.isna(shortfall) else float(shortfall))
    if e is None or not CLASSES:
        return ""
    return next((name for name, lo in CLASSES if e >= lo - 1e-12), CLASSES[-1][0])


def attach_shortfall(raw: pd.DataFrame) -> pd.DataFrame:
    """Records of an older benchmark run without the ``shortfall`` column: each split's
    :func:`perfmodel.fitting.extrapolation.scaling_shortfall` of its training rows (the corpus's splits),
    as the product computes it at fit time."""
    if "shortfall" in raw and raw["shortfall"].notna().any():
        return raw
    import corpus

    u = {
        (s.source, s.series, float(s.cut)): scaling_shortfall(s.train.values("p"), s.train.y)
        for s in corpus.make_splits(corpus.load_series(sorted(raw["source"].unique())))
    }
    keys = zip(raw["source"], raw["series"], raw["cut"].astype(float), strict=True)
    return raw.assign(shortfall=[u.get(k) if u.get(k) is not None else np.nan for k in keys])


def source_weights(r: pd.DataFrame) -> np.ndarray:
    """Each row's weight for the report: 1 / (rows of its source in ``r``), so every source weighs the same."""
    n = r.groupby("source")["source"].transform("size").to_numpy(float)
    return 1.0 / n


def learning_weights(r: pd.DataFrame) -> np.ndarray:
    """Each row's weight for learning: 1 / sqrt(rows of its source in ``r``), so a source weighs as the
    square root of its rows. With every source the same, one DawnBench row weighed as much as RELeARN's
    3,000 and set a class's κ alone; by rows, RELeARN would decide alone."""
    n = r.groupby("source")["source"].transform("size").to_numpy(float)
    return 1.0 / np.sqrt(n)


def training_rows(r: pd.DataFrame, held_out: str | None) -> pd.DataFrame:
    """The rows a prior is learned on when ``held_out`` is scored: every usable row of the other
    sources (all sources when ``held_out`` is None)."""
    keep = r["ok"].to_numpy(bool).copy()
    if held_out is not None:
        keep &= (r["source"] != held_out).to_numpy(bool)
    return r[keep]


def split_errors(r: pd.DataFrame) -> pd.DataFrame:
    """One row per split: its source, family, training configurations and mean absolute percentage
    error of the point predictions (a failed fit: NaN)."""
    t = r["pred"].to_numpy(float)
    with np.errstate(all="ignore"):
        ape = 100 * np.abs(t / r["y_true"].to_numpy(float) - 1)
    return (
        r.assign(ape=np.where(np.isfinite(t) & (t > 0), ape, np.nan))
        .groupby(["source", "family", "series", "cut"], sort=False)
        .agg(
            ape=("ape", "mean"), n_train_configs=("n_train_configs", "first"), scaling_class=("scaling_class", "first")
        )
        .reset_index()
    )
