"""Export: the model JSON, predictions CSV, plan CSV, LaTeX, Python and a standalone HTML report."""

import streamlit as st

from perfmodel import report
from ui import intervals, plan_panel
from ui.exports import export_stem, exported_view, html_report_bytes, plan_csv
from ui.nav import guard
from ui.widgets import require_result

guard()
ss = st.session_state

st.title("Export")
require_result()
intervals.attach()  # before drawing: a quick fit's intervals are shown at once
res, meas, cv = ss["result"], ss["meas"], ss.get("cv") or {}
stem = export_stem(res.dataset)
fit_key = "|".join(ss.get("fit_key") or ("", "")) + ("|intervals" if res.has_intervals else "")

plan, planned = plan_panel.current(res, meas)  # the Plan page's plan (else the default one, for the CSV)

st.markdown("Everything below describes the fitted model shown on the Results page:")
st.code(res.formula(4), language=None, wrap_lines=True)

c = st.columns(3)
with c[0]:
    st.markdown(f"**Model file (JSON)**  \n`{stem}.json`")
    st.download_button(
        "Download model JSON",
        report.model_json(res),
        file_name=f"{stem}.json",
        mime="application/json",
        icon=":material/data_object:",
        key="dl:json",
        on_click="ignore",
        help="The same file the CLI writes and reads (python -m perfmodel predict --model FILE); "
        "load it in Python with perfmodel.FitResult.load(path).",
    )
    st.caption("Constants, exponents, settings (λ, seed, …), metrics and the measured range.")
with c[1]:
    st.markdown(f"**Predictions (CSV)**  \n`{stem}_predictions.csv`")
    st.download_button(
        "Download predictions CSV",
        report.predictions_csv(res, meas, cv.get("predicted")),
        file_name=f"{stem}_predictions.csv",
        mime="text/csv",
        icon=":material/table_view:",
        key="dl:csv",
        on_click="ignore",
        help="One row per measured run: factors, measured and predicted time, error %, "
        "cross-validated prediction and each term's contribution.",
    )
    st.caption("Per run: measured, predicted, error and each term's contribution.")
with c[2]:
    st.markdown(f"**Report (HTML)**  \n`{stem}_report.html`")
    view = exported_view(ss.get("scaling_view"), res, ss.get("data_key"))
    st.download_button(
        "Download HTML report",
        lambda: html_report_bytes(fit_key, res, meas, cv.get("predicted"), view, plan if planned else None),
        file_name=f"{stem}_report.html",
        mime="text/html",
        icon=":material/description:",
        key="dl:html",
        on_click="ignore",
        help="A single HTML file with the formula, metrics, constants and all interactive charts. "
        "plotly.js is inlined, so it opens without a network connection.",
    )
    st.caption(
        "Formula, metrics, constants and the interactive charts (the scaling view as last set on the "
        "Scaling page" + ("; the plan of the Plan page" if planned else "") + "); opens offline."
    )

if plan is not None:
    c = st.columns(3)
    with c[0]:
        st.markdown(f"**Plan (CSV)**  \n`{stem}_plan.csv`")
        st.download_button(
            "Download plan CSV",
            plan_csv(plan),
            file_name=f"{stem}_plan.csv",
            mime="text/csv",
            icon=":material/event_available:",
            key="dl:plan",
            on_click="ignore",
            help="One row per configuration: the factors, time, GPU-hours and cost with their "
            "intervals, efficiency and the probabilities of meeting the deadline and the budget "
            "(the file `perfmodel plan --out` writes).",
        )
        st.caption(
            "The plan as last set on the Plan page; it is in the HTML report too."
            if planned
            else "The default plan (no deadline, no budget, cost in GPU-hours): set yours on the Plan page, and "
            "the HTML report includes it."
        )

st.divider()
left, right = st.columns(2)
with left:
    st.markdown("**LaTeX**")
    tex = report.latex_snippet(res)
    st.code(tex, language="latex", wrap_lines=True)
    st.download_button(
        "Download .tex",
        tex,
        file_name=f"{stem}.tex",
        mime="text/x-tex",
        key="dl:tex",
        on_click="ignore",
        icon=":material/functions:",
        help="The fitted formula as a LaTeX equation environment.",
    )
with right:
    st.markdown("**Python**")
    py = report.python_snippet(res)
    st.code(py, language="python", wrap_lines=True)
    st.download_button(
        "Download .py",
        py,
        file_name=f"{stem}.py",
        mime="text/x-python",
        key="dl:py",
        on_click="ignore",
        icon=":material/code:",
        help="A numpy function predict(...) computing the fitted model.",
    )

with st.expander("Fit report (text)", icon=":material/article:"):
    st.code(res.report(), language=None)
