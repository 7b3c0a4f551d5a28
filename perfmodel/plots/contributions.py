"""Where the time goes: each term's contribution per configuration, and its share of the total.

Presentation: imports from the layers below and plots.style only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..data.measurements import Measurements
from .style import (
    MEASURED,
    config_label,
    empty_figure,
    factor_title,
    fmt_num,
    note_html,
    style,
    term_styles,
    time_title,
)


# -- results: per-term contributions -------------------------------------------------------------
@dataclass
class ContributionData:
    labels: list  # configuration label per bar ("p = 1, b = 16")
    factors: pd.DataFrame  # factor values per configuration (symbols as columns)
    contributions: pd.DataFrame  # (n_cfg, K), columns = term texts
    measured_mean: np.ndarray
    measured_min: np.ndarray
    measured_max: np.ndarray
    styles: list  # TermStyle per term
    ticks: list = field(default_factory=list)  # compact tick labels ("1 · 16")
    varying: list = field(default_factory=list)  # the symbols that vary between configurations
    sorted_by_time: bool = False  # many configurations are ordered by predicted time


def contribution_data(result, meas: Measurements, sort_above: int = 40) -> ContributionData:
    """Contributions per configuration (repeats averaged), in factor order; ordered by predicted
    time instead when there are more than ``sort_above`` configurations."""
    styles = term_styles(result)
    if meas is None or meas.n_rows == 0:
        empty = pd.DataFrame(columns=result.terms, dtype=float)
        z = np.zeros(0)
        return ContributionData([], pd.DataFrame(columns=list(result.factors)), empty, z, z, z, styles)
    cfg = meas.configurations()
    env = meas.env()
    y = meas.y
    n_cfg = int(cfg.max()) + 1
    first = np.array([np.flatnonzero(cfg == g)[0] for g in range(n_cfg)])
    factors = pd.DataFrame({s: env[s][first] for s in meas.factors})
    contrib = result.contributions(factors.to_dict("list"))
    mean = np.array([y[cfg == g].mean() for g in range(n_cfg)])
    mn = np.array([y[cfg == g].min() for g in range(n_cfg)])
    mx = np.array([y[cfg == g].max() for g in range(n_cfg)])
    varying = [s for s in meas.factors if factors[s].nunique() > 1] or list(meas.factors)
    order = np.arange(n_cfg)
    many = n_cfg > sort_above
    if many:
        order = np.argsort(contrib.to_numpy().sum(axis=1), kind="stable")
        factors, contrib = factors.iloc[order].reset_index(drop=True), contrib.iloc[order].reset_index(drop=True)
        mean, mn, mx = mean[order], mn[order], mx[order]
    labels = [config_label({s: factors[s].iloc[i] for s in varying}, ", ") for i in range(n_cfg)]
    ticks = [" · ".join(fmt_num(factors[s].iloc[i]) for s in varying) for i in range(n_cfg)]
    return ContributionData(labels, factors, contrib, mean, mn, mx, styles, ticks, varying, many)


def contributions_figure(
    result, meas: Measurements, title: str | None = "Where the time goes, per configuration", max_labels: int = 40
) -> go.Figure:
    """Stacked bars (``barmode="relative"``) of each term's contribution per configuration, with
    the measured mean (and min–max of the repeats) as markers."""
    d = contribution_data(result, meas)
    y_title = time_title("time per run")
    if not d.labels:
        return empty_figure("No measurements to show", "configuration", y_title, title)
    fig = go.Figure()
    x = list(range(len(d.labels)))
    total = d.contributions.to_numpy().sum(axis=1)
    for st_, term in zip(d.styles, d.contributions.columns, strict=True):
        vals = d.contributions[term].to_numpy()
        share = np.divide(vals, total, out=np.full_like(vals, np.nan), where=total != 0) * 100
        fig.add_trace(
            go.Bar(
                x=x,
                y=vals,
                name=st_.legend,
                marker=dict(color=st_.color, line=dict(width=0)),
                customdata=np.stack([share, total], axis=1),
                hovertext=d.labels,
                hovertemplate=f"<b>{st_.label}</b> ({st_.formula})<br>%{{hovertext}}<br>"
                "%{y:.4g} s = %{customdata[0]:.1f} % of %{customdata[1]:.4g} s" + note_html(st_) + "<extra></extra>",
            )
        )
    err = dict(
        type="data",
        symmetric=False,
        array=d.measured_max - d.measured_mean,
        arrayminus=d.measured_mean - d.measured_min,
        color=MEASURED,
        thickness=1.2,
        width=3,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=d.measured_mean,
            mode="markers",
            name="measured (mean, min–max)",
            marker=dict(symbol="diamond", size=8, color=MEASURED),
            error_y=err,
            hovertext=d.labels,
            hovertemplate="%{hovertext}<br>measured mean %{y:.4g} s<extra></extra>",
        )
    )
    show = len(x) <= max_labels
    fig.update_layout(barmode="relative", bargap=0.15)
    if d.sorted_by_time:
        x_title = f"{len(x)} configurations, ordered by predicted time (hover for values)"
    elif len(d.varying) == 1:
        x_title = factor_title(d.varying[0], result.factors.get(d.varying[0]))
    else:
        x_title = f"configuration ({' · '.join(d.varying)})" + ("" if show else " (hover for values)")
    angle = -45 if show and len(x) * max(len(t) for t in d.ticks) > 90 else 0
    fig.update_xaxes(
        title_text=x_title,
        tickmode="array",
        tickvals=x if show else [],
        ticktext=d.ticks if show else [],
        tickangle=angle,
        showgrid=False,
    )
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    if len(x) > max_labels:
        for tr in fig.data:
            if tr.type == "scatter":
                tr.marker.size = 5
    return style(fig, title, height=520 if angle else 480, legend="right")


@dataclass
class ShareData:
    labels: list
    formulas: list
    shares: np.ndarray  # percent of total predicted time over the data
    colors: list
    categories: list


def share_data(result) -> ShareData:
    styles = term_styles(result)
    shares = np.array([float(result.shares.get(s.text, float("nan"))) * 100 for s in styles])
    order = np.argsort(-np.nan_to_num(shares, nan=-1e9), kind="stable")
    return ShareData(
        [styles[i].label for i in order],
        [styles[i].formula for i in order],
        shares[order],
        [styles[i].color for i in order],
        [styles[i].category for i in order],
    )


def shares_figure(result, title: str | None = "Share of total predicted time") -> go.Figure:
    """Horizontal bars: each term's share of the total predicted time over the measured runs."""
    d = share_data(result)
    x_title = "share of total predicted time (%)"
    if not d.labels:
        return empty_figure("The model has no terms", x_title, "", title)
    names = [
        f"{lab}  " if lab == f or f == "1" else f"{lab}<br><span style='font-size:12px;color:#6b7280'>{f}</span>  "
        for lab, f in zip(d.labels, d.formulas, strict=True)
    ]
    fig = go.Figure(
        go.Bar(
            x=d.shares,
            y=names,
            orientation="h",
            marker=dict(color=d.colors),
            text=[f"{v:.1f} %" for v in d.shares],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:.2f} %<extra></extra>",
            showlegend=False,
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False, ticks="")
    hi = float(np.nanmax(np.abs(d.shares))) if np.isfinite(d.shares).any() else 100.0
    lo = float(min(0.0, np.nanmin(d.shares))) if np.isfinite(d.shares).any() else 0.0
    fig.update_xaxes(title_text=x_title, range=[lo * 1.15, max(hi * 1.18, 5)])
    return style(fig, title, height=max(260, 70 * len(d.labels) + 120), legend="none")
