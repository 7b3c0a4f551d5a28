"""Intervals for the shown fit: with a quick fit's page, after a slower fit's, cached.

A page that shows them calls :func:`attach` before drawing. For a quick fit they are computed
then (a tenth of a second on the bundled datasets), so the page is drawn once, with its bands; for
a slower one the page is drawn first, :func:`ensure` computes them after it, and ``app.py`` reruns
once, so the charts gain their bands. The intervals are cached with
``st.cache_data`` keyed by the data key and the fitted model itself, so returning to a fit (another
λ tried before, another page) costs nothing.
"""

from __future__ import annotations

import dataclasses
import json

import streamlit as st

from perfmodel import FitResult, Measurements, PerfModelError, compute_intervals

from .fitting import NotCached, quick
from .text import md

LEVEL = 0.9


@st.cache_data(show_spinner=False, max_entries=128)
def _intervals(
    data_key: str,
    result_json: str,
    _meas: Measurements,
    ensemble_json: str = "",
    gpus_per_node: int | None = None,
    _cached_only: bool = False,
) -> dict:
    if _cached_only:
        raise NotCached()
    res = FitResult.from_json(result_json)
    if ensemble_json:  # the automatic search's other plausible models (ui.autoselect_panel.ensemble_for)
        ens = json.loads(ensemble_json)
        compute_intervals(
            res,
            _meas,
            candidates=[FitResult.from_json(j) for j in ens["members"]],
            scores=ens["scores"],
            noise_scale=ens["noise"],
            gpus_per_node=gpus_per_node,
        )
    else:
        compute_intervals(res, _meas, gpus_per_node=gpus_per_node)
    return res.uncertainty


def _args(res) -> tuple:
    """The cache key of the fit's intervals: the data, the fitted model (not its cross-validation,
    which may be filled in after the intervals were computed), the search's other plausible models and
    the GPUs per node of the Data page."""
    from .autoselect_panel import ensemble_for

    ss = st.session_state
    return (
        ss["data_key"],
        dataclasses.replace(res, validation={}).to_json(),
        ss["meas"],
        ensemble_for(res),
        ss.get("gpus_per_node"),
    )


def attach_cached() -> None:
    """Before the page is drawn: the shown fit's intervals when they were computed before (another
    session, another page), so the page is drawn once, with them."""
    ss = st.session_state
    ss.pop("intervals:wanted", None)  # asked for by this run's page only
    res = ss.get("result")
    if res is None or ss.get("meas") is None or res.has_intervals:
        return
    try:
        res.uncertainty = _intervals(*_args(res), _cached_only=True)
    except (NotCached, PerfModelError):
        pass


def attach() -> None:
    """The page shows the fit's intervals: call it before drawing. A quick fit's intervals
    (:func:`ui.fitting.quick`, not averaged over search candidates) are computed now, so the page is
    drawn once, with them; a slower fit's after the page (:func:`ensure`), then one rerun."""
    ss = st.session_state
    res = ss.get("result")
    if res is None or ss.get("meas") is None or res.has_intervals or ss.get("intervals_error") == id(res):
        return
    args = _args(res)
    *_, ensemble = args
    if quick(res) and not ensemble:
        _compute(args)
    else:
        ss["intervals:wanted"] = True


def ensure() -> bool:
    """After the page: the intervals :func:`attach` left for later. True when they were computed
    (the page then needs a rerun to draw them)."""
    ss = st.session_state
    res = ss.get("result")
    if not ss.pop("intervals:wanted", False) or res is None or res.has_intervals:
        return False
    return _compute(_args(res))


def _compute(args: tuple) -> bool:
    """Compute and attach the intervals of the session's result (a spinner meanwhile); on failure a
    caption says why, once per fit. True on success."""
    ss = st.session_state
    with st.spinner(f"Computing the {LEVEL:.0%} intervals (bootstrap and extrapolation check)…"):
        try:
            ss["result"].uncertainty = _intervals(*args)
        except PerfModelError as exc:
            ss["intervals_error"] = id(ss["result"])
            st.caption(f"No intervals for this fit: {exc}")
            return False
    return True


def ready() -> bool:
    """True when the shown result carries its intervals."""
    res = st.session_state.get("result")
    return bool(res is not None and res.has_intervals)


def facts(res) -> None:
    """An expander saying how the shown fit's bands were made (:meth:`perfmodel.FitResult.interval_facts`,
    as the CLI's ``fit`` and the report give them): the noise of one run, the band scale, the widening
    per doubling on and beyond the measured nodes, and the predictor."""
    if not res.has_intervals:
        return
    with st.expander(f"How the {100 * LEVEL:g} % bands were made"):
        st.markdown("\n".join(f"- **{md(what)}**: {md(how)}" for what, how in res.interval_facts(LEVEL)))
