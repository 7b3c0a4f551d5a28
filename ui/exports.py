"""Cached export payloads (the HTML report inlines plotly.js and is worth building once per fit)."""

from __future__ import annotations

import json

import streamlit as st

from perfmodel import report


@st.cache_data(show_spinner=False, max_entries=8)
def _html(fit_key: str, view_json: str, _result, _meas, _cv_predicted) -> bytes:
    view = json.loads(view_json) or None
    return report.html_report(_result, _meas, cv_predicted=_cv_predicted, scaling=view).encode("utf-8")


def html_report_bytes(fit_key: str, result, meas, cv_predicted=None, scaling_view: dict | None = None) -> bytes:
    """The standalone HTML report of ``result`` with the given scaling view (cached by fit and view)."""
    return _html(fit_key, json.dumps(scaling_view or {}, sort_keys=True), result, meas, cv_predicted)
