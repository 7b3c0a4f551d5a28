"""Model-page components: the terms (presets, term library, custom terms) and the fit form (bounds,
penalty, loss, validation, differential-evolution settings, *Fit model*).

Widgets are re-seeded from ``st.session_state`` on every run and written back by callbacks (which
run before the page), so the state survives page switches and a link or a button can set it.
"""

from __future__ import annotations

import streamlit as st

from perfmodel.data.datasets import get_dataset
from perfmodel.fitting.model import LOSSES, MAX_SCALE_WEIGHT, PENALTIES
from perfmodel.fitting.problem import STRATEGIES
from perfmodel.language import PRESETS
from perfmodel.language.expression import FUNCTIONS
from perfmodel.language.latex import to_latex
from perfmodel.plots.style import TERM_LABELS
from ui import fitting, state
from ui.widgets import flash, fmt_pct, latex_lines, md, show_flash

CATEGORY_BADGE = {"start-up": "gray", "compute": "blue", "communication": "orange", "scaling": "green"}
LOSS_HELP = {
    "relative": "relative: squared relative error, so short and long runs weigh the same (default)",
    "absolute": "absolute: least squares on the times (long runs dominate)",
    "log": "log: squared error of log times",
}


# -- callbacks -------------------------------------------------------------------------------------------
def _toggle(key: str, expr: str) -> None:
    ss = st.session_state
    terms = dict(ss["lib_terms"])
    if ss[f"lib:{key}"]:
        terms[key] = expr
    else:
        terms.pop(key, None)
    ss["lib_terms"] = terms


def _custom_changed() -> None:
    st.session_state["custom_terms"] = st.session_state["w:custom"]


def _use_spec(spec: str) -> None:
    state.set_spec(spec)
    st.session_state["bounds"] = {}


def _submit() -> None:
    ss = st.session_state
    s = dict(ss["settings"])
    s.update(
        penalty=ss["w:penalty"],
        loss=ss["w:loss"],
        validation=ss["w:validation"],
        seed=int(ss["w:seed"]),
        popsize=int(ss["w:popsize"]),
        maxiter=int(ss["w:maxiter"]),
        strategy=ss["w:strategy"],
        tol=float(ss["w:tol"]),
        scale_weight=float(ss.get("w:scale_weight", s.get("scale_weight", 1.0))),
    )
    ss["settings"] = s
    bounds = dict(ss.get("bounds", {}))
    for p in state.effective_bounds():
        if f"w:lo:{p}" in ss and f"w:hi:{p}" in ss:
            bounds[p] = (float(ss[f"w:lo:{p}"]), float(ss[f"w:hi:{p}"]))
    ss["bounds"] = bounds
    ss["submitted"] = True


# -- terms -----------------------------------------------------------------------------------------------
#: How the Model page explains an overlap and how its time is shared (the rule of perfmodel.language.overlap).
OVERLAP_NOTE = (
    "overlap(A, B; g) = (A^g + B^g)^(1/g): g = 1 adds A and B, large g hides the smaller one; "
    "its time is shared between A and B in proportion to A^g and B^g, and within a side in "
    "proportion to each term's own c·term, so the shares still add up to the prediction"
)


