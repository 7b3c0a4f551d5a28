"""Plan: time, GPU-hours and cost per configuration, the chance of meeting a deadline and a budget,
and the recommendation a manager reads first (perfmodel.plan on the shown fit)."""

import streamlit as st

from perfmodel.plots.plan import plan_deadline_figure, plan_frontier_figure
from perfmodel.spreadsheet import to_csv
from ui import intervals, plan_panel
from ui.nav import guard
from ui.text import md
from ui.widgets import require_result

guard()
ss = st.session_state

st.title("Plan")
require_result()
intervals.attach()  # before drawing: a quick fit's intervals (and so the probabilities) are shown at once
res, meas = ss["result"], ss["meas"]
if "p" not in res.factors:
    st.info(
        "A plan compares numbers of workers: map a column to the symbol p on the Data page.", icon=":material/info:"
    )
    st.stop()
st.caption(
    "How long the run takes and what it costs for each number of workers, with the model's ranges, "
    "and which one to choose for a deadline or a budget."
)

kwargs, problems = plan_panel.controls(res, meas)
for problem in problems:
    st.error(md(problem), icon=":material/error:")
frame = plan_panel.make(res, kwargs) if kwargs else None
if frame is None:
    st.stop()

st.divider()
plan_panel.recommendation(frame)
far = {"p": [max(kwargs["grid"]["p"])], **{s: [v] for s, v in kwargs["at"].items()}}
for w in res.prediction_warnings(far):
    st.warning(md(w), icon=":material/warning:")

left, right = st.columns(2)
left.plotly_chart(plan_frontier_figure(frame), width="stretch", theme=None, key="plan_frontier")
right.plotly_chart(
    plan_deadline_figure(frame, measured_max=res.factor_ranges["p"][1]),
    width="stretch",
    theme=None,
    key="plan_deadline",
)
plan_panel.show_table(frame)
st.download_button(
    "Download the plan (CSV)",
    to_csv(frame, float_format="%.6g"),
    file_name="plan.csv",
    mime="text/csv",
    key="dl:plan_page",
    on_click="ignore",
    icon=":material/table_view:",
    help="The same table as `perfmodel plan --out plan.csv`.",
)
