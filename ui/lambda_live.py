"""Model-page component: the regularisation weight λ, tuned live.

The λ slider lives outside the fit form, in an ``st.fragment``: moving it reruns only this
fragment, which refits (cached by data and settings, so a λ tried before returns at once) and
redraws the fitted formula and a chart beside it (parity, or the scaling curve). The new formula
is drawn as soon as the fit is done; the cross-validated error follows. Under the slider, a strip
shows the error of every λ fitted so far for the same data, terms and other settings, the current
λ marked. The sidebar follows on the next full run of the page.
"""

from __future__ import annotations

import json

import streamlit as st

from perfmodel.plots.parity import parity_figure
from perfmodel.plots.scaling import scaling_figure
from perfmodel.plots.selection import lambda_strip_figure
from perfmodel.plots.style import fmt_num, growth_title, term_name, term_styles
from ui import fitting, state
from ui.widgets import fmt_lambda, fmt_pct, latex_lines, md, show_flash

CHARTS = {"parity": "predicted against measured", "scaling": "scaling curve"}
LAMBDA_HELP = (
    "Weight of the penalty on the constants (normalised by the data, so λ means the same on any "
    "dataset). 0: no penalty; a larger λ shrinks small terms towards zero (a simpler model, a larger "
    "error). Moving it refits at once."
)


def _series(fit_key) -> str:
    """The fit's data and settings without λ: the points of one strip."""
    data_key, settings_json = fit_key
    s = json.loads(settings_json)
    s.pop("lam", None)
    return data_key + json.dumps(s, sort_keys=True)


def record_current() -> None:
    """Remember the in-sample and cross-validated MAPE of the current fit at its λ."""
    ss = st.session_state
    res, key = ss.get("result"), ss.get("fit_key")
    if res is None or key is None:
        return
    cv = (ss.get("cv") or {}).get("metrics") or {}
    strips = ss.setdefault("lam:strips", {})
    strips.setdefault(_series(key), {})[float(res.settings["lam"])] = (
        float(res.metrics["mape"]),
        float(cv.get("mape", float("nan"))),
    )
    kept = ss.setdefault("lam:kept", {})
    kept.setdefault(_series(key), {})[float(res.settings["lam"])] = kept_terms(res)


def kept_terms(res) -> tuple:
    """The terms of ``res`` that carry time (a coefficient that is not 0)."""
    return tuple(t for k, t in enumerate(res.terms) if res.coefficients[f"c{k}"] != 0)


def revived(kept_by_lam: dict, lam: float) -> tuple[list, float] | None:
    """(terms kept at ``lam`` but dropped at a smaller λ tried before, that smaller λ), or None: the
    exception to "a larger λ, a simpler formula" that the page explains where it happens."""
    now = set(kept_by_lam.get(lam, ()))
    for smaller in sorted((v for v in kept_by_lam if v < lam), reverse=True):
        back = [t for t in kept_by_lam[lam] if t in now - set(kept_by_lam[smaller])]
        if back:
            return back, smaller
    return None


def revived_note(res, back: list, smaller: float) -> str:
    """One sentence: why raising λ brought ``back`` (dropped at ``smaller``) into ``res``."""
    names = {s.text: term_name(s) for s in term_styles(res)}
    what = []
    for term in back:
        k = list(res.terms).index(term)
        size = (
            f"{fmt_num(res.coefficients[f'c{k}'])} s"
            if term == "1"
            else f"{res.shares.get(term, 0.0) * 100:.1f} % of the time"
        )
        what.append(f"{md(names.get(term, term))} ({size})")
    return (
        f"Raising λ to {fmt_lambda(res.settings['lam'])} brought back {', '.join(what)}, dropped at "
        f"λ = {fmt_lambda(smaller)}: λ weighs each term by its share of the time, so a larger λ lowers the "
        "largest term most, and the fit makes up the shortest runs' time with a small term it had no use "
        "for before; a larger λ does not always mean fewer terms."
    )


def _strip_points() -> dict:
    ss = st.session_state
    key = ss.get("fit_key")
    points = dict(ss.get("lam:strips", {}).get(_series(key), {})) if key else {}
    path = ss.get("auto:lampath")
    if path and key and path["key"][0] == key[0]:
        p = path["path"]
        s = json.loads(key[1])
        s.pop("lam", None)
        if path["key"][1] == json.dumps(s, sort_keys=True):  # the λ path of these very terms and settings
            for lam, fit, cv in zip(p.lams, p.fit_mape, p.cv_mape, strict=True):
                points.setdefault(float(lam), (float(fit), float(cv)))
    return points


def _lambda_changed() -> None:
    ss = st.session_state
    ss["settings"] = {**ss["settings"], "lam": float(ss["w:lam"])}
    ss["lam:refit"] = True


