"""Predicted against measured (the parity chart), with the fit's intervals as error bars.

Presentation: imports from the layers below, plots.style and plots.bands only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..data.measurements import Measurements
from ..errors import PerfModelError
from .bands import parity_intervals
from .style import (
    BAND,
    BAND_PCT,
    CONTINUOUS,
    DISCRETE,
    IDEAL,
    MEASURED,
    PREDICTED,
    config_label,
    empty_figure,
    fmt_num,
    set_log_ticks,
    style,
    time_title,
)


# -- results: parity plot ----------------------------------------------------------------------
@dataclass
class ParityData:
    measured: np.ndarray
    predicted: np.ndarray
    error_pct: np.ndarray
    rows: np.ndarray
    hover: list
    color: np.ndarray | None  # values of the colour factor, or None
    color_name: str | None
    lo: float  # axis range (positive)
    hi: float
    cv_predicted: np.ndarray | None = None
    within_band: float = float("nan")  # share of rows within ±10 %


def parity_data(
    result, meas: Measurements, color_by: str | None = None, cv_predicted: np.ndarray | None = None
) -> ParityData:
    if meas is None or meas.n_rows == 0:
        z = np.zeros(0)
        return ParityData(z, z, z, z.astype(int), [], None, None, 0.1, 10.0)
    y = meas.y
    pred = result.predict(meas)
    err = (pred - y) / y * 100
    env = meas.env()
    hover = [
        f"row {r}<br>" + config_label({s: env[s][i] for s in meas.factors}, "<br>") for i, r in enumerate(meas.rows)
    ]
    color = None
    if color_by:
        col = meas.factors.get(color_by, color_by)
        if col not in meas.frame.columns:
            raise PerfModelError(f"cannot colour by {color_by!r}: no such factor or column")
        color = pd.to_numeric(meas.frame[col], errors="coerce").to_numpy(dtype=float)
    vals = [y[y > 0], pred[pred > 0]]
    if cv_predicted is not None:
        cv_predicted = np.asarray(cv_predicted, float)
        vals.append(cv_predicted[np.isfinite(cv_predicted) & (cv_predicted > 0)])
    allv = np.concatenate(vals)
    lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (0.1, 10.0)
    lo, hi = lo / 1.25, hi * 1.25
    within = float(np.mean(np.abs(err) <= BAND_PCT)) if err.size else float("nan")
    return ParityData(y, pred, err, meas.rows, hover, color, color_by, lo, hi, cv_predicted, within)


def largest_errors(result, meas: Measurements, n: int = 10) -> pd.DataFrame:
    """The ``n`` runs the fit misses most (largest absolute percentage error first): ``row``,
    ``error (%)`` (signed: above 0 the model predicts too long), ``measured (s)``, ``predicted (s)``
    and ``configuration`` (the values of the factors that vary)."""
    d = parity_data(result, meas)
    if d.measured.size == 0:
        return pd.DataFrame(columns=["row", "error (%)", "measured (s)", "predicted (s)", "configuration"])
    env = meas.env()
    shown = meas.varying() or list(meas.factors)
    order = np.argsort(-np.abs(d.error_pct), kind="stable")[:n]
    return pd.DataFrame(
        {
            "row": d.rows[order],
            "error (%)": d.error_pct[order],
            "measured (s)": d.measured[order],
            "predicted (s)": d.predicted[order],
            "configuration": [config_label({s: env[s][i] for s in shown}) for i in order],
        }
    )


def add_parity_guides(fig: go.Figure, lo: float, hi: float) -> None:
    """The y = x line and the ±BAND_PCT % band of a parity chart, from ``lo`` to ``hi`` seconds."""
    line = np.array([lo, hi])
    f = BAND_PCT / 100
    fig.add_trace(
        go.Scatter(x=line, y=line * (1 - f), mode="lines", line=dict(width=0), hoverinfo="skip", showlegend=False)
    )
    fig.add_trace(
        go.Scatter(
            x=line,
            y=line * (1 + f),
            mode="lines",
            line=dict(width=0),
            fill="tonexty",
            fillcolor=BAND,
            hoverinfo="skip",
            name=f"±{BAND_PCT:g} %",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=line,
            y=line,
            mode="lines",
            line=dict(color=IDEAL, dash="dash", width=1.5),
            hoverinfo="skip",
            name="y = x (perfect)",
        )
    )


def square_log_axes(fig: go.Figure, rng: list, x_title: str, y_title: str) -> None:
    """Equal log ranges on both axes at one scale, so y = x runs at 45°; the square plot is anchored
    top-left in the figure, where a parity chart's legend sits inside its empty corner."""
    fig.update_xaxes(type="log", range=rng, title_text=x_title, constrain="domain", constraintoward="left")
    fig.update_yaxes(
        type="log",
        range=rng,
        title_text=y_title,
        scaleanchor="x",
        scaleratio=1,
        constrain="domain",
        constraintoward="top",
    )


