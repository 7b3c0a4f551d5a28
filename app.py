"""perfmodel dashboard: upload timings, pick terms, tune λ, fit, and see why time scales as it does.

    streamlit run app.py

The entry point sets the page config, the session defaults (the bundled default dataset, fitted
on first start, so every page works with zero setup; the Data page, drawn from the data alone,
is shown before that fit), the navigation and the sidebar. Pages are
thin: they read ``st.session_state``, call perfmodel, and render.
"""

import streamlit as st

from ui import preload

st.set_page_config(
    page_title="perfmodel",
    page_icon="⏱️",
    layout="wide",
    menu_items={
        "About": "perfmodel: interpretable execution-time models of distributed "
        "deep-learning jobs, fitted by regularised differential evolution "
        "(Kavarakuntla et al., IEEE Access 2024)."
    },
)
preload.plotly()  # before the heavy imports below: the browser loads plotly.js while the server works

from ui import fitting, intervals, nav, state, widgets  # noqa: E402

state.init()

page = st.navigation(nav.pages())

notice = state.take_notice()
if notice:
    st.warning(notice, icon=":material/link_off:")
if not nav.drawn_from_data(page):
    fitting.ensure_fit()
intervals.attach_cached()
st.session_state["run:full"] = True  # this run draws the whole page (not only a fragment)
try:
    page.run()
    fitting.ensure_fit()  # the Data page shows the data first; its fit follows (and the sidebar shows it)
    # What follows the page drawn from a fit: its intervals (when the page shows them) and a first
    # fit's cross-validation, then one rerun to draw them.
    if intervals.ensure() | fitting.ensure_validation():  # `|`: both, whatever the first returns
        state.rerun_same_view()
finally:
    # After the page, so a fit the page made (e.g. a new λ) is what the sidebar and the URL show;
    # in `finally`, so a page that stops early (st.stop) still gets them.
    widgets.sidebar()
    state.sync_query_params()
