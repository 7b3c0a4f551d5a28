"""Model-page component: "Find terms for me" (automatic search) and "Choose λ by validation".

The Model page calls :func:`render` once. Nothing here runs until the user presses a button,
so the page stays as fast as before:

* **Find terms for me** runs :func:`perfmodel.search.auto_select` on the current data with the
  page's loss and seed at the library's default λ, as ``fit --auto`` does (a progress bar; any
  click, e.g. *Stop*, cancels it), lists the candidates simplest first among those within noise
  of the best, and *Use these terms* puts a candidate's terms (and the bounds of its free
  exponents) into the model above.
* **Choose λ by validation** runs :func:`perfmodel.search.lambda_path` for the current terms and
  draws the path (each term's share of the time and the cross-validated error against λ), with
  the λ that the validation picks marked; *Use λ = …* sets it for the next fit.

Results are cached with ``st.cache_data`` (keyed by the data hash and the settings) and the last
ones are kept in ``st.session_state`` under ``auto:selection`` and ``auto:lampath``.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from perfmodel import Measurements, PerfModelError
from perfmodel.fitting import DEFAULT_LAM
from perfmodel.plots.selection import lambda_path_figure, selection_figure, term_names
from perfmodel.search import Selection, auto_select, lambda_path, plausible
from ui import fitting, lambda_live, state
from ui.widgets import flash, fmt_lambda, fmt_pct, md, show_flash

K = 5
#: The search in full, for the help tooltip of its one-line description.
SEARCH_DETAILS = (
    "Searches sums of terms from the term library (iterations, per-iteration compute I·b^e, data-parallel "
    "N/p, all-reduce, parameter server, start-up), Extra-P's blocks x^i·log2(x)^j of each factor (also with "
    "negative i, for time that falls with p) and products of two or three factors' blocks; every term set "
    f"is scored by {K}-fold cross-validation and by predicting the largest scales from the smaller ones. "
    "The best few are refitted with free exponents where that helps, and as compute overlapping the "
    "synchronisation (Pollux's structure); the presets data-parallel, pollux and optimus are validated beside "
    "them. Among those within noise of the best, "
    "the simplest is listed first: fewest parameters plus a readability cost (0 for library terms, 1 for a "
    "one-factor block, k for a product of k factors). With more than three factors, those that do not change "
    "the score get no terms. Uses the loss and seed of the fit settings below, at the default λ = 1e-5 as the "
    "CLI does (then choose λ with the λ path)."
)


class _Stopped(Exception):
    """The search was interrupted; nothing is cached."""


# -- cached computations (the progress callback is not hashed) ------------------------------------
@st.cache_data(show_spinner=False, max_entries=32)
def _search(data_key: str, settings_json: str, _meas: Measurements, _progress=None) -> Selection:
    cancelled = [False]

    def progress(done, total, message):
        if _progress is not None:
            cancelled[0] = bool(_progress(done, total, message))

    kw = json.loads(settings_json)
    sel = auto_select(_meas, k=K, progress=progress, should_stop=lambda: cancelled[0], **kw)
    if sel.stopped:
        raise _Stopped()
    return sel


@st.cache_data(show_spinner=False, max_entries=32)
def _path(data_key: str, settings_json: str, _meas: Measurements, _progress=None):
    cancelled = [False]

    def progress(done, total, message):
        if _progress is not None:
            cancelled[0] = bool(_progress(done, total, message))

    settings = json.loads(settings_json)
    path = lambda_path(
        fitting.model_from(settings),
        _meas,
        k=K,
        seed=int(settings["seed"]),
        progress=progress,
        should_stop=lambda: cancelled[0],
    )
    if cancelled[0]:
        raise _Stopped()
    return path


def ensemble_for(result) -> str:
    """The other plausible candidates of the last automatic search on the current data, as JSON for
    :func:`ui.intervals` (``{"members": [fit JSON, ...], "scores": [...], "noise": x}``), when
    ``result`` fits the terms of one of its candidates; else "". As the CLI's ``--auto``, the
    intervals then average over the models the data cannot tell apart
    (:func:`perfmodel.search.plausible`)."""
    ss = st.session_state
    found = ss.get("auto:selection")
    if result is None or not found or found["key"][0] != ss.get("data_key"):
        return ""
    sel: Selection = found["selection"]
    shown = [c for c in sel.candidates if c.result is not None and c.result.expression == result.expression]
    if not shown:
        return ""
    _, others, averaging = plausible(sel, shown[0])
    if not others:
        return ""
    return json.dumps(
        {"members": [r.to_json() for r in others], "scores": averaging["scores"], "noise": averaging["noise_scale"]}
    )


# -- callbacks (run before the page, so its widgets are re-seeded from the session state) ---------------
def _use_candidate(spec: str, bounds: dict, scale_weight: float = 1.0) -> None:
    state.set_spec(spec)
    st.session_state["bounds"] = {k: tuple(v) for k, v in bounds.items()}
    st.session_state["settings"] = {**st.session_state["settings"], "scale_weight": float(scale_weight)}
    st.session_state["bounds_spec"] = spec  # a coefficient held at one value belongs to these terms only
    weighted = f", each larger p weighing {scale_weight:g}× the one before" if scale_weight != 1 else ""
    flash("auto", f"Terms set to {md(spec)} (from the automatic search{weighted}); press **Fit model** to fit them.")


def _use_lambda(lam: float) -> None:
    lambda_live.request_refit(lam)
    flash("lampath", f"λ set to {fmt_lambda(lam)} (picked by cross-validation) and refitted.")


# -- the component ----------------------------------------------------------------------------------------
def _bar_updater(bar, what: str):
    def on_message(done, total, message):
        bar.progress(min(done / max(total, 1), 1.0), text=f"{what}: {message}")

    return on_message


def _search_settings(max_terms: int) -> dict:
    # the library's default λ, as `fit --auto`: with λ = 0 a model with more parameters than
    # configurations (the paper's, on 3 GPU counts) could not be validated
    s = st.session_state["settings"]
    return {
        "lam": DEFAULT_LAM,
        "loss": s["loss"],
        "penalty": s["penalty"],
        "seed": int(s["seed"]),
        "max_terms": int(max_terms),
    }


#: The candidates' error columns, left out when no candidate has that error: the scaling laws that
#: three or fewer worker counts are given (:attr:`Selection.rule`) are not cross-validated, as k folds
#: of so few configurations would each fit a law to one or two of them.
ERROR_COLUMNS = ("CV MAPE (%)", "held-out MAPE (%)")


def _candidates_frame(sel: Selection) -> pd.DataFrame:
    frame = pd.DataFrame(
        [
            {
                "#": i + 1,
                "expression": c.spec,
                "law": c.origin.removeprefix("law: ") if c.origin.startswith("law: ") else "",
                "parameters": c.n_params,
                "readability": c.readability,
                "CV MAPE (%)": c.cv.get("mape", float("nan")),
                "held-out MAPE (%)": c.holdout.get("mape", float("nan")),
                "score": c.score,
            }
            for i, c in enumerate(sel.candidates)
        ]
    )
    return frame.drop(columns=[c for c in ERROR_COLUMNS if frame[c].isna().all()])


def _score_column(sel: Selection):
    """The score's column: the validation's score, or for the scaling laws chosen between by the corpus's
    rule, the rule's evidence (each law's median error over the corpus's extrapolations of such series)."""
    if sel.rule:
        return st.column_config.NumberColumn(
            "corpus error (%)",
            format="%.1f",
            help="Median error of the law when extrapolating the corpus's series like this one (the rule's "
            "evidence, not a validation on these runs): lower is better",
        )
    how = "½·CV MAPE + ½·held-out MAPE" if sel.holdout_query else "the CV MAPE (no scales to hold out)"
    return st.column_config.NumberColumn("score", format="%.2f", help=f"{how}: lower is better")


