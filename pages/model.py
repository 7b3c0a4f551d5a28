"""Model: choose the terms, bounds, loss, λ and search settings, then fit."""

import streamlit as st

from perfmodel.datasets import get_dataset
from perfmodel.expression import FUNCTIONS
from perfmodel.fit import LOSSES, PENALTIES, STRATEGIES
from perfmodel.latex import to_latex
from perfmodel.plots import TERM_LABELS
from perfmodel.terms import PRESETS
from ui import fitting, state
from ui.nav import guard
from ui.widgets import PAGES, fmt_lambda, fmt_pct

guard()
ss = st.session_state

st.title("Model")
st.caption("The execution time is modelled as a sum of terms, T = Σ c_k·term_k(p, N, b, E, …). Each term gets a "
           "fitted constant c_k ≥ 0; names that are not factor symbols are free exponents fitted within bounds.")

meas = ss.get("meas")
if meas is None:
    st.info("Load a dataset or upload a file first.", icon=":material/table:")
    st.page_link(PAGES["data"], label="Go to the Data page", icon=":material/arrow_forward:")
    st.stop()

flash = ss.pop("flash", None)
if flash:
    st.success(flash, icon=":material/check_circle:")

CATEGORY_BADGE = {"start-up": "gray", "compute": "blue", "communication": "orange", "scaling": "green"}
LOSS_HELP = {"relative": "relative: squared relative error, so short and long runs weigh the same (default)",
             "absolute": "absolute: least squares on the times (long runs dominate)",
             "log": "log: squared error of log times"}


# -- callbacks (run before the page, so every widget below is re-seeded from the session state) ----------
def _toggle(key: str, expr: str) -> None:
    terms = dict(ss["lib_terms"])
    if ss[f"lib:{key}"]:
        terms[key] = expr
    else:
        terms.pop(key, None)
    ss["lib_terms"] = terms


def _custom_changed() -> None:
    ss["custom_terms"] = ss["w:custom"]


def _use_spec(spec: str) -> None:
    state.set_spec(spec)
    ss["bounds"] = {}


def _submit() -> None:
    s = dict(ss["settings"])
    s.update(lam=float(ss["w:lam"]), penalty=ss["w:penalty"], loss=ss["w:loss"], validation=ss["w:validation"],
             seed=int(ss["w:seed"]), popsize=int(ss["w:popsize"]), maxiter=int(ss["w:maxiter"]),
             strategy=ss["w:strategy"], tol=float(ss["w:tol"]))
    ss["settings"] = s
    bounds = dict(ss.get("bounds", {}))
    for p in state.effective_bounds():
        if f"w:lo:{p}" in ss and f"w:hi:{p}" in ss:
            bounds[p] = (float(ss[f"w:lo:{p}"]), float(ss[f"w:hi:{p}"]))
    ss["bounds"] = bounds
    ss["submitted"] = True


# -- presets -------------------------------------------------------------------------------------------
st.subheader("Terms")
st.markdown("**Start from a preset**")
data = ss.get("data") or {}
cols = st.columns(len(PRESETS) + 1)
for i, (name, desc) in enumerate(PRESETS.items()):
    cols[i].button(name, key=f"preset:{name}", on_click=state.apply_preset, args=(name,), help=desc,
                   width="stretch", icon=":material/auto_fix_high:")
if data.get("source") == "bundled":
    ds = get_dataset(data["name"])
    cols[-1].button("dataset's suggestion", key="preset:dataset", on_click=_use_spec, args=(ds.terms,),
                    width="stretch", icon=":material/recommend:",
                    help=f"The terms suggested for this dataset in the catalogue: {ds.terms}")

# -- library --------------------------------------------------------------------------------------------
st.markdown("**Term library** (terms that make sense for the mapped factors "
            f"{', '.join(meas.factors)})")
lib = state.library_terms()
grid = st.columns(2)
for i, t in enumerate(lib):
    key = f"lib:{t.key}"
    ss[key] = t.key in ss["lib_terms"]
    label = TERM_LABELS.get(t.key, t.key)
    text = ss["lib_terms"].get(t.key, t.expr)
    badge = CATEGORY_BADGE.get(t.category, "gray")
    with grid[i % 2]:
        st.checkbox(f"**{label}** `{text}` :{badge}-badge[{t.category}]", key=key, on_change=_toggle,
                    args=(t.key, t.expr), help=f"{t.meaning}. Term: {t.expr}")
        st.caption(t.meaning)

# -- custom terms ------------------------------------------------------------------------------------------
ss["w:custom"] = ss["custom_terms"]
st.text_input(
    "Custom terms, separated by +", key="w:custom", on_change=_custom_changed,
    placeholder="e.g. N/p + m*log2(p) + b^e2",
    help="Any sum of terms over the factor symbols "
         f"({', '.join(list(meas.factors) + (['I'] if {'N', 'b'} <= set(meas.factors) else []))}), numbers, "
         f"+ - * / ^ ( ) and the functions {', '.join(FUNCTIONS)}. Other names are free exponents, "
         "e.g. b^e2. The text is checked when you press Enter or leave the field.")

expr, error = state.parsed_expression()
spec = state.current_spec()
if error:
    st.error(f"The terms cannot be used: {error}", icon=":material/error:")
else:
    st.latex(to_latex(expr))
    notes = []
    if "I" in expr.symbols:
        notes.append("I = E·⌈N/(p·b)⌉ is the number of iterations")
    if expr.params:
        notes.append(f"free exponents: {', '.join(expr.params)}")
    notes.append(f"{len(expr.terms)} constants")
    n_par = len(expr.terms) + len(expr.params)
    st.caption(" · ".join(notes) + f" · {n_par} fitted parameters for {meas.n_configurations} configurations")
    if n_par > meas.n_configurations:
        st.warning(f"{n_par} fitted parameters but only {meas.n_configurations} configurations: remove terms.",
                   icon=":material/warning:")

