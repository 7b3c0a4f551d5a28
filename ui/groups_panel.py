"""The Groups page's choices (which table, which group columns, which terms) and its cached fits.

The page compares one model per group. Its table is the current data when that has columns to group
by, and the bundled TensorFlow CNN table (models × platforms, :data:`GROUP_DATASET`) otherwise, so
the page works on a first visit. The fits go through :func:`perfmodel.groups.plan_groups`, the stages
of :func:`perfmodel.fit_groups` (the CLI's ``--group-by``), with the session's λ, loss, penalty, seed
and DE settings: the charted groups first, the others after, then every group's cross-validation
(:class:`~ui.group_run.GroupRun`), so the first chart is drawn while the rest are fitted.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import streamlit as st

from perfmodel import PerfModelError
from perfmodel.data.datasets import get_dataset, load_frame
from perfmodel.fitting.quality import judge_result
from perfmodel.groups import GroupFits
from perfmodel.plots.groups import (
    best_scaling,
    common_notes,
    constant_column,
    group_constants_table,
    group_quality_table,
    group_split_data,
    term_styles_by_text,
)
from perfmodel.plots.style import fmt_num, fmt_range, term_name

from . import fitting, state
from .group_run import charted_first, settings_for
from .text import md

GROUP_DATASET = "tf-cnn-all"
#: A column with more distinct values than this (or than half the rows) is an identifier, not a group.
MAX_GROUPS = 2000


#: A column that numbers the repeats of one configuration, by its name (run, repetition, trial, seed…)
#: or by its values (result_0, run1, rep-2…): its rows are repeats of each other, not groups.
_REPEAT_NAME = re.compile(
    r"^(runs?|repeats?|repetitions?|reps?|trials?|seeds?|attempts?|results?)([ _-]?(id|no|nr|num|number|index|idx))?$",
    re.I,
)
_REPEAT_VALUE = re.compile(r"^(run|rep|repeat|repetition|trial|seed|attempt|result)[ _-]?\d+$", re.I)


def repeat_label(frame: pd.DataFrame, column) -> bool:
    """True when ``column`` of ``frame`` numbers the repeats of a configuration (:data:`_REPEAT_NAME`,
    :data:`_REPEAT_VALUE`) rather than naming groups."""
    if _REPEAT_NAME.match(str(column).strip()):
        return True
    if pd.api.types.is_numeric_dtype(frame[column]):  # numbers are never "result_0"
        return False
    values = frame[column].dropna().astype(str).str.strip()
    return bool(len(values)) and bool(values.str.match(_REPEAT_VALUE).all())


def candidate_columns(frame: pd.DataFrame, time: str, factors: dict) -> list[str]:
    """Columns that split ``frame`` into groups: not the time or a factor, 2+ values, repeated values,
    not a repeat's number (:func:`repeat_label`)."""
    used = {time, *factors.values()}
    out = []
    for c in frame.columns:
        if c in used:
            continue
        n = frame[c].nunique(dropna=False)
        numeric = pd.api.types.is_numeric_dtype(frame[c])
        groups = 2 <= n <= min(MAX_GROUPS, max(2, len(frame) // 2)) and (not numeric or n <= 50)
        if groups and not repeat_label(frame, c):  # the values' pattern read only where it could be a group
            out.append(str(c))
    return out


def group_columns() -> list[str]:
    """The current data's columns that split it into groups (a bundled dataset's own group columns
    when it names them), for pointing a poor single fit to the Groups page."""
    ss = st.session_state
    data = ss.get("data")
    if data is None:
        return []
    cols = candidate_columns(data["frame"], data["time"], data["factors"])
    suggested = get_dataset(data["name"]).groups if data.get("source") == "bundled" else ()
    return [c for c in suggested if c in cols] or cols


def mixed_columns(meas, columns: list[str]) -> list[str]:
    """The group ``columns`` whose values differ between rows of one configuration: rows that would be
    read as repeats of each other although they are runs of different groups (models, frameworks)."""
    cols = [c for c in columns if c in meas.frame.columns]
    if not cols or not meas.n_rows:
        return []
    cfg = pd.Series(meas.configurations(), index=meas.frame.index)
    return [c for c in cols if (meas.frame[c].astype(str).groupby(cfg).nunique() > 1).any()]


def tables() -> dict[str, dict]:
    """{label: table} to choose from; the first is the default.

    A table is {"key", "title", "frame", "time", "factors", "terms", "bounds", "groups"}."""
    ss = st.session_state
    data, out = ss.get("data"), {}
    current = None
    if data is not None and ss.get("meas") is not None:
        frame, time = state.fitted_table(data)  # a throughput's or another unit's time as fitted, in seconds
        cols = candidate_columns(frame, time, data["factors"])
        suggested = ()
        if data.get("source") == "bundled":
            suggested = get_dataset(data["name"]).groups
        spec = state.current_spec()
        current = {
            "key": ss.get("data_key"),
            "title": data.get("title") or data.get("name"),
            "frame": frame,
            "time": time,
            "factors": dict(data["factors"]),
            "terms": spec,
            "bounds": state.effective_bounds(spec),
            "groups": tuple(c for c in suggested if c in cols),
            "columns": cols,
        }
    bundled = None
    if data is None or data.get("name") != GROUP_DATASET:
        ds = get_dataset(GROUP_DATASET)
        frame = load_frame(GROUP_DATASET)
        bundled = {
            "key": GROUP_DATASET,
            "title": ds.title,
            "frame": frame,
            "time": ds.time_column,
            "factors": dict(ds.factors),
            "terms": ds.terms,
            "bounds": {},
            "groups": tuple(ds.groups),
            "columns": candidate_columns(frame, ds.time_column, dict(ds.factors)),
        }
    # The current data first when it comes with groups, is the user's own table with group columns, or
    # has rows of one configuration that differ in one (the Data page sends those here).
    if (
        current is not None
        and current["columns"]
        and (current["groups"] or data.get("source") != "bundled" or mixed_columns(ss["meas"], current["columns"]))
    ):
        out[f"Current data: {current['title']}"] = current
        if bundled is not None:
            out[f"Bundled: {bundled['title']}"] = bundled
    else:
        if bundled is not None:
            out[f"Bundled: {bundled['title']}"] = bundled
        if current is not None and current["columns"]:
            out[f"Current data: {current['title']}"] = current
    return out


def default_shown(fits: GroupFits, most: int = 8) -> list[str]:
    """The groups charted at first: those that differ from the first fitted group only in the first
    ``by`` column (e.g. every model on one platform), or else the first ``most``."""
    ok = [o for o in fits.outcomes if o.result is not None]
    return [ok[i].label for i in charted_first([o.key for o in ok], len(fits.by), most)]


@st.cache_data(show_spinner=False, max_entries=32)
def _with_intervals(key: str, by_json: str, settings_json: str, labels_json: str, _fits: GroupFits) -> GroupFits:
    return _fits.with_intervals(json.loads(labels_json))


def with_intervals(table: dict, by: list[str], terms: str, fits: GroupFits, labels: list[str]) -> GroupFits:
    """``fits`` with the 90 % intervals of the groups in ``labels`` (the charted ones; cached), computed
    as ``perfmodel fit --group-by`` computes every group's (its default 200 replicates)."""
    settings = json.dumps(settings_for(table, terms), sort_keys=True)
    return _with_intervals(str(table["key"]), json.dumps(list(by)), settings, json.dumps(sorted(labels)), fits)


def split_values(measured: list[float], x_end: float | None) -> list[float]:
    """The values the split can be shown at: the measured ones, then the doublings of the largest up to
    the curves' end (the extension chosen above the chart)."""
    out = sorted(set(measured))
    if out and x_end is not None and out[-1] > 0:
        v = out[-1] * 2
        while v <= x_end * (1 + 1e-9):
            out.append(float(v))
            v *= 2
    return out


def open_group(table: dict, by: list[str], fits: GroupFits) -> None:
    """Open one group in the single-model pages (Model, Scaling, Plan, Export): its rows become the
    current data, with the table's mapping and the group's own terms, fitted; then the Scaling page."""
    ok = [o for o in fits.outcomes if o.result is not None]
    if not ok:
        return
    st.subheader("One group on its own")
    c = st.columns([3, 1], vertical_alignment="bottom")
    label = c[0].selectbox(
        "Open a group in the Model, Scaling and Plan pages",
        [o.label for o in ok],
        key=f"w:g:open:{table['key']}",
        help="Its rows become the current data, with this table's column mapping (a throughput's work per run "
        "included) and the group's own terms, and it is fitted: its Scaling page answers at any number of "
        "workers, its Plan page recommends, its Export page writes its report. The Data page brings the whole "
        "table back.",
    )
    if not c[1].button(
        "Open this group",
        key="g:open",
        type="primary",
        icon=":material/open_in_new:",
        help="Make the group the current data and go to its Scaling page.",
    ):
        return
    o = next(o for o in ok if o.label == label)
    try:
        state.open_group(
            table, dict(zip(by, o.key, strict=True)), o.result.settings.get("terms") or o.result.expression
        )
    except PerfModelError as exc:
        st.error(md(exc), icon=":material/error:")
        return
    fitting.run_fit(st.progress(0.0, text=f"Fitting {md(label)}…"))
    st.switch_page("pages/scaling.py")


def too_poor(fits: GroupFits) -> dict[str, str]:
    """{label: why} of the fitted groups whose fit is too poor to rank (:func:`judge_result`)."""
    out = {}
    for o in fits.outcomes:
        if o.result is not None:
            verdict = judge_result(o.result)
            if verdict.poor:
                out[o.label] = verdict.sentence()
    return out


def headline(fits: GroupFits, curves: list, x: str, at: float) -> str:
    """Which charted group scales best and which least at ``x = at`` (speedups with their ranges,
    each one's split), leaving out groups whose fit is too poor to rank, and saying so."""
    poor = too_poor(fits)
    ranked = [c for c in curves if c.label not in poor]
    left_out = [c.label for c in curves if c.label in poor]
    note = ""
    if left_out:
        named = "; ".join(f"{md(lab)}: {md(poor[lab])}" for lab in left_out[:4]) + (
            f"; and {len(left_out) - 4} more" if len(left_out) > 4 else ""
        )
        note = f" Not ranked, as their fit is too poor to compare: {named}."
    if len(ranked) < 2:
        return (
            "Too few of the groups shown are fitted well enough to say which scales better."
            + note
            + " Try other terms, or group by more columns so that each group is one kind of run."
        )
    best_label = best_scaling(ranked, at, "speedup")[0]
    worst_label = min(((c.label, c.range_at(at)[0]) for c in ranked), key=lambda e: e[1])[0]
    best = next(c for c in ranked if c.label == best_label)
    worst = next(c for c in ranked if c.label == worst_label)
    split = group_split_data(fits, {x: at}, labels=[best.label, worst.label])
    why = {lab: {k: v[i] / split.total[i] * 100 for k, v in split.parts.items()} for i, lab in enumerate(split.labels)}
    (b, b_lo, b_hi), (w, w_lo, w_hi) = best.range_at(at), worst.range_at(at)
    text = (
        f"At {md(x)} = {fmt_num(at)} (measured in every group shown), **{md(best.label)}** scales best "
        f"({fmt_range(b, b_lo, b_hi, '×')} speedup; its time {why[best.label]['compute']:.0f} % compute, "
        f"{why[best.label]['communication']:.0f} % communication) and **{md(worst.label)}** least "
        f"({fmt_range(w, w_lo, w_hi, '×')}; {why[worst.label]['compute']:.0f} % compute, "
        f"{why[worst.label]['communication']:.0f} % communication, {why[worst.label]['start-up']:.0f} % start-up)"
    )
    if b_lo is not None and w_hi is not None and b_lo <= w_hi:
        text += "; their 90 % ranges overlap, so the order is not certain"
    elif b_lo is not None:
        text += " (90 % ranges)"
    return text + "." + note


def show_tables(fits: GroupFits, unit: str) -> None:
    """The groups' errors and time split, then their constants (in ``unit``, the view's), each table
    narrow enough that every column is seen at the page's width, and tall enough for every group (up to
    :data:`TABLE_ROWS`); a note every group has is said once, below. The fitted groups come first; a
    skipped group's numbers are blank (:data:`MISSING`, where Streamlit writes "None"), its reason in
    its notes."""
    pct = st.column_config.NumberColumn
    quality = group_quality_table(fits)
    height = _height(len(quality))
    st.dataframe(
        quality,
        hide_index=True,
        width="stretch",
        height=height,
        placeholder=MISSING,
        column_config={
            "group": st.column_config.TextColumn("group", width="medium", pinned=True),
            "status": st.column_config.TextColumn("status", width="small"),
            "configurations": pct("configs", width="small", help="Measured configurations in the group"),
            "MAPE (%)": pct("MAPE %", format="%.2f", width="small", help="In-sample mean absolute percentage error"),
            "CV MAPE (%)": pct(
                "CV MAPE %",
                format="%.2f",
                width="small",
                help="5-fold cross-validated MAPE (whole configurations per fold)",
            ),
            "start-up (%)": pct("start-up %", format="%.1f", width="small", help="Share of the predicted time"),
            "compute (%)": pct("compute %", format="%.1f", width="small", help="Share of the predicted time"),
            "communication (%)": pct(
                "comm. %", format="%.1f", width="small", help="Share of the predicted time spent communicating"
            ),
            "notes": st.column_config.TextColumn(
                "notes", width="medium", help="Why a group was skipped, or what to know about its fit"
            ),
        },
    )
    constants = group_constants_table(fits, unit)
    styles = term_styles_by_text(fits)
    config = {"group": st.column_config.TextColumn("group", width="medium", pinned=True)}
    for style in styles.values():
        config[constant_column(style, unit)] = st.column_config.TextColumn(
            width="small", help=f"{term_name(style)}: its constant, in {unit} per unit of the term"
        )
    st.dataframe(constants, hide_index=True, width="stretch", height=height, column_config=config, placeholder=MISSING)
    common = common_notes(fits)
    if common:
        st.caption("In every group: " + md("; ".join(common)) + ".")
    noted = quality[quality["notes"].str.len() > 0]
    if len(noted):  # the table's column cuts a long note: each in full here
        with st.expander(f"Notes on {len(noted)} group{'s' if len(noted) > 1 else ''}, in full"):
            st.markdown(
                "\n".join(f"- **{md(str(g))}**: {md(n)}" for g, n in zip(noted["group"], noted["notes"], strict=True))
            )


#: What a Groups table shows for a number a group does not have (a skipped group's errors and split).
MISSING = "—"

#: Rows a Groups table shows without scrolling (the bundled table's 18 groups and a few more).
TABLE_ROWS = 24


def _height(n_rows: int) -> int:
    """Pixels of a table showing ``n_rows`` rows (up to :data:`TABLE_ROWS`) and its header."""
    return 35 * (min(n_rows, TABLE_ROWS) + 1) + 3