def _run_and_store(
    label: str, fn, args: tuple, key: tuple, store: str, field: str, error_key: str, stopped_text: str
) -> None:
    """Run ``fn(*args)`` in a worker thread with a progress bar; keep its result or its error."""
    ss = st.session_state
    bar = st.progress(0.0, text=f"{label}: starting…")
    try:
        ss[store] = {"key": key, field: fitting._in_thread(fn, _bar_updater(bar, label), args)}
        ss.pop(error_key, None)
    except PerfModelError as exc:
        ss[error_key] = str(exc)
    except _Stopped:
        ss[error_key] = stopped_text
    bar.empty()


def _stored(store: str, error_key: str, failed: str) -> dict | None:
    """Show a stored error; return the stored result when it belongs to the current data."""
    ss = st.session_state
    if ss.get(error_key):
        st.error(f"{failed}: {md(ss[error_key])}", icon=":material/error:")
    found = ss.get(store)
    if not found or found["key"][0] != ss["data_key"]:
        return None
    return found


def _search_caption() -> None:
    st.caption(
        "Tries sums of start-up, compute and communication terms, scores each by how well it predicts runs it "
        "was not fitted on (the largest scales among them), and lists the simplest of those that predict about "
        "equally well first.",
        help=SEARCH_DETAILS,
    )


