"""Scaling-page components: the view's controls (factor, extension, log axes, fixed values) and the
sentence a stakeholder reads first.

The controls keep their values in ``st.session_state`` (keys ``w:x``, ``w:extend``,
``w:logx:<symbol>``, ``w:logy``, ``w:fix:<symbol>``, ``w:show_rate``); the view they choose is also stored under
``scaling_view`` for the HTML report of the Export page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from perfmodel import wording
from perfmodel.plots.scaling import rate_work, scaling_grid, typical_value
from perfmodel.plots.style import FACTOR_WORDS, fmt_num, fmt_range, log_scale_default
from ui import links
from ui.text import md

EXTEND = [1, 1.5, 2, 4, 8, 16, 32, 64]


@dataclass
class View:
    symbol: str
    extend: float
    log_x: bool
    log_y: bool
    fixed: dict
    measured_max: float

    @property
    def x_max(self) -> float:
        return self.measured_max * self.extend


def controls(res, meas) -> View:
    """The factor on the x-axis, how far to extend it, log axes and the other factors' values."""
    ss = st.session_state
    symbols = list(res.factors)
    _seed_from_link(symbols)
    c = st.columns([2, 3, 1, 1])
    if ss.get("w:x") not in symbols:
        ss["w:x"] = "p" if "p" in symbols else symbols[0]
    x = c[0].selectbox(
        "Factor on the x-axis",
        symbols,
        key="w:x",
        format_func=lambda s: f"{s}: {FACTOR_WORDS.get(s, (res.factors[s],))[0]}",
        help="The factor that grows along the x-axis; the others are fixed below.",
    )
    lo, hi = res.factor_ranges[x]
    # The slider's labels do not depend on the factor: a widget whose labels change with another
    # widget is a new widget to the browser, which would show one value while the script uses another.
    if ss.get("w:extend") not in EXTEND:
        ss["w:extend"] = 4
    extend = c[1].select_slider(
        "Extend the curve to (× the largest measured value)",
        options=EXTEND,
        key="w:extend",
        format_func=lambda v: f"{v:g} ×",
        help="How far past the measured range to extrapolate. Predictions beyond the "
        "measured range are drawn dashed in the shaded zone: treat them with care.",
    )
    c[1].caption(f"up to {md(x)} = {fmt_num(hi * extend)} ({extend:g} × the largest measured {md(x)}, {fmt_num(hi)})")
    log_x = c[2].toggle(
        "Log x",
        value=hi / lo >= 8 if lo > 0 else False,
        key=f"w:logx:{x}",
        help="Logarithmic x-axis (useful when the factor doubles from step to step).",
    )
    log_y = c[3].toggle(
        "Log y",
        value=_spans_a_decade(res, meas, x, lo, hi * extend),
        key="w:logy",
        help="Logarithmic time axis (on at first when the curve spans a decade or more: on a "
        "linear axis its small end and its range would be a few pixels tall).",
    )
    view = View(x, float(extend), bool(log_x), bool(log_y), _fixed_values(res, meas, x), float(hi))
    links.set_page_params(  # a link to this view opens it (the defaults are left out)
        {"x": x if x != ("p" if "p" in symbols else symbols[0]) else "", "extend": f"{extend:g}" if extend != 4 else ""}
    )
    ss["scaling_view"] = {
        "data_key": ss.get("data_key"),  # the view of this data only (ui.state drops it with other data)
        "symbol": x,
        "fixed": dict(view.fixed),
        "x_max": view.x_max,
        "log_x": view.log_x,
        "log_y": view.log_y,
    }
    return view


#: Query keys of the Scaling page's settings in a link.
LINK_KEYS = ("x", "extend")


def _seed_from_link(symbols: list[str]) -> None:
    """Put the opening link's factor and extension into the widgets (once per session)."""
    ss = st.session_state
    got = links.linked_page_params(LINK_KEYS)
    if got.get("x") in symbols:
        ss["w:x"] = got["x"]
    try:
        extend = float(got["extend"]) if "extend" in got else None
    except ValueError:
        extend = None
    if extend in EXTEND:
        ss["w:extend"] = int(extend) if float(extend).is_integer() else extend


def show_throughput(res, data) -> bool:
    """For a fit made from a throughput, whether the scaling chart shows the rate (work / time) rather
    than the time: a choice above the chart; False, and no choice, for any other fit, or when the
    work per run is a column the model has no factor for (no rate can be told along the curve)."""
    if rate_work(res, data) is None:
        return False
    column = res.rate["column"]
    shown = st.radio(
        "Show on the chart",
        ["time", "throughput"],
        horizontal=True,
        key="w:show_rate",
        format_func=lambda v: "time per run" if v == "time" else f"throughput ({md(column)})",
        help="The model is fitted to the time of a run (the work per run over the throughput); "
        "the throughput view draws the same prediction, its range and the measured runs "
        "as rates again. The charts below stay in time: a rate does not add up by terms.",
    )
    return shown == "throughput"


