"""Plotly figure builders: ``(fit result, data) -> go.Figure``.

Every public ``*_figure`` function first computes plain data (a dataclass of arrays, returned
by a matching ``*_data`` function that tests can check) and then builds the figure. Nothing is
displayed here and Streamlit is never imported: the app, the HTML report and the CLI all call
the same functions.

Styling lives in one place (the constants below and :func:`style`): fonts large enough for a
slide, one colour family per term category (start-up grey, compute blue, communication
orange, other green), axis titles with units, and the extrapolation zone (beyond the measured
range) shaded and drawn dashed.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .bands import add_band, parity_intervals, scaling_interval
from .data import Measurements
from .errors import PerfModelError
from .expression import parse_expression
from .overlap import partner_text
from .terms import library

# -- styling: the one place ------------------------------------------------------------------
FONT = dict(family="Inter, 'Source Sans Pro', 'Helvetica Neue', Arial, sans-serif", size=15, color="#1f2937")
TITLE_SIZE = 19
GRID = "#e5e7eb"
AXIS_LINE = "#9ca3af"
MEASURED = "#111827"          # measured points
PREDICTED = "#2563eb"         # the model's curve
IDEAL = "#9ca3af"             # y = x, ideal speedup
BAND = "rgba(37, 99, 235, 0.10)"          # ±10 % band
EXTRAP_FILL = "rgba(245, 158, 11, 0.10)"  # extrapolation zone
EXTRAP_TEXT = "#b45309"
EXTRAP_VEIL = "rgba(255, 255, 255, 0.45)"  # fades stacked areas beyond the measured range
#: Colour families per term category; successive terms of one category take successive shades.
CATEGORY_COLORS = {
    "start-up": ["#64748b", "#94a3b8", "#475569", "#cbd5e1"],
    "compute": ["#2563eb", "#60a5fa", "#1e3a8a", "#93c5fd", "#3b82f6"],
    "communication": ["#ea580c", "#f59e0b", "#b91c1c", "#fdba74", "#f97316"],
    "other": ["#059669", "#34d399", "#065f46", "#6ee7b7"],
}
CATEGORY_ORDER = ("start-up", "compute", "communication", "other")
#: Discrete colours for "colour by factor" with few distinct values.
DISCRETE = ["#2563eb", "#ea580c", "#059669", "#9333ea", "#dc2626", "#0891b2", "#ca8a04", "#db2777",
            "#4b5563", "#65a30d"]
CONTINUOUS = "Viridis"
BAND_PCT = 10.0

#: Plain-word names of the library terms (perfmodel.terms.library keys).
TERM_LABELS = {
    "constant": "Start-up (fixed)",
    "iterations": "Per-iteration overhead",
    "compute": "Compute per batch",
    "data-parallel": "Data-parallel compute",
    "tree-allreduce": "All-reduce, tree (log p)",
    "ring-allreduce": "All-reduce, ring",
    "parameter-server": "Parameter server",
    "worker-startup": "Worker start-up",
}
#: Axis titles of the conventional symbols: (words, unit or None).
FACTOR_WORDS = {
    "p": ("workers", None),
    "N": ("data size", "samples"),
    "b": ("batch per worker", "samples"),
    "B": ("global batch", "samples"),
    "E": ("epochs", None),
}
TIME_UNIT = "s"


def style(fig: go.Figure, title: str | None = None, subtitle: str | None = None,
          height: int = 460, legend: str = "top") -> go.Figure:
    """Apply the house style (fonts, grid, margins, legend position) to ``fig``."""
    # Title, subtitle and a legend above the plot each get their own band of the top margin.
    top = (90 if title else 50) + (35 if title and subtitle and legend == "top" else 0)
    fig.update_layout(
        template="plotly_white", font=FONT, height=height,
        margin=dict(l=70, r=30, t=top, b=70),
        hoverlabel=dict(font_size=14, font_family=FONT["family"]),
        paper_bgcolor="white", plot_bgcolor="white",
    )
    if title:
        t = dict(text=title, x=0.0, xanchor="left", font=dict(size=TITLE_SIZE), yref="container", y=1,
                 yanchor="top", pad=dict(t=18))
        if subtitle:
            t["subtitle"] = dict(text=subtitle, font=dict(size=14, color="#4b5563"))
        fig.update_layout(title=t)
    if legend == "top":
        fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, xanchor="left",
                                      font=dict(size=14), bgcolor="rgba(255,255,255,0)"))
    elif legend == "inside":
        fig.update_layout(legend=dict(orientation="v", yanchor="top", y=0.98, x=0.02, xanchor="left",
                                      font=dict(size=14), bgcolor="rgba(255,255,255,0.85)",
                                      bordercolor=GRID, borderwidth=1, traceorder="normal"))
    elif legend == "right":
        fig.update_layout(legend=dict(orientation="v", yanchor="top", y=1, x=1.02, xanchor="left",
                                      font=dict(size=14), traceorder="normal"))
    fig.update_xaxes(showgrid=True, gridcolor=GRID, zeroline=False, linecolor=AXIS_LINE, showline=True,
                     ticks="outside", tickcolor=AXIS_LINE, title_font=dict(size=16), automargin=True)
    fig.update_yaxes(showgrid=True, gridcolor=GRID, zeroline=False, linecolor=AXIS_LINE, showline=True,
                     ticks="outside", tickcolor=AXIS_LINE, title_font=dict(size=16), automargin=True)
    return fig


def empty_figure(message: str, x_title: str = "", y_title: str = "", title: str | None = None) -> go.Figure:
    """A figure with axis titles and a centred message instead of data."""
    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=16, color="#6b7280"))
    fig.update_xaxes(title_text=x_title, showticklabels=False)
    fig.update_yaxes(title_text=y_title, showticklabels=False)
    return style(fig, title)


def time_title(what: str = "time") -> str:
    return f"{what} ({TIME_UNIT})"


def factor_title(symbol: str, column: str | None = None) -> str:
    """Axis title of a factor, e.g. ``data size N (samples)``, ``workers p``."""
    if symbol in FACTOR_WORDS:
        words, unit = FACTOR_WORDS[symbol]
        return f"{words} {symbol}" + (f" ({unit})" if unit else "")
    if column and column != symbol:  # a column name is user text: no markup in it
        return f"{html.escape(str(column))}, {symbol}"
    return symbol


def fmt_num(v: float) -> str:
    """Compact number for labels: 64, 100k, 1.28M, 0.125."""
    v = float(v)
    if not math.isfinite(v):
        return str(v)
    if v.is_integer() and abs(v) < 10_000:
        return str(int(v))
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


_TIME_UNITS = (("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))


def time_unit(*values: float) -> str:
    """The unit that reads well for the largest of ``values``: ms below 1 s, s below 2 min, min
    below 2 h, else h."""
    a = max((abs(float(v)) for v in values if math.isfinite(float(v))), default=0.0)
    return "ms" if a < 1 else "s" if a < 120 else "min" if a < 7200 else "h"


def fmt_seconds(v: float, unit: str | None = None) -> str:
    """A time with a unit that reads well: 850 ms, 12.3 s, 4.2 min, 3.1 h; ``unit`` forces one of
    ms, s, min, h (so that the times of one sentence share a unit: ``time_unit(a, b)``)."""
    v = float(v)
    if not math.isfinite(v):
        return str(v)
    unit = unit or time_unit(v)
    return f"{v / dict(_TIME_UNITS)[unit]:.3g} {unit}"


# -- terms: plain-word labels and category colours -------------------------------------------
@dataclass
class TermStyle:
    """How one fitted term is named and coloured."""

    text: str        # the term as written in the expression, e.g. "I*b^e_b"
    label: str       # plain words, e.g. "Compute per batch"
    category: str    # start-up / compute / communication / other
    color: str
    formula: str     # the term with fitted exponents, e.g. "I·b^0.89"
    meaning: str = ""
    overlapped_with: str = ""  # for a term inside an overlap, the other side's terms, e.g. "I·min(p - 1, 1)"
    note: str = ""   # e.g. "overlapped with I·min(p - 1, 1) (γ = 3; ...)" for a term inside an overlap

    @property
    def legend(self) -> str:
        """Legend entry: plain words, then the formula in grey."""
        if self.text == "1":
            return self.label
        if self.label == self.formula:
            return f"{self.formula} <span style='color:#6b7280'>({self.category})</span>"
        return f"{self.label} <span style='color:#6b7280'>{self.formula}</span>"


def _canonical(term_text: str, params) -> str:
    out = term_text
    for p in sorted(params, key=len, reverse=True):
        out = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(p)}(?![A-Za-z0-9_])", "#", out)
    return out


def _pretty(term_text: str, params: dict) -> str:
    out = term_text
    for name, v in sorted(params.items(), key=lambda kv: -len(kv[0])):
        out = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", f"{v:.3g}", out)
    return out.replace("*", "·")


def _library_canon(symbols) -> dict[str, tuple]:
    out = {}
    for t in library(symbols):
        try:
            expr, _ = parse_expression(t.expr, symbols)
        except PerfModelError:  # pragma: no cover - the library only uses mapped symbols
            continue
        out[_canonical(expr.terms[0].text, expr.params)] = t
    return out


def term_category(result, k: int) -> str:
    """Category of a term that is not in the library, judged from its values.

    A constant is start-up; a term that grows with ``p`` at the middle of the measured range
    is communication-like (overhead that parallelism adds); anything else is compute.
    """
    term = result.terms[k]
    if term == "1":
        return "start-up"
    if "p" not in result.factors or not re.search(r"(?<![A-Za-z0-9_])p(?![A-Za-z0-9_])", term):
        return "compute"
    mid = {s: [float(np.sqrt(max(lo, 1e-12) * max(hi, 1e-12))) if lo > 0 else (lo + hi) / 2] * 2
           for s, (lo, hi) in result.factor_ranges.items()}
    lo, hi = result.factor_ranges["p"]
    mid["p"] = [max(lo, 1.0), max(hi, 2 * max(lo, 1.0))]
    try:
        v = result.term_values(mid)[k]
    except (PerfModelError, ValueError, KeyError):
        return "other"
    if not np.all(np.isfinite(v)):
        return "other"
    return "communication" if abs(v[1]) > abs(v[0]) * 1.0001 else "compute"


_NETWORK_SYMBOL = re.compile(r"(?<![A-Za-z0-9_])(p|nodes|servers)(?![A-Za-z0-9_])")


def _overlap_category(overlaps, terms: list, k: int) -> str | None:
    """Inside an overlap whose sides differ in that, the side that names the workers p (or nodes,
    servers) is communication and the other compute (Pollux: compute ∥ network); else None."""
    for grp in overlaps:
        if k not in grp.terms:
            continue
        uses = [any(_NETWORK_SYMBOL.search(terms[i]) for i in side) for side in (grp.a, grp.b)]
        if uses[0] == uses[1]:
            return None
        mine = uses[0] if k in grp.a else uses[1]
        return "communication" if mine else ("start-up" if terms[k] == "1" else "compute")
    return None


def term_styles(result) -> list[TermStyle]:
    """Label, category and colour of each of ``result``'s terms (in term order)."""
    symbols = list(result.factors)
    canon = _library_canon(symbols)
    try:
        expr, _ = parse_expression(result.expression, symbols,
                                   {k: tuple(v) for k, v in result.param_bounds.items()})
        term_params = [t.params for t in expr.terms]
        overlaps = expr.overlaps
    except PerfModelError:  # pragma: no cover - a FitResult holds a valid expression
        term_params = [() for _ in result.terms]
        overlaps = []
    used = {c: 0 for c in CATEGORY_COLORS}
    pretty = [_pretty(t, result.params) for t in result.terms]
    out = []
    for k, text in enumerate(result.terms):
        lib = canon.get(_canonical(text, term_params[k]))
        formula = pretty[k]
        if lib is not None:
            label, category, meaning = TERM_LABELS.get(lib.key, lib.key), lib.category, lib.meaning
        else:
            category = _overlap_category(overlaps, result.terms, k) or term_category(result, k)
            label, meaning = formula, ""
        if category not in CATEGORY_COLORS:
            category = "other"
        shades = CATEGORY_COLORS[category]
        color = shades[used[category] % len(shades)]
        used[category] += 1
        if result.signs[k] < 0:
            formula = "−" + formula
        partners, note = partner_text(overlaps, pretty, k) or "", ""
        if partners:
            grp = next(g for g in overlaps if k in g.terms)
            note = (f"overlapped with {partners} (γ = {result.params[grp.param]:.3g}; the overlapped time is "
                    "split by the sides' γ-th powers)")
        out.append(TermStyle(text, label, category, color, formula, meaning, partners, note))
    # Two terms with the same plain-word label (e.g. two custom formulas) stay distinguishable.
    seen: dict[str, int] = {}
    for s in out:
        seen[s.label] = seen.get(s.label, 0) + 1
    for s in out:
        if seen[s.label] > 1 and s.label != s.formula:
            s.label = f"{s.label} ({s.formula})"
    return out