def terms_section(meas) -> None:
    """Presets, the term library as checkboxes, the custom terms and the formula they make."""
    ss = st.session_state
    st.subheader("Terms")
    st.markdown("**Start from a preset**")
    data = ss.get("data") or {}
    cols = st.columns(len(PRESETS) + 1)
    for i, (name, desc) in enumerate(PRESETS.items()):
        cols[i].button(
            name,
            key=f"preset:{name}",
            on_click=state.apply_preset,
            args=(name,),
            help=desc,
            width="stretch",
            icon=":material/auto_fix_high:",
        )
    if data.get("source") == "bundled":
        ds = get_dataset(data["name"])
        cols[-1].button(
            "dataset's suggestion",
            key="preset:dataset",
            on_click=_use_spec,
            args=(ds.terms,),
            width="stretch",
            icon=":material/recommend:",
            help=f"The terms suggested for this dataset in the catalogue: {md(ds.terms)}",
        )

    st.markdown(f"**Term library** (terms that make sense for the mapped factors {md(', '.join(meas.factors))})")
    grid = st.columns(2)
    for i, t in enumerate(state.library_terms()):
        key = f"lib:{t.key}"
        ss[key] = t.key in ss["lib_terms"]
        label = TERM_LABELS.get(t.key, t.key)
        text = ss["lib_terms"].get(t.key, t.expr).replace("`", "")
        badge = CATEGORY_BADGE.get(t.category, "gray")
        with grid[i % 2]:
            st.checkbox(
                f"**{label}** `{text}` :{badge}-badge[{t.category}]",
                key=key,
                on_change=_toggle,
                args=(t.key, t.expr),
                help=f"{t.meaning}. Term: `{t.expr}`",
            )
            st.caption(t.meaning)

    ss["w:custom"] = ss["custom_terms"]
    syms = list(meas.factors) + (["I"] if {"N", "b"} <= set(state.model_symbols(meas)) else [])
    st.text_input(
        "Custom terms, separated by +",
        key="w:custom",
        on_change=_custom_changed,
        placeholder="e.g. N/p + m*log2(p) + b^e2",
        help="Any sum of terms over the factor symbols "
        f"({md(', '.join(syms))}), numbers, "
        f"\\+ \\- \\* / ^ ( ) and the functions {', '.join(FUNCTIONS)}. Other names are free exponents, "
        "e.g. b^e2. overlap(A, B; g) = (A^g + B^g)^(1/g) says two sums of terms overlap (g from 1, "
        "none, to 10, almost max(A, B)); e.g. I\\*overlap(1 + b, log2(p); g). "
        "The text is checked when you press Enter or leave the field.",
    )
    show_flash("terms")

    expr, error = state.parsed_expression()
    if error:
        st.error(f"The terms cannot be used: {md(error)}", icon=":material/error:")
        return
    st.latex(latex_lines(to_latex(expr), 90))
    notes = []
    if "I" in expr.symbols:
        notes.append("I = E·⌈N/(p·b)⌉ is the number of iterations (epochs × steps per epoch)")
    if "b" in expr.symbols and "B" in meas.factors and "b" not in meas.factors:
        notes.append("b = B/p is the per-worker batch")
    gammas = {grp.param for grp in expr.overlaps}
    if expr.overlaps:
        notes.append(OVERLAP_NOTE)
    if expr.params:
        words = [
            (
                "e_b, the batch exponent (below 1: larger batches cost less per sample)"
                if p == "e_b"
                else f"{md(p)}, the overlap's γ in [1, 10]"
                if p in gammas
                else md(p)
            )
            for p in expr.params
        ]
        notes.append(f"free exponents, fitted within bounds: {', '.join(words)}")
    notes.append(f"{len(expr.terms)} constants")
    n_par = len(expr.terms) + len(expr.params)
    st.caption(" · ".join(notes) + f" · {n_par} fitted parameters for {meas.n_configurations} configurations")
    if n_par > meas.n_configurations:
        st.warning(
            f"{n_par} fitted parameters but only {meas.n_configurations} configurations: the penalty λ decides "
            "between models that fit equally well (at λ = 0 the fit is refused); remove terms, or read the "
            "split between terms and the intervals with care.",
            icon=":material/warning:",
        )


