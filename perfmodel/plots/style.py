"""Styling in one place: fonts, colours per term category, axis titles with units, number and time
formats, log ticks, and each term's label and colour (:func:`term_styles`).

Imports from the model language and fitting layers only.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import wording
from ..data.measurements import Measurements
from ..fitting.categories import library_matches, term_categories
from ..language.overlap import partner_text

# -- styling: the one place ------------------------------------------------------------------
FONT = dict(family="Inter, 'Source Sans Pro', 'Helvetica Neue', Arial, sans-serif", size=15, color="#1f2937")


TITLE_SIZE = 19


GRID = "#e5e7eb"


AXIS_LINE = "#9ca3af"


MEASURED = "#111827"  # measured points


PREDICTED = "#2563eb"  # the model's curve


IDEAL = "#9ca3af"  # y = x, ideal speedup


BAND = "rgba(37, 99, 235, 0.10)"  # ±10 % band


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
DISCRETE = [
    "#2563eb",
    "#ea580c",
    "#059669",
    "#9333ea",
    "#dc2626",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4b5563",
    "#65a30d",
]


#: One colour per group (the Groups page): Okabe & Ito's colour-blind-safe palette (2008), its yellow
#: last (faint on white), its black kept for the ideal line's neighbours to stay apart.
GROUP_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442"]


def translucent(hex_color: str, alpha: float) -> str:
    """``#RRGGBB`` as an ``rgba(...)`` string with opacity ``alpha`` (a band in a curve's colour)."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha:g})"


CONTINUOUS = "Viridis"


BAND_PCT = 10.0


#: Plain-word names of the library terms (perfmodel.language.terms.library keys).
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


def growth_title(what: str, symbol: str) -> str:
    """A chart's title for ``what`` along ``symbol``: "Run time as workers grow", "… as global batch grows"."""
    words = FACTOR_WORDS.get(symbol, (symbol,))[0]
    return f"{what} as {words} {'grow' if words.endswith('s') else 'grows'}"


TIME_UNIT = "s"


#: The narrowest plot a legend below is laid out for (px): a chart in half a page on a laptop.
NARROW_PLOT = 380


def legend_margin(fig: go.Figure, width: float = NARROW_PLOT) -> int:
    """Bottom margin (px) for the x-axis ticks and title and a legend below them: as many 24 px rows as
    its entries (about 40 px and 8 px a character each) take at ``width``."""
    names = [str(t.name) for t in fig.data if t.name and t.showlegend is not False]
    widths = [40 + 8 * len(re.sub(r"<[^>]+>", "", n)) for n in names]
    rows, used = (1, 0) if widths else (0, 0)
    for w in widths:
        if used and used + w > width:
            rows, used = rows + 1, 0
        used += w
    return 95 + 26 * rows


def style(
    fig: go.Figure, title: str | None = None, subtitle: str | None = None, height: int = 460, legend: str = "top"
) -> go.Figure:
    """Apply the house style (fonts, grid, margins, legend position) to ``fig``. ``legend``: "top" (above
    the plot), "inside" (its top-left corner), "below" (at the figure's foot, under the x-axis title: for
    a narrow chart whose legend may wrap) or "right"."""
    # Title, subtitle and a legend above the plot each get their own band of the top margin.
    top = (90 if title else 50) + (35 if title and subtitle and legend == "top" else 0)
    fig.update_layout(
        template="plotly_white",
        font=FONT,
        height=height,
        margin=dict(l=70, r=30, t=top, b=70),
        hoverlabel=dict(font_size=14, font_family=FONT["family"]),
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    if title:
        t = dict(
            text=title,
            x=0.0,
            xanchor="left",
            font=dict(size=TITLE_SIZE),
            yref="container",
            y=1,
            yanchor="top",
            pad=dict(t=18),
        )
        if subtitle:
            t["subtitle"] = dict(text=subtitle, font=dict(size=14, color="#4b5563"))
        fig.update_layout(title=t)
    if legend == "top":
        fig.update_layout(
            legend=dict(
                orientation="h",
                yanchor="bottom",
                y=1.02,
                x=0,
                xanchor="left",
                font=dict(size=14),
                bgcolor="rgba(255,255,255,0)",
            )
        )
    elif legend == "inside":
        fig.update_layout(
            legend=dict(
                orientation="v",
                yanchor="top",
                y=0.98,
                x=0.02,
                xanchor="left",
                font=dict(size=14),
                bgcolor="rgba(255,255,255,0.85)",
                bordercolor=GRID,
                borderwidth=1,
                traceorder="normal",
            )
        )
    elif legend == "below":
        # At the foot of the figure (container coordinates), below the x-axis title, with a bottom margin
        # for as many rows as the entries may wrap into at a half-page width: it never reaches the title.
        fig.update_layout(
            legend=dict(
                orientation="h",
                yref="container",
                yanchor="bottom",
                y=0,
                x=0,
                xanchor="left",
                font=dict(size=14),
                bgcolor="rgba(255,255,255,0)",
            ),
            margin=dict(b=legend_margin(fig)),
        )
    elif legend == "right":
        fig.update_layout(
            legend=dict(
                orientation="v", yanchor="top", y=1, x=1.02, xanchor="left", font=dict(size=14), traceorder="normal"
            )
        )
    fig.update_xaxes(
        showgrid=True,
        gridcolor=GRID,
        zeroline=False,
        linecolor=AXIS_LINE,
        showline=True,
        ticks="outside",
        tickcolor=AXIS_LINE,
        title_font=dict(size=16),
        automargin=True,
    )
    fig.update_yaxes(
        showgrid=True,
        gridcolor=GRID,
        zeroline=False,
        linecolor=AXIS_LINE,
        showline=True,
        ticks="outside",
        tickcolor=AXIS_LINE,
        title_font=dict(size=16),
        automargin=True,
    )
    return fig


def empty_figure(message: str, x_title: str = "", y_title: str = "", title: str | None = None) -> go.Figure:
    """A figure with axis titles and a centred message instead of data."""
    fig = go.Figure()
    fig.add_annotation(
        text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16, color="#6b7280")
    )
    fig.update_xaxes(title_text=x_title, showticklabels=False)
    fig.update_yaxes(title_text=y_title, showticklabels=False)
    return style(fig, title)