def request_refit(lam: float) -> None:
    """Set λ and refit on the next run (e.g. "Use λ" of the λ path)."""
    ss = st.session_state
    ss["settings"] = {**ss["settings"], "lam": float(lam)}
    ss["lam:refit"] = True


def _chart(res, meas, kind: str):
    if kind == "scaling" and res.factors:
        x = "p" if "p" in res.factors else next(iter(res.factors))
        lo, hi = res.factor_ranges[x]
        return scaling_figure(
            res,
            x,
            meas=meas,
            log_x=bool(lo > 0 and hi / lo >= 8),
            height=400,
            title=growth_title("Run time", x),
        )
    # inside, the legend hid points of this small chart; above it, a wrapped legend ran into the subtitle
    return parity_figure(res, meas, height=480, legend="below")


@st.fragment
def render() -> None:
    """Draw the component (the Model page calls this once)."""
    ss = st.session_state
    full_run = ss.pop("run:full", False)  # set by app.py: False when only this fragment reruns
    meas = ss.get("meas")
    if meas is None:
        return
    _expr, error = state.parsed_expression()
    lam = float(ss["settings"]["lam"])
    left, right = st.columns([2, 3], gap="large")
    with left:
        ss["w:lam"] = lam
        st.select_slider(
            "Regularisation weight λ (log scale)",
            options=sorted(set(state.LAMBDAS) | {lam}),
            key="w:lam",
            format_func=fmt_lambda,
            on_change=_lambda_changed,
            disabled=error is not None,
            help=LAMBDA_HELP,
        )
        strip = st.container(key="live_strip").empty()
        stats = st.empty()
        st.radio(
            "Beside the formula",
            list(CHARTS),
            format_func=CHARTS.get,
            key="w:live_chart",
            horizontal=True,
            help="The chart redrawn with every λ: measured against predicted time of every run, or the "
            "predicted time along p (the scaling curve).",
        )
    with right:
        show_flash("fit")
        formula = st.container(key="live_formula").empty()
        chart = st.container(key="live_chart").empty()
        notes = st.container()

    drawn = []

    def draw(res) -> None:
        formula.latex(latex_lines(res.latex(3), 44))  # in lines: the column never cuts it off
        chart.plotly_chart(_chart(res, meas, ss.get("w:live_chart", "parity")), width="stretch", theme=None)
        drawn.append(res)

    refitted = False
    if ss.pop("lam:refit", False) and error is None:
        with notes:
            bar = st.progress(0.0, text="Fitting…")
        refitted = fitting.run_fit(bar, on_fitted=draw)
        bar.empty()
    res = ss.get("result")
    if res is None:
        with notes:
            st.info("No fitted model yet: press **Fit model** below.", icon=":material/functions:")
        return
    if not drawn:
        draw(res)
    record_current()

    cv = ss.get("cv") or {}
    cv_text = f" · {md(cv['label'])}: MAPE **{fmt_pct(cv['metrics']['mape'])}**" if cv.get("metrics") else ""
    stats.markdown(
        f"λ = **{fmt_lambda(res.settings['lam'])}** · in-sample MAPE **{fmt_pct(res.metrics['mape'])}**"
        f"{cv_text}  \n{res.convergence.get('nit')} generations, "
        f"{res.convergence.get('seconds', 0):.2f} s"
    )
    points = _strip_points()
    if len(points) < 2:
        strip.caption("Move λ: the error of every λ you try is drawn here, the current one marked.")
    else:
        lams = sorted(points)
        strip.plotly_chart(
            lambda_strip_figure(
                lams, [points[v][0] for v in lams], [points[v][1] for v in lams], float(res.settings["lam"])
            ),
            width="stretch",
            theme=None,
            config={"displayModeBar": False},
        )
    with notes:
        if ss.get("fit_error"):
            st.error(f"The fit failed: {md(ss['fit_error'])}", icon=":material/error:")
        if fitting.is_stale():
            st.info(
                "The terms or settings changed since this fit: move λ or press **Fit model** to refit.",
                icon=":material/update:",
            )
        for w in res.warnings:
            st.warning(md(w), icon=":material/warning:")
        back = (
            revived(ss.get("lam:kept", {}).get(_series(ss["fit_key"]), {}), float(res.settings["lam"]))
            if ss.get("fit_key")
            else None
        )
        if back:
            st.info(revived_note(res, *back), icon=":material/lightbulb:")
        if cv.get("error"):
            st.warning(f"Cross-validation was not possible: {md(cv['error'])}", icon=":material/warning:")
    if refitted and not full_run:
        # A run of this fragment alone: the formula and chart above are new; a full run brings the
        # sidebar and the link along (a full run draws them after the page anyway).
        st.rerun(scope="app")
