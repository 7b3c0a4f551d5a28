"""Figures that compare groups' models: ``(GroupFits) -> go.Figure``.

As in :mod:`perfmodel.plots`, each ``*_figure`` function builds on a ``*_data`` function returning
plain arrays that tests can check; nothing is displayed here and Streamlit is never imported.

* :func:`group_quality_table` and :func:`group_constants_table`: errors and the time split, and the
  constants, one row per group;
* :func:`group_split_figure`: each group's predicted time at one configuration, split into
  start-up, compute and communication (stacked bars);
* :func:`group_scaling_figure`: the groups' scaling curves along one factor overlaid (time or
  speedup), solid within each group's measured range and dashed beyond it, measured runs as dots.

Presentation: imports from the layers below and the other plots modules only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..errors import PerfModelError
from ..groups import GroupFits
from .bands import add_band, speedup_interval
from .scaling import scaling_data, typical_value
from .style import (
    CATEGORY_COLORS,
    CATEGORY_ORDER,
    GROUP_COLORS,
    IDEAL,
    TIME_UNIT,
    empty_figure,
    factor_title,
    fmt_num,
    set_log_ticks,
    style,
    term_styles,
    text_html,
    time_title,
    translucent,
    unit_seconds,
)


def _ok(fits: GroupFits, labels=None) -> list[tuple]:
    """(outcome, measurements) of the fitted groups, optionally only those whose label is in ``labels``."""
    out = []
    for o, meas in zip(fits.outcomes, fits.data, strict=True):
        if o.result is None or (labels is not None and o.label not in labels):
            continue
        out.append((o, meas))
    return out


def term_styles_by_text(fits: GroupFits) -> dict:
    """{term as written: its :class:`~perfmodel.plots.style.TermStyle`} over every fitted group."""
    out: dict = {}
    for o in fits.outcomes:
        if o.result is not None:
            for s in term_styles(o.result):
                out.setdefault(s.text, s)
    return out


def _cells(values: pd.Series, scale: float = 1.0) -> list[str]:
    """Numbers as text with 4 significant digits, '—' where the group's model has no such term."""
    return ["—" if pd.isna(v) else f"{float(v) * scale:.4g}" for v in values]


def common_notes(fits: GroupFits) -> list[str]:
    """The notes every fitted group has (of two or more), e.g. a factor constant in the whole table:
    said once, not in every row."""
    ok = [o for o in fits.outcomes if o.result is not None]
    if len(ok) < 2:
        return []
    return [n for n in ok[0].notes if all(n in o.notes for o in ok[1:])]


def fitted_first(fits: GroupFits, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per group, in ``fits`` order) with the fitted groups first and the skipped
    ones after, each in their own order: the table opens on the groups it has numbers for."""
    order = sorted(range(len(fits.outcomes)), key=lambda i: fits.outcomes[i].result is None)
    return frame.iloc[order].reset_index(drop=True)


def group_quality_table(fits: GroupFits) -> pd.DataFrame:
    """One row per group, fitted groups first (:func:`fitted_first`): status, configurations, errors,
    the time split by category (%) and the reason a group was skipped or the notes on its fit (without
    the :func:`common_notes`). A skipped group's numbers are missing (NaN), never the text "None"."""
    s = fits.summary
    cols = {
        "group": "group",
        "status": "status",
        "configurations": "configurations",
        "mape": "MAPE (%)",
        "cv_mape": "CV MAPE (%)",
        "startup_share": "start-up (%)",
        "compute_share": "compute (%)",
        "communication_share": "communication (%)",
    }
    out = s[[c for c in cols if c in s.columns]].rename(columns=cols)
    for c in ("start-up (%)", "compute (%)", "communication (%)"):
        if c in out.columns:
            out[c] = out[c] * 100
    common = set(common_notes(fits))
    out["notes"] = [o.reason or "; ".join(n for n in o.notes if n not in common) for o in fits.outcomes]
    return fitted_first(fits, out)


def constant_column(style, unit: str = TIME_UNIT) -> str:
    """The constants table's header of a term: ``c·I·b^e1 (min)``."""
    return f"c·{style.text.replace('*', '·')} ({unit})"


