"""Cached export payloads (the HTML report inlines plotly.js and is worth building once per fit)."""

from __future__ import annotations

import streamlit as st

from perfmodel import report


@st.cache_data(show_spinner=False, max_entries=8)
def _html(fit_key: str, _result, _meas, _cv_predicted) -> bytes:
    return report.html_report(_result, _meas, cv_predicted=_cv_predicted).encode("utf-8")


def html_report_bytes(fit_key: str, result, meas, cv_predicted=None) -> bytes:
    """The standalone HTML report of ``result`` (cached by the fit's key)."""
    return _html(fit_key, result, meas, cv_predicted)
