"""Plotly figure builders: ``(fit result, data) -> go.Figure``.

Every public ``*_figure`` function first computes plain data (a dataclass of arrays, returned
by a matching ``*_data`` function that tests can check) and then builds the figure. Nothing is
displayed here and Streamlit is never imported: the app, the HTML report and the CLI all call
the same functions.

Styling lives in one place (the constants below and :func:`style`): fonts large enough for a
slide, one colour family per term category (start-up grey, compute blue, communication
orange, other green), axis titles with units, and the extrapolation zone (beyond the measured
range) shaded and drawn dashed.

By subject: :mod:`~perfmodel.plots.style` (the one place for styling), :mod:`~perfmodel.plots.overview`,
:mod:`~perfmodel.plots.parity`, :mod:`~perfmodel.plots.contributions`, :mod:`~perfmodel.plots.residuals`,
:mod:`~perfmodel.plots.scaling`, :mod:`~perfmodel.plots.bands` (interval bands),
:mod:`~perfmodel.plots.groups` and :mod:`~perfmodel.plots.selection`. Presentation: imports from
every layer below it, never from the CLI or the app.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..data import Measurements
from .contributions import (
    ContributionData,
    ShareData,
    contribution_data,
    contributions_figure,
    share_data,
    shares_figure,
)
from .overview import OverviewData, overview_data, overview_figure
from .parity import ParityData, parity_data, parity_figure
from .residuals import ResidualData, residual_data, residuals_figure
from .scaling import (
    ScalingData,
    scaling_contributions_figure,
    scaling_data,
    scaling_figure,
    typical_value,
)
from .speedup import SpeedupData, speedup_data, speedup_figure
from .style import (
    CATEGORY_COLORS,
    EXTRAP_FILL,
    _log_axis,
    factor_title,
    fmt_num,
    fmt_seconds,
    log_scale_default,
    log_ticks,
    style,
    term_styles,
    time_unit,
    view_unit,
)

#: The package's own names: each figure with the plain data it is drawn from, the report's figures,
#: and the styling helpers callers format numbers and axes with. The subject modules hold the rest.
__all__ = [
    "CATEGORY_COLORS",
    "EXTRAP_FILL",
    "ContributionData",
    "OverviewData",
    "ParityData",
    "ResidualData",
    "ScalingData",
    "ShareData",
    "SpeedupData",
    "contribution_data",
    "contributions_figure",
    "factor_title",
    "fmt_num",
    "fmt_seconds",
    "log_scale_default",
    "log_ticks",
    "overview_data",
    "overview_figure",
    "parity_data",
    "parity_figure",
    "report_figures",
    "residual_data",
    "residuals_figure",
    "scaling_contributions_figure",
    "scaling_data",
    "scaling_figure",
    "share_data",
    "shares_figure",
    "speedup_data",
    "speedup_figure",
    "style",
    "term_styles",
    "time_unit",
    "typical_value",
    "view_unit",
]


def report_figures(
    result,
    meas: Measurements | None,
    symbol: str | None = None,
    fixed: dict | None = None,
    cv_predicted=None,
    x_max: float | None = None,
    log_x: bool | None = None,
    log_y: bool | None = None,
) -> dict[str, go.Figure]:
    """The figures of a report, by title: parity, shares, contributions, residuals and the scaling
    view (along ``symbol``, default p, the others at ``fixed``, up to ``x_max``). ``log_x`` and
    ``log_y`` default to the dashboard's defaults: log x when the factor's measured range spans 8×
    (1 to 8 workers), log y when the curve spans a decade. ``meas`` None (a model file without its data):
    the share and scaling charts only."""
    figs = {"Share of total predicted time": shares_figure(result)}
    if meas is not None:  # without the measurements (a model file alone): the charts of the model only
        figs = {
            "Predicted against measured": parity_figure(result, meas, cv_predicted=cv_predicted),
            **figs,
            "Where the time goes, per configuration": contributions_figure(result, meas),
            "Residuals against each factor": residuals_figure(result, meas),
        }
    if result.factors:
        if symbol is None or symbol not in result.factors:
            symbol = "p" if "p" in result.factors else next(iter(result.factors))
        d = scaling_data(result, symbol, fixed, meas, x_max)
        log_x = _log_axis(result.factor_ranges[symbol]) if log_x is None else log_x
        log_y = log_scale_default(d.total) if log_y is None else log_y
        unit = view_unit(d.total, d.high, d.points_y)  # as the Scaling page: one unit for both charts
        figs["Scaling"] = scaling_figure(result, symbol, meas=meas, log_x=log_x, log_y=log_y, data=d, unit=unit)
        figs["Scaling: term contributions"] = scaling_contributions_figure(
            result,
            symbol,
            meas=meas,
            log_x=log_x,
            data=d,
            unit=unit,
            share=log_y,  # as the Scaling page
        )
        if symbol == "p":
            figs["Speedup and parallel efficiency"] = speedup_figure(result, meas=meas, log_x=log_x, data=d)
    return figs
