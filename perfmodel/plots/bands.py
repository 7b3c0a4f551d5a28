"""Interval bands and error bars for the charts (:mod:`perfmodel.plots`), from a fit's intervals.

Every function here takes a fitted result and returns plain arrays or adds traces to a figure; a
result without intervals (``result.has_intervals`` false) gets none, so a chart drawn before its
intervals are computed simply has no band yet.

Presentation: imports from the data and fitting layers only.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..data.measurements import Measurements
from ..fitting.members import DEFAULT_LEVEL

BAND_FILL = "rgba(31, 119, 180, 0.18)"
BAND_LINE = "rgba(31, 119, 180, 0.0)"


def interval_at(result, env: dict, level: float = DEFAULT_LEVEL):
    """(point, low, high) arrays at the configurations ``env`` (symbol -> array), or None."""
    if not getattr(result, "has_intervals", False):
        return None
    out = result.predict(env, interval=level)
    return (out["predicted_time"].to_numpy(), out["predicted_low"].to_numpy(), out["predicted_high"].to_numpy())


def scaling_interval(result, data, level: float = DEFAULT_LEVEL):
    """(point, low, high) along a :class:`perfmodel.plots.ScalingData` curve, or None."""
    env = {data.symbol: data.x, **{s: np.full(data.x.size, v) for s, v in data.fixed.items()}}
    return interval_at(result, env, level)


#: The legend's swatch for a band: the band's colour, opaque enough to be seen at legend size (the
#: band itself is pale so that the curve stays readable; a swatch of that paleness is invisible).
BAND_SWATCH = "rgba(31, 119, 180, 0.45)"


def add_band(
    fig: go.Figure,
    x,
    low,
    high,
    *,
    level: float = DEFAULT_LEVEL,
    name: str | None = None,
    row=None,
    col=None,
    below: bool = True,
    legend: bool = True,
    fill: str = BAND_FILL,
    hover: str = "%{x:.4g}: %{customdata[0]:.4g} – %{customdata[1]:.4g} s",
) -> None:
    """A shaded band between ``low`` and ``high`` (colour ``fill``), drawn beneath the other traces by
    default; its legend entry (``legend``) is a square swatch in a stronger shade of the band."""
    name = name or f"{level * 100:.0f} % interval"
    kw = dict(row=row, col=col) if row is not None else {}
    n_before = len(fig.data)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=high,
            mode="lines",
            line=dict(width=0, color=BAND_LINE),
            showlegend=False,
            hoverinfo="skip",
            name=name,
            legendgroup=name,
        ),
        **kw,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=low,
            mode="lines",
            line=dict(width=0, color=BAND_LINE),
            fill="tonexty",
            fillcolor=fill,
            name=name,
            showlegend=False,
            legendgroup=name,
            customdata=np.column_stack([low, high]),
            hovertemplate=hover + "<extra>" + name + "</extra>",
        ),
        **kw,
    )
    if legend:
        swatch = BAND_SWATCH if fill == BAND_FILL else fill.rsplit(",", 1)[0] + ", 0.45)"
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=name,
                legendgroup=name,
                hoverinfo="skip",
                marker=dict(symbol="square", size=15, color=swatch),
            ),
            **kw,
        )
    if below and n_before:
        fig.data = fig.data[n_before:] + fig.data[:n_before]


def parity_intervals(result, meas: Measurements, level: float = DEFAULT_LEVEL):
    """(low, high) of each measured run's prediction interval, or None."""
    got = interval_at(result, meas.env(), level)
    return None if got is None else (got[1], got[2])


def speedup_interval(result, p0: float, x: np.ndarray, fixed: dict, level: float = DEFAULT_LEVEL, symbol: str = "p"):
    """(low, high) of the speedup T(p0)/T(p) along ``x``, or None without intervals.

    One convention, so that the speedup's range and the time's range at the same configuration agree:
    the reference T(p0) is the displayed model's point prediction (the one the speedup curve divides),
    and the band is that reference over the time's band at each p (:func:`interval_at`, the range the
    headline, the tables and the time chart quote): ``low = T(p0) / T_high(p)``,
    ``high = T(p0) / T_low(p)``; the efficiency's band is the speedup's over the ideal. Every part of
    the time's band is in it (members, noise of one run, calibration, extrapolation κ·d, the reference
    structures' reach, and the best measured efficiency less the noise of one run that stops its low end:
    the speedup's high end stops there too); the reference is a number, not a second uncertain run, so
    at p0 the band is the time's there, around 1. ``symbol``: the factor that grows (p by default; the
    Groups page scales along any factor)."""
    x = np.asarray(x, float)
    env = {symbol: np.concatenate([[float(p0)], x]), **{s: np.full(x.size + 1, v) for s, v in fixed.items()}}
    got = interval_at(result, env, level)
    if got is None:
        return None
    t, low, high = got
    with np.errstate(all="ignore"):
        return t[0] / high[1:], t[0] / low[1:]
