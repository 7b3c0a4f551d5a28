"""Plotly figures of the automatic search and of the comparison (pure; no Streamlit).

Like :mod:`perfmodel.plots`, each ``*_figure`` first computes plain data with a matching
``*_data`` function (checked by the tests), then builds a ``go.Figure``; styling comes from
:func:`perfmodel.plots.style` so every chart of the project looks alike.

* :func:`lambda_path_figure`: each term's share of the mean time and the cross-validated error
  against λ, with the λ that the validation picks marked.
* :func:`comparison_parity_figure`: predicted against measured time of every compared model
  in one chart (in-sample, cross-validated or held-out predictions).
* :func:`selection_figure`: score against size of the candidates the automatic search refined.

Presentation: imports from plots.style and plots.parity only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..compare import TIE_RTOL
from .parity import add_parity_guides, square_log_axes
from .style import (
    DISCRETE,
    IDEAL,
    MEASURED,
    PREDICTED,
    empty_figure,
    fmt_num,
    set_log_ticks,
    style,
    term_name,
    term_styles,
    time_title,
)

CHOSEN = "#dc2626"
MINIMUM = "#6b7280"
PARITY_KINDS = ("in-sample", "cross-validated", "held-out")


# -- λ path ---------------------------------------------------------------------------------
@dataclass
class LambdaPathData:
    x: np.ndarray  # plotting position of each λ (λ = 0 is drawn one decade left of the smallest λ > 0)
    lams: np.ndarray  # the λ values
    tickvals: list
    ticktext: list
    terms: list
    shares: np.ndarray  # (L, K) share of the mean time per term
    cv_mape: np.ndarray
    cv_se: np.ndarray
    fit_mape: np.ndarray
    chosen_x: float
    min_x: float
    chosen: float
    lam_min: float
    rule: str


def _lam_positions(lams: np.ndarray) -> tuple[np.ndarray, list, list]:
    pos = lams[lams > 0]
    zero_at = (pos.min() / 10) if pos.size else 1e-6
    x = np.where(lams > 0, lams, zero_at)
    lo, hi = math.floor(math.log10(x.min())), math.ceil(math.log10(x.max()))
    tickvals, ticktext = [], []
    if np.any(lams == 0):
        tickvals.append(zero_at)
        ticktext.append("0")
    for e in range(lo, hi + 1):
        v = 10.0**e
        if v > zero_at * 1.5 or not np.any(lams == 0):
            if x.min() / 1.01 <= v <= x.max() * 1.01:
                tickvals.append(v)
                ticktext.append(f"1e{e}" if e < -2 or e > 2 else f"{v:g}")
    return x, tickvals, ticktext


def lambda_path_data(path) -> LambdaPathData:
    lams = np.asarray(path.lams, float)
    x, tv, tt = _lam_positions(lams) if lams.size else (lams, [], [])
    where = {float(v): float(p) for v, p in zip(lams, x, strict=True)}
    return LambdaPathData(
        x,
        lams,
        tv,
        tt,
        list(path.terms),
        np.asarray(path.shares, float),
        np.asarray(path.cv_mape, float),
        np.asarray(path.cv_se, float),
        np.asarray(path.fit_mape, float),
        where.get(float(path.chosen), float("nan")),
        where.get(float(path.lam_min), float("nan")),
        float(path.chosen),
        float(path.lam_min),
        path.rule,
    )


def term_names(result) -> dict[str, str]:
    """{term as written: its legend name} (:func:`perfmodel.plots.style.term_name`)."""
    return {s.text: term_name(s, grey_html=True) for s in term_styles(result)}


def lambda_path_figure(
    path, title: str | None = "Regularisation path: choosing λ by validation", names: dict | None = None
) -> go.Figure:
    """Top: each term's share of the mean time against λ; bottom: k-fold CV MAPE ± one
    standard error and in-sample MAPE. The chosen λ is marked (red), and the λ with the lowest
    CV error (grey) when they differ. λ = 0 is drawn one decade left of the smallest λ > 0.
    ``names``: {term: legend name} (:func:`term_names` of a fit of the same terms)."""
    d = lambda_path_data(path)
    names = names or {}
    if d.lams.size == 0:
        return empty_figure("No λ values to show", "λ", "MAPE (%)", title)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.55, 0.45])
    for j, term in enumerate(d.terms):
        fig.add_trace(
            go.Scatter(
                x=d.x,
                y=d.shares[:, j] * 100,
                mode="lines+markers",
                name=names.get(term, term.replace("*", "·")),
                line=dict(color=DISCRETE[j % len(DISCRETE)], width=2),
                marker=dict(size=6),
                customdata=d.lams,
                hovertemplate=f"{term}<br>λ %{{customdata:.3g}}<br>share %{{y:.2f}} %<extra></extra>",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=d.x,
            y=d.cv_mape,
            mode="lines+markers",
            name="CV MAPE ± 1 s.e.",
            line=dict(color=MEASURED, width=2),
            error_y=dict(type="data", array=d.cv_se, visible=True, color=MEASURED, thickness=1),
            customdata=d.lams,
            hovertemplate="λ %{customdata:.3g}<br>CV MAPE %{y:.3g} %<extra></extra>",
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=d.x,
            y=d.fit_mape,
            mode="lines",
            name="in-sample MAPE",
            line=dict(color=IDEAL, dash="dot", width=1.5),
            customdata=d.lams,
            hovertemplate="λ %{customdata:.3g}<br>in-sample MAPE %{y:.3g} %<extra></extra>",
        ),
        row=2,
        col=1,
    )
    rule = "one-standard-error rule" if d.rule == "1se" else "lowest CV error"
    if np.isfinite(d.min_x) and d.min_x != d.chosen_x:
        fig.add_vline(x=d.min_x, line=dict(color=MINIMUM, dash="dot", width=1.5))
    if np.isfinite(d.chosen_x):
        fig.add_vline(x=d.chosen_x, line=dict(color=CHOSEN, dash="dash", width=2))
        fig.add_annotation(
            x=math.log10(d.chosen_x),
            y=1.0,
            xref="x",
            yref="paper",
            showarrow=False,
            text=f"chosen λ = {fmt_num(d.chosen)}",
            font=dict(color=CHOSEN, size=14),
            xanchor="left",
            yanchor="bottom",
        )
    for r in (1, 2):
        fig.update_xaxes(type="log", tickvals=d.tickvals, ticktext=d.ticktext, row=r, col=1)
    fig.update_xaxes(title_text="λ (regularisation weight)", row=2, col=1)
    fig.update_yaxes(title_text="share of mean time (%)", row=1, col=1)
    fig.update_yaxes(title_text="MAPE (%)", row=2, col=1)
    sub = f"λ picked by the {rule} on {getattr(path, 'k', '')}-fold cross-validation"
    return style(fig, title, sub, height=620, legend="right")


# -- λ strip: the error of the λ values fitted so far ---------------------------------------
@dataclass
class LambdaStripData:
    x: np.ndarray  # plotting position of each λ (λ = 0 one decade left of the smallest λ > 0)
    lams: np.ndarray
    fit_mape: np.ndarray  # in-sample MAPE (%) per λ
    cv_mape: np.ndarray  # cross-validated MAPE (%) per λ (NaN where not computed)
    tickvals: list
    ticktext: list
    current_x: float
    current: float


def lambda_strip_data(lams, fit_mape, cv_mape, current: float) -> LambdaStripData:
    """The points of :func:`lambda_strip_figure`, sorted by λ; the current λ is placed among them."""
    lams = np.asarray(lams, float)
    order = np.argsort(lams, kind="stable")
    lams, fit, cv = lams[order], np.asarray(fit_mape, float)[order], np.asarray(cv_mape, float)[order]
    allv = np.unique(np.concatenate([lams, [float(current)]]))
    pos, tv, tt = _lam_positions(allv)
    where = {float(v): float(p) for v, p in zip(allv, pos, strict=True)}
    return LambdaStripData(
        np.array([where[float(v)] for v in lams]), lams, fit, cv, tv, tt, where[float(current)], float(current)
    )


def lambda_strip_figure(lams, fit_mape, cv_mape, current: float, height: int = 190) -> go.Figure:
    """A small strip under the λ slider: the error of each λ fitted so far (in-sample and, where
    computed, cross-validated MAPE) against λ on a log axis, the current λ marked."""
    d = lambda_strip_data(lams, fit_mape, cv_mape, current)
    fig = go.Figure()
    if np.isfinite(d.cv_mape).any():
        fig.add_trace(
            go.Scatter(
                x=d.x,
                y=d.cv_mape,
                mode="lines+markers",
                name="cross-validated",
                line=dict(color=MEASURED, width=2),
                marker=dict(size=7),
                customdata=d.lams,
                connectgaps=True,
                hovertemplate="λ %{customdata:.3g}<br>CV MAPE %{y:.3g} %<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=d.x,
            y=d.fit_mape,
            mode="lines+markers",
            name="in-sample",
            line=dict(color=IDEAL, dash="dot", width=1.5),
            marker=dict(size=6),
            customdata=d.lams,
            hovertemplate="λ %{customdata:.3g}<br>in-sample MAPE %{y:.3g} %<extra></extra>",
        )
    )
    fig.add_vline(x=d.current_x, line=dict(color=CHOSEN, dash="dash", width=2))
    fig.update_xaxes(type="log", tickvals=d.tickvals, ticktext=d.ticktext, title_text="λ")
    fig.update_yaxes(title_text="MAPE (%)", rangemode="tozero", nticks=4)
    fig = style(fig, None, height=height, legend="top")
    fig.update_layout(margin=dict(l=60, r=10, t=30, b=45), font=dict(size=13))
    return fig


# -- comparison parity chart ----------------------------------------------------------------
@dataclass
class ComparisonParityData:
    kind: str
    models: list  # model names in table order that have predictions of this kind
    measured: dict  # name -> array
    predicted: dict  # name -> array
    rows: dict  # name -> row numbers
    mape: dict  # name -> MAPE of these predictions (%)
    winner: str | None  # the best model's name; tied models joined by " = "
    lo: float
    hi: float


def comparison_parity_data(comparison, kind: str = "cross-validated") -> ComparisonParityData:
    if kind not in PARITY_KINDS:
        raise ValueError(f"kind must be one of {', '.join(PARITY_KINDS)}, got {kind!r}")
    p = comparison.predictions
    p = p[p["kind"] == kind] if len(p) else p
    models = [m for m in comparison.table["model"] if len(p) and (p["model"] == m).any()]
    measured, predicted, rows, mape = {}, {}, {}, {}
    for m in models:
        sub = p[p["model"] == m]
        y, yp = sub["measured"].to_numpy(float), sub["predicted"].to_numpy(float)
        measured[m], predicted[m], rows[m] = y, yp, sub["row"].to_numpy()
        mape[m] = float(np.mean(np.abs(yp - y) / y) * 100) if y.size else float("nan")
    finite = {m: v for m, v in mape.items() if np.isfinite(v)}
    low = min(finite.values()) if finite else math.nan  # the lowest, and every MAPE tied with it (compare's rule)
    tied = [m for m, v in finite.items() if v <= low * (1 + TIE_RTOL) + 1e-12]
    winner = " = ".join(tied) if tied else None
    vals = [v[v > 0] for v in list(measured.values()) + list(predicted.values())]
    allv = np.concatenate(vals) if vals else np.zeros(0)
    lo, hi = (float(allv.min()) / 1.25, float(allv.max()) * 1.25) if allv.size else (0.1, 10.0)
    return ComparisonParityData(kind, models, measured, predicted, rows, mape, winner, lo, hi)


def comparison_parity_figure(
    comparison, kind: str = "cross-validated", title: str | None = "Predicted against measured, all models"
) -> go.Figure:
    """Log–log predicted vs measured time of every compared model, with y = x and a ±10 % band.

    ``kind``: ``"in-sample"``, ``"cross-validated"`` (default; each row predicted by a fit that
    did not see it) or ``"held-out"`` (the largest-scale rows, predicted from the smaller ones).
    """
    d = comparison_parity_data(comparison, kind)
    x_title, y_title = time_title("measured time"), time_title(f"predicted time ({kind})")
    if not d.models:
        return empty_figure(f"No {kind} predictions to show", x_title, y_title, title)
    fig = go.Figure()
    add_parity_guides(fig, d.lo, d.hi)
    symbols = ["circle", "diamond", "square", "triangle-up", "cross", "x", "star", "pentagon"]
    for i, m in enumerate(d.models):
        err = (d.predicted[m] - d.measured[m]) / d.measured[m] * 100
        tied = d.winner.split(" = ") if d.winner else []
        best = m in tied
        fig.add_trace(
            go.Scatter(
                x=d.measured[m],
                y=d.predicted[m],
                mode="markers",
                name=f"{m}: {d.mape[m]:.3g} %" + ((" (tie for best)" if len(tied) > 1 else " (best)") if best else ""),
                marker=dict(
                    symbol=symbols[i % len(symbols)],
                    size=11 if best else 9,
                    opacity=0.9 if best else 0.7,
                    color=PREDICTED if best else DISCRETE[(i + 1) % len(DISCRETE)],
                    line=dict(width=0.8, color="white"),
                ),
                text=[f"{m}<br>row {r}" for r in d.rows[m]],
                customdata=err,
                hovertemplate="%{text}<br>measured %{x:.4g} s<br>predicted %{y:.4g} s<br>error %{customdata:+.1f} %"
                "<extra></extra>",
            )
        )
    rng = [math.log10(d.lo), math.log10(d.hi)]
    square_log_axes(fig, rng, x_title, y_title)
    set_log_ticks(fig, "x", d.lo, d.hi)
    set_log_ticks(fig, "y", d.lo, d.hi)
    sub = f"MAPE of the {kind} predictions in the legend" + (f"; best: {d.winner}" if d.winner else "")
    return style(fig, title, sub, height=560, legend="right")


# -- the automatic search's candidates ------------------------------------------------------
@dataclass
class SelectionData:
    expressions: list
    n_params: np.ndarray
    score: np.ndarray
    se: np.ndarray
    chosen: np.ndarray  # bool: returned as a candidate
    threshold: float  # best score + noise


def selection_data(selection) -> SelectionData:
    ev = list(selection.evaluated)
    chosen = {c.spec for c in selection.candidates}
    best = min((c.score for c in ev), default=float("nan"))
    return SelectionData(
        [c.spec for c in ev],
        np.array([c.n_params for c in ev], int),
        np.array([c.score for c in ev], float),
        np.array([c.se for c in ev], float),
        np.array([c.spec in chosen for c in ev], bool),
        best + selection.noise,
    )


def selection_figure(selection, title: str | None = "Candidates: validation score against size") -> go.Figure:
    """Each refined candidate's score (½ CV MAPE + ½ hold-out MAPE) ± one standard error against
    its number of fitted parameters; the returned ones in red, the noise threshold dashed."""
    if getattr(selection, "rule", ""):
        return _laws_figure(selection, title)
    d = selection_data(selection)
    if d.score.size == 0:
        return empty_figure("No candidates", "fitted parameters", "score (MAPE %)", title)
    fig = go.Figure()
    for mask, name, color in ((~d.chosen, "other candidates", IDEAL), (d.chosen, "within noise (returned)", CHOSEN)):
        if mask.any():
            fig.add_trace(
                go.Scatter(
                    x=d.n_params[mask],
                    y=d.score[mask],
                    mode="markers",
                    name=name,
                    marker=dict(size=11, color=color, line=dict(width=0.8, color="white")),
                    error_y=dict(type="data", array=d.se[mask], visible=True, color=color, thickness=1),
                    text=[e for e, m in zip(d.expressions, mask, strict=True) if m],
                    hovertemplate="%{text}<br>%{x} parameters<br>score %{y:.3g} %<extra></extra>",
                )
            )
    if np.isfinite(d.threshold):
        fig.add_hline(
            y=d.threshold,
            line=dict(color=CHOSEN, dash="dash", width=1.5),
            annotation_text="best + noise",
            annotation_position="top left",
        )
    fig.update_xaxes(title_text="fitted parameters", dtick=1)
    fig.update_yaxes(title_text="score: ½ CV MAPE + ½ hold-out MAPE (%)")
    return style(fig, title, "smallest first among those within noise of the best", height=440)


def _laws_figure(selection, title: str | None) -> go.Figure:
    """The scaling laws of a rule's choice: each law's median error over the corpus's extrapolations of
    series in this series' cell (what the rule chose by; the chosen one in red) and, where it was held
    out, its error on this series' largest measured scale."""
    cands = list(selection.candidates)
    names = [c.origin[5:] if c.origin.startswith("law: ") else c.origin for c in cands]
    corpus = np.array([c.score for c in cands], float)
    own = np.array([c.holdout.get("mape", math.nan) for c in cands], float)
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=names,
            y=corpus,
            name="the corpus's median error for such series",
            marker=dict(color=[CHOSEN] + [IDEAL] * (len(cands) - 1)),
            text=[c.spec for c in cands],
            hovertemplate="%{x}: %{text}<br>corpus median error %{y:.3g} %<extra></extra>",
        )
    )
    if np.isfinite(own).any():
        fig.add_trace(
            go.Scatter(
                x=names,
                y=own,
                mode="markers",
                name="its error on this series' largest scale, fitted on the others",
                marker=dict(size=11, color=PREDICTED, symbol="diamond", line=dict(width=0.8, color="white")),
                hovertemplate="%{x}: held-out MAPE %{y:.3g} %<extra></extra>",
            )
        )
    fig.update_xaxes(title_text="scaling law (#1 first)")
    fig.update_yaxes(title_text="extrapolation error (MAPE %)")
    return style(fig, title, "#1 erred least on the corpus's series like this one", height=440)
