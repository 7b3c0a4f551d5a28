"""Speedup and parallel efficiency along p, from the displayed model, against the ideal line; the
measured speedups beside it and the extrapolation zone shaded.

Presentation: imports from the layers below, plots.style, plots.bands and plots.scaling only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..data.measurements import Measurements
from ..errors import PerfModelError
from .bands import add_band, speedup_interval
from .scaling import ScalingData, _axis_ticks, _axis_type, _extrap_zone, _fixed_text, scaling_data
from .style import (
    IDEAL,
    MEASURED,
    PREDICTED,
    factor_title,
    fmt_num,
    set_log_ticks,
    style,
)


@dataclass
class SpeedupData:
    p: np.ndarray
    speedup: np.ndarray
    efficiency: np.ndarray  # percent
    ideal: np.ndarray
    inside: np.ndarray
    p0: float
    measured_p: np.ndarray
    measured_speedup: np.ndarray
    measured_efficiency: np.ndarray
    scaling: ScalingData
    #: the 90 % interval of the speedup (None without intervals): T(p0) over the time's interval at each p
    #: (:func:`perfmodel.plots.bands.speedup_interval`), so it agrees with the time range quoted there
    speedup_low: np.ndarray | None = None
    speedup_high: np.ndarray | None = None

    @property
    def efficiency_low(self):
        return None if self.speedup_low is None else self.speedup_low / self.ideal * 100

    @property
    def efficiency_high(self):
        return None if self.speedup_high is None else self.speedup_high / self.ideal * 100


def speedup_data(
    result,
    fixed: dict | None = None,
    meas: Measurements | None = None,
    x_max: float | None = None,
    data: ScalingData | None = None,
) -> SpeedupData:
    """Speedup T(p0)/T(p) and parallel efficiency speedup/(p/p0) in %, p0 the smallest measured p
    (the smallest positive one when p = 0 was measured); the curve starts at p0. T(p0) is the model's
    point prediction; the speedup's band is T(p0) over the time's band at each p and the efficiency's
    that over p/p0 (:func:`perfmodel.plots.bands.speedup_interval`)."""
    if "p" not in result.factors:
        raise PerfModelError("speedup needs the symbol p (workers) in the model")
    d = data if data is not None and data.symbol == "p" else scaling_data(result, "p", fixed, meas, x_max)
    p0 = float(d.measured_range[0])
    if p0 <= 0:
        measured = meas.values("p") if meas is not None and "p" in meas.factors else d.x
        positive = np.asarray(measured, float)[np.asarray(measured, float) > 0]
        if positive.size == 0:
            raise PerfModelError("speedup needs values of p above 0")
        p0 = float(positive.min())
    if d.x.min() < p0:
        d = scaling_data(result, "p", d.fixed, meas, x_max=float(d.x.max()), x_min=p0)
    t0 = float(result.predict({"p": [p0], **{s: [v] for s, v in d.fixed.items()}})[0])
    with np.errstate(all="ignore"):
        sp = t0 / d.total
        ideal = d.x / p0
        eff = sp / ideal * 100
    mp, ms, me = np.zeros(0), np.zeros(0), np.zeros(0)
    if d.points_x.size:
        keep = d.points_x >= p0
        ps = np.unique(d.points_x[keep])
        means = np.array([d.points_y[d.points_x == v].mean() for v in ps])
        if ps.size and np.isclose(ps[0], p0):
            mp, ms = ps, means[0] / means
            me = ms / (ps / p0) * 100
    band = speedup_interval(result, p0, d.x, d.fixed)
    return SpeedupData(d.x, sp, eff, ideal, d.inside, p0, mp, ms, me, d, *(band if band is not None else (None, None)))


def speedup_figure(
    result,
    fixed: dict | None = None,
    meas: Measurements | None = None,
    x_max: float | None = None,
    log_x: bool = False,
    title: str | None = "Speedup and parallel efficiency",
    data: ScalingData | None = None,
) -> go.Figure:
    """Two panels against p: speedup over the smallest measured p (with the ideal line) and
    parallel efficiency (%)."""
    d = speedup_data(result, fixed, meas, x_max, data)
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=(f"Speedup over p = {fmt_num(d.p0)}", "Parallel efficiency"),
    )
    for col in (1, 2):
        _extrap_zone(fig, d.scaling, log_x, row=1, col=col, label=(col == 1))
    fig.add_trace(
        go.Scatter(
            x=d.p,
            y=d.ideal,
            mode="lines",
            name="ideal (linear)",
            line=dict(color=IDEAL, dash="dash", width=1.5),
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=d.p,
            y=np.full(d.p.size, 100.0),
            mode="lines",
            showlegend=False,
            line=dict(color=IDEAL, dash="dash", width=1.5),
            hoverinfo="skip",
        ),
        row=1,
        col=2,
    )
    if d.speedup_low is not None:
        add_band(
            fig,
            d.p,
            d.speedup_low,
            d.speedup_high,
            row=1,
            col=1,
            hover="%{x:.4g}: %{customdata[0]:.3g} – %{customdata[1]:.3g}×",
        )
        add_band(
            fig,
            d.p,
            d.efficiency_low,
            d.efficiency_high,
            row=1,
            col=2,
            legend=False,
            hover="%{x:.4g}: %{customdata[0]:.3g} – %{customdata[1]:.3g} %",
        )
    for col, y, unit in ((1, d.speedup, "×"), (2, d.efficiency, " %")):
        ins = np.where(d.inside, y, np.nan)
        out = np.where(d.inside, np.nan, y)
        # join the dashed part to the solid one at the range boundary
        idx = np.flatnonzero(d.inside)
        if idx.size:
            for j in (idx[0], idx[-1]):
                out[j] = y[j]
        fig.add_trace(
            go.Scatter(
                x=d.p,
                y=ins,
                mode="lines",
                name="model",
                showlegend=(col == 1),
                line=dict(color=PREDICTED, width=3.5),
                legendgroup="model",
                hovertemplate=f"p = %{{x:.4g}}<br>%{{y:.3g}}{unit}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=d.p,
                y=out,
                mode="lines",
                name="model (extrapolated)",
                showlegend=(col == 1),
                line=dict(color=PREDICTED, width=3, dash="dash"),
                legendgroup="extra",
                hovertemplate=f"p = %{{x:.4g}}<br>%{{y:.3g}}{unit} (extrapolated)<extra></extra>",
            ),
            row=1,
            col=col,
        )
    if d.measured_p.size:
        fig.add_trace(
            go.Scatter(
                x=d.measured_p,
                y=d.measured_speedup,
                mode="markers",
                name="measured (mean)",
                marker=dict(color=MEASURED, size=9),
                legendgroup="meas",
                hovertemplate="p = %{x:.4g}<br>measured %{y:.3g}×<extra></extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=d.measured_p,
                y=d.measured_efficiency,
                mode="markers",
                showlegend=False,
                marker=dict(color=MEASURED, size=9),
                legendgroup="meas",
                hovertemplate="p = %{x:.4g}<br>measured %{y:.3g} %<extra></extra>",
            ),
            row=1,
            col=2,
        )
    for col in (1, 2):
        fig.update_xaxes(title_text=factor_title("p"), type=_axis_type(log_x), row=1, col=col)
        _axis_ticks(fig, d.scaling, log_x, row=1, col=col)
    if log_x:
        # log-log: the ideal speedup p/p0 is a straight line, as on the x-axis, not an exponential
        sp = np.concatenate([d.speedup[np.isfinite(d.speedup) & (d.speedup > 0)], d.ideal, d.measured_speedup])
        sp = sp[sp > 0]
        fig.update_yaxes(title_text="speedup (×)", type="log", row=1, col=1)
        if sp.size:
            set_log_ticks(fig, "y", float(sp.min()), float(sp.max()), row=1, col=1)
    else:
        fig.update_yaxes(title_text="speedup (×)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="efficiency (%)", rangemode="tozero", row=1, col=2)
    return style(fig, title, _fixed_text(d.scaling), height=460, legend="right")
