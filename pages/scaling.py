"""Scaling: how the predicted time grows along one factor, past the measured range, and why."""

import numpy as np
import streamlit as st

from perfmodel.plots import (FACTOR_WORDS, fmt_num, fmt_seconds, scaling_contributions_figure, scaling_data,
                             scaling_figure, speedup_data, speedup_figure, time_unit, typical_value)
from ui.nav import guard
from ui.widgets import md, require_result

guard()
ss = st.session_state
EXTEND = [1, 1.5, 2, 4, 8, 16, 32, 64]

st.title("Scaling")
require_result()
res, meas = ss["result"], ss["meas"]

symbols = list(res.factors)
if not symbols:
    st.info("The model has no factors, so there is nothing to scale.", icon=":material/info:")
    st.stop()

c = st.columns([2, 3, 1, 1])
default_x = "p" if "p" in symbols else symbols[0]
if ss.get("w:x") not in symbols:
    ss["w:x"] = default_x
x = c[0].selectbox("Factor on the x-axis", symbols, key="w:x",
                   format_func=lambda s: f"{s}: {FACTOR_WORDS.get(s, (res.factors[s],))[0]}",
                   help="The factor that grows along the x-axis; the others are fixed below.")
lo, hi = res.factor_ranges[x]
# The slider's labels do not depend on the factor: a widget whose labels change with another widget
# is a new widget to the browser, which would show one value while the script uses another.
if ss.get("w:extend") not in EXTEND:
    ss["w:extend"] = 4
extend = c[1].select_slider("Extend the curve to (× the largest measured value)", options=EXTEND, key="w:extend",
                            format_func=lambda v: f"{v:g} ×",
                            help="How far past the measured range to extrapolate. Predictions beyond the "
                                 "measured range are drawn dashed in the shaded zone: treat them with care.")
c[1].caption(f"up to {md(x)} = {fmt_num(hi * extend)} ({extend:g} × the largest measured {md(x)}, {fmt_num(hi)})")
log_x = c[2].toggle("Log x", value=hi / lo >= 8 if lo > 0 else False, key=f"w:logx:{x}",
                    help="Logarithmic x-axis (useful when the factor doubles from step to step).")
log_y = c[3].toggle("Log y", value=False, key="w:logy", help="Logarithmic time axis.")

def measured_values(s: str) -> list:
    return sorted(np.unique(meas.values(s)).tolist()) if s in meas.factors else [res.factor_ranges[s][0]]


others = [s for s in symbols if s != x]
fixed = {}
if others:
    st.markdown("**Fixed values of the other factors**")
    oc = st.columns(min(len(others), 4))
    for i, s in enumerate(others):
        values = measured_values(s)
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

data = scaling_data(res, x, fixed, meas, x_max=hi * extend)
# The HTML report (Export page) draws the same view.
ss["scaling_view"] = {"symbol": x, "fixed": dict(fixed), "x_max": hi * extend, "log_x": bool(log_x),
                      "log_y": bool(log_y)}

# The sentence a stakeholder reads first.
t_hi = float(np.interp(hi, data.x, data.total))
t_end = float(data.total[-1])
x_end = float(data.x[-1])
cats = {}
for s_, t in zip(data.styles, data.contributions.columns):
    cats[s_.category] = cats.get(s_.category, 0.0) + float(data.contributions[t].iloc[-1])
top = max(cats, key=cats.get) if cats else None
share = cats[top] / t_end * 100 if top and t_end else float("nan")
unit = time_unit(t_hi, t_end)  # one unit per sentence
msg = (f"At the largest measured {md(x)} = {fmt_num(hi)} the model predicts **{fmt_seconds(t_hi, unit)}**; "
       f"at {md(x)} = {fmt_num(x_end)} it predicts **{fmt_seconds(t_end, unit)}**"
       + (f", {share:.0f} % of it {top}" if top else "") + ".")
if data.crossover is not None:
    msg += f" Communication overtakes compute from {md(x)} ≈ {fmt_num(data.crossover)}."
st.info(msg, icon=":material/lightbulb:")

st.plotly_chart(scaling_figure(res, x, meas=meas, log_x=log_x, log_y=log_y, data=data),
                width="stretch", theme=None, key="scaling")
st.plotly_chart(scaling_contributions_figure(res, x, meas=meas, log_x=log_x, data=data),
                width="stretch", theme=None, key="scaling_contrib")

if "p" in symbols:
    if x == "p":
        sp = speedup_data(res, fixed, meas, data=data)
        fig = speedup_figure(res, fixed, meas, log_x=log_x, data=data)
    else:
        p_fixed = {s_: v for s_, v in fixed.items() if s_ != "p"}
        p_fixed[x] = typical_value(res, x, meas)
        p_lo, p_hi = res.factor_ranges["p"]
        pdata = scaling_data(res, "p", p_fixed, meas, x_max=p_hi * extend)
        sp = speedup_data(res, data=pdata)
        # the speedup is always along p: its axis follows p's range, not the x-axis factor's toggle
        fig = speedup_figure(res, log_x=bool(p_lo > 0 and p_hi * extend / p_lo >= 8), data=pdata)
    best = int(np.nanargmax(sp.speedup)) if np.isfinite(sp.speedup).any() else None
    st.plotly_chart(fig, width="stretch", theme=None, key="speedup")
    if best is not None and sp.p[best] > sp.p0:
        st.caption(f"Predicted best speedup {sp.speedup[best]:.2f}× at p = {fmt_num(sp.p[best])} "
                   f"(efficiency {sp.efficiency[best]:.0f} %); ideal would be {sp.ideal[best]:.0f}×.")
    elif best is not None:
        st.caption(f"The model predicts no speedup beyond p = {fmt_num(sp.p0)}: the time grows with p at these "
                   "values of the other factors.")
else:
    st.caption("Speedup and parallel efficiency need the symbol p (workers) mapped on the Data page.")
