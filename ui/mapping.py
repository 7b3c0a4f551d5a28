"""Data-page component: the form that maps a table's columns to the time and the factor symbols."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from perfmodel import PerfModelError
from perfmodel.data import ROLE_SYMBOLS
from perfmodel.data.throughput import looks_like_throughput, rate_unit_from_name
from perfmodel.data.time_units import TIME_UNITS, unit_from_name
from ui import fitting, state
from ui.text import md

NONE = "— not measured —"
FROM_NAME = "from its name"


def mapping_form(
    frame: pd.DataFrame,
    file_name: str,
    initial: dict,
    key: str,
    submit_label: str,
    title: str | None = None,
    source: str = "upload",
    content: bytes | None = None,
    where: dict | None = None,
) -> None:
    """Column-to-role mapping (first guess given) and the button that applies it (to the rows of the group
    ``where``, {column: value}, when one is open)."""
    cols = [str(c) for c in frame.columns]
    extrap = state.is_extrap_frame(frame)
    with st.form(f"mapping:{key}"):
        st.markdown("**Map columns to roles**")
        c = st.columns(3)
        c += st.columns(3)
        time_col = c[0].selectbox(
            "Time or throughput",
            cols,
            index=cols.index(initial["time"]) if initial["time"] in cols else 0,
            key=f"{key}:time",
            help="The measured run time of each row (its unit below), or its rate of work "
            "(tick 'It is a throughput' below). Rows with a missing, non-numeric or "
            "non-positive value are left out and listed.",
        )
        chosen = {}
        for i, sym in enumerate(state.SYMBOL_ROLES):
            guess = initial["factors"].get(sym)
            opts = [NONE] + cols
            chosen[sym] = c[(i + 1) % len(c)].selectbox(
                f"{sym}: {ROLE_SYMBOLS[sym]}",
                opts,
                index=opts.index(guess) if guess in opts else 0,
                key=f"{key}:{sym}",
                help=f"The column holding {ROLE_SYMBOLS[sym]} (symbol {sym} in the terms). Leave it "
                "'not measured' when the data has no such column; the term library adapts.",
            )
        tc = st.columns(3, vertical_alignment="bottom")
        rate = tc[0].checkbox(
            "It is a throughput",
            value=bool(initial.get("rate")) or looks_like_throughput(initial["time"]),
            key=f"{key}:is_rate",
            help="Tick when the column is a rate of work (images/s, tokens/s, samples/s) rather than a time: "
            "the model is then fitted to the work per run over the rate, in seconds.",
        )
        work = tc[1].number_input(
            "Work per run (units, with a throughput)",
            min_value=0.0,
            value=float((initial.get("rate") or {}).get("work", 1.0)),
            step=1.0,
            format="%g",
            key=f"{key}:work",
            help="Units of work in one run (e.g. samples per epoch): the time is this "
            "over the throughput. 1: seconds per unit of work.",
        )
        units = [FROM_NAME, *TIME_UNITS]
        shown = (initial.get("rate") or {}).get("unit", "s") if initial.get("rate") else initial.get("unit")
        unit = tc[2].selectbox(
            "Unit of the time",
            units,
            index=units.index(shown if shown in units else FROM_NAME),
            key=f"{key}:unit",
            format_func=lambda u: {"us": "µs"}.get(u, u),
            help="The unit the time column is measured in; it is read in seconds. 'from its name': the unit "
            "the column's name states as a unit (step_time_ms: ms, epoch time (min): min, time_min_s: s), "
            "else seconds. With a throughput: the unit of time it is per (images/min: min; 'from its "
            "name': the unit its name divides by, else seconds).",
        )
        others_guess = [col for sym, col in initial["factors"].items() if sym not in state.SYMBOL_ROLES and col in cols]
        exclude = {"region", "metric", "repetition"} if extrap else set()
        others = st.multiselect(
            "Other factors (each becomes a symbol of the terms)",
            [x for x in cols if x not in exclude],
            default=others_guess,
            key=f"{key}:others",
            help="Further numeric knobs of the runs (e.g. message size m, neurons n). Each becomes a symbol "
            "you can use in the terms: the column name, or, when it is not a valid name (spaces, a "
            "leading digit, …), the name with underscores, e.g. *message size* → message\\_size.",
        )
        region = metric = None
        if extrap or "region" in cols and "metric" in cols and "time" in cols:
            rc = st.columns(2)
            regions = sorted(frame["region"].astype(str).unique())
            region = rc[0].selectbox(
                "Region",
                regions,
                key=f"{key}:region",
                help="Extra-P files can hold several code regions; one is modelled at a time.",
            )
            metrics = sorted(frame.loc[frame["region"].astype(str) == region, "metric"].astype(str).unique())
            metric = rc[1].selectbox(
                "Metric",
                metrics,
                key=f"{key}:metric",
                help="The metric of the region to model (Extra-P's METRIC line).",
            )
        go = st.form_submit_button(
            submit_label,
            type="primary",
            help="Validate the mapping, make this the current data and fit the default model.",
        )
    if go:
        factors = {sym: col for sym, col in chosen.items() if col != NONE}
        guessed = {col: sym for sym, col in initial["factors"].items() if sym not in state.SYMBOL_ROLES}
        for col in others:  # a guessed preset symbol (nodes, servers) keeps its name
            sym = guessed.get(col)
            factors[sym if sym and sym not in factors else state.symbol_for(col, factors)] = col
        try:
            if rate:
                per = (rate_unit_from_name(time_col) or "s") if unit == FROM_NAME else unit
                rate = {"column": time_col, "work": float(work), **({"unit": per} if per != "s" else {})}
                unit = "s"
            else:
                rate = {}
                unit = (unit_from_name(time_col) or "s") if unit == FROM_NAME else unit
            state.apply_upload(
                file_name,
                frame,
                time_col,
                factors,
                region,
                metric,
                title=title,
                source=source,
                content=content,
                rate=rate,
                unit=unit,
                where=where,
            )
        except PerfModelError as exc:
            st.error(md(exc), icon=":material/error:")
            return
        bar = st.progress(0.0, text="Fitting…")
        fitting.run_fit(bar)
        st.rerun()
