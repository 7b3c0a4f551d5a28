"""Scaling: how the predicted time grows along one factor, past the measured range, and why."""

import streamlit as st

from perfmodel.plots.scaling import (
    scaling_contributions_figure,
    scaling_data,
    scaling_figure,
    typical_value,
)
from perfmodel.plots.speedup import speedup_data, speedup_figure
from perfmodel.plots.style import view_unit
from ui import advise_panel, intervals, scaling_panel
from ui.groups_panel import group_columns
from ui.nav import guard
from ui.text import md
from ui.widgets import require_result

guard()
ss = st.session_state

st.title("Scaling")
require_result()
intervals.attach()  # before drawing: a quick fit's intervals are shown at once
res, meas = ss["result"], ss["meas"]
if not res.factors:
    st.info("The model has no factors, so there is nothing to scale.", icon=":material/info:")
    st.stop()

view = scaling_panel.controls(res, meas)
x = view.symbol
data = scaling_data(res, x, view.fixed, meas, x_max=view.x_max)
unit = view_unit(data.total, data.high, data.points_y)  # one unit for the headline, the axes and the tables
poor = scaling_panel.poor_fit_message(res, group_columns())
if poor:
    st.warning(poor, icon=":material/report:")
else:
    st.info(scaling_panel.headline(res, data, view, unit), icon=":material/lightbulb:")
for w in res.prediction_warnings({x: data.x[-1:], **{s: [v] for s, v in view.fixed.items()}}, unit):
    st.warning(md(w), icon=":material/warning:")

rated = scaling_panel.show_throughput(res, data)
st.plotly_chart(
    scaling_figure(res, x, meas=meas, log_x=view.log_x, log_y=view.log_y, data=data, unit=unit, throughput=rated),
    width="stretch",
    theme=None,
    key="scaling",
)
intervals.facts(res)
st.plotly_chart(
    scaling_contributions_figure(res, x, meas=meas, log_x=view.log_x, data=data, unit=unit, share=view.log_y),
    width="stretch",
    theme=None,
    key="scaling_contrib",
)

if "p" in res.factors:
    if x == "p":
        sp = speedup_data(res, view.fixed, meas, data=data)
        fig = speedup_figure(res, view.fixed, meas, log_x=view.log_x, data=data)
    else:  # the speedup is always along p, on p's own scale (not the x-axis factor's toggle)
        p_fixed = {**{s: v for s, v in view.fixed.items() if s != "p"}, x: typical_value(res, x, meas)}
        p_lo, p_hi = res.factor_ranges["p"]
        pdata = scaling_data(res, "p", p_fixed, meas, x_max=p_hi * view.extend)
        sp = speedup_data(res, data=pdata)
        fig = speedup_figure(res, log_x=bool(p_lo > 0 and p_hi * view.extend / p_lo >= 8), data=pdata)
    st.plotly_chart(fig, width="stretch", theme=None, key="speedup")
    st.caption("No best speedup is quoted: the fit is too poor (above)." if poor else scaling_panel.speedup_caption(sp))
else:
    st.caption("Speedup and parallel efficiency need the symbol p (workers) mapped on the Data page.")

st.divider()
if intervals.ready():
    advise_panel.show(res, meas, x, view.fixed, float(data.x[-1]), unit)
