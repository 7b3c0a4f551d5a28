"""Data: pick a bundled dataset or upload a file, map columns to roles, check the summary."""

import hashlib

import pandas as pd
import streamlit as st

from perfmodel import PerfModelError
from perfmodel.data import PRESET_SYMBOLS, ROLE_SYMBOLS
from perfmodel.data.datasets import get_dataset
from perfmodel.plots.overview import overview_figure
from perfmodel.plots.style import fmt_num
from ui import links, mapping, state, welcome
from ui.groups_panel import group_columns, mixed_columns
from ui.nav import guard
from ui.topology import gpus_per_node_input
from ui.widgets import md

guard()
ss = st.session_state

st.title("Data")
st.caption(
    "Measured run times, one row per run: numeric factors (workers p, data size N, per-worker batch b, "
    "epochs E, anything else) and the time in seconds. Repeated runs of one configuration are separate rows."
)
welcome.render()

data = ss.get("data") or {}
if "w:source" not in ss:
    ss["w:source"] = "Upload a file" if data.get("source") == "upload" else "Bundled dataset"
source = st.radio(
    "Source",
    ["Bundled dataset", "Upload a file"],
    horizontal=True,
    key="w:source",
    help="Start from one of the real measured datasets shipped in data/, or upload your own CSV or Extra-P text file.",
)


def _load_selected() -> None:
    try:
        state.load_bundled(ss["w:dataset"])
    except PerfModelError as exc:
        ss["data_error"] = str(exc)


if source == "Bundled dataset":
    names = state.bundled_names()
    if ss.get("w:dataset") not in names:
        ss["w:dataset"] = data["name"] if data.get("source") == "bundled" else names[0]
    st.selectbox(
        "Dataset",
        names,
        key="w:dataset",
        on_change=_load_selected,
        format_func=lambda n: get_dataset(n).title,
        help="Real measurements shipped with perfmodel (see data/README.md for provenance). "
        "Choosing one loads it with its suggested column mapping and terms, and fits it.",
    )
    ds = get_dataset(ss["w:dataset"])
    st.caption(f"{md(ds.description)}.  \nSource: {md(ds.source)}")
    current = data.get("source") in ("bundled", "remapped") and data.get("name") == ds.name
    if not current or data.get("source") == "remapped":
        st.button(
            f"Open {ds.title}" if not current else "Back to the suggested mapping and terms",
            type="primary" if not current else "secondary",
            on_click=_load_selected,
            icon=":material/folder_open:",
            help="Replace the current data with this dataset and fit its suggested model.",
        )
    if current:
        with st.expander("Change the column mapping", icon=":material/tune:"):
            mapping.mapping_form(
                data["frame"],
                ds.name,
                {"time": data["time"], "factors": data["factors"], "rate": data.get("rate"), "unit": data.get("unit")},
                key=f"bundled:{ds.name}",
                submit_label="Apply mapping",
                title=data.get("title") if data.get("where") else f"{ds.title} (your column mapping)",
                source="remapped",
                where=data.get("where"),
            )
else:
    up = st.file_uploader(
        "CSV or Extra-P text file",
        type=["csv", "tsv", "txt", "dat"],
        key="w:upload",
        help="CSV: one row per run, a header row, numeric columns (delimiter , ; tab or | is "
        "detected). Extra-P text: PARAMETER / POINTS / REGION / METRIC / DATA lines.",
    )
    if up is not None:
        content = up.getvalue()
        digest = hashlib.sha1(content).hexdigest()[:12]
        try:
            frame = state.read_upload(up.name, content)
        except PerfModelError as exc:
            st.error(f"Cannot read {md(up.name)}: {md(exc)}", icon=":material/error:")
        else:
            kind = "Extra-P text" if state.is_extrap_frame(frame) else "CSV"
            st.success(
                f"Read {md(up.name)} as {kind}: {len(frame)} rows, {frame.shape[1]} columns.",
                icon=":material/check_circle:",
            )
            current = data.get("source") == "upload" and data.get("frame") is not None and data["frame"].equals(frame)
            initial = (
                {"time": data["time"], "factors": data["factors"], "rate": data.get("rate"), "unit": data.get("unit")}
                if current
                else state.guess_mapping(frame, ss.get("works"))
            )
            mapping.mapping_form(
                frame,
                up.name,
                initial,
                key=f"upload:{digest}",
                content=content,
                submit_label="Use this data" if not current else "Apply mapping",
            )
    elif data.get("source") == "upload" and data.get("frame") is not None:
        # the file in use, uploaded before (the uploader forgets it when the page is left): its mapping
        # can be changed without uploading it again
        kept = links.store().get(data.get("upload_key")) if data.get("upload_key") else None
        with st.expander(
            f"Change the column mapping of {md(data.get('file_name') or data['name'])}", icon=":material/tune:"
        ):
            mapping.mapping_form(
                data["frame"],
                data.get("file_name") or data["name"],
                {"time": data["time"], "factors": data["factors"], "rate": data.get("rate"), "unit": data.get("unit")},
                key=f"kept:{data.get('upload_key') or data['name']}",
                title=data.get("title"),
                content=kept.content if kept is not None else None,
                submit_label="Apply mapping",
                where=data.get("where"),
            )
    else:
        st.info("Until you upload a file, the bundled dataset below stays in use.", icon=":material/info:")