# -- configurations and hover text -----------------------------------------------------------
def config_label(values: dict, sep: str = " · ") -> str:
    return sep.join(f"{s} = {fmt_num(v)}" for s, v in values.items())


def _log_axis(values: np.ndarray) -> bool:
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return bool(v.size and v.min() > 0 and v.max() / v.min() >= 8)


#: Mantissas tried for log-axis ticks, sparsest first.
_LOG_MANTISSAS = ((1,), (1, 3), (1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 5, 7), (1, 2, 3, 4, 5, 6, 7, 8, 9),
                  (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))
#: A log axis shows at least this many labelled ticks (and at most 10).
MIN_TICKS = 4


def log_ticks(lo: float, hi: float, measured=None) -> list[float]:
    """Readable tick values for a log axis from ``lo`` to ``hi``: at least :data:`MIN_TICKS` and at
    most 10 of them whenever the range allows.

    Powers of two when the measured values are powers of two (1, 2, 4, 8 workers) and there are
    enough of them; else the sparsest of decades, 1-3, 1-2-5, 1-1.5-2-3-5-7, ... that gives enough
    ticks; over a very short range, evenly spaced round numbers."""
    if not (lo > 0 and hi > 0 and math.isfinite(lo) and math.isfinite(hi)):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    eps = 1e-9
    if measured is not None:
        m = np.unique(np.asarray(measured, float))
        m = m[m > 0]
        if m.size >= 2 and np.allclose(np.log2(m), np.round(np.log2(m))):
            k0, k1 = math.floor(math.log2(lo) + eps), math.ceil(math.log2(hi) - eps)
            ticks = [2.0 ** k for k in range(k0, k1 + 1) if lo * (1 - eps) <= 2.0 ** k <= hi * (1 + eps)]
            step = max(1, math.ceil(len(ticks) / 10))
            if len(ticks[::step]) >= MIN_TICKS - 1:
                return ticks[::step]
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mant in _LOG_MANTISSAS:
        ticks = [m_ * 10.0 ** d for d in range(d0, d1 + 1) for m_ in mant
                 if lo * (1 - eps) <= m_ * 10.0 ** d <= hi * (1 + eps)]
        if len(ticks) > 10 and mant == _LOG_MANTISSAS[0]:
            return ticks[::math.ceil(len(ticks) / 10)]
        if MIN_TICKS <= len(ticks) <= 10:
            return [float(f"{t:.6g}") for t in ticks]
    return nice_ticks(lo, hi)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` evenly spaced round values (steps of 1, 2, 2.5 or 5 × 10^k) within [lo, hi]."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * 0.999)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    v = first
    while v <= hi * (1 + 1e-9) and len(ticks) < 12:
        ticks.append(float(f"{v:.6g}"))
        v += step
    return ticks if len(ticks) >= 2 else [lo, hi]


def set_log_ticks(fig: go.Figure, axis: str, lo: float, hi: float, measured=None, **where) -> None:
    ticks = log_ticks(lo, hi, measured)
    if not ticks:
        return
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(tickmode="array", tickvals=ticks, ticktext=[fmt_num(t) for t in ticks], **where)


# -- data page: measured time against each factor --------------------------------------------
@dataclass
class OverviewData:
    symbols: list
    x: dict            # symbol -> values (n,)
    y: np.ndarray      # measured time (n,)
    hover: list        # configuration text per row
    log_x: dict        # symbol -> bool
    log_y: bool


def overview_data(meas: Measurements | None) -> OverviewData:
    if meas is None or meas.n_rows == 0:
        return OverviewData([], {}, np.zeros(0), [], {}, False)
    syms = meas.varying() or list(meas.factors)
    env = meas.env()
    hover = [f"row {r}<br>" + config_label({s: env[s][i] for s in meas.factors}, "<br>")
             for i, r in enumerate(meas.rows)]
    return OverviewData(syms, {s: env[s] for s in syms}, meas.y, hover,
                        {s: _log_axis(env[s]) for s in syms}, _log_axis(meas.y))


def _factor_grid(n: int, max_cols: int) -> tuple[go.Figure, int, int]:
    """A grid of subplots sharing the y-axis, one per factor: (figure, rows, columns)."""
    rows = math.ceil(n / max(min(n, max_cols), 1))
    cols = math.ceil(n / rows)  # balanced: 4 panels in 2 × 2, not 3 + a lone one
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.05,
                        vertical_spacing=0.22 if rows > 1 else 0.1)
    return fig, rows, cols


def _factor_axes(fig: go.Figure, d, s: str, meas: Measurements, r: int, c: int, y_title: str) -> None:
    """Title, scale and ticks of factor ``s``'s x-axis; the y title on the first column."""
    fig.update_xaxes(title_text=factor_title(s, meas.factors.get(s)), row=r, col=c,
                     type="log" if d.log_x[s] else "linear")
    if d.log_x[s]:
        set_log_ticks(fig, "x", d.x[s].min(), d.x[s].max(), d.x[s], row=r, col=c)
    if c == 1:
        fig.update_yaxes(title_text=y_title, row=r, col=c)


def overview_figure(meas: Measurements | None, title: str | None = "Measured time against each factor") -> go.Figure:
    """Measured time (y) against each varying factor (one panel per factor)."""
    d = overview_data(meas)
    if not d.symbols:
        return empty_figure("No measurements to show", "factor", time_title("measured time"), title)
    fig, rows, cols = _factor_grid(len(d.symbols), 3)
    for i, s in enumerate(d.symbols):
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(go.Scatter(x=d.x[s], y=d.y, mode="markers", name=s, showlegend=False,
                                 marker=dict(color=PREDICTED, size=8, opacity=0.7,
                                             line=dict(width=0.5, color="white")),
                                 text=d.hover, hovertemplate="%{text}<br>time %{y:.4g} s<extra></extra>"),
                      row=r, col=c)
        _factor_axes(fig, d, s, meas, r, c, time_title("measured time"))
    fig.update_yaxes(type="log" if d.log_y else "linear")
    if d.log_y:
        set_log_ticks(fig, "y", d.y.min(), d.y.max())
    return style(fig, title, height=380 * rows + 40)


# -- results: parity plot ----------------------------------------------------------------------
@dataclass
class ParityData:
    measured: np.ndarray
    predicted: np.ndarray
    error_pct: np.ndarray
    rows: np.ndarray
    hover: list
    color: np.ndarray | None     # values of the colour factor, or None
    color_name: str | None
    lo: float                    # axis range (positive)
    hi: float
    cv_predicted: np.ndarray | None = None
    within_band: float = float("nan")   # share of rows within ±10 %


def parity_data(result, meas: Measurements, color_by: str | None = None,
                cv_predicted: np.ndarray | None = None) -> ParityData:
    if meas is None or meas.n_rows == 0:
        z = np.zeros(0)
        return ParityData(z, z, z, z.astype(int), [], None, None, 0.1, 10.0)
    y = meas.y
    pred = result.predict(meas)
    err = (pred - y) / y * 100
    env = meas.env()
    hover = [f"row {r}<br>" + config_label({s: env[s][i] for s in meas.factors}, "<br>")
             for i, r in enumerate(meas.rows)]
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


def add_parity_guides(fig: go.Figure, lo: float, hi: float) -> None:
    """The y = x line and the ±BAND_PCT % band of a parity chart, from ``lo`` to ``hi`` seconds."""
    line = np.array([lo, hi])
    f = BAND_PCT / 100
    fig.add_trace(go.Scatter(x=line, y=line * (1 - f), mode="lines", line=dict(width=0), hoverinfo="skip",
                             showlegend=False))
    fig.add_trace(go.Scatter(x=line, y=line * (1 + f), mode="lines", line=dict(width=0), fill="tonexty",
                             fillcolor=BAND, hoverinfo="skip", name=f"±{BAND_PCT:g} %"))
    fig.add_trace(go.Scatter(x=line, y=line, mode="lines", line=dict(color=IDEAL, dash="dash", width=1.5),
                             hoverinfo="skip", name="y = x (perfect)"))


def square_log_axes(fig: go.Figure, rng: list, x_title: str, y_title: str) -> None:
    """Equal log ranges on both axes at one scale, so y = x runs at 45°; the square plot is anchored
    top-left in the figure, where a parity chart's legend sits inside its empty corner."""
    fig.update_xaxes(type="log", range=rng, title_text=x_title, constrain="domain", constraintoward="left")
    fig.update_yaxes(type="log", range=rng, title_text=y_title, scaleanchor="x", scaleratio=1, constrain="domain",
                     constraintoward="top")


def parity_figure(result, meas: Measurements, color_by: str | None = None,
                  cv_predicted: np.ndarray | None = None, title: str | None = "Predicted against measured",
                  height: int = 520, legend: str = "inside") -> go.Figure:
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
        fig.add_trace(go.Scatter(x=d.measured, y=d.predicted, mode="markers", name="90 % interval",
                                 marker=dict(size=1, opacity=0, color=PREDICTED), hoverinfo="skip",
                                 error_y=dict(type="data", symmetric=False, array=high - d.predicted,
                                              arrayminus=d.predicted - low, color="rgba(31, 119, 180, 0.45)",
                                              thickness=1.2, width=0)))
    tmpl = ("%{text}<br>measured %{x:.4g} s<br>predicted %{y:.4g} s<br>error %{customdata:+.1f} %"
            "<extra></extra>")
    marker = dict(size=10, opacity=0.85, line=dict(width=0.8, color="white"))
    if d.color is None:
        fig.add_trace(go.Scatter(x=d.measured, y=d.predicted, mode="markers", name="in-sample prediction",
                                 marker=dict(color=PREDICTED, **marker), text=d.hover, customdata=d.error_pct,
                                 hovertemplate=tmpl))
    else:
        levels = np.unique(d.color[np.isfinite(d.color)])
        if len(levels) <= len(DISCRETE):
            for i, v in enumerate(levels):
                m = d.color == v
                fig.add_trace(go.Scatter(x=d.measured[m], y=d.predicted[m], mode="markers",
                                         name=f"{d.color_name} = {fmt_num(v)}",
                                         marker=dict(color=DISCRETE[i], **marker),
                                         text=[h for h, k in zip(d.hover, m) if k], customdata=d.error_pct[m],
                                         hovertemplate=tmpl))
        else:
            fig.add_trace(go.Scatter(x=d.measured, y=d.predicted, mode="markers", name="in-sample prediction",
                                     marker=dict(color=d.color, colorscale=CONTINUOUS, showscale=True,
                                                 colorbar=dict(title=dict(text=d.color_name), thickness=14),
                                                 **marker),
                                     text=d.hover, customdata=d.error_pct, hovertemplate=tmpl))
    if d.cv_predicted is not None:
        ok = np.isfinite(d.cv_predicted)
        cv_err = (d.cv_predicted - d.measured) / d.measured * 100
        fig.add_trace(go.Scatter(x=d.measured[ok], y=d.cv_predicted[ok], mode="markers",
                                 name="cross-validated prediction",
                                 marker=dict(symbol="circle-open", size=10, color=MEASURED, line=dict(width=1.5)),
                                 text=[h for h, k in zip(d.hover, ok) if k], customdata=cv_err[ok],
                                 hovertemplate=tmpl.replace("predicted", "cross-validated")))
    rng = [math.log10(d.lo), math.log10(d.hi)]
    square_log_axes(fig, rng, x_title, y_title)
    set_log_ticks(fig, "x", d.lo, d.hi)
    set_log_ticks(fig, "y", d.lo, d.hi)
    sub = f"{d.within_band * 100:.0f} % of runs within ±{BAND_PCT:g} %" if d.measured.size else None
    return style(fig, title, sub, height=height, legend=legend)


# -- results: per-term contributions -------------------------------------------------------------
@dataclass
class ContributionData:
    labels: list                  # configuration label per bar ("p = 1, b = 16")
    factors: pd.DataFrame         # factor values per configuration (symbols as columns)
    contributions: pd.DataFrame   # (n_cfg, K), columns = term texts
    measured_mean: np.ndarray
    measured_min: np.ndarray
    measured_max: np.ndarray
    styles: list                  # TermStyle per term
    ticks: list = field(default_factory=list)    # compact tick labels ("1 · 16")
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


def contributions_figure(result, meas: Measurements, title: str | None = "Where the time goes, per configuration",
                         max_labels: int = 40) -> go.Figure:
    """Stacked bars (``barmode="relative"``) of each term's contribution per configuration, with
    the measured mean (and min–max of the repeats) as markers."""
    d = contribution_data(result, meas)
    y_title = time_title("time per run")
    if not d.labels:
        return empty_figure("No measurements to show", "configuration", y_title, title)
    fig = go.Figure()
    x = list(range(len(d.labels)))
    total = d.contributions.to_numpy().sum(axis=1)
    for st_, term in zip(d.styles, d.contributions.columns):
        vals = d.contributions[term].to_numpy()
        share = np.divide(vals, total, out=np.full_like(vals, np.nan), where=total != 0) * 100
        fig.add_trace(go.Bar(x=x, y=vals, name=st_.legend, marker=dict(color=st_.color, line=dict(width=0)),
                             customdata=np.stack([share, total], axis=1), hovertext=d.labels,
                             hovertemplate=f"<b>{st_.label}</b> ({st_.formula})<br>%{{hovertext}}<br>"
                                           "%{y:.4g} s = %{customdata[0]:.1f} % of %{customdata[1]:.4g} s"
                                           + _note_html(st_) + "<extra></extra>"))
    err = dict(type="data", symmetric=False, array=d.measured_max - d.measured_mean,
               arrayminus=d.measured_mean - d.measured_min, color=MEASURED, thickness=1.2, width=3)
    fig.add_trace(go.Scatter(x=x, y=d.measured_mean, mode="markers", name="measured (mean, min–max)",
                             marker=dict(symbol="diamond", size=8, color=MEASURED), error_y=err, hovertext=d.labels,
                             hovertemplate="%{hovertext}<br>measured mean %{y:.4g} s<extra></extra>"))
    show = len(x) <= max_labels
    fig.update_layout(barmode="relative", bargap=0.15)
    if d.sorted_by_time:
        x_title = f"{len(x)} configurations, ordered by predicted time (hover for values)"
    elif len(d.varying) == 1:
        x_title = factor_title(d.varying[0], result.factors.get(d.varying[0]))
    else:
        x_title = f"configuration ({' · '.join(d.varying)})" + ("" if show else " (hover for values)")
    angle = -45 if show and len(x) * max(len(t) for t in d.ticks) > 90 else 0
    fig.update_xaxes(title_text=x_title, tickmode="array", tickvals=x if show else [],
                     ticktext=d.ticks if show else [], tickangle=angle, showgrid=False)
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
    shares: np.ndarray   # percent of total predicted time over the data
    colors: list
    categories: list


def share_data(result) -> ShareData:
    styles = term_styles(result)
    shares = np.array([float(result.shares.get(s.text, float("nan"))) * 100 for s in styles])
    order = np.argsort(-np.nan_to_num(shares, nan=-1e9), kind="stable")
    return ShareData([styles[i].label for i in order], [styles[i].formula for i in order], shares[order],
                     [styles[i].color for i in order], [styles[i].category for i in order])


def shares_figure(result, title: str | None = "Share of total predicted time") -> go.Figure:
    """Horizontal bars: each term's share of the total predicted time over the measured runs."""
    d = share_data(result)
    x_title = "share of total predicted time (%)"
    if not d.labels:
        return empty_figure("The model has no terms", x_title, "", title)
    names = [f"{lab}  " if lab == f or f == "1" else
             f"{lab}<br><span style='font-size:12px;color:#6b7280'>{f}</span>  "
             for lab, f in zip(d.labels, d.formulas)]
    fig = go.Figure(go.Bar(x=d.shares, y=names, orientation="h", marker=dict(color=d.colors),
                           text=[f"{v:.1f} %" for v in d.shares], textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{x:.2f} %<extra></extra>", showlegend=False))
    fig.update_yaxes(autorange="reversed", showgrid=False, ticks="")
    hi = float(np.nanmax(np.abs(d.shares))) if np.isfinite(d.shares).any() else 100.0
    lo = float(min(0.0, np.nanmin(d.shares))) if np.isfinite(d.shares).any() else 0.0
    fig.update_xaxes(title_text=x_title, range=[lo * 1.15, max(hi * 1.18, 5)])
    return style(fig, title, height=max(260, 70 * len(d.labels) + 120), legend="none")


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
    hover = [f"row {r}<br>" + config_label({s: env[s][i] for s in meas.factors}, "<br>")
             for i, r in enumerate(meas.rows)]
    return ResidualData(syms, {s: env[s] for s in syms}, res, hover, {s: _log_axis(env[s]) for s in syms})


def residuals_figure(result, meas: Measurements, title: str | None = "Residuals against each factor",
                     max_cols: int = 3) -> go.Figure:
    """Residual (predicted − measured, % of measured) against each varying factor."""
    d = residual_data(result, meas)
    y_title = "residual (% of measured)"
    if not d.symbols:
        return empty_figure("No measurements to show", "factor", y_title, title)
    fig, rows, cols = _factor_grid(len(d.symbols), max_cols)
    for i, s in enumerate(d.symbols):
        r, c = i // cols + 1, i % cols + 1
        fig.add_hrect(y0=-BAND_PCT, y1=BAND_PCT, fillcolor=BAND, line_width=0, layer="below", row=r, col=c,
                      exclude_empty_subplots=False)
        fig.add_hline(y=0, line=dict(color=IDEAL, dash="dash", width=1.2), row=r, col=c,
                      exclude_empty_subplots=False)
        big = np.abs(d.residual_pct) > BAND_PCT
        fig.add_trace(go.Scatter(x=d.x[s], y=d.residual_pct, mode="markers", showlegend=False, name=s,
                                 marker=dict(color=np.where(big, "#dc2626", PREDICTED).tolist(), size=8,
                                             opacity=0.8, line=dict(width=0.5, color="white")),
                                 text=d.hover, hovertemplate="%{text}<br>residual %{y:+.1f} %<extra></extra>"),
                      row=r, col=c)
        _factor_axes(fig, d, s, meas, r, c, y_title)
    top = max(BAND_PCT * 1.5, float(np.nanmax(np.abs(d.residual_pct))) * 1.15 if d.residual_pct.size else 0)
    fig.update_yaxes(range=[-top, top], ticksuffix=" %")
    sub = f"shaded: within ±{BAND_PCT:g} %; red: outside"
    return style(fig, title, sub, height=380 * rows + 60)


# -- scaling ----------------------------------------------------------------------------------------
@dataclass
class ScalingData:
    symbol: str
    x: np.ndarray                 # grid (n,)
    total: np.ndarray             # predicted time (n,)
    contributions: pd.DataFrame   # (n, K), columns = term texts
    inside: np.ndarray            # bool (n,): x within the measured range
    measured_range: tuple         # (lo, hi) of the symbol in the data
    fixed: dict                   # the other symbols' values
    points_x: np.ndarray          # measured runs at the fixed values
    points_y: np.ndarray
    styles: list
    others_outside: list = field(default_factory=list)  # fixed symbols set outside their measured range
    crossover: float | None = None  # first x where communication overtakes compute
    low: np.ndarray | None = None   # the 90 % interval along the curve (None: the fit has no intervals)
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


def scaling_data(result, symbol: str, fixed: dict | None = None, meas: Measurements | None = None,
                 x_max: float | None = None, x_min: float | None = None, n: int = 200) -> ScalingData:
    """Predicted time and term contributions along ``symbol``, the other symbols at ``fixed``
    (default: :func:`typical_value`), from the measured minimum to ``x_max`` (default: 4 × the
    measured maximum)."""
    if symbol not in result.factors:
        raise PerfModelError(f"{symbol!r} is not a factor of the model (factors: {', '.join(result.factors)})")
    lo, hi = (float(v) for v in result.factor_ranges[symbol])
    fixed = dict(fixed or {})
    for s in result.factors:
        if s != symbol and s not in fixed:
            fixed[s] = typical_value(result, s, meas)
    fixed = {s: float(fixed[s]) for s in result.factors if s != symbol}  # in the model's factor order
    if meas is not None and symbol in meas.factors and meas.n_rows:
        integer = bool(np.all(np.mod(meas.values(symbol), 1) == 0))
    else:
        integer = float(lo).is_integer() and float(hi).is_integer()
    x_max = float(x_max) if x_max is not None else (hi * 4 if hi > 0 else hi + 1)
    x_min = float(x_min) if x_min is not None else lo
    x = scaling_grid(x_min, max(x_max, x_min), integer, n)
    if x.size == 0:
        x = np.array([x_min])
    env = {symbol: x, **{s: np.full(x.size, v) for s, v in fixed.items()}}
    contrib = result.contributions(env)
    total = contrib.to_numpy().sum(axis=1)
    inside = (x >= lo - 1e-9 * abs(lo)) & (x <= hi + 1e-9 * abs(hi))
    others_out = [s for s, v in fixed.items()
                  if not result.factor_ranges[s][0] <= v <= result.factor_ranges[s][1]]
    px, py = np.zeros(0), np.zeros(0)
    if meas is not None and meas.n_rows and symbol in meas.factors:
        mask = np.ones(meas.n_rows, bool)
        for s, v in fixed.items():
            if s in meas.factors:
                mask &= np.isclose(meas.values(s), v, rtol=1e-9, atol=1e-12)
        px, py = meas.values(symbol)[mask], meas.y[mask]
    styles = term_styles(result)
    cats = {c: np.zeros(x.size) for c in CATEGORY_COLORS}
    for s, t in zip(styles, contrib.columns):
        cats[s.category] = cats[s.category] + contrib[t].to_numpy()
    crossover = None
    if cats["communication"].any() and cats["compute"].any():
        over = (cats["communication"] > cats["compute"])
        if not over[0] and over.any():
            crossover = float(x[int(np.argmax(over))])
    d = ScalingData(symbol, x, total, contrib, inside, (lo, hi), fixed, px, py, styles, others_out, crossover)
    band = scaling_interval(result, d)
    if band is not None:  # the total is the fit's predictor (the ensemble's, where it chose one)
        d.total, d.low, d.high = band
    return d


def _extrap_zone(fig: go.Figure, d: ScalingData, log_x: bool = False, row=None, col=None,
                 label: bool = True) -> None:
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
            fig.add_annotation(x=_annotation_x(edge, log_x), xanchor=side, y=1, yref="y domain", yanchor="top", showarrow=False,
                               text="extrapolation →" if side == "left" else "← extrapolation",
                               font=dict(size=13, color=EXTRAP_TEXT), xshift=6 if side == "left" else -6, **kw)


def _axis_ticks(fig: go.Figure, d: ScalingData, log_x: bool, **where) -> None:
    """The scaling x-axis spans exactly the curve (a label near its end must not stretch it), with
    readable ticks on a log scale (powers of two for 1, 2, 4, 8 workers)."""
    if d.x.size and not (log_x and d.x.min() <= 0):
        lo, hi = float(d.x.min()), float(d.x.max())
        if hi > lo:
            rng = [math.log10(lo), math.log10(hi)] if log_x else [lo, hi]
            fig.update_xaxes(range=rng, **where)
    if log_x and d.x.size and d.x.min() > 0:
        measured = d.points_x if d.points_x.size >= 2 else None
        if measured is None and d.measured_range[0] > 0:
            lo, hi = d.measured_range
            measured = [lo, hi] if hi > lo else None
        set_log_ticks(fig, "x", float(d.x.min()), float(d.x.max()), measured, **where)


def _fixed_text(d: ScalingData) -> str:
    if not d.fixed:
        return ""
    parts = [f"{s} = {fmt_num(v)}" + (" (outside measured range)" if s in d.others_outside else "")
             for s, v in d.fixed.items()]
    return "at " + ", ".join(parts)


def _annotation_x(x: float, log_x: bool) -> float:
    """Where an annotation at data value ``x`` goes: plotly.js places annotations on a log axis in
    log10 units (shapes in data units), so a raw value would stretch the axis to 10^x."""
    return math.log10(x) if log_x and x > 0 else x


def _axis_type(log: bool) -> str:
    return "log" if log else "linear"


def scaling_figure(result, symbol: str = "p", fixed: dict | None = None, meas: Measurements | None = None,
                   x_max: float | None = None, log_x: bool = False, log_y: bool = False,
                   title: str | None = None, data: ScalingData | None = None, height: int = 480) -> go.Figure:
    """Predicted time along ``symbol``: solid within the measured range, dashed beyond it in a shaded
    extrapolation zone, with the measured runs at the same fixed values overlaid."""
    d = data or scaling_data(result, symbol, fixed, meas, x_max)
    column = result.factors.get(symbol)
    x_title, y_title = factor_title(symbol, column), time_title("predicted time")
    title = title if title is not None else f"Run time as {FACTOR_WORDS.get(symbol, (symbol,))[0]} grow"
    fig = go.Figure()
    _extrap_zone(fig, d, log_x)
    if d.low is not None:
        add_band(fig, d.x, d.low, d.high, below=False)
    inside = d.inside
    # Solid inside, dashed outside; each dashed segment includes its boundary point so the line is continuous.
    fig.add_trace(go.Scatter(x=d.x[inside], y=d.total[inside], mode="lines", name="model (measured range)",
                             line=dict(color=PREDICTED, width=3.5),
                             hovertemplate=f"{symbol} = %{{x:.4g}}<br>predicted %{{y:.4g}} s<extra></extra>"))
    outside = ~inside
    if outside.any():
        idx = np.flatnonzero(outside)
        seg = np.zeros(d.x.size, bool)
        seg[idx] = True
        first_in, last_in = (np.flatnonzero(inside)[[0, -1]] if inside.any() else (None, None))
        if first_in is not None:
            seg[first_in] = seg[first_in] or bool(idx.min() < first_in)
            seg[last_in] = seg[last_in] or bool(idx.max() > last_in)
        xs, ys = d.x.astype(float).copy(), d.total.astype(float).copy()
        ys[~seg] = np.nan
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="model (extrapolated)", connectgaps=False,
                                 line=dict(color=PREDICTED, width=3, dash="dash"),
                                 hovertemplate=f"{symbol} = %{{x:.4g}}<br>predicted %{{y:.4g}} s "
                                               "(extrapolated)<extra></extra>"))
    if d.points_x.size:
        fig.add_trace(go.Scatter(x=d.points_x, y=d.points_y, mode="markers", name="measured runs",
                                 marker=dict(color=MEASURED, size=9, symbol="circle",
                                             line=dict(width=1, color="white")),
                                 hovertemplate=f"{symbol} = %{{x:.4g}}<br>measured %{{y:.4g}} s<extra></extra>"))
    fig.update_xaxes(title_text=x_title, type=_axis_type(log_x))
    fig.update_yaxes(title_text=y_title, type=_axis_type(log_y), rangemode="tozero" if not log_y else None)
    _axis_ticks(fig, d, log_x)
    if log_y:
        ys = np.concatenate([d.total[d.total > 0], d.points_y[d.points_y > 0]])
        if ys.size:
            set_log_ticks(fig, "y", ys.min(), ys.max())
    return style(fig, title, _fixed_text(d), height=height, legend="right")


def _note_html(s: TermStyle) -> str:
    return f"<br><i>{html.escape(s.note)}</i>" if s.note else ""


def _overlap_trace(fig: go.Figure, result, d) -> None:
    """A dashed line: the total if the overlapped parts ran one after the other (the time the overlap saves)."""
    if "overlap(" not in result.expression:
        return
    env = {d.symbol: d.x, **{s: np.full(d.x.size, v) for s, v in d.fixed.items()}}
    saved = result.overlap_savings(env).to_numpy().sum(axis=1)
    if not saved.size or not np.any(saved > 1e-9 * np.abs(d.total)):
        return
    fig.add_trace(go.Scatter(x=d.x, y=d.total + saved, mode="lines", name="without overlap (parts one after another)",
                             line=dict(color=MEASURED, width=1.2, dash="dash"), customdata=saved,
                             hovertemplate=f"{d.symbol} = %{{x:.4g}}<br>without overlap %{{y:.4g}} s: the overlap "
                                           "saves %{customdata:.4g} s<extra></extra>"))


def scaling_contributions_figure(result, symbol: str = "p", fixed: dict | None = None,
                                 meas: Measurements | None = None, x_max: float | None = None,
                                 log_x: bool = False, title: str | None = None,
                                 data: ScalingData | None = None) -> go.Figure:
    """The predicted curve split into stacked term contributions (area), so the crossover from
    computation to communication is visible."""
    d = data or scaling_data(result, symbol, fixed, meas, x_max)
    column = result.factors.get(symbol)
    title = title if title is not None else "What the time is spent on"
    fig = go.Figure()
    _extrap_zone(fig, d, log_x)
    order = sorted(range(len(d.styles)), key=lambda k: CATEGORY_ORDER.index(d.styles[k].category))
    for k in order:
        s = d.styles[k]
        vals = d.contributions[s.text].to_numpy()
        fig.add_trace(go.Scatter(x=d.x, y=vals, mode="lines", stackgroup="terms", name=s.legend,
                                 line=dict(width=0.8, color=s.color), fillcolor=s.color,
                                 hovertemplate=f"<b>{s.label}</b><br>{symbol} = %{{x:.4g}}<br>%{{y:.4g}} s"
                                               + _note_html(s) + "<extra></extra>"))
    fig.add_trace(go.Scatter(x=d.x, y=d.total, mode="lines", name="total", line=dict(color=MEASURED, width=1.5),
                             hovertemplate=f"{symbol} = %{{x:.4g}}<br>total %{{y:.4g}} s<extra></extra>"))
    _overlap_trace(fig, result, d)
    if d.low is not None:
        for edge, ys in (("low", d.low), ("high", d.high)):
            fig.add_trace(go.Scatter(x=d.x, y=ys, mode="lines", name="total: 90 % interval", legendgroup="band",
                                     showlegend=edge == "low", line=dict(color=MEASURED, width=1.2, dash="dot"),
                                     hovertemplate=f"{symbol} = %{{x:.4g}}<br>total, {edge} end of the 90 % "
                                                   "interval %{y:.4g} s<extra></extra>"))
    # The areas hide the shaded zone: fade the extrapolated part with a white veil and mark its edges.
    lo, hi = d.measured_range
    for a, b, edge in ((float(d.x.min()), lo, lo), (hi, float(d.x.max()), hi)):
        if b > a:
            fig.add_vrect(x0=a, x1=b, fillcolor=EXTRAP_VEIL, line_width=0, layer="above")
            fig.add_vline(x=edge, line=dict(color=EXTRAP_TEXT, dash="dot", width=1.2))
    if d.crossover is not None:
        fig.add_vline(x=d.crossover, line=dict(color=EXTRAP_TEXT, dash="dot", width=1.5))
        # annotations on a log axis are placed in log10 units (shapes in data units)
        lo_, hi_ = (_annotation_x(float(v), log_x) for v in (d.x.min(), d.x.max()))
        right_half = _annotation_x(d.crossover, log_x) > (lo_ + hi_) / 2  # the label runs towards the middle
        fig.add_annotation(x=_annotation_x(d.crossover, log_x), y=1, yref="paper", xref="x", showarrow=False,
                           yanchor="bottom", xanchor="right" if right_half else "left", xshift=-4 if right_half else 4,
                           text=f"communication > compute from {symbol} ≈ {fmt_num(d.crossover)}",
                           font=dict(size=13, color=EXTRAP_TEXT))
    fig.update_xaxes(title_text=factor_title(symbol, column), type=_axis_type(log_x))
    fig.update_yaxes(title_text=time_title("predicted time"), rangemode="tozero")
    _axis_ticks(fig, d, log_x)
    return style(fig, title, _fixed_text(d), height=480, legend="right")


@dataclass
class SpeedupData:
    p: np.ndarray
    speedup: np.ndarray
    efficiency: np.ndarray   # percent
    ideal: np.ndarray
    inside: np.ndarray
    p0: float
    measured_p: np.ndarray
    measured_speedup: np.ndarray
    measured_efficiency: np.ndarray
    scaling: ScalingData


def speedup_data(result, fixed: dict | None = None, meas: Measurements | None = None,
                 x_max: float | None = None, data: ScalingData | None = None) -> SpeedupData:
    """Speedup T(p0)/T(p) and parallel efficiency speedup/(p/p0) in %, p0 the smallest measured p
    (the smallest positive one when p = 0 was measured); the curve starts at p0."""
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
    return SpeedupData(d.x, sp, eff, ideal, d.inside, p0, mp, ms, me, d)


def speedup_figure(result, fixed: dict | None = None, meas: Measurements | None = None,
                   x_max: float | None = None, log_x: bool = False, title: str | None = "Speedup and parallel efficiency",
                   data: ScalingData | None = None) -> go.Figure:
    """Two panels against p: speedup over the smallest measured p (with the ideal line) and
    parallel efficiency (%)."""
    d = speedup_data(result, fixed, meas, x_max, data)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=(f"Speedup over p = {fmt_num(d.p0)}", "Parallel efficiency"))
    for col in (1, 2):
        _extrap_zone(fig, d.scaling, log_x, row=1, col=col, label=(col == 1))
    fig.add_trace(go.Scatter(x=d.p, y=d.ideal, mode="lines", name="ideal (linear)",
                             line=dict(color=IDEAL, dash="dash", width=1.5), hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=d.p, y=np.full(d.p.size, 100.0), mode="lines", showlegend=False,
                             line=dict(color=IDEAL, dash="dash", width=1.5), hoverinfo="skip"), row=1, col=2)
    for col, y, name, unit in ((1, d.speedup, "model", "×"), (2, d.efficiency, "model", " %")):
        ins = np.where(d.inside, y, np.nan)
        out = np.where(d.inside, np.nan, y)
        # join the dashed part to the solid one at the range boundary
        idx = np.flatnonzero(d.inside)
        if idx.size:
            for j in (idx[0], idx[-1]):
                out[j] = y[j]
        fig.add_trace(go.Scatter(x=d.p, y=ins, mode="lines", name="model", showlegend=(col == 1),
                                 line=dict(color=PREDICTED, width=3.5), legendgroup="model",
                                 hovertemplate=f"p = %{{x:.4g}}<br>%{{y:.3g}}{unit}<extra></extra>"), row=1, col=col)
        fig.add_trace(go.Scatter(x=d.p, y=out, mode="lines", name="model (extrapolated)", showlegend=(col == 1),
                                 line=dict(color=PREDICTED, width=3, dash="dash"), legendgroup="extra",
                                 hovertemplate=f"p = %{{x:.4g}}<br>%{{y:.3g}}{unit} (extrapolated)<extra></extra>"),
                      row=1, col=col)
    if d.measured_p.size:
        fig.add_trace(go.Scatter(x=d.measured_p, y=d.measured_speedup, mode="markers", name="measured (mean)",
                                 marker=dict(color=MEASURED, size=9), legendgroup="meas",
                                 hovertemplate="p = %{x:.4g}<br>measured %{y:.3g}×<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(x=d.measured_p, y=d.measured_efficiency, mode="markers", showlegend=False,
                                 marker=dict(color=MEASURED, size=9), legendgroup="meas",
                                 hovertemplate="p = %{x:.4g}<br>measured %{y:.3g} %<extra></extra>"), row=1, col=2)
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


def report_figures(result, meas: Measurements, symbol: str | None = None, fixed: dict | None = None,
                   cv_predicted=None, x_max: float | None = None, log_x: bool = False,
                   log_y: bool = False) -> dict[str, go.Figure]:
    """The figures of a report, by title: parity, shares, contributions, residuals and the scaling
    view (along ``symbol``, default p, the others at ``fixed``, up to ``x_max``)."""
    figs = {"Predicted against measured": parity_figure(result, meas, cv_predicted=cv_predicted),
            "Share of total predicted time": shares_figure(result),
            "Where the time goes, per configuration": contributions_figure(result, meas),
            "Residuals against each factor": residuals_figure(result, meas)}
    if result.factors:
        symbol = symbol if symbol in result.factors else ("p" if "p" in result.factors else next(iter(result.factors)))
        d = scaling_data(result, symbol, fixed, meas, x_max)
        figs["Scaling"] = scaling_figure(result, symbol, meas=meas, log_x=log_x, log_y=log_y, data=d)
        figs["Scaling: term contributions"] = scaling_contributions_figure(result, symbol, meas=meas, log_x=log_x,
                                                                           data=d)
        if symbol == "p":
            figs["Speedup and parallel efficiency"] = speedup_figure(result, meas=meas, log_x=log_x, data=d)
    return figs
