"""Intervals for the shown fit: computed after the fit is drawn, cached, never blocking it.

A page draws its charts from ``st.session_state["result"]`` first; :func:`attach`, called at the
end of the page, then computes the fit's intervals (bootstrap and calibration, about a second) once,
stores them in the result and reruns, so the charts gain their bands. The intervals are cached with
``st.cache_data`` keyed by the data key and the fitted model itself, so returning to a fit (another
λ tried before, another page) costs nothing.
"""

from __future__ import annotations

import dataclasses
import json

import streamlit as st

from perfmodel import FitResult, Measurements, PerfModelError

from . import state
from .fitting import NotCached

LEVEL = 0.9


@st.cache_data(show_spinner=False, max_entries=128)
def _intervals(data_key: str, result_json: str, _meas: Measurements, ensemble_json: str = "",
               _cached_only: bool = False) -> dict:
    if _cached_only:
        raise NotCached()
    res = FitResult.from_json(result_json)
    if ensemble_json:  # the automatic search's other plausible models (ui.autoselect_panel.ensemble_for)
        ens = json.loads(ensemble_json)
        res.compute_intervals(_meas, candidates=[FitResult.from_json(j) for j in ens["members"]],
                              scores=ens["scores"], noise_scale=ens["noise"])
    else:
        res.compute_intervals(_meas)
    return res.uncertainty


def _args(res) -> tuple:
    """The cache key of the fit's intervals: the data, the fitted model (not its cross-validation,
    which may be filled in after the intervals were computed) and the search's other plausible models."""
    from .autoselect_panel import ensemble_for

    ss = st.session_state
    return ss["data_key"], dataclasses.replace(res, validation={}).to_json(), ss["meas"], ensemble_for(res)


def attach_cached() -> None:
    """Before the page is drawn: the shown fit's intervals when they were computed before (another
    session, another page), so the page is drawn once, with them."""
    ss = st.session_state
    res = ss.get("result")
    if res is None or ss.get("meas") is None or res.has_intervals:
        return
    try:
        res.uncertainty = _intervals(*_args(res), _cached_only=True)
    except (NotCached, PerfModelError):
        pass


def attach() -> None:
    """Give the session's result its intervals (once per fit), then rerun to draw them."""
    ss = st.session_state
    res, meas = ss.get("result"), ss.get("meas")
    if res is None or meas is None or res.has_intervals or ss.get("intervals_error") == id(res):
        return
    with st.spinner(f"Computing the {LEVEL:.0%} intervals (bootstrap and extrapolation check)…"):
        try:
            res.uncertainty = _intervals(*_args(res))
        except PerfModelError as exc:
            ss["intervals_error"] = id(res)
            st.caption(f"No intervals for this fit: {exc}")
            return
    state.rerun_same_view()


def ready() -> bool:
    """True when the shown result carries its intervals."""
    res = st.session_state.get("result")
    return bool(res is not None and res.has_intervals)
