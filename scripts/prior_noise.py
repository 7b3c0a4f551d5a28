"""The population's prior on one run's noise, for ``scripts/learn_prior.py --noise-prior`` (off by
default; see docs/method/tried.md): learned from the training sources' fits by weighted
maximum marginal likelihood (Smyth 2004), and each row's un-widened band made again with its fit's noise
moderated by it.

``NOISE_PRIOR`` and ``NOISE_DF`` are set by ``learn_prior.py``'s command line.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from prior_records import LEVEL, learning_weights, training_rows  # beside it; it puts the repository on the path

from perfmodel.fitting.extrapolation import OWN_NOISE_SOURCES, moderated_noise, normal_quantile

#: Moderate each fit's noise with a population prior learned from the training sources' fits
#: (--noise-prior; :func:`learn_noise_prior`, :func:`perfmodel.fitting.extrapolation.moderated_noise`).
NOISE_PRIOR = False
#: bounds of the prior's pseudo-degrees of freedom searched (beyond 1e4 the prior is a known σ)
NOISE_DF_BOUNDS = (0.05, 1e4)
#: the prior's pseudo-degrees of freedom when set (--noise-df), σ0 alone then learned; None: both learned
NOISE_DF: float | None = None


def split_noise(r: pd.DataFrame) -> pd.DataFrame:
    """One row per split whose noise the fit estimated (residuals or repeats, at least one degree of
    freedom, σ > 0): source, sigma, df, and its weight (a source weighing as the square root of its
    splits, as :func:`learning_weights` weighs rows)."""
    g = (
        r.groupby(["source", "series", "cut"], sort=False)
        .agg(noise_source=("noise_source", "first"), sigma=("noise_sigma", "first"), df=("noise_df", "first"))
        .reset_index()
    )
    sigma, df = pd.to_numeric(g["sigma"], errors="coerce"), pd.to_numeric(g["df"], errors="coerce")
    g = g[g["noise_source"].isin(OWN_NOISE_SOURCES) & (df >= 1) & (sigma > 0)].assign(sigma=sigma, df=df)
    return g.assign(weight=learning_weights(g))


def learn_noise_prior(r: pd.DataFrame) -> dict | None:
    """The population's prior on one run's relative noise, from the fits of ``r``'s splits
    (:func:`split_noise`): σ0 and ν0 of a scaled inverse-χ² prior on σ², by weighted maximum marginal
    likelihood (Smyth 2004: a fit's s² on d degrees of freedom is then σ0²·F(d, ν0); ν0 held at
    :data:`NOISE_DF` when set). None without fits."""
    from scipy import optimize, stats

    g = split_noise(r)
    if len(g) < 2:
        return None
    s2, d, w = g["sigma"].to_numpy(float) ** 2, g["df"].to_numpy(float), g["weight"].to_numpy(float)
    w = w / w.sum()

    def nll(x):
        log_s02, nu = x[0], math.exp(x[1])
        return -float(w @ (stats.f.logpdf(s2 / math.exp(log_s02), d, nu) - log_s02))

    x0 = [math.log(float(np.median(s2))), math.log(4.0)]
    lb, ub = (math.log(v) for v in NOISE_DF_BOUNDS)
    if NOISE_DF is not None:
        x0[1] = lb = ub = math.log(NOISE_DF)
    res = optimize.minimize(nll, x0, method="L-BFGS-B", bounds=[(None, None), (lb, ub)])
    return {
        "sigma": float(math.exp(res.x[0] / 2)),
        "df": float(math.exp(res.x[1])),
        "n_fits": int(len(g)),
        "n_sources": int(g["source"].nunique()),
    }


def noise_quantile(sigma: np.ndarray, df: np.ndarray) -> np.ndarray:
    """The 90 % quantile of one run's noise (:meth:`perfmodel.fitting.members.Noise.quantile`, per row;
    df NaN or 0: the normal's)."""
    from scipy.special import stdtrit

    df = np.nan_to_num(np.asarray(df, float), nan=0.0)
    with np.errstate(all="ignore"):
        z = np.where(df > 0, stdtrit(np.where(df > 0, df, 1.0), 0.5 + LEVEL / 2), normal_quantile(LEVEL))
    return np.asarray(sigma, float) * z


def apply_noise_prior(r: pd.DataFrame, prior: dict | None) -> pd.DataFrame:
    """``r`` with the un-widened band of each row made again with its fit's noise moderated by
    ``prior`` (:func:`perfmodel.fitting.extrapolation.moderated_noise`; the stated prior noise replaced
    by the population's): the members' part, sqrt(band² − q²), combined with the moderated quantile."""
    if prior is None or "noise_sigma" not in r:
        return r
    sigma = pd.to_numeric(r["noise_sigma"], errors="coerce").to_numpy(float)
    df = pd.to_numeric(r["noise_df"], errors="coerce").to_numpy(float)
    own = r["noise_source"].isin(OWN_NOISE_SOURCES).to_numpy(bool) & np.isfinite(sigma)
    q_old = noise_quantile(sigma, df)
    s_new, df_new = moderated_noise(np.where(own, sigma, 0.0), np.where(own, df, 0.0), prior["sigma"], prior["df"])
    q_new = noise_quantile(s_new, df_new)
    out = r.copy()
    for c in ("band_low", "band_high"):
        b = out[c].to_numpy(float)
        members = np.sqrt(np.maximum(b**2 - np.nan_to_num(q_old) ** 2, 0.0))
        out[c] = np.where(np.isfinite(q_old), np.hypot(members, q_new), b)
    return out


def with_noise_prior(r: pd.DataFrame, held_out: str | None) -> tuple[pd.DataFrame, dict | None]:
    """(``r`` with its bands made with the noise prior learned without ``held_out``, that prior) when
    :data:`NOISE_PRIOR`; else (``r``, None)."""
    if not NOISE_PRIOR:
        return r, None
    prior = learn_noise_prior(training_rows(r, held_out))
    return apply_noise_prior(r, prior), prior
