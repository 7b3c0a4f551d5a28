"""The measured data before any fit: time against each factor.

Presentation: imports from the data layer and plots.style only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ..data.measurements import Measurements
from .style import (
    PREDICTED,
    _log_axis,
    config_label,
    empty_figure,
    factor_axes,
    factor_grid,
    set_log_ticks,
    style,
    time_title,
)


# -- data page: measured time against each factor --------------------------------------------
@dataclass
class OverviewData:
    symbols: list
    x: dict  # symbol -> values (n,)
    y: np.ndarray  # measured time (n,)
    hover: list  # configuration text per row
    log_x: dict  # symbol -> bool
    log_y: bool


def overview_data(meas: Measurements | None) -> OverviewData:
    if meas is None or meas.n_rows == 0:
        return OverviewData([], {}, np.zeros(0), [], {}, False)
    syms = meas.varying() or list(meas.factors)
    env = meas.env()
    hover = [
        f"row {r}<br>" + config_label({s: env[s][i] for s in meas.factors}, "<br>") for i, r in enumerate(meas.rows)
    ]
    return OverviewData(
        syms, {s: env[s] for s in syms}, meas.y, hover, {s: _log_axis(env[s]) for s in syms}, _log_axis(meas.y)
    )


def overview_figure(meas: Measurements | None, title: str | None = "Measured time against each factor") -> go.Figure:
    """Measured time (y) against each varying factor (one panel per factor)."""
    d = overview_data(meas)
    if not d.symbols:
        return empty_figure("No measurements to show", "factor", time_title("measured time"), title)
    assert meas is not None  # without measurements there is no symbol: returned above
    fig, rows, cols = factor_grid(len(d.symbols), 3)
    for i, s in enumerate(d.symbols):
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(
            go.Scatter(
                x=d.x[s],
                y=d.y,
                mode="markers",
                name=s,
                showlegend=False,
                marker=dict(color=PREDICTED, size=8, opacity=0.7, line=dict(width=0.5, color="white")),
                text=d.hover,
                hovertemplate="%{text}<br>time %{y:.4g} s<extra></extra>",
            ),
            row=r,
            col=c,
        )
        factor_axes(fig, d, s, meas, r, c, time_title("measured time"))
    fig.update_yaxes(type="log" if d.log_y else "linear")
    if d.log_y:
        set_log_ticks(fig, "y", d.y.min(), d.y.max())
    return style(fig, title, height=380 * rows + 40)