def group_constants_table(fits: GroupFits, unit: str = TIME_UNIT) -> pd.DataFrame:
    """One row per group, in the order of :func:`group_quality_table` (fitted first): each term's constant
    in ``unit`` per unit of the term (:func:`constant_column` headers) and the free exponents; '—' where a
    group's model lacks the term. The terms' shares of the time are in ``fits.summary`` (``share:<term>``)."""
    s = fits.summary
    out = s[["group"]].copy()
    styles = term_styles_by_text(fits)
    k = unit_seconds(unit)
    for c in s.columns:
        if c.startswith("c:"):
            style = styles.get(c[2:])
            out[constant_column(style, unit) if style else f"c·{c[2:]} ({unit})"] = _cells(s[c], 1 / k)
        elif c.startswith("param:"):
            out[c[6:]] = _cells(s[c])
    return fitted_first(fits, out)


# -- time split at one configuration ----------------------------------------------------------------
@dataclass
class SplitData:
    labels: list  # group labels (bars), in fits order
    at: list  # per group: {symbol: value} the prediction is made at
    parts: dict  # category -> seconds per group, shape (n_groups,)
    total: np.ndarray  # seconds per group
    outside: np.ndarray  # bool per group: the configuration lies outside its measured range
    winner: dict = field(default_factory=dict)  # category -> label of the group spending least on it


def group_split_data(fits: GroupFits, at: dict | None = None, labels=None) -> SplitData:
    """Each fitted group's predicted time at ``at`` ({symbol: value}; a symbol not given is held at
    the group's most frequent measured value), split into term categories."""
    at = dict(at or {})
    rows = _ok(fits, labels)
    names, where, outside = [], [], []
    parts: dict[str, list[float]] = {c: [] for c in CATEGORY_ORDER}
    for o, meas in rows:
        r = o.result
        env = {s: float(at[s]) if s in at else typical_value(r, s, meas) for s in r.factors}
        contrib = r.contributions({s: [v] for s, v in env.items()})
        cats = dict.fromkeys(CATEGORY_ORDER, 0.0)
        for st, term in zip(term_styles(r), contrib.columns, strict=True):
            cats[st.category] += float(contrib[term].iloc[0])
        for c in CATEGORY_ORDER:
            parts[c].append(cats[c])
        names.append(o.label)
        where.append(env)
        outside.append(bool(r.outside_range({s: [v] for s, v in env.items()})[0]))
    arrays = {c: np.array(v, float) for c, v in parts.items()}
    total = sum(arrays.values()) if rows else np.zeros(0)
    winner = {c: names[int(np.argmin(v))] for c, v in arrays.items() if v.size and np.any(v > 0)}
    return SplitData(names, where, arrays, np.asarray(total, float), np.array(outside, bool), winner)


