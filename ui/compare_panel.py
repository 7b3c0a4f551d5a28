"""Compare-page component: the peers' table and parity chart, drawn as the peers are compared.

Each peer costs a fit, a 5-fold cross-validation and a hold-out fit; together they take seconds
on a busy machine, the automatic search most. The page draws the user's model first (one peer),
then adds the presets and the PMNF search, then the automatic search when it is done, each part
merged into the table without fitting the others again (:meth:`perfmodel.compare.Comparison.merged`),
the chart and the table drawn again each time in the same places (``st.empty``). Every part is
cached by data and settings.
"""

from __future__ import annotations

import json

import streamlit as st

from perfmodel import PerfModelError
from perfmodel.compare import METRIC_COLUMNS, PRESET_PEERS, TIE_RTOL, compare, same_expression_notes
from perfmodel.plots.selection import PARITY_KINDS, comparison_parity_figure
from ui import fitting
from ui.text import md

K = 5


@st.cache_data(show_spinner=False, max_entries=16)
def _compare(data_key: str, key_json: str, _meas, _result, _auto, _progress=None):
    kw = json.loads(key_json)
    cancelled = [False]

    def progress(done, total, message):
        if _progress is not None:
            cancelled[0] = bool(_progress(done, total, message))

    part = kw["part"]  # "user": your model; "peers": the presets, PMNF (and a known automatic choice); "automatic"
    return compare(
        _meas,
        user_model=_result if part == "user" else None,
        auto=_auto if part == "peers" else None,
        holdout_query=kw["query"] or None,
        k=K,
        seed=kw["seed"],
        loss=kw["loss"],
        nested=kw["nested"],
        presets=PRESET_PEERS if part == "peers" else (),
        pmnf=part == "peers",
        run_auto=part == "automatic",
        progress=progress,
        should_stop=lambda: cancelled[0],
    )


def _run(bar, part: str, key: dict, meas, res, auto):
    return fitting._in_thread(
        _compare,
        lambda d, t, m: bar.progress(min(d / max(t, 1), 1.0), text=f"Comparing: {m}"),
        (st.session_state["data_key"], json.dumps({**key, "part": part}, sort_keys=True), meas, res, auto),
    )


def _table(cmp, pending: str) -> None:
    table = cmp.table.rename(columns=METRIC_COLUMNS)
    same = same_expression_notes(cmp.table, cmp.results)
    table["error"] = [
        "; ".join(x for x in (e, same.get(m, "")) if x) for m, e in zip(table["model"], table["error"], strict=True)
    ]
    shown = table[["model", "expression", "n_params", *METRIC_COLUMNS.values(), "error"]]
    metric_cols = list(METRIC_COLUMNS.values())
    best = {label: cmp.table["best_" + col.split("_")[0]].to_numpy(bool) for col, label in METRIC_COLUMNS.items()}
    green = "background-color: #dcfce7; font-weight: 700"
    styled = shown.style.apply(
        lambda column: [green if b else "" for b in best[column.name]], subset=metric_cols
    ).format("{:.2f}", subset=metric_cols, na_rep="—")
    st.dataframe(
        styled,
        hide_index=True,
        width="stretch",
        placeholder="—",  # Streamlit's grid draws a missing number as "None", whatever the Styler's na_rep
        column_config={
            "n_params": st.column_config.NumberColumn("parameters", help="Constants plus free exponents"),
            "error": st.column_config.TextColumn("note", help="Why a model could not be fitted"),
        },
    )
    winners = cmp.winners()
    st.caption(
        f"Green: the lowest error in its column, and every error within {TIE_RTOL:.0%} of it (a tie). "
        + " · ".join(f"{label}: **{md(winners[col] or '–')}**" for col, label in METRIC_COLUMNS.items())
        + f" · hold-out: {md(cmp.holdout_query or 'none')}"
    )
    if pending:
        st.caption(pending)
    for note in cmp.notes:
        st.caption(md(note))


def render(meas, res, query: str, nested: bool) -> None:
    """Compare ``res`` with its peers on ``meas`` (hold-out ``query``; ``nested`` re-searches)."""
    ss = st.session_state
    found = ss.get("auto:selection")
    auto = found["selection"] if found and found["key"][0] == ss["data_key"] else None
    key = {
        "result": res.to_json(),
        "query": query.strip(),
        "nested": bool(nested),
        "seed": int(res.settings["seed"]),
        "loss": res.settings["loss"],
        "auto": auto.best.spec if auto is not None else None,
    }
    table_box = st.empty()
    kind = st.radio(
        "Predictions shown",
        PARITY_KINDS,
        index=1,
        horizontal=True,
        key="cmp:kind",
        help="in-sample: fitted on all runs; cross-validated: each configuration predicted by a fit "
        "without it; held-out: the larger scales predicted from the smaller ones.",
    )
    chart_box = st.empty()
    bar = st.progress(0.0, text="Comparing the models…")

    def show(cmp, pending: str = "", step: int = 0) -> None:
        with table_box.container():
            _table(cmp, pending)
        chart_box.plotly_chart(
            comparison_parity_figure(cmp, kind),
            width="content",
            theme=None,
            key=f"cmp:parity:{step}" if pending else "cmp:parity",
        )

    try:
        cmp = _run(bar, "user", key, meas, res, None)
        later = "The presets, the PMNF search" + (
            " and the automatic choice" if auto is not None else " and the automatic search"
        )
        show(cmp, f"{later} are being compared: their rows follow in a moment.", 1)
        cmp = cmp.merged(_run(bar, "peers", key, meas, res, auto), after=None)
        if auto is None:
            show(cmp, "The automatic search is still running: its row follows in a moment.", 2)
            cmp = cmp.merged(_run(bar, "automatic", key, meas, res, None))
    except PerfModelError as exc:
        bar.empty()
        st.error(f"The comparison failed: {md(exc)}", icon=":material/error:")
        return
    bar.empty()
    show(cmp)
