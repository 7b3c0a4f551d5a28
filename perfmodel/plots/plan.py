"""Plan views (a :func:`perfmodel.plan.plan` table): time against cost per configuration with the
efficient frontier, and time against p with the deadline and each configuration's chance of meeting it.

Both read the plan frame alone (its columns and ``frame.attrs``), so the app, the HTML report and a
notebook draw the same charts from the same table. One time unit per chart (s, min or h, by the
largest time shown).

Presentation: imports from the layers below and plots.style only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..plan import efficient, fmt_cost, fmt_duration
from .bands import BAND_FILL, BAND_LINE
from .style import (
    EXTRAP_FILL,
    EXTRAP_TEXT,
    IDEAL,
    MEASURED,
    NARROW_PLOT,
    PREDICTED,
    factor_title,
    fmt_num,
    set_log_ticks,
    style,
)

#: Seconds per unit of the plan charts' time axes.
UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
DEADLINE = "#dc2626"
BUDGET = "#059669"
MET = "#047857"  # a chance of meeting the deadline at or above the level
MISSED = "#b45309"  # below it


def plan_time_unit(frame: pd.DataFrame) -> str:
    """s, min or h: the unit that reads well for the largest time of the plan (and its deadline)."""
    values = list(frame["time_high"].to_numpy(float)) + list(frame["time_s"].to_numpy(float))
    a = max((v for v in values if math.isfinite(v)), default=0.0)
    return "s" if a < 120 else "min" if a < 7200 else "h"


def cost_title(frame: pd.DataFrame) -> str:
    return "cost (GPU-hours)" if frame.attrs.get("cost_unit") == "GPU-hours" else "cost (in the price's currency)"


def _grid_factors(frame: pd.DataFrame) -> list[str]:
    at = frame.attrs.get("at", {}) or {}
    return [s for s in frame.attrs.get("factors", []) if s not in at]


def _labels(frame: pd.DataFrame, sep: str = " = ") -> list[str]:
    factors = _grid_factors(frame)
    return [" · ".join(f"{s}{sep}{fmt_num(row[s])}" for s in factors) or "the run" for _, row in frame.iterrows()]


def _subtitle(frame: pd.DataFrame) -> str:
    a = frame.attrs
    parts = [", ".join(f"{s} = {fmt_num(v)}" for s, v in (a.get("at") or {}).items())]
    repeat = float(a.get("repeat", 1) or 1)
    parts.append(f"{fmt_num(repeat)} × the modelled unit" if repeat != 1 else "the modelled unit once")
    parts.append(f"bars: {float(a.get('level', 0.9)):.0%} intervals")
    return " · ".join(p for p in parts if p)


def _log(values) -> bool:
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(v.size and v.max() / v.min() >= 8)


def _pad_range(lo: float, hi: float, log: bool, left: float = 0.08, right: float = 0.08) -> list[float]:
    if log:
        a, b = math.log10(lo), math.log10(hi)
        w = max(b - a, 0.3)
        return [a - left * w, b + right * w]
    w = max(hi - lo, abs(hi) * 0.1, 1e-12)
    return [lo - left * w, hi + right * w]


def _fraction(v: np.ndarray, axis_range: list[float], log: bool) -> np.ndarray:
    """Where values lie along an axis of ``axis_range`` (log10 ends for a log axis): 0 at its start, 1 at its end."""
    w = np.log10(np.maximum(v, 1e-300)) if log else np.asarray(v, float)
    return (w - axis_range[0]) / (axis_range[1] - axis_range[0])


#: Label positions tried, in order, as (Plotly's textposition, x side, y side).
_SIDES = (("top right", 1, 1), ("bottom right", 1, -1), ("top left", -1, 1), ("bottom left", -1, -1))


def place_labels(
    fx: np.ndarray,
    fy: np.ndarray,
    texts: list[str],
    width: float = 380,
    height: float = 240,
    x_lines: tuple[float, ...] = (),
    y_lines: tuple[float, ...] = (),
) -> tuple[list[str], np.ndarray]:
    """(the labels kept, their textpositions) of points at axis fractions ``fx``, ``fy`` in a plot of about
    ``width`` × ``height`` px (the narrowest it is drawn): each label takes the first side of its point
    where its box (8 px a character, 16 px high) covers no point, no label placed before it (points in
    order of ``fx``) and none of the vertical and horizontal lines at axis fractions ``x_lines`` and
    ``y_lines`` (the deadline, the budget); where none is free, the label is left out ("")."""
    n = len(texts)
    px, py = np.asarray(fx, float) * width, np.asarray(fy, float) * height
    boxes = [(px[i] - 6, py[i] - 6, px[i] + 6, py[i] + 6) for i in range(n)]  # the markers
    big = 1e9
    boxes += [(x * width - 1, -big, x * width + 1, big) for x in x_lines]
    boxes += [(-big, y * height - 1, big, y * height + 1) for y in y_lines]
    kept, where = [""] * n, np.array(["top right"] * n, dtype=object)

    def free(box) -> bool:
        return all(box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1] for b in boxes)

    for i in np.argsort(px, kind="stable"):
        w, h = 8 * len(texts[i]) + 4, 16
        for name, sx, sy in _SIDES:
            x0 = px[i] + 6 if sx > 0 else px[i] - 6 - w
            y0 = py[i] + 3 if sy > 0 else py[i] - 3 - h
            box = (x0, y0, x0 + w, y0 + h)
            if free(box):
                boxes.append(box)
                kept[i], where[i] = texts[i], name
                break
    return kept, where


def plan_frontier_figure(frame: pd.DataFrame, title: str | None = None, height: int = 500) -> go.Figure:
    """Time against cost, one point per configuration labelled by its grid values, both intervals as
    error bars; the efficient frontier (no other configuration is faster and cheaper) joined by a line;
    the deadline (vertical) and the budget (horizontal) dashed when set."""
    unit = plan_time_unit(frame)
    div = UNITS[unit]
    t, lo, hi = (frame[c].to_numpy(float) / div for c in ("time_s", "time_low", "time_high"))
    c, clo, chi = (frame[k].to_numpy(float) for k in ("cost", "cost_low", "cost_high"))
    labels, short = _labels(frame), _labels(frame, "=")
    front = efficient(frame)
    log_x, log_y = _log(np.concatenate([lo, hi])), _log(np.concatenate([clo, chi]))
    x_lo, x_hi = float(np.nanmin(lo)), float(np.nanmax(hi))
    y_lo, y_hi = float(np.nanmin(clo)), float(np.nanmax(chi))
    deadline, budget = frame.attrs.get("deadline"), frame.attrs.get("budget")
    if deadline is not None:
        x_lo, x_hi = min(x_lo, float(deadline) / div), max(x_hi, float(deadline) / div)
    if budget is not None:
        y_lo, y_hi = min(y_lo, float(budget)), max(y_hi, float(budget))
    # room on the right for the labels of the fastest points, above for the dearest
    x_range, y_range = _pad_range(x_lo, x_hi, log_x, 0.06, 0.16), _pad_range(y_lo, y_hi, log_y, 0.1, 0.18)
    # each label beside its point where it writes over no other label or point, else left out (its hover
    # names it): crowded configurations at the fast end wrote p=4096 over p=2048
    # ... nor over the deadline's and the budget's lines (p=16 sat on the deadline)
    short, where = place_labels(
        _fraction(t, x_range, log_x),
        _fraction(c, y_range, log_y),
        short,
        width=NARROW_PLOT,
        height=240,
        x_lines=tuple(_fraction(np.array([float(deadline) / div]), x_range, log_x)) if deadline is not None else (),
        y_lines=tuple(_fraction(np.array([float(budget)]), y_range, log_y)) if budget is not None else (),
    )
    money = frame.attrs.get("cost_unit") != "GPU-hours"
    hover = [
        f"<b>{lab}</b><br>time {fmt_duration(ts, tl, th)}<br>cost {fmt_cost(frame, cc, cl, ch)}"
        for lab, ts, tl, th, cc, cl, ch in zip(
            labels, frame["time_s"], frame["time_low"], frame["time_high"], c, clo, chi, strict=True
        )
    ]
    fig = go.Figure()
    order = np.flatnonzero(front)
    order = order[np.argsort(t[order])]
    if order.size >= 2:
        fig.add_trace(
            go.Scatter(
                x=t[order],
                y=c[order],
                mode="lines",
                name="efficient frontier",
                line=dict(color=PREDICTED, width=2.5),
                hoverinfo="skip",
            )
        )
    for mask, name, color, symbol in (
        (front, "on the frontier", PREDICTED, "circle"),
        (~front, "another is faster and no dearer", IDEAL, "circle-open"),
    ):
        if not mask.any():
            continue
        idx = np.flatnonzero(mask)
        fig.add_trace(
            go.Scatter(
                x=t[idx],
                y=c[idx],
                mode="markers+text",
                name=name,
                text=[short[i] for i in idx],
                textposition=list(where[idx]),
                textfont=dict(size=13, color=MEASURED),
                marker=dict(color=color, size=11, symbol=symbol, line=dict(width=1.5, color=color)),
                error_x=dict(
                    type="data",
                    symmetric=False,
                    array=hi[idx] - t[idx],
                    arrayminus=t[idx] - lo[idx],
                    color=color,
                    thickness=1.3,
                    width=4,
                ),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=chi[idx] - c[idx],
                    arrayminus=c[idx] - clo[idx],
                    color=color,
                    thickness=1.3,
                    width=4,
                ),
                hovertext=[hover[i] for i in idx],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    if deadline is not None:
        d = float(deadline) / div
        fig.add_shape(
            type="line", xref="x", yref="paper", x0=d, x1=d, y0=0, y1=1, line=dict(color=DEADLINE, width=2, dash="dash")
        )
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=f"deadline {fmt_duration(deadline)}",
                line=dict(color=DEADLINE, width=2, dash="dash"),
            )
        )
    if budget is not None:
        b = float(budget)
        fig.add_shape(
            type="line", xref="paper", yref="y", x0=0, x1=1, y0=b, y1=b, line=dict(color=BUDGET, width=2, dash="dot")
        )
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=f"budget {fmt_cost(frame, budget)}",
                line=dict(color=BUDGET, width=2, dash="dot"),
            )
        )
    fig.update_xaxes(title_text=f"time ({unit})", type="log" if log_x else "linear", range=x_range)
    fig.update_yaxes(
        title_text=cost_title(frame),
        type="log" if log_y else "linear",
        range=y_range,
        tickformat=".2f" if money or y_hi < 100 else None,
    )
    if log_x:
        set_log_ticks(fig, "x", x_lo, x_hi)
    if log_y:
        set_log_ticks(fig, "y", y_lo, y_hi)
    title = title if title is not None else "Time against cost, per configuration"
    return _legend_below(style(fig, title, _subtitle(frame), height=height, legend="below"))


def plan_deadline_figure(
    frame: pd.DataFrame, measured_max: float | None = None, title: str | None = None, height: int = 500
) -> go.Figure:
    """Time against p (log x when p spans a factor 8 or more) with the interval band, the deadline as
    a horizontal line and, above each configuration, its probability of meeting the deadline.
    ``measured_max``: the largest measured p, to shade the extrapolation beyond it."""
    unit = plan_time_unit(frame)
    div = UNITS[unit]
    x_sym = "p" if "p" in frame.columns else (_grid_factors(frame) or list(frame.attrs.get("factors", [])))[0]
    f = frame.sort_values(x_sym, kind="stable")
    x = f[x_sym].to_numpy(float)
    t, lo, hi = (f[c].to_numpy(float) / div for c in ("time_s", "time_low", "time_high"))
    level = float(frame.attrs.get("level", 0.9))
    log_x = _log(x)
    log_y = _log(np.concatenate([lo, hi]))
    fig = go.Figure()
    if measured_max is not None and x.size and x.max() > measured_max:
        x0 = float(measured_max)
        fig.add_vrect(
            x0=x0,
            x1=float(x.max()) * (10.0 if log_x else 2.0),  # past the padded range
            fillcolor=EXTRAP_FILL,
            line_width=0,
            layer="below",
        )
        fig.add_annotation(
            x=math.log10(x0) if log_x else x0,
            y=0.0,
            xref="x",
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            showarrow=False,
            text=" beyond the measured range",
            font=dict(size=13, color=EXTRAP_TEXT),
        )
    if np.any(hi > lo):
        fig.add_trace(
            go.Scatter(x=x, y=hi, mode="lines", line=dict(width=0, color=BAND_LINE), showlegend=False, hoverinfo="skip")
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=lo,
                mode="lines",
                line=dict(width=0, color=BAND_LINE),
                fill="tonexty",
                fillcolor=BAND_FILL,
                name=f"{level:.0%} interval",
                hoverinfo="skip",
            )
        )
    hover = [
        f"{x_sym} = {fmt_num(xv)}<br>{fmt_duration(ts, tl, th)}"
        for xv, ts, tl, th in zip(x, f["time_s"], f["time_low"], f["time_high"], strict=True)
    ]
    fig.add_trace(
        go.Scatter(
            x=x,
            y=t,
            mode="lines+markers",
            name="predicted time",
            line=dict(color=PREDICTED, width=3),
            marker=dict(size=9, color=PREDICTED),
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    deadline = frame.attrs.get("deadline")
    y_lo, y_hi = float(np.nanmin(lo)), float(np.nanmax(hi))
    if deadline is not None:
        y_lo, y_hi = min(y_lo, float(deadline) / div), max(y_hi, float(deadline) / div)
    y_range = _pad_range(y_lo, y_hi, log_y, 0.08, 0.14) if log_y else [0, y_hi * 1.12]
    if deadline is not None:
        d = float(deadline) / div
        fig.add_shape(
            type="line", xref="paper", yref="y", x0=0, x1=1, y0=d, y1=d, line=dict(color=DEADLINE, width=2, dash="dash")
        )
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=f"deadline {fmt_duration(deadline)}",
                line=dict(color=DEADLINE, width=2, dash="dash"),
            )
        )
        prob = f["p_deadline"].to_numpy(float)
        if np.isfinite(prob).any():
            text = [f"{v:.0%}" if math.isfinite(v) else "" for v in prob]
            colors = [MET if v >= level else MISSED for v in prob]
            # above the band, or above the deadline's line where it would run through the label (it did at 100 %)
            y_text = _deadline_label_sides(hi, d, y_range, log_y)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y_text,
                    mode="text",
                    text=text,
                    textposition="top right",
                    textfont=dict(size=13, color=colors),
                    showlegend=False,
                    cliponaxis=False,
                    name="chance of meeting the deadline",
                    hoverinfo="skip",
                )
            )
    fig.update_xaxes(
        title_text=factor_title(x_sym),
        type="log" if log_x else "linear",
        range=_pad_range(float(x.min()), float(x.max()), log_x, 0.05, 0.12),
    )  # room for the last %
    if log_x:
        set_log_ticks(fig, "x", float(x.min()), float(x.max()), x)
    fig.update_yaxes(title_text=f"time ({unit})", type="log" if log_y else "linear", range=y_range)
    if log_y:
        set_log_ticks(fig, "y", y_lo, y_hi)
    title = title if title is not None else "Time against workers, with the deadline"
    subtitle = _subtitle(frame).replace("bars", "band")
    if deadline is not None and np.isfinite(f["p_deadline"].to_numpy(float)).any():
        subtitle += f"<br>% above each point: its chance of meeting the deadline (green: ≥ {level:.0%})"
    return _legend_below(style(fig, title, subtitle, height=height, legend="below"), lines=subtitle.count("<br>") + 1)


def _deadline_label_sides(
    hi: np.ndarray, deadline: float, y_range: list[float], log: bool, height: float = 240
) -> np.ndarray:
    """The y of each point's chance on the deadline chart, drawn "top right" of it: the band's high end,
    or, where the deadline's line would run through that 16 px label (in a plot about ``height`` px
    high), the line itself, so the label sits just above it."""
    label = 19 / height  # the label's height with its 3 px offset, as an axis fraction
    f_hi = _fraction(hi, y_range, log)
    f_d = float(_fraction(np.array([deadline]), y_range, log)[0])
    return np.where((f_hi <= f_d) & (f_d <= f_hi + label), deadline, hi)


def _legend_below(fig: go.Figure, lines: int = 1) -> go.Figure:
    """A top margin for the title and ``lines`` lines of subtitle (the legend is below the x-axis title:
    :func:`perfmodel.plots.style.style` with ``legend="below"``; in a half-width chart a legend above the
    plot wraps into the title)."""
    fig.update_layout(margin=dict(t=80 + 20 * lines))
    return fig
