"""Model: choose the terms, tune λ live, set the other fit settings and fit."""

import streamlit as st

from ui import autoselect_panel, lambda_live, model_panel
from ui.nav import guard
from ui.widgets import PAGES

guard()

st.title("Model")
st.caption(
    "The execution time is modelled as a sum of terms, T = Σ c_k·term_k(p, N, b, E, …). Each term gets a "
    "fitted constant c_k ≥ 0; names that are not factor symbols are free exponents fitted within bounds."
)

meas = st.session_state.get("meas")
if meas is None:
    st.info("Load a dataset or upload a file first.", icon=":material/table:")
    st.page_link(PAGES["data"], label="Go to the Data page", icon=":material/arrow_forward:")
    st.stop()

model_panel.terms_section(meas)
autoselect_panel.render()

st.subheader("Fit")
lambda_live.render()
model_panel.fit_form()
st.page_link(PAGES["results"], label="See the results", icon=":material/insights:")
