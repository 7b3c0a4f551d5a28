"""Residuals against each factor.

Presentation: imports from the data layer and plots.style only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ..data.measurements import Measurements, nodes_of
from .style import (
    BAND,
    BAND_PCT,
    IDEAL,
    PREDICTED,
    _log_axis,
    config_label,
    empty_figure,
    factor_axes,
    factor_grid,
    style,
)


# -- results: residuals ---------------------------------------------------------------------------
@dataclass
class ResidualData:
    symbols: list
    x: dict
    residual_pct: np.ndarray
    hover: list
    log_x: dict


def residual_data(result, meas: Measurements) -> ResidualData:
    if meas is None or meas.n_rows == 0:
        return ResidualData([], {}, np.zeros(0), [], {})
    pred = result.predict(meas)
    y = meas.y
    res = (pred - y) / y * 100
    env = meas.env()
    syms = meas.varying() or list(meas.factors)
    g = meas.gpus_per_node
    if g and "p" in syms and "nodes" in syms and np.array_equal(nodes_of(env["p"], g), env["nodes"]):
        syms = [s for s in syms if s != "nodes"]  # nodes that follow from p: the p panel shows them already
    hover = [
        f"row {r}<br>" + config_label({s: env[s][i] for s in meas.factors}, "<br>") for i, r in enumerate(meas.rows)
    ]
    return ResidualData(syms, {s: env[s] for s in syms}, res, hover, {s: _log_axis(env[s]) for s in syms})


def residuals_figure(
    result, meas: Measurements, title: str | None = "Residuals against each factor", max_cols: int = 3
) -> go.Figure:
    """Residual (predicted − measured, % of measured) against each varying factor."""
    d = residual_data(result, meas)
    y_title = "residual (% of measured)"
    if not d.symbols:
        return empty_figure("No measurements to show", "factor", y_title, title)
    fig, rows, cols = factor_grid(len(d.symbols), max_cols)
    for i, s in enumerate(d.symbols):
        r, c = i // cols + 1, i % cols + 1
        fig.add_hrect(
            y0=-BAND_PCT,
            y1=BAND_PCT,
            fillcolor=BAND,
            line_width=0,
            layer="below",
            row=r,
            col=c,
            exclude_empty_subplots=False,
        )
        fig.add_hline(y=0, line=dict(color=IDEAL, dash="dash", width=1.2), row=r, col=c, exclude_empty_subplots=False)
        big = np.abs(d.residual_pct) > BAND_PCT
        fig.add_trace(
            go.Scatter(
                x=d.x[s],
                y=d.residual_pct,
                mode="markers",
                showlegend=False,
                name=s,
                marker=dict(
                    color=np.where(big, "#dc2626", PREDICTED).tolist(),
                    size=8,
                    opacity=0.8,
                    line=dict(width=0.5, color="white"),
                ),
                text=d.hover,
                hovertemplate="%{text}<br>residual %{y:+.1f} %<extra></extra>",
            ),
            row=r,
            col=c,
        )
        factor_axes(fig, d, s, meas, r, c, y_title)
    top = max(BAND_PCT * 1.5, float(np.nanmax(np.abs(d.residual_pct))) * 1.15 if d.residual_pct.size else 0)
    fig.update_yaxes(range=[-top, top], ticksuffix=" %")
    sub = f"shaded: within ±{BAND_PCT:g} %; red: outside"
    return style(fig, title, sub, height=380 * rows + 60)
