"""Compare: your model beside the automatic one, the presets and an Extra-P-like search, on your data."""

import streamlit as st

from perfmodel.fitting.evaluate import largest_scale_query
from ui import compare_panel
from ui.nav import guard
from ui.widgets import require_result

guard()
ss = st.session_state

st.title("Compare")
st.caption(
    "Your fitted model beside its peers on the same data: the automatic search's best model, the "
    "Ernest, data-parallel, Pollux and Optimus presets, and a PMNF search like Extra-P's (a constant plus one "
    "x^i·log2(x)^j block per factor, exponents from Extra-P's published set, its negative ones too when the "
    "time falls along a factor, combined as Extra-P does). "
    "Each is judged in-sample, by 5-fold cross-validation and on the largest scales predicted from the "
    "smaller ones."
)
require_result()
meas, res = ss["meas"], ss["result"]


default_query = largest_scale_query(meas) or ""
c = st.columns([2, 2, 1])
query = c[0].text_input(
    "Hold out (the larger scales)",
    value=default_query,
    key="cmp:query",
    help="Rows where this is true are predicted by models fitted on the others, e.g. p > 8. "
    "Default: the largest ~30 % of the p values (else of N). Empty: no held-out column.",
)
nested = c[1].toggle(
    "Search again on the smaller scales",
    value=False,
    key="cmp:nested",
    help="For the held-out column, run the automatic and the PMNF search on the training part "
    "only (honest extrapolation, slower). Off: their expressions are chosen on all data.",
)
c[2].button(
    "Refresh",
    key="cmp:refresh",
    icon=":material/refresh:",
    help="Run the comparison again (results are cached per data, model and settings).",
)

compare_panel.render(meas, res, query, nested)