def _spans_a_decade(res, meas, x: str, lo: float, x_max: float) -> bool:
    """Whether the predicted time along ``x`` (the other factors at their chosen or typical values)
    spans a factor of 10 or more: then the time axis is logarithmic by default."""
    ss = st.session_state
    fixed = {s: ss.get(f"w:fix:{s}", typical_value(res, s, meas)) for s in res.target_factors() if s != x}
    grid = scaling_grid(lo, max(x_max, lo), False, 24)
    try:
        t = res.predict({x: grid, **{s: np.full(grid.size, float(v)) for s, v in fixed.items()}})
    except Exception:
        return False
    return log_scale_default(t)


def _fixed_values(res, meas, x: str) -> dict:
    ss = st.session_state
    others = [s for s in res.target_factors() if s != x]  # the nodes of each p follow from it
    fixed = {}
    if not others:
        return fixed
    st.markdown("**Fixed values of the other factors**")
    oc = st.columns(min(len(others), 4))
    for i, s in enumerate(others):
        values = sorted(np.unique(meas.values(s)).tolist()) if s in meas.factors else [res.factor_ranges[s][0]]
        k = f"w:fix:{s}"
        if ss.get(k) not in values:
            ss[k] = typical_value(res, s, meas)
        words = FACTOR_WORDS.get(s, (res.factors[s],))[0]
        if len(values) > 1:
            fixed[s] = oc[i % len(oc)].select_slider(
                f"{md(s)}: {md(words)}",
                options=values,
                key=k,
                format_func=fmt_num,
                help=f"Hold {md(s)} at one of its measured values while {md(x)} varies.",
            )
        else:
            fixed[s] = values[0]
            oc[i % len(oc)].markdown(f"{md(s)}: {md(words)} = **{fmt_num(values[0])}** (the only measured value)")
    return fixed


def headline(res, data, view: View, unit: str) -> str:
    """The predicted time at the largest measured value and at the end of the curve, in the view's
    ``unit``, each with its range, what most of it is, and where communication overtakes compute:
    :func:`perfmodel.wording.headline`, the sentence the report and the CLI's report say too."""
    words = wording.headline(
        res, view.symbol, view.fixed, view.measured_max, float(data.x[-1]), unit=unit, crossover=data.crossover
    )
    return words.markdown(md)


def poor_fit_message(res, group_columns: list[str]) -> str | None:
    """What the page says in the headline's place when the fit is too poor to quote
    (:func:`perfmodel.wording.poor_fit`), with what to do; None for a usable fit."""
    verdict = wording.poor_fit(res)
    if verdict is None:
        return None
    todo = []
    if group_columns:
        cols = ", ".join(f"*{md(c)}*" for c in group_columns[:4])
        todo.append(
            f"the data has columns that split it into groups ({cols}): fit one model per group on the **Groups** page"
        )
    todo.append("add terms or let **Find terms for me** search them on the **Model** page")
    todo.append("map a factor the time depends on that is not mapped yet (**Data** page)")
    head, _, reasons = verdict.partition(": ")
    return (
        f"**{md(head)}**: {md(reasons.rstrip('.'))}. The curves below show "
        f"what it predicts, not what a run will take. To do: " + "; or ".join(todo) + "."
    )


def speedup_caption(sp) -> str:
    """The best predicted speedup with its range, at a GPU count one would run (a power of two or a
    measured value when p counts whole workers)."""
    ok = np.isfinite(sp.speedup)
    if not ok.any():
        return ""
    whole = np.all(np.asarray(sp.measured_p, float) == np.round(sp.measured_p)) if sp.measured_p.size else True
    if whole:
        runnable = np.isin(sp.p, sp.measured_p) | (np.log2(np.maximum(sp.p, 1e-300)) % 1 == 0)
        ok &= runnable if (ok & runnable).any() else ok
    best = int(np.flatnonzero(ok)[np.argmax(sp.speedup[ok])])
    if sp.p[best] > sp.p0:
        lo = None if sp.speedup_low is None else sp.speedup_low[best]
        hi = None if sp.speedup_high is None else sp.speedup_high[best]
        eff_lo = None if lo is None else lo / sp.ideal[best] * 100
        eff_hi = None if hi is None else hi / sp.ideal[best] * 100
        return (
            f"Predicted best speedup {fmt_range(sp.speedup[best], lo, hi, '×')} at p = {fmt_num(sp.p[best])} "
            f"(efficiency {fmt_range(sp.efficiency[best], eff_lo, eff_hi, ' %')}); ideal would be "
            f"{sp.ideal[best]:.0f}×" + (" (90 % intervals)." if lo is not None else ".")
        )
    return (
        f"The model predicts no speedup beyond p = {fmt_num(sp.p0)}: the time grows with p at these "
        "values of the other factors."
    )