def parity_figure(
    result,
    meas: Measurements,
    color_by: str | None = None,
    cv_predicted: np.ndarray | None = None,
    title: str | None = "Predicted against measured",
    height: int = 520,
    legend: str = "inside",
) -> go.Figure:
    """Log–log predicted vs measured time with the y = x line and a ±10 % band.

    ``legend``: "inside" (the plot's empty top-left corner, for a chart wide enough that the legend
    stays clear of the diagonal) or "top" (above the plot, for a small chart)."""
    d = parity_data(result, meas, color_by, cv_predicted)
    x_title, y_title = time_title("measured time"), time_title("predicted time")
    if d.measured.size == 0:
        return empty_figure("No measurements to show", x_title, y_title, title)
    fig = go.Figure()
    add_parity_guides(fig, d.lo, d.hi)
    band = parity_intervals(result, meas)
    if band is not None:
        low, high = band
        fig.add_trace(
            go.Scatter(
                x=d.measured,
                y=d.predicted,
                mode="markers",
                name="90 % interval",
                marker=dict(size=1, opacity=0, color=PREDICTED),
                hoverinfo="skip",
                legendgroup="interval",
                showlegend=False,
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=high - d.predicted,
                    arrayminus=d.predicted - low,
                    color="rgba(31, 119, 180, 0.45)",
                    thickness=1.2,
                    width=0,
                ),
            )
        )
        # The legend's entry: a vertical bar like the error bars (their own trace's swatch is an invisible marker).
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name="90 % interval",
                legendgroup="interval",
                hoverinfo="skip",
                marker=dict(symbol="line-ns-open", size=16, line=dict(width=2.5, color="rgba(31, 119, 180, 0.8)")),
            )
        )
    tmpl = "%{text}<br>measured %{x:.4g} s<br>predicted %{y:.4g} s<br>error %{customdata:+.1f} %<extra></extra>"
    marker = dict(size=10, opacity=0.85, line=dict(width=0.8, color="white"))
    if d.color is None:
        fig.add_trace(
            go.Scatter(
                x=d.measured,
                y=d.predicted,
                mode="markers",
                name="in-sample prediction",
                marker=dict(color=PREDICTED, **marker),
                text=d.hover,
                customdata=d.error_pct,
                hovertemplate=tmpl,
            )
        )
    else:
        levels = np.unique(d.color[np.isfinite(d.color)])
        if len(levels) <= len(DISCRETE):
            for i, v in enumerate(levels):
                m = d.color == v
                fig.add_trace(
                    go.Scatter(
                        x=d.measured[m],
                        y=d.predicted[m],
                        mode="markers",
                        name=f"{d.color_name} = {fmt_num(v)}",
                        marker=dict(color=DISCRETE[i], **marker),
                        text=[h for h, k in zip(d.hover, m, strict=True) if k],
                        customdata=d.error_pct[m],
                        hovertemplate=tmpl,
                    )
                )
        else:
            fig.add_trace(
                go.Scatter(
                    x=d.measured,
                    y=d.predicted,
                    mode="markers",
                    name="in-sample prediction",
                    marker=dict(
                        color=d.color,
                        colorscale=CONTINUOUS,
                        showscale=True,
                        colorbar=dict(title=dict(text=d.color_name), thickness=14),
                        **marker,
                    ),
                    text=d.hover,
                    customdata=d.error_pct,
                    hovertemplate=tmpl,
                )
            )
    if d.cv_predicted is not None:
        ok = np.isfinite(d.cv_predicted)
        cv_err = (d.cv_predicted - d.measured) / d.measured * 100
        fig.add_trace(
            go.Scatter(
                x=d.measured[ok],
                y=d.cv_predicted[ok],
                mode="markers",
                name="cross-validated prediction",
                marker=dict(symbol="circle-open", size=10, color=MEASURED, line=dict(width=1.5)),
                text=[h for h, k in zip(d.hover, ok, strict=True) if k],
                customdata=cv_err[ok],
                hovertemplate=tmpl.replace("predicted", "cross-validated"),
            )
        )
    rng = [math.log10(d.lo), math.log10(d.hi)]
    square_log_axes(fig, rng, x_title, y_title)
    set_log_ticks(fig, "x", d.lo, d.hi)
    set_log_ticks(fig, "y", d.lo, d.hi)
    sub = f"{d.within_band * 100:.0f} % of runs within ±{BAND_PCT:g} %" if d.measured.size else None
    return style(fig, title, sub, height=height, legend=legend)