def group_split_figure(
    fits: GroupFits,
    at: dict | None = None,
    labels=None,
    title: str | None = None,
    data: SplitData | None = None,
    unit: str = TIME_UNIT,
) -> go.Figure:
    """Stacked horizontal bars: start-up, compute and communication time per group, in ``unit``
    (the view's, :func:`perfmodel.plots.style.view_unit`)."""
    d = data or group_split_data(fits, at, labels)
    title = title if title is not None else "Where each group's time goes"
    if not d.labels:
        return empty_figure("no fitted group to show", time_title("predicted time", unit), "group", title)
    k = unit_seconds(unit)
    ticks = [text_html(lab) + (" *" if out else "") for lab, out in zip(d.labels, d.outside, strict=True)]
    fig = go.Figure()
    for c in CATEGORY_ORDER:
        v = d.parts[c]
        if not np.any(v != 0):
            continue
        share = np.divide(v, d.total, out=np.zeros_like(v), where=d.total != 0) * 100
        fig.add_trace(
            go.Bar(
                y=ticks,
                x=v / k,
                orientation="h",
                name=c,
                marker_color=CATEGORY_COLORS[c][0],
                customdata=share,
                hovertemplate=f"%{{y}}<br>{c}: %{{x:.4g}} {unit} (%{{customdata:.1f}} %)<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="", autorange="reversed", type="category")
    fig.update_xaxes(title_text=time_title("predicted time", unit), rangemode="tozero")
    common = {k: v for k, v in d.at[0].items() if all(w.get(k) == v for w in d.at)}
    sub = (
        ("at " + ", ".join(f"{k} = {fmt_num(v)}" for k, v in common.items()))
        if common
        else "each group at its most frequent measured configuration"
    )
    if d.outside.any():
        sub += "; * outside that group's measured range (extrapolated)"
    fig = style(fig, title, sub, height=max(320, 46 * len(d.labels) + 160), legend="top")
    fig.update_layout(legend_traceorder="normal")
    return fig


# -- scaling curves overlaid -------------------------------------------------------------------------
@dataclass
class GroupCurve:
    label: str
    x: np.ndarray
    y: np.ndarray  # predicted time (s) or speedup
    inside: np.ndarray  # bool: within this group's measured range
    points_x: np.ndarray  # measured runs at the curve's fixed values
    points_y: np.ndarray
    fixed: dict
    x0: float  # the group's smallest measured value of the symbol (speedup base)
    low: np.ndarray | None = None  # the 90 % interval of y (None: the group's fit has no intervals)
    high: np.ndarray | None = None
    measured: np.ndarray | None = None  # the group's distinct measured values of the symbol (all on x)

    def range_at(self, at: float) -> tuple[float, float | None, float | None]:
        """(value, low, high) of the curve at ``at`` (low and high None without intervals)."""
        v = float(np.interp(at, self.x, self.y))
        if self.low is None or self.high is None:
            return v, None, None
        return v, float(np.interp(at, self.x, self.low)), float(np.interp(at, self.x, self.high))


MODES = ("time", "speedup")


def group_scaling_data(
    fits: GroupFits, symbol: str = "p", mode: str = "time", extend: float = 2.0, labels=None
) -> list[GroupCurve]:
    """Each fitted group's curve along ``symbol`` from its smallest measured value to ``extend`` ×
    the largest measured value over all groups, through every value of ``symbol`` the group measured
    (so the curve's value there is the model's). ``mode="speedup"``: T(x0)/T(x) with x0 the group's
    smallest measured value (its measured runs likewise, against the model's T(x0))."""
    if mode not in MODES:
        raise PerfModelError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    rows = [(o, m) for o, m in _ok(fits, labels) if symbol in o.result.factors]
    if not rows:
        return []
    x_max = max(o.result.factor_ranges[symbol][1] for o, _ in rows) * float(extend)
    out = []
    for o, meas in rows:
        measured = _measured_values(meas, symbol)
        d = scaling_data(o.result, symbol, None, meas, x_max=x_max, include=measured)
        y, py, low, high = d.total, d.points_y, d.low, d.high
        x0 = float(d.measured_range[0])
        if mode == "speedup":
            t0 = float(o.result.predict({symbol: [x0], **{s: [v] for s, v in d.fixed.items()}})[0])
            y = t0 / d.total
            py = t0 / d.points_y if d.points_y.size else d.points_y
            band = speedup_interval(o.result, x0, d.x, d.fixed, symbol=symbol) if x0 > 0 else None
            low, high = band if band is not None else (None, None)
        out.append(
            GroupCurve(
                o.label,
                d.x,
                np.asarray(y, float),
                d.inside,
                d.points_x,
                np.asarray(py, float),
                d.fixed,
                x0,
                low,
                high,
                measured,
            )
        )
    return out


def _measured_values(meas, symbol: str) -> np.ndarray | None:
    """The distinct values of ``symbol`` in a group's measurements, as measured (None without them)."""
    if meas is None or not meas.n_rows or symbol not in meas.factors:
        return None
    v = np.asarray(meas.values(symbol), float)
    return np.unique(v[np.isfinite(v)])


def group_scaling_figure(
    fits: GroupFits,
    symbol: str = "p",
    mode: str = "time",
    extend: float = 2.0,
    labels=None,
    log_x: bool = True,
    log_y: bool | None = None,
    title: str | None = None,
    curves: list | None = None,
    unit: str = TIME_UNIT,
) -> go.Figure:
    """The groups' predicted time (in ``unit``, the view's) or speedup along ``symbol``, one colour
    per group."""
    curves = curves if curves is not None else group_scaling_data(fits, symbol, mode, extend, labels)
    what = "speedup" if mode == "speedup" else "predicted time"
    title = (
        title
        if title is not None
        else ("Which group scales better" if mode == "speedup" else "Run time of each group as it scales")
    )
    x_title = factor_title(symbol)
    y_title = "speedup over the smallest measured " + symbol if mode == "speedup" else time_title(what, unit)
    if not curves:
        return empty_figure(f"no fitted group has the factor {symbol}", x_title, y_title, title)
    if mode != "speedup":
        curves = [_in_unit(c, unit) for c in curves]
    suffix = "×" if mode == "speedup" else f" {unit}"
    log_y = log_x if log_y is None else log_y  # log-log: the ideal speedup is a straight line
    fig = go.Figure()
    for i, c in enumerate(curves):  # the bands first, beneath every line
        if c.low is not None:
            color = GROUP_COLORS[i % len(GROUP_COLORS)]
            label = text_html(c.label)  # user text: never markup in a chart
            add_band(
                fig,
                c.x,
                c.low,
                c.high,
                name=f"{label}: 90 % interval",
                legend=False,
                below=False,
                fill=translucent(color, 0.16),
                hover=f"<b>{label}</b><br>%{{x:.4g}}: %{{customdata[0]:.4g}} – %{{customdata[1]:.4g}}{suffix}",
            )
    for i, c in enumerate(curves):
        color = GROUP_COLORS[i % len(GROUP_COLORS)]
        solid = np.where(c.inside, c.y, np.nan)
        dashed = np.where(~c.inside | _edges(c.inside), c.y, np.nan)
        name = text_html(c.label)
        hover = f"<b>{name}</b><br>{symbol} = %{{x:.4g}}<br>{what} %{{y:.4g}}{suffix}"
        fig.add_trace(
            go.Scatter(
                x=c.x,
                y=solid,
                mode="lines",
                name=name,
                legendgroup=name,
                line=dict(color=color, width=3),
                hovertemplate=hover + "<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=c.x,
                y=dashed,
                mode="lines",
                name=name,
                legendgroup=name,
                showlegend=False,
                line=dict(color=color, width=2, dash="dash"),
                hovertemplate=hover + " (extrapolated)<extra></extra>",
            )
        )
        if c.points_x.size:
            fig.add_trace(
                go.Scatter(
                    x=c.points_x,
                    y=c.points_y,
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=False,
                    marker=dict(color=color, size=8, line=dict(width=1, color="white")),
                    hovertemplate=f"<b>{name}</b><br>measured: {symbol} = %{{x:.4g}}, "
                    f"%{{y:.4g}}{suffix}<extra></extra>",
                )
            )
    if mode == "speedup":
        x0 = min(c.x0 for c in curves)
        xs = np.unique(np.concatenate([c.x for c in curves]))
        if x0 > 0:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=xs / x0,
                    mode="lines",
                    name="ideal (linear)",
                    line=dict(color=IDEAL, width=1.5, dash="dot"),
                    hoverinfo="skip",
                )
            )
    fig.update_xaxes(title_text=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    xs = np.concatenate([c.x for c in curves])
    ys = np.concatenate([c.y for c in curves] + [c.points_y for c in curves])
    if log_x and xs.size and xs.min() > 0:
        set_log_ticks(fig, "x", float(xs.min()), float(xs.max()), np.concatenate([c.points_x for c in curves]))
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if log_y and ys.size:
        set_log_ticks(fig, "y", float(ys.min()), float(ys.max()))
    sub = "solid: within each group's measured range; dashed: extrapolated; dots: measured runs" + (
        "; shaded: each group's 90 % interval" if any(c.low is not None for c in curves) else ""
    )
    return style(fig, title, sub, height=520, legend="right")


def _in_unit(c: GroupCurve, unit: str) -> GroupCurve:
    """A time curve (its line, band and measured runs) in ``unit`` instead of seconds."""
    k = unit_seconds(unit)

    def scale(a):
        return None if a is None else np.asarray(a, float) / k

    return dataclasses.replace(c, y=c.y / k, points_y=c.points_y / k, low=scale(c.low), high=scale(c.high))


def _edges(inside: np.ndarray) -> np.ndarray:
    """The inside points next to outside ones, so the dashed part joins the solid line."""
    edge = np.zeros_like(inside)
    if inside.size > 1:
        change = inside[1:] != inside[:-1]
        edge[1:] |= change & inside[1:]
        edge[:-1] |= change & inside[:-1]
    return edge


def common_range_end(curves: list[GroupCurve]) -> float | None:
    """The largest value of the symbol measured in every curve's group, exactly as measured (None if
    no value was measured in all of them). Never a point of the plotting grid that no group ran:
    the headline quotes it as measured, and every curve passes through it (:func:`group_scaling_data`),
    so :meth:`GroupCurve.range_at` there is the model's value."""
    if not curves:
        return None
    sets = [np.unique(c.measured if c.measured is not None else c.points_x) for c in curves]
    common = sets[0]
    for other in sets[1:]:
        if not common.size:
            break
        common = common[[bool(np.isclose(other, v, rtol=1e-9, atol=0).any()) for v in common]]
    return float(common.max()) if common.size else None


def best_scaling(curves: list[GroupCurve], at: float, mode: str = "speedup") -> tuple[str, float] | None:
    """(label, value) of the group with the highest speedup (or lowest time) at ``at``."""
    vals = [(c.label, float(np.interp(at, c.x, c.y))) for c in curves if c.x.size]
    vals = [v for v in vals if math.isfinite(v[1])]
    if not vals:
        return None
    return max(vals, key=lambda e: e[1]) if mode == "speedup" else min(vals, key=lambda e: e[1])
