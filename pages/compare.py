"""Compare: your model beside the automatic one, the presets and an Extra-P-like search, on your data."""

import json

import streamlit as st

from perfmodel import PerfModelError
from perfmodel.compare import METRIC_COLUMNS, compare
from perfmodel.evaluate import largest_scale_query
from perfmodel.selection_plots import PARITY_KINDS, comparison_parity_figure
from ui import fitting
from ui.nav import guard
from ui.widgets import md, require_result

guard()
ss = st.session_state
K = 5

st.title("Compare")
st.caption("Your fitted model beside its peers on the same data: the automatic search's best model, the "
           "data-parallel and Ernest presets, and a PMNF search like Extra-P's (a constant plus one "
           "x^i·log2(x)^j block per factor, exponents from Extra-P's published set, combined as Extra-P does). "
           "Each is judged in-sample, by 5-fold cross-validation and on the largest scales predicted from the "
           "smaller ones.")
require_result()
meas, res = ss["meas"], ss["result"]


@st.cache_data(show_spinner=False, max_entries=16)
def _compare(data_key: str, key_json: str, _meas, _result, _auto, _progress=None):
    kw = json.loads(key_json)
    cancelled = [False]

    def progress(done, total, message):
        if _progress is not None:
            cancelled[0] = bool(_progress(done, total, message))

    return compare(_meas, user_model=_result, auto=_auto, holdout_query=kw["query"] or None, k=K,
                   seed=kw["seed"], loss=kw["loss"], nested=kw["nested"], progress=progress,
                   should_stop=lambda: cancelled[0])


default_query = largest_scale_query(meas) or ""
c = st.columns([2, 2, 1])
query = c[0].text_input("Hold out (the larger scales)", value=default_query, key="cmp:query",
                        help="Rows where this is true are predicted by models fitted on the others, e.g. p > 8. "
                             "Default: the largest ~30 % of the p values (else of N). Empty: no held-out column.")
nested = c[1].toggle("Search again on the smaller scales", value=False, key="cmp:nested",
                     help="For the held-out column, run the automatic and the PMNF search on the training part "
                          "only (honest extrapolation, slower). Off: their expressions are chosen on all data.")
c[2].button("Refresh", key="cmp:refresh", icon=":material/refresh:",
            help="Run the comparison again (results are cached per data, model and settings).")

found = ss.get("auto:selection")
auto = found["selection"] if found and found["key"][0] == ss["data_key"] else None
key = {"result": res.to_json(), "query": query.strip(), "nested": bool(nested), "seed": int(res.settings["seed"]),
       "loss": res.settings["loss"], "auto": auto.best.spec if auto is not None else None}
bar = st.progress(0.0, text="Comparing the models…")
try:
    cmp = fitting._in_thread(
        _compare, lambda d, t, m: bar.progress(min(d / max(t, 1), 1.0), text=f"Comparing: {m}"),
        (ss["data_key"], json.dumps(key, sort_keys=True), meas, res, auto))
except PerfModelError as exc:
    bar.empty()
    st.error(f"The comparison failed: {md(exc)}", icon=":material/error:")
    st.stop()
bar.empty()

table = cmp.table.rename(columns=METRIC_COLUMNS)
shown = table[["model", "expression", "n_params", *METRIC_COLUMNS.values(), "error"]]
metric_cols = list(METRIC_COLUMNS.values())
styled = shown.style.highlight_min(subset=metric_cols, props="background-color: #dcfce7; font-weight: 700") \
    .format("{:.2f}", subset=metric_cols, na_rep="–")
st.dataframe(styled, hide_index=True, width="stretch",
             column_config={"n_params": st.column_config.NumberColumn("parameters",
                                                                      help="Constants plus free exponents"),
                            "error": st.column_config.TextColumn("note", help="Why a model could not be fitted")})
winners = cmp.winners()
st.caption("Green: the lowest error in its column. "
           + " · ".join(f"{label}: **{winners[col] or '–'}**" for col, label in METRIC_COLUMNS.items())
           + f" · hold-out: {cmp.holdout_query or 'none'}")
for note in cmp.notes:
    st.caption(note)

kind = st.radio("Predictions shown", PARITY_KINDS, index=1, horizontal=True, key="cmp:kind",
                help="in-sample: fitted on all runs; cross-validated: each configuration predicted by a fit "
                     "without it; held-out: the larger scales predicted from the smaller ones.")
st.plotly_chart(comparison_parity_figure(cmp, kind), key="cmp:parity")
