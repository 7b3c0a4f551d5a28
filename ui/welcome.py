"""Data-page component: the welcome of a first visit, and the next step after new data."""

from __future__ import annotations

import streamlit as st

from ui.text import md

PAGES = {"model": "pages/model.py", "results": "pages/results.py", "scaling": "pages/scaling.py"}


def _dismiss() -> None:
    st.session_state["welcome:seen"] = True


def render() -> None:
    """Three steps of what the tool does, until dismissed (once per session)."""
    ss = st.session_state
    if ss.get("welcome:seen") or (ss.get("data") or {}).get("source") not in (None, "bundled"):
        return
    title = (ss.get("data") or {}).get("title") or "ResNet-50 on 1–8 GPUs"  # the one a link opened, else the default
    with st.container(border=True, key="welcome"):
        st.markdown(
            "**perfmodel explains where the run time of a distributed training job goes, and predicts "
            "larger runs.** It fits a formula of readable terms (start-up, compute, communication) to "
            "run times you measured.\n\n"
            "1. **Data**: pick a bundled dataset below, or upload your own timings (a CSV, one row per "
            "run: the knobs such as workers and batch size, and the time in seconds).\n"
            "2. **Model**: choose the terms, then move the regularisation weight λ: larger λ, simpler "
            "formula. It refits as you move it.\n"
            "3. **Results, Scaling, Export**: read the fitted formula and its error, see the time past "
            "the measured range, and download a report for others.\n\n"
            f"A real dataset ({md(title)}) is open and fitted, so every page already works."
        )
        st.button(
            "Got it",
            key="welcome:ok",
            on_click=_dismiss,
            icon=":material/check:",
            help="Hide this introduction for the rest of the session.",
        )


def next_step(data: dict) -> None:
    """After new data was fitted: where to go next."""
    if data.get("source") not in ("upload", "remapped") or not st.session_state.get("result"):
        return
    with st.container(border=True, key="next_step"):
        st.markdown(
            f"**{md(data.get('title', 'Your data'))} is fitted with a first model.** Next: check the "
            "mapping and the rows below, then tune the terms and λ on the Model page, or read the "
            "fit on Results."
        )
        c = st.columns(3)
        c[0].page_link(PAGES["model"], label="Tune the model", icon=":material/functions:")
        c[1].page_link(PAGES["results"], label="See the results", icon=":material/insights:")
        c[2].page_link(PAGES["scaling"], label="See how it scales", icon=":material/trending_up:")