def _find_terms(meas: Measurements) -> None:
    ss = st.session_state
    _search_caption()
    c = st.columns([2, 1, 1])
    max_terms = c[0].slider(
        "Most terms per model",
        2,
        6,
        5,
        key="auto:max_terms",
        help="Largest number of terms (the intercept included) a candidate may have. "
        "More terms: a wider search and a larger risk of over-fitting.",
    )
    go = c[1].button(
        "Find terms for me",
        type="primary",
        key="auto:go",
        icon=":material/travel_explore:",
        help="Run the automatic search on the current data (a few seconds; cached).",
    )
    c[2].button(
        "Stop",
        key="auto:stop",
        icon=":material/stop_circle:",
        help="Stop a running search (any other click stops it too).",
    )
    settings = _search_settings(max_terms)
    key = (ss["data_key"], json.dumps(settings, sort_keys=True))
    if go:
        _run_and_store(
            "Automatic search",
            _search,
            (key[0], key[1], meas),
            key,
            "auto:selection",
            "selection",
            "auto:error",
            "the search was stopped",
        )
    found = _stored("auto:selection", "auto:error", "The automatic search failed")
    if found is None:
        return
    sel: Selection = found["selection"]
    if found["key"] != key:
        st.caption("These candidates were found with other settings; press *Find terms for me* to search again.")
    st.markdown(
        f"**Candidates** (simplest first among those within noise of the best; "
        f"{sel.n_screened:,} term sets screened, {len(sel.evaluated)} refined, {sel.seconds:.1f} s)"
    )
    st.dataframe(
        _candidates_frame(sel),
        hide_index=True,
        width="stretch",
        column_config={
            "expression": st.column_config.TextColumn("expression", help="The candidate's terms"),
            "law": st.column_config.TextColumn(
                "law",
                help="The scaling law it is (empty: found by the term search); the weighted power law is the "
                "power law fitted with each larger measured worker count weighing more",
            ),
            "parameters": st.column_config.NumberColumn("parameters", help="Constants plus free exponents"),
            "readability": st.column_config.NumberColumn(
                "readability cost", help="0: library terms only; +1 per one-factor block, +k per product of k factors"
            ),
            "CV MAPE (%)": st.column_config.NumberColumn(
                "CV MAPE (%)", format="%.2f", help=f"{K}-fold cross-validated error"
            ),
            "held-out MAPE (%)": st.column_config.NumberColumn(
                "held-out MAPE (%)",
                format="%.2f",
                help=f"Error on the largest scales ({md(sel.holdout_query or 'none')}), fitted on the others",
            ),
            "score": _score_column(sel),
        },
        placeholder="—",
    )
    for line in sel.explain():
        st.info(md(line), icon=":material/info:")
    show_flash("auto")
    cols = st.columns(len(sel.candidates))
    for i, (col, cand) in enumerate(zip(cols, sel.candidates, strict=True)):
        col.button(
            f"Use #{i + 1}",
            key=f"auto:use:{i}",
            on_click=_use_candidate,
            args=(cand.spec, cand.bounds, cand.scale_weight),
            icon=":material/input:",
            width="stretch",
            help=f"Put these terms into the model above: {md(cand.spec)}",
        )
    with st.expander("How the candidates compare", icon=":material/scatter_plot:"):
        st.plotly_chart(selection_figure(sel), key="auto:selection_chart")
        st.code(sel.report(), language=None)


