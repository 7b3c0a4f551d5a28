"""Scaling views: time against one factor past the measured range, the terms' contributions along
it; the extrapolation zone shaded (speedup and efficiency: :mod:`perfmodel.plots.speedup`).

Presentation: imports from the layers below, plots.style and plots.bands only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..data.measurements import Measurements
from ..data.throughput import throughput_from_time
from ..errors import PerfModelError
from .bands import add_band, scaling_interval
from .style import (
    CATEGORY_COLORS,
    CATEGORY_ORDER,
    EXTRAP_FILL,
    EXTRAP_TEXT,
    EXTRAP_VEIL,
    MEASURED,
    PREDICTED,
    TIME_UNIT,
    factor_title,
    fmt_num,
    growth_title,
    note_html,
    set_log_ticks,
    style,
    term_styles,
    text_html,
    time_title,
    unit_seconds,
)


# -- scaling ----------------------------------------------------------------------------------------
@dataclass
class ScalingData:
    symbol: str
    x: np.ndarray  # grid (n,)
    total: np.ndarray  # predicted time (n,)
    contributions: pd.DataFrame  # (n, K), columns = term texts
    inside: np.ndarray  # bool (n,): x within the measured range
    measured_range: tuple  # (lo, hi) of the symbol in the data
    fixed: dict  # the other symbols' values
    points_x: np.ndarray  # measured runs at the fixed values
    points_y: np.ndarray
    styles: list
    others_outside: list = field(default_factory=list)  # fixed symbols set outside their measured range
    crossover: float | None = None  # first x where communication overtakes compute
    low: np.ndarray | None = None  # the 90 % interval along the curve (None: the fit has no intervals)
    high: np.ndarray | None = None


def scaling_grid(lo: float, hi: float, integer: bool, n: int = 200) -> np.ndarray:
    """Points from ``lo`` to ``hi``: geometric when the range is wide and positive, integers when asked."""
    if hi <= lo:
        hi = lo + 1 if lo == 0 else lo * 2
    if lo > 0 and hi / lo >= 4:
        g = np.geomspace(lo, hi, n)
    else:
        g = np.linspace(lo, hi, n)
    if integer:
        g = np.unique(np.round(g))
        g = g[(g >= math.ceil(lo)) & (g <= math.floor(hi))] if g.size else g
    return np.unique(np.concatenate([g, [lo, hi]])) if not integer else g


def typical_value(result, symbol: str, meas: Measurements | None = None) -> float:
    """Where to hold a factor that is not on the x-axis: its most frequent measured value (the
    largest on ties), so the curve passes through measured runs; without data, the middle of
    the measured range (geometric for positive ranges)."""
    if meas is not None and symbol in meas.factors and meas.n_rows:
        values, counts = np.unique(meas.values(symbol), return_counts=True)
        best = np.flatnonzero(counts == counts.max())[-1]
        return float(values[best])
    lo, hi = (float(v) for v in result.factor_ranges[symbol])
    if lo == hi:
        return lo
    return float(np.sqrt(lo * hi)) if lo > 0 else (lo + hi) / 2


def scaling_data(
    result,
    symbol: str,
    fixed: dict | None = None,
    meas: Measurements | None = None,
    x_max: float | None = None,
    x_min: float | None = None,
    n: int = 200,
    include=None,
) -> ScalingData:
    """Predicted time and term contributions along ``symbol``, the other symbols at ``fixed``
    (default: :func:`typical_value`), from the measured minimum to ``x_max`` (default: 4 × the
    measured maximum). ``include``: values of ``symbol`` the grid must hold exactly (those within
    it), e.g. the measured ones, so that the curve's value at such a value is the model's, not an
    interpolation between grid points."""
    if symbol not in result.factors:
        raise PerfModelError(f"{symbol!r} is not a factor of the model (factors: {', '.join(result.factors)})")
    lo, hi = (float(v) for v in result.factor_ranges[symbol])
    fixed = dict(fixed or {})
    held = [s for s in result.target_factors() if s != symbol]  # the nodes of each p follow from it
    for s in held:
        if s not in fixed:
            fixed[s] = typical_value(result, s, meas)
    fixed = {s: float(fixed[s]) for s in held}  # in the model's factor order
    if meas is not None and symbol in meas.factors and meas.n_rows:
        integer = bool(np.all(np.mod(meas.values(symbol), 1) == 0))
    else:
        integer = float(lo).is_integer() and float(hi).is_integer()
    x_max = float(x_max) if x_max is not None else (hi * 4 if hi > 0 else hi + 1)
    x_min = float(x_min) if x_min is not None else lo
    x = scaling_grid(x_min, max(x_max, x_min), integer, n)
    if x.size == 0:
        x = np.array([x_min])
    if include is not None:
        extra = np.asarray(include, float).ravel()
        extra = extra[np.isfinite(extra) & (extra >= x[0]) & (extra <= x[-1])]
        x = np.union1d(x, extra)
    env = {symbol: x, **{s: np.full(x.size, v) for s, v in fixed.items()}}
    contrib = result.contributions(env)
    total = contrib.to_numpy().sum(axis=1)
    inside = (x >= lo - 1e-9 * abs(lo)) & (x <= hi + 1e-9 * abs(hi))
    others_out = [s for s, v in fixed.items() if not result.factor_ranges[s][0] <= v <= result.factor_ranges[s][1]]
    px, py = np.zeros(0), np.zeros(0)
    if meas is not None and meas.n_rows and symbol in meas.factors:
        mask = np.ones(meas.n_rows, bool)
        for s, v in fixed.items():
            if s in meas.factors:
                mask &= np.isclose(meas.values(s), v, rtol=1e-9, atol=1e-12)
        px, py = meas.values(symbol)[mask], meas.y[mask]
    styles = term_styles(result)
    cats = {c: np.zeros(x.size) for c in CATEGORY_COLORS}
    for s, t in zip(styles, contrib.columns, strict=True):
        cats[s.category] = cats[s.category] + contrib[t].to_numpy()
    crossover = None
    if cats["communication"].any() and cats["compute"].any():
        over = cats["communication"] > cats["compute"]
        if not over[0] and over.any():
            crossover = float(x[int(np.argmax(over))])
    d = ScalingData(symbol, x, total, contrib, inside, (lo, hi), fixed, px, py, styles, others_out, crossover)
    band = scaling_interval(result, d)
    if band is not None:  # the total is the fit's predictor (the ensemble's, where it chose one)
        d.total, d.low, d.high = band
    return d


def _in_unit(d: ScalingData, unit: str) -> ScalingData:
    """``d`` with its times (curve, band, contributions, measured runs) in ``unit`` instead of seconds."""
    k = unit_seconds(unit)
    if k == 1.0:
        return d
    return dataclasses.replace(
        d,
        total=d.total / k,
        contributions=d.contributions / k,
        points_y=d.points_y / k,
        low=None if d.low is None else d.low / k,
        high=None if d.high is None else d.high / k,
    )


def rate_work(result, d: ScalingData) -> tuple[np.ndarray, np.ndarray] | None:
    """(work per run along the curve, work per run of the measured points) of a fit made from a
    throughput (``result.rate``): its number, or the factor whose column it is, at the curve's and the
    points' configurations. None when the time was not made from a throughput, or its work is a
    column the model has no factor for (then no rate can be told along the curve)."""
    rate = getattr(result, "rate", None) or {}
    work = rate.get("work")
    if not rate.get("column") or work is None:
        return None
    if isinstance(work, (int, float)) and not isinstance(work, bool):
        return np.full(d.x.size, float(work)), np.full(d.points_x.size, float(work))
    symbol = next((s for s, c in result.factors.items() if c == work), None)
    if symbol is None:
        return None
    if symbol == d.symbol:
        return np.asarray(d.x, float), np.asarray(d.points_x, float)
    return np.full(d.x.size, float(d.fixed[symbol])), np.full(d.points_x.size, float(d.fixed[symbol]))


def as_throughput(result, d: ScalingData) -> ScalingData | None:
    """``d`` with its times (seconds) turned back into the throughput the fit was made from: work /
    time for the curve and the measured runs, and the band's ends swapped (the shortest time is the
    highest rate). The term contributions are left in seconds: a rate does not add up by terms. None
    when :func:`rate_work` is."""
    works = rate_work(result, d)
    if works is None:
        return None
    w, wp = works
    unit = result.rate.get("unit", "s")  # a rate per minute is drawn per minute
    return dataclasses.replace(
        d,
        total=throughput_from_time(d.total, w, unit),
        points_y=throughput_from_time(d.points_y, wp, unit),
        low=None if d.high is None else throughput_from_time(d.high, w, unit),
        high=None if d.low is None else throughput_from_time(d.low, w, unit),
    )


def _extrap_zone(fig: go.Figure, d: ScalingData, log_x: bool = False, row=None, col=None, label: bool = True) -> None:
    """Shade the parts of the x range outside the measured range and label them.

    plotly.js 3+ places shapes in data coordinates on log axes, but annotations still in log10
    units, hence the conversion for the label only."""
    lo, hi = d.measured_range
    xmin, xmax = float(d.x.min()), float(d.x.max())
    kw = dict(row=row, col=col, exclude_empty_subplots=False) if row else {}
    for a, b, side in ((xmin, lo, "right"), (hi, xmax, "left")):
        if not b > a:
            continue
        fig.add_vrect(x0=a, x1=b, fillcolor=EXTRAP_FILL, line_width=0, layer="below", **kw)
        if label:
            edge = b if side == "right" else a
            if log_x and edge <= 0:
                continue
            fig.add_annotation(
                x=_annotation_x(edge, log_x),
                xanchor=side,
                y=1,
                yref="y domain",
                yanchor="top",
                showarrow=False,
                text="extrapolation →" if side == "left" else "← extrapolation",
                font=dict(size=13, color=EXTRAP_TEXT),
                xshift=6 if side == "left" else -6,
                **kw,
            )


#: The scaling x-axis's margin beyond the curve's ends, as a share of its span.
X_MARGIN = 0.025


def _axis_ticks(fig: go.Figure, d: ScalingData, log_x: bool, **where) -> None:
    """The scaling x-axis spans the curve and a margin of :data:`X_MARGIN` of it on each side (a label
    near its end must not stretch it; a measured run at either end is drawn whole), with readable ticks
    on a log scale (powers of two for 1, 2, 4, 8 workers)."""
    if d.x.size and not (log_x and d.x.min() <= 0):
        lo, hi = float(d.x.min()), float(d.x.max())
        if hi > lo:
            a, b = (math.log10(lo), math.log10(hi)) if log_x else (lo, hi)
            pad = X_MARGIN * (b - a)
            fig.update_xaxes(range=[a - pad, b + pad], **where)
    if log_x and d.x.size and d.x.min() > 0:
        measured: np.ndarray | list[float] | None = d.points_x if d.points_x.size >= 2 else None
        if measured is None and d.measured_range[0] > 0:
            lo, hi = d.measured_range
            measured = [lo, hi] if hi > lo else None
        set_log_ticks(fig, "x", float(d.x.min()), float(d.x.max()), measured, **where)


def _fixed_text(d: ScalingData) -> str:
    if not d.fixed:
        return ""
    parts = [
        f"{s} = {fmt_num(v)}" + (" (outside measured range)" if s in d.others_outside else "")
        for s, v in d.fixed.items()
    ]
    return "at " + ", ".join(parts)


def _annotation_x(x: float, log_x: bool) -> float:
    """Where an annotation at data value ``x`` goes: plotly.js places annotations on a log axis in
    log10 units (shapes in data units), so a raw value would stretch the axis to 10^x."""
    return math.log10(x) if log_x and x > 0 else x


def _axis_type(log: bool) -> str:
    return "log" if log else "linear"


def scaling_figure(
    result,
    symbol: str = "p",
    fixed: dict | None = None,
    meas: Measurements | None = None,
    x_max: float | None = None,
    log_x: bool = False,
    log_y: bool = False,
    title: str | None = None,
    data: ScalingData | None = None,
    height: int = 480,
    unit: str = TIME_UNIT,
    throughput: bool = False,
) -> go.Figure:
    """Predicted time along ``symbol``: solid within the measured range, dashed beyond it in a shaded
    extrapolation zone, with the measured runs at the same fixed values overlaid; times in ``unit``
    (s, min, h: the page's one unit, :func:`perfmodel.plots.style.view_unit`). ``throughput``: for a
    fit made from a throughput, the rate instead (:func:`as_throughput`; ``unit`` is then ignored)."""
    d = data or scaling_data(result, symbol, fixed, meas, x_max)
    rated = as_throughput(result, d) if throughput else None
    if throughput and rated is None:
        raise PerfModelError(
            "this fit was not made from a throughput with a known work per run: there is no rate to show"
        )
    column = result.factors.get(symbol)
    if rated is not None:
        d, unit = rated, text_html(result.rate["column"])
        y_title = f"predicted {unit}"
        title = title if title is not None else growth_title("Throughput", symbol)
    else:
        d = _in_unit(d, unit)
        y_title = time_title("predicted time", unit)
        title = title if title is not None else growth_title("Run time", symbol)
    x_title = factor_title(symbol, column)
    fig = go.Figure()
    _extrap_zone(fig, d, log_x)
    if d.low is not None:
        add_band(
            fig,
            d.x,
            d.low,
            d.high,
            below=False,
            hover=f"%{{x:.4g}}: %{{customdata[0]:.4g}} – %{{customdata[1]:.4g}} {unit}",
        )
    inside = d.inside
    # Solid inside, dashed outside; each dashed segment includes its boundary point so the line is continuous.
    fig.add_trace(
        go.Scatter(
            x=d.x[inside],
            y=d.total[inside],
            mode="lines",
            name="model (measured range)",
            line=dict(color=PREDICTED, width=3.5),
            hovertemplate=f"{symbol} = %{{x:.4g}}<br>predicted %{{y:.4g}} {unit}<extra></extra>",
        )
    )
    outside = ~inside
    if outside.any():
        idx = np.flatnonzero(outside)
        seg = np.zeros(d.x.size, bool)
        seg[idx] = True
        first_in, last_in = np.flatnonzero(inside)[[0, -1]] if inside.any() else (None, None)
        if first_in is not None:
            seg[first_in] = seg[first_in] or bool(idx.min() < first_in)
            seg[last_in] = seg[last_in] or bool(idx.max() > last_in)
        xs, ys = d.x.astype(float).copy(), d.total.astype(float).copy()
        ys[~seg] = np.nan
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name="model (extrapolated)",
                connectgaps=False,
                line=dict(color=PREDICTED, width=3, dash="dash"),
                hovertemplate=f"{symbol} = %{{x:.4g}}<br>predicted %{{y:.4g}} {unit} (extrapolated)<extra></extra>",
            )
        )
    if d.points_x.size:
        fig.add_trace(
            go.Scatter(
                x=d.points_x,
                y=d.points_y,
                mode="markers",
                name="measured runs",
                marker=dict(color=MEASURED, size=9, symbol="circle", line=dict(width=1, color="white")),
                hovertemplate=f"{symbol} = %{{x:.4g}}<br>measured %{{y:.4g}} {unit}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=x_title, type=_axis_type(log_x))
    fig.update_yaxes(title_text=y_title, type=_axis_type(log_y), rangemode="tozero" if not log_y else None)
    _axis_ticks(fig, d, log_x)
    if log_y:
        ys = np.concatenate([d.total[d.total > 0], d.points_y[d.points_y > 0]])
        if ys.size:
            set_log_ticks(fig, "y", ys.min(), ys.max())
    return style(fig, title, _fixed_text(d), height=height, legend="right")


def _overlap_trace(fig: go.Figure, result, d, unit: str = TIME_UNIT) -> None:
    """A dashed line: the total if the overlapped parts ran one after the other (the time the overlap saves)."""
    if "overlap(" not in result.expression:
        return
    env = {d.symbol: d.x, **{s: np.full(d.x.size, v) for s, v in d.fixed.items()}}
    saved = result.overlap_savings(env).to_numpy().sum(axis=1) / unit_seconds(unit)
    if not saved.size or not np.any(saved > 1e-9 * np.abs(d.total)):
        return
    fig.add_trace(
        go.Scatter(
            x=d.x,
            y=d.total + saved,
            mode="lines",
            name="without overlap (parts one after another)",
            line=dict(color=MEASURED, width=1.2, dash="dash"),
            customdata=saved,
            hovertemplate=f"{d.symbol} = %{{x:.4g}}<br>without overlap %{{y:.4g}} {unit}: the "
            f"overlap saves %{{customdata:.4g}} {unit}<extra></extra>",
        )
    )


def scaling_contributions_figure(
    result,
    symbol: str = "p",
    fixed: dict | None = None,
    meas: Measurements | None = None,
    x_max: float | None = None,
    log_x: bool = False,
    title: str | None = None,
    data: ScalingData | None = None,
    unit: str = TIME_UNIT,
    share: bool = False,
) -> go.Figure:
    """The predicted curve split into stacked term contributions (area), so the crossover from
    computation to communication is visible; times in ``unit``. ``share``: each term's share of the time
    (%) instead, for a curve that spans a decade or more (the Scaling page's log time axis): on a linear
    time axis its far end, where the time is small, would be a sliver."""
    d = _in_unit(data or scaling_data(result, symbol, fixed, meas, x_max), unit)
    column = result.factors.get(symbol)
    title = title if title is not None else "What the time is spent on"
    fig = go.Figure()
    if share:
        return _shares_along(fig, result, d, symbol, column, log_x, title, unit)
    _extrap_zone(fig, d, log_x)
    order = _stacked(d)
    for k in order:
        s = d.styles[k]
        vals = d.contributions[s.text].to_numpy()
        fig.add_trace(
            go.Scatter(
                x=d.x,
                y=vals,
                mode="lines",
                stackgroup="terms",
                name=s.legend,
                line=dict(width=0.8, color=s.color),
                fillcolor=s.color,
                hovertemplate=f"<b>{s.label}</b><br>{symbol} = %{{x:.4g}}<br>%{{y:.4g}} {unit}"
                + note_html(s)
                + "<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=d.x,
            y=d.total,
            mode="lines",
            name="total",
            line=dict(color=MEASURED, width=1.5),
            hovertemplate=f"{symbol} = %{{x:.4g}}<br>total %{{y:.4g}} {unit}<extra></extra>",
        )
    )
    _overlap_trace(fig, result, d, unit)
    if d.low is not None:
        for edge, ys in (("low", d.low), ("high", d.high)):
            fig.add_trace(
                go.Scatter(
                    x=d.x,
                    y=ys,
                    mode="lines",
                    name="total: 90 % interval",
                    legendgroup="band",
                    showlegend=edge == "low",
                    line=dict(color=MEASURED, width=1.2, dash="dot"),
                    hovertemplate=f"{symbol} = %{{x:.4g}}<br>total, {edge} end of the 90 % "
                    f"interval %{{y:.4g}} {unit}<extra></extra>",
                )
            )
    # The areas hide the shaded zone: fade the extrapolated part with a white veil and mark its edges.
    lo, hi = d.measured_range
    for a, b, edge in ((float(d.x.min()), lo, lo), (hi, float(d.x.max()), hi)):
        if b > a:
            fig.add_vrect(x0=a, x1=b, fillcolor=EXTRAP_VEIL, line_width=0, layer="above")
            fig.add_vline(x=edge, line=dict(color=EXTRAP_TEXT, dash="dot", width=1.2))
    _crossover_mark(fig, d, symbol, log_x)
    fig.update_xaxes(title_text=factor_title(symbol, column), type=_axis_type(log_x))
    fig.update_yaxes(title_text=time_title("predicted time", unit), rangemode="tozero")
    _axis_ticks(fig, d, log_x)
    return style(fig, title, _fixed_text(d), height=480, legend="right")


def _crossover_mark(fig: go.Figure, d: ScalingData, symbol: str, log_x: bool) -> None:
    """The line and label where communication overtakes compute, when it does on the curve."""
    if d.crossover is None:
        return
    fig.add_vline(x=d.crossover, line=dict(color=EXTRAP_TEXT, dash="dot", width=1.5))
    # annotations on a log axis are placed in log10 units (shapes in data units)
    lo_, hi_ = (_annotation_x(float(v), log_x) for v in (d.x.min(), d.x.max()))
    right_half = _annotation_x(d.crossover, log_x) > (lo_ + hi_) / 2  # the label runs towards the middle
    fig.add_annotation(
        x=_annotation_x(d.crossover, log_x),
        y=1,
        yref="paper",
        xref="x",
        showarrow=False,
        yanchor="bottom",
        xanchor="right" if right_half else "left",
        xshift=-4 if right_half else 4,
        text=f"communication > compute from {symbol} ≈ {fmt_num(d.crossover)}",
        font=dict(size=13, color=EXTRAP_TEXT),
    )


def _stacked(d: ScalingData) -> list[int]:
    """The terms the stacked areas draw, start-up first, then compute and communication: every term
    but those the fit dropped (a zero all along the curve would only add a legend entry)."""
    keep = [k for k, st in enumerate(d.styles) if np.any(d.contributions[st.text].to_numpy() != 0)]
    return sorted(keep or range(len(d.styles)), key=lambda k: CATEGORY_ORDER.index(d.styles[k].category))


def _shares_along(fig, result, d: ScalingData, symbol: str, column, log_x: bool, title: str, unit: str) -> go.Figure:
    """The stacked areas as shares of the predicted time (%), each term's time in its hover."""
    _extrap_zone(fig, d, log_x)
    total = np.where(d.total > 0, d.total, np.nan)
    order = _stacked(d)
    for k in order:
        s = d.styles[k]
        vals = d.contributions[s.text].to_numpy()
        fig.add_trace(
            go.Scatter(
                x=d.x,
                y=vals / total * 100,
                customdata=vals,
                mode="lines",
                stackgroup="terms",
                name=s.legend,
                line=dict(width=0.8, color=s.color),
                fillcolor=s.color,
                hovertemplate=f"<b>{s.label}</b><br>{symbol} = %{{x:.4g}}<br>%{{y:.3g}} % of the time, "
                f"%{{customdata:.4g}} {unit}" + note_html(s) + "<extra></extra>",
            )
        )
    lo, hi = d.measured_range
    for a, b, edge in ((float(d.x.min()), lo, lo), (hi, float(d.x.max()), hi)):
        if b > a:
            fig.add_vrect(x0=a, x1=b, fillcolor=EXTRAP_VEIL, line_width=0, layer="above")
            fig.add_vline(x=edge, line=dict(color=EXTRAP_TEXT, dash="dot", width=1.2))
    _crossover_mark(fig, d, symbol, log_x)
    fig.update_xaxes(title_text=factor_title(symbol, column), type=_axis_type(log_x))
    fig.update_yaxes(title_text="share of the predicted time (%)", range=[0, 100])
    _axis_ticks(fig, d, log_x)
    sub = _fixed_text(d)
    sub = (sub + " · " if sub else "") + "shares of the time, as the run-time chart above has a log axis"
    return style(fig, title, sub, height=480, legend="right")
