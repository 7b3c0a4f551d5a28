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

from perfmodel.fitting.quality import judge_result
from perfmodel.plots.scaling import rate_work, scaling_grid, typical_value
from perfmodel.plots.style import FACTOR_WORDS, fmt_num, fmt_range, fmt_seconds, log_scale_default, unit_seconds
from perfmodel.uncertainty.ranges import range_at
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
    ss["scaling_view"] = {
        "symbol": x,
        "fixed": dict(view.fixed),
        "x_max": view.x_max,
        "log_x": view.log_x,
        "log_y": view.log_y,
    }
    return view


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
    ``unit``, each with the range :func:`perfmodel.uncertainty.ranges.range_at` gives (the one the
    advise panel quotes), what most of it is, and where communication overtakes compute."""
    x, hi = view.symbol, view.measured_max
    x_end = float(data.x[-1])
    cats: dict = {}
    for s, t in zip(data.styles, data.contributions.columns, strict=True):
        cats[s.category] = cats.get(s.category, 0.0) + float(data.contributions[t].iloc[-1])
    top = max(cats, key=cats.get) if cats else None
    total = sum(cats.values())  # the formula's own total: the point may lean towards the reference structures
    share = cats[top] / total * 100 if top and total else float("nan")
    k = unit_seconds(unit)

    rate = getattr(res, "rate", None) or {}
    work = rate.get("work") if isinstance(rate.get("work"), (int, float)) else None

    def as_rate(t: float, lo: float | None = None, hi: float | None = None) -> str:
        """A time predicted for a throughput fit, as the rate it stands for (work / time)."""
        if work is None:
            return ""
        text = fmt_range(work / t, *((work / hi, work / lo) if lo and hi else (None, None)))
        return f", that is {text} {md(rate['column'])}"

    def at(where: float) -> str:  # the prediction and, once computed, its 90 % interval
        r = range_at(res, {x: where, **view.fixed})
        if r is None:
            t = float(np.interp(where, data.x, data.total))
            return f"**{fmt_seconds(t, unit)}**{as_rate(t)}"
        value, _, rest = fmt_range(r.point / k, r.low / k, r.high / k, f" {unit}").partition(" (")
        return (f"**{value}** ({rest}" if rest else f"**{value}**") + as_rate(r.point, r.low, r.high)

    has_range = getattr(res, "has_intervals", False)
    msg = (
        f"At the largest measured {md(x)} = {fmt_num(hi)} the model predicts {at(hi)}; "
        f"at {md(x)} = {fmt_num(x_end)} it predicts {at(x_end)}" + (f", {share:.0f} % of it {top}" if top else "") + "."
    )
    if has_range:
        msg += " Ranges are 90 % intervals."
    if data.crossover is not None:
        msg += f" Communication overtakes compute from {md(x)} ≈ {fmt_num(data.crossover)}."
    return msg


def poor_fit_message(res, group_columns: list[str]) -> str | None:
    """What the page says in the headline's place when the fit is too poor to quote
    (:func:`perfmodel.fitting.quality.judge_result`), with what to do; None for a usable fit."""
    verdict = judge_result(res)
    if not verdict.poor:
        return None
    todo = []
    if group_columns:
        cols = ", ".join(f"*{md(c)}*" for c in group_columns[:4])
        todo.append(
            f"the data has columns that split it into groups ({cols}): fit one model per group on the **Groups** page"
        )
    todo.append("add terms or let **Find terms for me** search them on the **Model** page")
    todo.append("map a factor the time depends on that is not mapped yet (**Data** page)")
    return (
        f"**This fit is too poor to quote a prediction**: {md(verdict.sentence())}. The curves below show "
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