def _choose_lambda(meas: Measurements) -> None:
    ss = st.session_state
    expr, error = state.parsed_expression()
    st.caption(
        f"Fits the current terms at λ from 0 to 0.1 and cross-validates each ({K}-fold). The λ picked is "
        "the largest whose error is within one standard error of the lowest (the one-standard-error "
        "rule): the simplest model that predicts as well as the best."
    )
    settings = state.fit_settings()
    settings.pop("lam", None)
    key = (ss["data_key"], json.dumps(settings, sort_keys=True))
    go = st.button(
        "Compute the λ path",
        key="auto:lampath_go",
        icon=":material/timeline:",
        disabled=error is not None,
        help="Fit and cross-validate the terms above over a range of λ (about a dozen fits per λ; cached).",
    )
    if go and error is None:
        full = {**settings, "lam": 0.0}
        _run_and_store(
            "λ path",
            _path,
            (key[0], json.dumps(full, sort_keys=True), meas),
            key,
            "auto:lampath",
            "path",
            "auto:lampath_error",
            "stopped",
        )
    found = _stored("auto:lampath", "auto:lampath_error", "The λ path failed")
    if found is None:
        return
    path = found["path"]
    if found["key"] != key:
        st.caption(
            f"This path is for other terms or settings ({md(path.expression)}); compute it again for the current ones."
        )
    res = st.session_state.get("result")
    names = term_names(res) if res is not None and set(path.terms) <= set(res.terms) else None
    st.plotly_chart(lambda_path_figure(path, names=names), key="auto:lampath_chart")
    i = list(path.lams).index(path.chosen)
    c = st.columns([1, 1, 2])
    c[0].metric(
        "λ picked by validation",
        fmt_lambda(path.chosen),
        help="Largest λ whose cross-validated MAPE is within one standard error of the lowest.",
    )
    c[1].metric(
        "its CV MAPE",
        fmt_pct(path.cv_mape[i]),
        help=f"{K}-fold cross-validated MAPE at that λ (lowest: {fmt_pct(min(path.cv_mape))} at "
        f"λ = {fmt_lambda(path.lam_min)}).",
    )
    c[2].button(
        f"Use λ = {fmt_lambda(path.chosen)}",
        key="auto:use_lambda",
        on_click=_use_lambda,
        args=(path.chosen,),
        type="primary",
        icon=":material/check:",
        help="Set the regularisation weight of the fit below to the λ picked by validation and refit.",
    )
    show_flash("lampath")


def render() -> None:
    """Draw the component (the Model page calls this once)."""
    meas = st.session_state.get("meas")
    if meas is None:
        return
    # Keyed expanders keep their open state in the session: a button inside one (which reruns the
    # page) leaves it open, so its result and the buttons under it stay in view.
    with st.expander(
        "Find terms for me (automatic search)",
        icon=":material/travel_explore:",
        key="auto:open_search",
        on_change="rerun",
    ):
        _find_terms(meas)
    with st.expander(
        "Choose λ by validation (λ path)", icon=":material/tune:", key="auto:open_lampath", on_change="rerun"
    ):
        _choose_lambda(meas)
