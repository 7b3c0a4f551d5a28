"""The Scaling page's "What to measure next" panel: perfmodel.advise on the shown fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from perfmodel import PerfModelError
from perfmodel.advise import advise
from perfmodel.plots.style import fmt_num
from perfmodel.spreadsheet import to_csv
from perfmodel.uncertainty.prior import counts_accelerators
from perfmodel.uncertainty.ranges import range_at
from perfmodel.wording import fmt_band, fmt_time

from .text import md


def candidate_values(values, target: float) -> list[float]:
    """The measured values, the powers of two up to ``target`` (a sweep's usual steps) and the target
    itself (a run at the target is often the one that tells most, as ``perfmodel advise`` ranks it)."""
    vals = set(float(v) for v in values) | {float(target)}
    if target > 0 and min(vals) > 0:
        v = 2.0 ** np.floor(np.log2(min(vals)))
        while v < target:
            vals.add(float(v))
            v *= 2
    return sorted(x for x in vals if x <= target or x in values)


def show(res, meas, symbol: str, fixed: dict, target_x: float, unit: str | None = None) -> None:
    """Rank the runs worth measuring next for the prediction at ``symbol = target_x``; times in
    ``unit`` (the page's one unit; by default each time's own)."""
    sym = md(symbol)
    # p × time is GPU-hours where p counts GPUs; machines or ranks use worker-hours
    w = "GPU" if counts_accelerators(res.factors.get("p", "")) else "worker"
    st.subheader("What to measure next")
    st.caption(
        f"Which run would narrow the interval at {sym} = {fmt_num(target_x)} most, per {w}-hour it uses "
        "(p × its predicted run time; or per hour of wall time, below): every plausible model the bootstrap "
        "kept is asked what that run would show, and a run beyond the measured range also shortens the "
        "extrapolation."
    )
    target = {**fixed, symbol: float(target_x)}
    measured = np.unique(meas.values(symbol)) if symbol in meas.factors else [res.factor_ranges[symbol][1]]
    grid = {symbol: candidate_values(measured, float(target_x))}
    c = st.columns([1, 3])
    budget_h = c[0].number_input(
        "Budget (hours of runs, 0: no limit)",
        min_value=0.0,
        value=0.0,
        step=0.5,
        key="w:advise_budget",
        help="Plan only the runs whose predicted times fit in it.",
    )
    by_wall = c[0].toggle(
        "Rank by wall time",
        key="w:advise_wall",
        help=f"Off: the gain per {w}-hour of the run (a wide run costs p times the resources "
        f"of a one-{w} run of the same length). On: the gain per hour of waiting.",
    )
    try:
        table = advise(
            res,
            target,
            grid,
            budget=budget_h * 3600 if budget_h > 0 else None,
            rank_by="wall-time" if by_wall else "gpu-hours",
        )
    except PerfModelError as exc:
        st.info(md(str(exc)), icon=":material/info:")
        return
    a = table.attrs
    top = table.iloc[0]
    today = range_at(res, {**a.get("filled", {}), **target})
    if top["gain_pct"] > 0:
        c[1].success(
            f"Measure **{sym} = {fmt_num(top[symbol])}** next: the interval at {sym} = {fmt_num(target_x)}, today "
            f"{fmt_time(today.point, today.low, today.high, unit)} ({fmt_band(today.point, today.low, today.high)}), "
            f"would narrow from ±{today.halfwidth_pct:.0f} % to about ±{top['target_halfwidth_pct']:.0f} %, for a run "
            f"of about {fmt_time(top['predicted_time'], unit=unit)}.",
            icon=":material/science:",
        )
    else:
        c[1].info("No candidate run would narrow the interval at the target noticeably.", icon=":material/info:")
    view = pd.DataFrame(
        {
            symbol: table[symbol],
            "predicted run time": [fmt_time(v, unit=unit) for v in table["predicted_time"]],
            f"± at the target after it (%; today {today.halfwidth_pct:.0f})": table["target_halfwidth_pct"].round(1),
            "narrower by (points of ±)": table["gain_pct"].round(1),
            f"{w}-hours": table["gpu_hours"],
            f"per {w}-hour": table["gain_per_gpu_hour"],
            "per hour of runs": table["gain_per_hour"],
        }
    )
    if "in_plan" in table:
        view["in the plan"] = table["in_plan"]
    st.dataframe(
        view.head(8),
        hide_index=True,
        width="stretch",
        # three significant digits: a run of milliseconds uses 1e-5 GPU-hours, not "0.00"
        column_config={
            c: st.column_config.NumberColumn(c, format="%.3g")
            for c in (f"{w}-hours", f"per {w}-hour", "per hour of runs")
        },
    )
    st.download_button(
        "Download the ranked runs (CSV, for `sweep --plan`)",
        to_csv(table),
        file_name="measure_next.csv",
        mime="text/csv",
        key="advise_csv",
    )
