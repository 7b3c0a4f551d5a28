"""Cached export payloads (the HTML report inlines plotly.js and is worth building once per fit)."""

from __future__ import annotations

import json
import re
from pathlib import PurePath

import streamlit as st

from perfmodel import report
from perfmodel.spreadsheet import to_csv


def export_stem(dataset: str | None) -> str:
    """The start of every export's file name: the data's own name, e.g. ``my_timings`` for an upload
    of my_timings.csv (so the report is my_timings_report.html), or the bundled dataset's name."""
    name = re.sub(r"\s*\[.*\]$", "", dataset or "")  # "file.txt [region / metric]" -> "file.txt"
    stem = PurePath(name).stem if PurePath(name).suffix.lower() in (".csv", ".tsv", ".txt", ".dat") else name
    region = re.search(r"\[(.*)\]$", dataset or "")
    if region:
        stem = f"{stem}_{region.group(1)}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("_.") or "perfmodel_model"


@st.cache_data(show_spinner=False, max_entries=8)
def _html(fit_key: str, view_json: str, _result, _meas, _cv_predicted, plan_key: str = "", _plan=None) -> bytes:
    view = json.loads(view_json) or None
    return report.html_report(_result, _meas, cv_predicted=_cv_predicted, scaling=view, plan=_plan).encode("utf-8")


def exported_view(view: dict | None, result, data_key: str | None) -> dict | None:
    """The Scaling page's last view for the report, when it was set on this data and its factor is the
    model's (else None: the report's own default view); without its data key."""
    view = dict(view or {})
    if view.pop("data_key", None) != data_key or view.get("symbol") not in result.factors:
        return None
    return view


def plan_csv(frame) -> str:
    """The plan as ``perfmodel plan --out`` writes it: one row per configuration."""
    return to_csv(frame, float_format="%.6g")


def html_report_bytes(
    fit_key: str, result, meas, cv_predicted=None, scaling_view: dict | None = None, plan=None
) -> bytes:
    """The standalone HTML report of ``result`` with the given scaling view and, when given, the plan
    (cached by fit, view and plan)."""
    plan_key = "" if plan is None else plan_csv(plan) + json.dumps(plan.attrs, sort_keys=True, default=str)
    return _html(fit_key, json.dumps(scaling_view or {}, sort_keys=True), result, meas, cv_predicted, plan_key, plan)
