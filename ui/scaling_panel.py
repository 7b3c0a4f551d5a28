"""Scaling-page components: the view's controls (factor, extension, log axes, fixed values) and the
sentence a stakeholder reads first.

The controls keep their values in ``st.session_state`` (keys ``w:x``, ``w:extend``,
``w:logx:<symbol>``, ``w:logy``, ``w:fix:<symbol>``); the view they choose is also stored under
``scaling_view`` for the HTML report of the Export page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from perfmodel.plots.style import FACTOR_WORDS, fmt_num, fmt_range, fmt_seconds, time_unit
from perfmodel.plots.scaling import typical_value
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
    x = c[0].selectbox("Factor on the x-axis", symbols, key="w:x",
                       format_func=lambda s: f"{s}: {FACTOR_WORDS.get(s, (res.factors[s],))[0]}",
                       help="The factor that grows along the x-axis; the others are fixed below.")
    lo, hi = res.factor_ranges[x]
    # The slider's labels do not depend on the factor: a widget whose labels change with another
    # widget is a new widget to the browser, which would show one value while the script uses another.
    if ss.get("w:extend") not in EXTEND:
        ss["w:extend"] = 4
    extend = c[1].select_slider("Extend the curve to (× the largest measured value)", options=EXTEND,
                                key="w:extend", format_func=lambda v: f"{v:g} ×",
                                help="How far past the measured range to extrapolate. Predictions beyond the "
                                     "measured range are drawn dashed in the shaded zone: treat them with care.")
    c[1].caption(f"up to {md(x)} = {fmt_num(hi * extend)} ({extend:g} × the largest measured {md(x)}, "
                 f"{fmt_num(hi)})")
    log_x = c[2].toggle("Log x", value=hi / lo >= 8 if lo > 0 else False, key=f"w:logx:{x}",
                        help="Logarithmic x-axis (useful when the factor doubles from step to step).")
    log_y = c[3].toggle("Log y", value=False, key="w:logy", help="Logarithmic time axis.")
    view = View(x, float(extend), bool(log_x), bool(log_y), _fixed_values(res, meas, x), float(hi))
    ss["scaling_view"] = {"symbol": x, "fixed": dict(view.fixed), "x_max": view.x_max, "log_x": view.log_x,
                          "log_y": view.log_y}
    return view


def _fixed_values(res, meas, x: str) -> dict:
    ss = st.session_state
    others = [s for s in res.factors if s != x]
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
                f"{md(s)}: {md(words)}", options=values, key=k, format_func=fmt_num,
                help=f"Hold {md(s)} at one of its measured values while {md(x)} varies.")
        else:
            fixed[s] = values[0]
            oc[i % len(oc)].markdown(f"{md(s)}: {md(words)} = **{fmt_num(values[0])}** (the only measured value)")
    return fixed


def headline(data, view: View) -> str:
    """The predicted time at the largest measured value and at the end of the curve, one unit for
    both, what most of it is, and where communication overtakes compute."""
    x, hi = view.symbol, view.measured_max
    t_hi = float(np.interp(hi, data.x, data.total))
    t_end, x_end = float(data.total[-1]), float(data.x[-1])
    cats: dict = {}
    for s, t in zip(data.styles, data.contributions.columns):
        cats[s.category] = cats.get(s.category, 0.0) + float(data.contributions[t].iloc[-1])
    top = max(cats, key=cats.get) if cats else None
    total = sum(cats.values())  # the formula's own total: the point may lean towards the reference structures
    share = cats[top] / total * 100 if top and total else float("nan")
    unit = time_unit(t_hi, t_end)

    def at(t: float, where: float) -> str:  # the prediction and, once computed, its 90 % interval
        text = f"**{fmt_seconds(t, unit)}**"
        if data.low is not None:
            lo, up = (float(np.interp(where, data.x, v)) for v in (data.low, data.high))
            text += f" ({fmt_seconds(lo, unit).split(' ')[0]}–{fmt_seconds(up, unit)})"
        return text

    msg = (f"At the largest measured {md(x)} = {fmt_num(hi)} the model predicts {at(t_hi, hi)}; "
           f"at {md(x)} = {fmt_num(x_end)} it predicts {at(t_end, x_end)}"
           + (f", {share:.0f} % of it {top}" if top else "") + ".")
    if data.low is not None:
        msg += " Ranges are 90 % intervals."
    if data.crossover is not None:
        msg += f" Communication overtakes compute from {md(x)} ≈ {fmt_num(data.crossover)}."
    return msg


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
        return (f"Predicted best speedup {fmt_range(sp.speedup[best], lo, hi, '×')} at p = {fmt_num(sp.p[best])} "
                f"(efficiency {fmt_range(sp.efficiency[best], eff_lo, eff_hi, ' %')}); ideal would be "
                f"{sp.ideal[best]:.0f}×" + (" (90 % intervals)." if lo is not None else "."))
    return (f"The model predicts no speedup beyond p = {fmt_num(sp.p0)}: the time grows with p at these "
            "values of the other factors.")