# -- automatic term selection and λ by validation (issue 6; component in ui/autoselect_panel.py) --------
from ui import autoselect_panel  # noqa: E402

autoselect_panel.render()
# -- end of the automatic-selection component --------------------------------------------------------------

# -- settings and fit ------------------------------------------------------------------------------------
st.subheader("Fit")
s = ss["settings"]
params = list(expr.params) if expr is not None else []
bounds = state.effective_bounds(spec)
for p in params:
    ss[f"w:lo:{p}"], ss[f"w:hi:{p}"] = float(bounds[p][0]), float(bounds[p][1])
lams = sorted(set(state.LAMBDAS) | {float(s["lam"])})
ss["w:lam"] = float(s["lam"])
ss["w:penalty"], ss["w:loss"], ss["w:validation"] = s["penalty"], s["loss"], s["validation"]
ss["w:seed"], ss["w:popsize"], ss["w:maxiter"] = int(s["seed"]), int(s["popsize"]), int(s["maxiter"])
ss["w:strategy"], ss["w:tol"] = s["strategy"], float(s["tol"])

with st.form("fit"):
    if params:
        st.markdown("**Bounds of the free exponents**")
        for p in params:
            c = st.columns([1, 2, 2, 3])
            c[0].markdown(f"`{p}`")
            c[1].number_input(f"{p} low", key=f"w:lo:{p}", step=0.5, format="%.3g",
                              help=f"Smallest value the search may give {p}.")
            c[2].number_input(f"{p} high", key=f"w:hi:{p}", step=0.5, format="%.3g",
                              help=f"Largest value the search may give {p}. A result at a bound is flagged.")
    c = st.columns([3, 1, 2])
    c[0].select_slider(
        "Regularisation weight λ (log scale)", options=lams, key="w:lam", format_func=fmt_lambda,
        help="Weight of the penalty on the constants (normalised by the data, so λ means the same on any "
             "dataset). 0: no penalty; larger λ shrinks small terms towards zero (simpler model, larger error).")
    c[1].radio("Penalty", PENALTIES, key="w:penalty", format_func=str.upper, horizontal=True,
               help="L1 (lasso) drives unneeded terms to exactly zero; L2 (ridge) shrinks all of them.")
    c[2].selectbox("Loss", LOSSES, key="w:loss", format_func=lambda v: LOSS_HELP[v].split(":")[0],
                   help="; ".join(LOSS_HELP.values()))
    st.selectbox("Validation", list(state.VALIDATION_METHODS), key="w:validation",
                 format_func=state.VALIDATION_METHODS.get,
                 help="Out-of-sample check after the fit: folds hold whole configurations, so the model is "
                      "judged on configurations it has not seen. Leave-one-out refits once per configuration.")
    with st.expander("Differential evolution settings", icon=":material/settings:"):
        d = st.columns(5)
        d[0].number_input("Seed", key="w:seed", step=1, min_value=0, max_value=state.MAX_SEED,
                          help="Random seed of the search: the same seed gives the same result.")
        d[1].number_input("Population size", key="w:popsize", min_value=4, max_value=200, step=1,
                          help="Population size multiplier (SciPy's popsize): candidates = popsize × parameters.")
        d[2].number_input("Max generations", key="w:maxiter", min_value=10, max_value=20000, step=50,
                          help="Upper limit on generations; the search usually stops earlier at convergence.")
        d[3].selectbox("Strategy", STRATEGIES, key="w:strategy",
                       help="SciPy differential-evolution strategy (how trial vectors are mutated).")
        d[4].number_input("Tolerance", key="w:tol", min_value=0.0, max_value=1.0, step=0.005, format="%.4g",
                          help="Relative convergence tolerance: stop when the population's cost spread is this small.")
    submitted = st.form_submit_button("Fit model", type="primary", on_click=_submit, icon=":material/play_arrow:",
                                      disabled=error is not None,
                                      help="Fit the terms above to the data (cached: settings tried before "
                                           "return instantly).")

if ss.pop("submitted", False) and error is None:
    bar = st.progress(0.0, text="Starting the search…")
    ok = fitting.run_fit(bar)
    bar.empty()
    if ok:
        res = ss["result"]
        ss["flash"] = (f"Fitted in {res.convergence.get('seconds', 0):.2f} s "
                       f"({res.convergence.get('nit')} generations): in-sample MAPE {fmt_pct(res.metrics['mape'])}")
        st.rerun()

if ss.get("fit_error"):
    st.error(f"The fit failed: {ss['fit_error']}", icon=":material/error:")

res = ss.get("result")
if res is not None:
    if fitting.is_stale():
        st.info("The terms or settings above differ from the fitted model below; press **Fit model** to refit.",
                icon=":material/update:")
    st.markdown("**Current fitted model**")
    st.latex(res.latex(3))
    cv = ss.get("cv") or {}
    cv_text = f" · {cv['label']}: MAPE {fmt_pct(cv['metrics']['mape'])}" if cv.get("metrics") else ""
    st.caption(f"In-sample MAPE {fmt_pct(res.metrics['mape'])}{cv_text} · λ = {fmt_lambda(res.settings['lam'])} · "
               f"{res.convergence.get('nit')} generations, {res.convergence.get('seconds', 0):.2f} s")
    for w in res.warnings:
        st.warning(w, icon=":material/warning:")
    if cv.get("error"):
        st.warning(f"Cross-validation was not possible: {cv['error']}", icon=":material/warning:")
    st.page_link(PAGES["results"], label="See the results", icon=":material/insights:")
