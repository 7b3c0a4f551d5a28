"""Results: the fitted formula, constants with units and shares, metrics, and the diagnostic charts."""

import streamlit as st

from perfmodel.plots.contributions import contributions_figure, shares_figure
from perfmodel.plots.parity import largest_errors, parity_figure
from perfmodel.plots.residuals import residual_data, residuals_figure
from perfmodel.report import metrics_table
from ui import constants, fitting, intervals
from ui.nav import guard
from ui.widgets import fmt_pct, latex_lines, md, require_result

guard()
ss = st.session_state

st.title("Results")
require_result()
intervals.attach()  # before drawing: a quick fit's intervals are shown at once
res, meas, cv = ss["result"], ss["meas"], ss.get("cv") or {}

if fitting.is_stale():
    st.info(
        "The terms or settings on the Model page changed since this fit; these results are for the model below.",
        icon=":material/update:",
    )

st.latex(latex_lines(res.latex(4), 90))
st.caption(
    f"{res.n_rows} runs in {res.n_configurations} configurations of {md(res.dataset or 'the data')}; "
    f"time column {md(res.time)}; " + ", ".join(f"{md(s)} = {md(c)}" for s, c in res.factors.items())
)
for w in res.warnings:
    st.warning(md(w), icon=":material/warning:")

# -- metrics ---------------------------------------------------------------------------------------------
cvm = cv.get("metrics") or {}
c = st.columns(4)
c[0].metric(
    "MAPE, in-sample",
    fmt_pct(res.metrics["mape"]),
    help="Mean absolute percentage error over the runs the model was fitted to.",
)
c[1].metric(
    f"MAPE, {cv.get('label', 'cross-validated')}",
    fmt_pct(cvm.get("mape")),
    help="Each configuration is predicted by a model fitted without it (whole configurations per fold): "
    "an estimate of the error on configurations not measured."
    if cvm
    else cv.get(
        "error", "Cross-validating…" if ss.get("cv:pending") else "Cross-validation is switched off on the Model page."
    ),
)
c[2].metric("R², in-sample", f"{res.metrics['r2']:.4f}", help="Share of the variance of the times explained.")
c[3].metric(
    "Largest error, in-sample",
    fmt_pct(res.metrics["max_pct_error"]),
    help="Largest absolute percentage error over the runs.",
)

st.caption(
    "**MAPE** (mean absolute percentage error): how far a prediction typically misses the measured time, "
    "in % of it. **CV** (cross-validation): each configuration is predicted by a model fitted without it, "
    "an honest estimate of the error on configurations not measured."
)

st.markdown("**Constants and exponents**")
constants.show(res)

left, right = st.columns(2)
with left:
    st.markdown("**Metrics**")
    st.dataframe(metrics_table(res).style.format("{:.4g}", na_rep="—"), width="stretch", placeholder="—")
    st.caption(
        "In-sample: the runs used for fitting. Cross-validated: each configuration predicted by a model "
        "that did not see it. Adjusted R² is in-sample only (— under cross-validation).",
        help="Adjusted R² corrects the in-sample R² for the parameters fitted to those same runs. A "
        "cross-validated R² is already measured on runs the model was not fitted to, so there is nothing to "
        "adjust (adjusting it with no parameters would only repeat the R²).",
    )
with right:
    st.plotly_chart(shares_figure(res), width="stretch", theme=None, key="shares")

st.divider()
c = st.columns([1, 1, 2])
opts = [None] + list(res.factors)
color_by = c[0].selectbox(
    "Colour the points by",
    opts,
    format_func=lambda v: "nothing" if v is None else v,
    index=1 if len(opts) > 1 else 0,
    key="w:color_by",
    help="Colour the points of the parity plot by one factor to see where the model errs.",
)
show_cv = c[1].toggle(
    "Cross-validated predictions",
    value=False,
    key="w:show_cv",
    disabled=cv.get("predicted") is None,
    help="Add hollow markers to the parity plot: each run predicted by the model fitted without its configuration.",
)
parity = parity_figure(res, meas, color_by=color_by, cv_predicted=cv.get("predicted") if show_cv else None)
n_panels = len(residual_data(res, meas).symbols)
if n_panels <= 2:  # parity and residuals side by side
    left, right = st.columns(2)
    left.plotly_chart(parity, width="stretch", theme=None, key="parity")
    right.plotly_chart(residuals_figure(res, meas, max_cols=2), width="stretch", theme=None, key="residuals")
else:  # one residual panel per factor needs the full width (no lone panel under a grid): beside the
    # parity chart, the runs it misses most (where a half page was left empty)
    left, right = st.columns(2)
    left.plotly_chart(parity, width="stretch", theme=None, key="parity")
    with right:
        st.markdown("**Largest errors**")
        num = st.column_config.NumberColumn
        st.dataframe(
            largest_errors(res, meas),
            hide_index=True,
            width="stretch",
            column_order=("error (%)", "measured (s)", "predicted (s)", "configuration"),
            column_config={
                "error (%)": num(format="%+.1f", width=80),
                "measured (s)": num(format="%.4g", width=100),
                "predicted (s)": num(format="%.4g", width=100),
            },
        )
        st.caption(
            "The runs the model misses most, in % of the measured time (above 0: predicted too long). "
            "Colour the points by a factor to see whether they share one."
        )
    st.plotly_chart(residuals_figure(res, meas, max_cols=3), width="stretch", theme=None, key="residuals")

st.plotly_chart(contributions_figure(res, meas), width="stretch", theme=None, key="contributions")