def time_title(what: str = "time", unit: str = TIME_UNIT) -> str:
    return f"{what} ({unit})"


def text_html(value) -> str:
    """User text (a group value, a column name) for Plotly's names, ticks and hover text, which read
    HTML (``<a href>``, ``<b>``) and ``%{...}`` templates: both made inert."""
    return html.escape(str(value)).replace("%", "&#37;")


def factor_title(symbol: str, column: str | None = None) -> str:
    """Axis title of a factor, e.g. ``data size N (samples)``, ``workers p``."""
    if symbol in FACTOR_WORDS:
        words, unit = FACTOR_WORDS[symbol]
        return f"{words} {symbol}" + (f" ({unit})" if unit else "")
    if column and column != symbol:  # a column name is user text: no markup in it
        return f"{text_html(column)}, {symbol}"
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


def fmt_range(v: float, lo: float | None = None, hi: float | None = None, unit: str = "") -> str:
    """``31× (27–34×)``: the value and its range, rounded to what the range supports
    (:func:`perfmodel.wording.fmt_range`, the one rule of the app, the CLI and the report)."""
    return wording.fmt_range(v, lo, hi, unit)


_TIME_UNITS = (("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))


def time_unit(*values: float) -> str:
    """The unit that reads well for the largest of ``values``: ms below 1 s, s below 2 min, min
    below 2 h, else h."""
    a = max((abs(float(v)) for v in values if math.isfinite(float(v))), default=0.0)
    return "ms" if a < 1 else "s" if a < 120 else "min" if a < 7200 else "h"


def unit_seconds(unit: str) -> float:
    """Seconds in one ``unit`` (ms, s, min, h)."""
    return dict(_TIME_UNITS)[unit]


def view_unit(*arrays) -> str:
    """One time unit for a whole view (headline, axes, tables), chosen by :func:`time_unit` from the
    largest finite value of ``arrays`` (seconds)."""
    values = [np.asarray(a, float).ravel() for a in arrays if a is not None]
    values = [v[np.isfinite(v)] for v in values]
    return time_unit(max((float(np.abs(v).max()) for v in values if v.size), default=0.0))


def log_scale_default(values, ratio: float = 10.0) -> bool:
    """A log axis by default when the positive ``values`` span ``ratio`` (a decade) or more: on a
    linear axis the small end, and a band around it, would be a few pixels tall."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return bool(v.size and v.min() > 0 and v.max() / v.min() >= ratio)


def fmt_seconds(v: float, unit: str | None = None) -> str:
    """A time with a unit that reads well: 850 ms, 12.3 s, 4.2 min, 3.1 h; ``unit`` forces one of
    ms, s, min, h (so that the times of one sentence share a unit: ``time_unit(a, b)``)."""
    v = float(v)
    if not math.isfinite(v):
        return str(v)
    return wording.fmt_time(v, unit=unit or time_unit(v))


# -- terms: plain-word labels and category colours -------------------------------------------
@dataclass
class TermStyle:
    """How one fitted term is named and coloured."""

    text: str  # the term as written in the expression, e.g. "I*b^e_b"
    label: str  # plain words, e.g. "Compute per batch"
    category: str  # start-up / compute / communication / other
    color: str
    formula: str  # the term with fitted exponents, e.g. "I·b^0.89"
    meaning: str = ""
    overlapped_with: str = ""  # for a term inside an overlap, the other side's terms, e.g. "I·min(p - 1, 1)"
    note: str = ""  # e.g. "overlapped with I·min(p - 1, 1) (γ = 3; ...)" for a term inside an overlap

    @property
    def legend(self) -> str:
        """Legend entry: plain words, then the formula in grey."""
        if self.text == "1":
            return self.label
        if self.label == self.formula:
            return f"{self.formula} <span style='color:#6b7280'>({self.category})</span>"
        return f"{self.label} <span style='color:#6b7280'>{self.formula}</span>"


def term_name(s: TermStyle, grey_html: bool = False) -> str:
    """A term's name for a legend or a column: its plain-word label and the term as written
    (``Compute per batch I·b^e1``; the term in grey HTML with ``grey_html``), the label alone for the
    intercept, the term alone when it has no label of its own."""
    shown = s.text.replace("*", "·")
    if s.text == "1":
        return s.label
    if s.label in (s.formula, shown):
        return shown
    return f"{s.label} <span style='color:#6b7280'>{shown}</span>" if grey_html else f"{s.label} {shown}"


def _pretty(term_text: str, params: dict) -> str:
    out = term_text
    for name, v in sorted(params.items(), key=lambda kv: -len(kv[0])):
        out = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", f"{v:.3g}", out)
    return out.replace("*", "·")


def term_styles(result) -> list[TermStyle]:
    """Label, category and colour of each of ``result``'s terms (in term order)."""
    libs, overlaps = library_matches(result)
    categories = term_categories(result)
    used = {c: 0 for c in CATEGORY_COLORS}
    pretty = [_pretty(t, result.params) for t in result.terms]
    out = []
    for k, text in enumerate(result.terms):
        lib, category, formula = libs[k], categories[k], pretty[k]
        if lib is not None:
            label, meaning = TERM_LABELS.get(lib.key, lib.key), lib.meaning
        else:
            label, meaning = formula, ""
        shades = CATEGORY_COLORS[category]
        color = shades[used[category] % len(shades)]
        used[category] += 1
        if result.signs[k] < 0:
            formula = "−" + formula
        partners, note = partner_text(overlaps, pretty, k) or "", ""
        if partners:
            grp = next(g for g in overlaps if k in g.terms)
            note = (
                f"overlapped with {partners} (γ = {result.params[grp.param]:.3g}; the overlapped time is "
                "split by the sides' γ-th powers)"
            )
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
    return log_scale_default(values, 8.0)


#: Mantissas tried for log-axis ticks, sparsest first.
_LOG_MANTISSAS = (
    (1,),
    (1, 3),
    (1, 2, 5),
    (1, 2, 3, 5),
    (1, 1.5, 2, 3, 5, 7),
    (1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9),
)


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
            ticks = [2.0**k for k in range(k0, k1 + 1) if lo * (1 - eps) <= 2.0**k <= hi * (1 + eps)]
            step = max(1, math.ceil(len(ticks) / 10))
            if len(ticks[::step]) >= MIN_TICKS - 1:
                return ticks[::step]
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mant in _LOG_MANTISSAS:
        ticks = [
            m_ * 10.0**d for d in range(d0, d1 + 1) for m_ in mant if lo * (1 - eps) <= m_ * 10.0**d <= hi * (1 + eps)
        ]
        if len(ticks) > 10 and mant == _LOG_MANTISSAS[0]:
            return ticks[:: math.ceil(len(ticks) / 10)]
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
    ticks: list[float] = []
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


def note_html(s: TermStyle) -> str:
    return f"<br><i>{html.escape(s.note)}</i>" if s.note else ""


def factor_grid(n: int, max_cols: int) -> tuple[go.Figure, int, int]:
    """A grid of subplots sharing the y-axis, one per factor: (figure, rows, columns)."""
    rows = math.ceil(n / max(min(n, max_cols), 1))
    cols = math.ceil(n / rows)  # balanced: 4 panels in 2 × 2, not 3 + a lone one
    fig = make_subplots(
        rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.05, vertical_spacing=0.22 if rows > 1 else 0.1
    )
    return fig, rows, cols


def factor_axes(fig: go.Figure, d, s: str, meas: Measurements, r: int, c: int, y_title: str) -> None:
    """Title, scale and ticks of factor ``s``'s x-axis; the y title on the first column."""
    fig.update_xaxes(
        title_text=factor_title(s, meas.factors.get(s)), row=r, col=c, type="log" if d.log_x[s] else "linear"
    )
    if d.log_x[s]:
        set_log_ticks(fig, "x", d.x[s].min(), d.x[s].max(), d.x[s], row=r, col=c)
    if c == 1:
        fig.update_yaxes(title_text=y_title, row=r, col=c)