if ss.get("data_error"):
    st.error(md(ss["data_error"]), icon=":material/error:")

# -- the current data --------------------------------------------------------------------------------
meas = ss.get("meas")
data = ss.get("data") or {}
if meas is None:
    st.stop()

st.divider()
st.subheader(f"Current data: {md(data.get('title', meas.name))}")
welcome.next_step(data)
groups = mixed_columns(meas, group_columns())  # a model column: its rows are not repeats of each other
summary = meas.summary(by=groups)
c = st.columns(4)
c[0].metric("Runs (rows used)", summary["rows"], help="Rows kept for fitting, after validation.")
c[1].metric(
    "Configurations",
    summary["configurations"],
    help="Distinct combinations of the factor values. A model needs at least as many configurations "
    "as it has fitted parameters.",
)
rep = (
    f"{summary['repeats_min']}"
    if summary["repeats_min"] == summary["repeats_max"]
    else f"{summary['repeats_min']}–{summary['repeats_max']}"
)
c[2].metric(
    "Repeats per configuration",
    rep,
    help="How many runs were measured per configuration"
    + (f" and {', '.join(md(g) for g in groups)} (rows of different groups are not repeats)" if groups else "")
    + ".",
)
noise = summary["noise_cv_median_pct"]
c[3].metric(
    "Noise (median CV)",
    "no repeats" if noise is None else f"{noise:.1f} %",
    help="Coefficient of variation (std/mean) of the time across repeats of one configuration, median "
    "over configurations"
    + ("" if noise is None else f"; the largest is {summary['noise_cv_max_pct']:.1f} %")
    + ". A model cannot be more accurate than this noise.",
)

if groups:
    named = ", ".join(f"*{md(g)}*" for g in groups)
    st.info(
        f"Rows with the same factor values differ in {named}: they are runs of different groups, not repeats of "
        f"one configuration (the repeats and the noise above are counted within each group). One model of "
        f"all of them mixes the groups: compare one model per group on the **Groups** page, and open the one "
        f"you need from there.",
        icon=":material/category:",
    )
    st.page_link("pages/groups.py", label="Fit one model per group", icon=":material/arrow_forward:")

if meas.dropped:
    shown = "\n".join(f"- {md(d)}" for d in meas.dropped[:15])
    more = f"\n- … and {len(meas.dropped) - 15} more" if len(meas.dropped) > 15 else ""
    st.warning(f"**{len(meas.dropped)} row(s) left out of the fit:**\n{shown}{more}", icon=":material/warning:")

ranges = pd.DataFrame(
    [
        {
            "symbol": s,
            "column": col,
            "meaning": ROLE_SYMBOLS.get(s, PRESET_SYMBOLS.get(s, "other factor")),
            "min": fmt_num(summary["factor_ranges"][s][0]),
            "max": fmt_num(summary["factor_ranges"][s][1]),
            "values": summary["factor_ranges"][s][2],
        }
        for s, col in meas.factors.items()
    ]
)
left, right = st.columns(2)
with left:
    st.markdown("**Factors**")
    st.dataframe(
        ranges,
        hide_index=True,
        width="stretch",
        column_config={
            "values": st.column_config.NumberColumn("values", help="Number of distinct measured values of the factor")
        },
    )
    lo, hi = summary["time_range"]
    st.caption(f"Time column **{md(meas.time)}**: {lo:.4g} s to {hi:.4g} s.")
    constant = [s for s, r in summary["factor_ranges"].items() if r[2] == 1]
    if constant:
        st.caption(
            f"Constant in this data: {md(', '.join(constant))} (its effect cannot be separated from the intercept)."
        )
    gpus_per_node_input(meas)
with right:
    st.markdown("**Preview** (row numbers as in the file)")
    frame = data.get("frame")
    preview = frame if frame is not None else meas.frame
    preview = preview.copy()
    preview.index = pd.RangeIndex(1, len(preview) + 1, name="row")
    st.dataframe(preview.head(500), height=260, width="stretch")

st.plotly_chart(overview_figure(meas), width="stretch", theme=None, key="overview")