# -- fit form --------------------------------------------------------------------------------------------
def fit_form() -> None:
    """Bounds, penalty, loss, validation and the search settings, applied by *Fit model*."""
    ss = st.session_state
    expr, error = state.parsed_expression()
    s = ss["settings"]
    params = list(expr.params) if expr is not None else []
    bounds = state.effective_bounds(state.current_spec())
    for p in params:
        ss[f"w:lo:{p}"], ss[f"w:hi:{p}"] = float(bounds[p][0]), float(bounds[p][1])
    ss["w:penalty"], ss["w:loss"], ss["w:validation"] = s["penalty"], s["loss"], s["validation"]
    ss["w:seed"], ss["w:popsize"], ss["w:maxiter"] = int(s["seed"]), int(s["popsize"]), int(s["maxiter"])
    ss["w:strategy"], ss["w:tol"] = s["strategy"], float(s["tol"])
    ss["w:scale_weight"] = float(s.get("scale_weight", 1.0))

    with st.form("fit"):
        st.markdown("**Other fit settings** (applied when you press *Fit model*)")
        if params:
            st.markdown("Bounds of the free exponents")
            for p in params:
                c = st.columns([1, 2, 2, 3])
                c[0].markdown(f"`{p}`")
                c[1].number_input(
                    f"{p} low",
                    key=f"w:lo:{p}",
                    step=0.5,
                    format="%.3g",
                    help=f"Smallest value the search may give {md(p)}.",
                )
                c[2].number_input(
                    f"{p} high",
                    key=f"w:hi:{p}",
                    step=0.5,
                    format="%.3g",
                    help=f"Largest value the search may give {md(p)}. A result at a bound is flagged.",
                )
        c = st.columns([1, 2, 2])
        c[0].radio(
            "Penalty",
            PENALTIES,
            key="w:penalty",
            format_func=str.upper,
            horizontal=True,
            help="L1 (lasso) drives unneeded terms to exactly zero; L2 (ridge) shrinks all of them.",
        )
        c[1].selectbox(
            "Loss",
            LOSSES,
            key="w:loss",
            format_func=lambda v: LOSS_HELP[v].split(":")[0],
            help="; ".join(LOSS_HELP.values()),
        )
        c[2].selectbox(
            "Validation",
            list(state.VALIDATION_METHODS),
            key="w:validation",
            format_func=state.VALIDATION_METHODS.get,
            help="Out-of-sample check after the fit (CV, cross-validation): folds hold whole "
            "configurations, so the model is judged on configurations it has not seen. "
            "Leave-one-out refits once per configuration.",
        )
        st.columns([1, 2])[0].number_input(
            "Weight of each larger p",
            key="w:scale_weight",
            min_value=0.01,
            max_value=MAX_SCALE_WEIGHT,
            step=1.0,
            format="%g",
            help="1: every run weighs alike. Above 1, each larger measured worker count weighs this many times "
            "the one before, so the fit follows the largest scales, where an extrapolation starts (the "
            "automatic search's weighted power law uses 4).",
        )
        with st.expander("Differential evolution settings", icon=":material/settings:"):
            d = st.columns(5)
            d[0].number_input(
                "Seed",
                key="w:seed",
                step=1,
                min_value=0,
                max_value=state.MAX_SEED,
                help="Random seed of the search: the same seed gives the same result.",
            )
            d[1].number_input(
                "Population size",
                key="w:popsize",
                min_value=4,
                max_value=200,
                step=1,
                help="Population size multiplier (SciPy's popsize): candidates = popsize × parameters.",
            )
            d[2].number_input(
                "Max generations",
                key="w:maxiter",
                min_value=10,
                max_value=20000,
                step=50,
                help="Upper limit on generations; the search usually stops earlier at convergence.",
            )
            d[3].selectbox(
                "Strategy",
                STRATEGIES,
                key="w:strategy",
                help="SciPy differential-evolution strategy (how trial vectors are mutated).",
            )
            d[4].number_input(
                "Tolerance",
                key="w:tol",
                min_value=0.0,
                max_value=1.0,
                step=0.005,
                format="%.4g",
                help="Relative convergence tolerance: stop when the population's cost spread is this small.",
            )
        st.form_submit_button(
            "Fit model",
            type="primary",
            on_click=_submit,
            icon=":material/play_arrow:",
            disabled=error is not None,
            help="Fit the terms above with these settings and the λ above (cached: settings "
            "tried before return instantly).",
        )
    if ss.pop("submitted", False) and error is None:
        bar = st.progress(0.0, text="Starting the search…")
        ok = fitting.run_fit(bar)
        bar.empty()
        if ok:
            res = ss["result"]
            flash(
                "fit",
                f"Fitted in {res.convergence.get('seconds', 0):.2f} s "
                f"({res.convergence.get('nit')} generations): in-sample MAPE {fmt_pct(res.metrics['mape'])}",
            )
            st.rerun()
        st.error(f"The fit failed: {md(ss.get('fit_error'))}", icon=":material/error:")
