"""The Groups page's headline and first chart, drawn as the groups are fitted.

A first visit fits the charted groups first (:class:`ui.group_run.GroupRun`, each group cached) and
draws their curves at once; the other groups, every group's cross-validation and the charted
groups' 90 % ranges follow, under a progress bar, and the chart is drawn again with its bands and
the headline above it. A rerun (every step cached) draws the page once.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from perfmodel import PerfModelError
from perfmodel.groups import GroupFits
from perfmodel.plots.groups import (
    MODES,
    common_range_end,
    group_quality_table,
    group_scaling_data,
    group_scaling_figure,
)
from perfmodel.plots.style import FACTOR_WORDS, view_unit

from . import groups_panel
from .group_run import GroupRun
from .text import md

#: How far the groups' curves run (× the largest measured value), as the Scaling page's choices.
EXTEND = [1, 1.5, 2, 4, 8, 16, 32, 64]


def _controls(table: dict, by: list[str], run: GroupRun, fits: GroupFits) -> tuple[list[str], str, str, float]:
    """The charted groups, the factor along which they scale, the curves' mode and how far they run (widgets)."""
    ss = st.session_state
    skipped = {o.label for o in fits.outcomes if o.result is None}
    labels = [lab for lab in run.labels if lab not in skipped]
    symbols = sorted(
        {s for o in fits.outcomes if o.result is not None for s in o.result.factors}, key=lambda s: (s != "p", s)
    )
    c = st.columns([3, 2, 2, 2])
    shown_key = f"w:g:shown:{table['key']}:{'|'.join(by)}"
    if shown_key not in ss or not set(ss[shown_key]) <= set(labels):
        ss[shown_key] = groups_panel.default_shown(fits)
    shown = c[0].multiselect(
        "Groups on the charts",
        labels,
        key=shown_key,
        help="Every group is in the table below; the charts show the ones chosen here (at "
        "first: the groups that differ only in the first group column).",
    )
    x = c[1].selectbox(
        "Scale along", symbols, key="w:g:x", format_func=lambda s: f"{s}: {FACTOR_WORDS.get(s, (s,))[0]}"
    )
    mode = c[2].radio(
        "Curves",
        MODES,
        key="w:g:mode",
        horizontal=True,
        format_func=lambda m: {"time": "predicted time", "speedup": "speedup"}[m],
        help="Speedup is each group's time at its smallest measured value over its time at x.",
    )
    if ss.get("w:g:extend") not in EXTEND:
        ss["w:g:extend"] = 4  # as the Scaling page: a doubling beyond the data is rarely the question
    extend = c[3].select_slider(
        "Extend the curves to",
        options=EXTEND,
        key="w:g:extend",
        format_func=lambda v: f"{v:g} ×",
        help="How far past the largest measured value (over all groups) the curves run; beyond it they "
        "are dashed. Open one group below to see its own Scaling and Plan pages.",
    )
    return shown, x, mode, float(extend)


def curves(table: dict, by: list[str], terms: str) -> tuple[GroupFits, str, list[str], float | None, str]:
    """Fit every group and draw the status line, the controls, the headline and the curves.

    Returns (the fits, the charted groups' with their intervals; the factor along which they
    scale; the charted groups; the largest value measured in all of them, or None; the time unit
    of the view, chosen by magnitude from the charted curves, for the split chart and the
    constants too). Stops the
    script with an error (a bad column or term) or when no group could be fitted."""
    ss = st.session_state
    try:
        run = GroupRun(table, by, terms)
    except PerfModelError as exc:
        st.error(md(exc), icon=":material/error:")
        st.stop()
    n, named = len(run.plan), ", ".join(md(b) for b in by)
    done_key = "g:done:" + hashlib.sha1(repr(run.args).encode("utf-8")).hexdigest()[:16]
    status, controls, head, chart, bar = st.empty(), st.container(), st.empty(), st.empty(), st.progress(0.0)

    def step(what: str, base: int):
        return lambda i, total, label: bar.progress(min((base + i) / (2 * n), 1.0), text=f"{what} {md(label)}…")

    status.markdown(f"Fitting {n} groups by {named}, the charted ones first…")
    run.fit(run.first(), each=step("Fitting", 0))
    if not run.fits().n_ok:
        run.fit(range(n), each=step("Fitting", len(run.fitted)))
    fits = run.fits()
    if not fits.n_ok:
        bar.empty()
        status.markdown(f"**0 of {n} groups fitted** by {named}.")
        st.warning("No group could be fitted; see the reasons below.", icon=":material/warning:")
        st.dataframe(group_quality_table(fits), hide_index=True, placeholder=groups_panel.MISSING)
        st.stop()
    with controls:
        shown, x, mode, extend = _controls(table, by, run, fits)
    run.fit([i for i, lab in enumerate(run.plan.labels) if lab in shown], each=step("Fitting", len(run.fitted)))
    if not ss.get(done_key):  # a first run: the curves now, before the slow part
        status.markdown(f"Fitting {n} groups by {named}: {len(run.fitted)} fitted, the charted ones first…")
        first = run.fits()
        chart.plotly_chart(
            group_scaling_figure(first, x, mode, extend, labels=shown, unit=_unit(first, x, shown, extend=extend)),
            width="stretch",
            key="g:curves:first",
        )
    run.fit(range(n), each=step("Fitting", len(run.fitted)))
    run.fit(range(n), cv=True, each=step("Cross-validating", n))
    bar.progress(1.0, text="Computing the 90 % ranges of the charted groups…")
    fits = groups_panel.with_intervals(table, by, terms, run.fits(), shown)  # the charted groups' bands
    bar.empty()
    ss[done_key] = True

    skipped = [o for o in fits.outcomes if o.status != "ok"]
    status.markdown(
        f"**{fits.n_ok} of {len(fits)} groups fitted** by {named} in {fits.seconds:.1f} s"
        + (f"; {len(skipped)} skipped (reasons in the table)" if skipped else "")
        + "."
    )
    speedups = group_scaling_data(fits, x, "speedup", extend, labels=shown)
    times = group_scaling_data(fits, x, "time", extend, labels=shown)
    unit = _unit(fits, x, shown, times)
    at = common_range_end(speedups)
    head_text = ""
    if at is not None and len(speedups) > 1:
        head_text = groups_panel.headline(fits, speedups, x, at)
        head.markdown(head_text)
    figure = group_scaling_figure(
        fits, x, mode, extend, labels=shown, curves=speedups if mode == "speedup" else times, unit=unit
    )
    chart.plotly_chart(figure, width="stretch", key="g:curves")
    ss["g:view"] = {
        "figure": figure,
        "headline": head_text if at is not None and len(speedups) > 1 else "",
        "x_end": float(times[0].x[-1]) if times else None,
    }
    return fits, x, shown, at, unit


def _unit(fits: GroupFits, x: str, shown: list[str], times=None, extend: float = 2.0) -> str:
    """One unit for the time chart, the split chart and the constants (the split's totals lie on the
    curves), chosen by the magnitude of the charted groups' times, ranges and measurements."""
    times = group_scaling_data(fits, x, "time", extend, labels=shown) if times is None else times
    return view_unit(*(c.y for c in times), *(c.high for c in times), *(c.points_y for c in times))
