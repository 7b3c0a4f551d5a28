"""Cached fits and cross-validation, with a progress bar driven by the optimiser's callback.

Fits are cached with ``st.cache_data`` keyed by the data hash and the settings (as JSON), so
returning to a λ already tried is instant. The measurements and the progress callback are
passed with a leading underscore (not hashed).

The fit runs in a worker thread while the script thread draws the progress bar: the callback
only puts (generation, cost) on a queue, so no Streamlit element is touched inside the cached
function (which would otherwise be recorded and replayed on every cache hit). If the script run
is interrupted (the user changed something), the worker is told to stop and its unfinished
result is not cached.
"""

from __future__ import annotations

import json
import queue
import threading

import numpy as np
import streamlit as st

from perfmodel import FitResult, Measurements, Model, PerfModelError
from perfmodel.fitting import cross_validate

from . import state

#: A fit's cross-validation and intervals together cost 7 to 16 times the fit itself (the 27 bundled
#: datasets, 2026-12-01), counted in the fit's CPU seconds (its wall time in the server doubles when
#: the machine is busy). When that is expected to be under FOLLOW_UP_BUDGET_S seconds they are
#: computed before the page is drawn, which is then drawn once, complete. Else the page is drawn
#: first and again when they are known: the second draw is a visible jump, and on this 2-core
#: machine it delayed Results on DeepBench by 0.5 s (median 3.3 s against 2.8 s in 5 paired runs).
FOLLOW_UP_RATIO = 16
FOLLOW_UP_BUDGET_S = 1.0


def quick(res: FitResult) -> bool:
    """True when ``res``'s cross-validation and intervals are expected to take under the budget."""
    seconds = (res.convergence or {}).get("cpu_seconds")
    return seconds is not None and FOLLOW_UP_RATIO * float(seconds) <= FOLLOW_UP_BUDGET_S


class _Stopped(Exception):
    """The search was interrupted; nothing is cached."""


class NotCached(Exception):
    """Raised by a cached function called with ``_cached_only=True`` when it holds no value for
    those arguments (the call then computes nothing and caches nothing)."""


def model_from(settings: dict) -> Model:
    """The :class:`perfmodel.Model` of a settings dict (see :func:`ui.state.fit_settings`)."""
    return Model(
        settings["terms"],
        lam=settings["lam"],
        penalty=settings["penalty"],
        loss=settings["loss"],
        bounds={k: tuple(v) for k, v in settings["bounds"].items()},
        seed=settings["seed"],
        strategy=settings["strategy"],
        popsize=settings["popsize"],
        maxiter=settings["maxiter"],
        tol=settings["tol"],
        scale_weight=settings.get("scale_weight", 1.0),
    )


@st.cache_data(show_spinner=False, max_entries=256)
def _fit(data_key: str, settings_json: str, _meas: Measurements, _progress=None) -> FitResult:
    res = model_from(json.loads(settings_json)).fit(_meas, progress=_progress)
    if res.convergence.get("stopped"):
        raise _Stopped()
    return res


@st.cache_data(show_spinner=False, max_entries=128)
def _validate(
    data_key: str, settings_json: str, method: str, _meas: Measurements, _progress=None, _cached_only: bool = False
) -> dict:
    if _cached_only:
        raise NotCached()
    model = model_from(json.loads(settings_json))
    v = cross_validate(
        model, _meas, method=method, k=state.KFOLD_K, seed=int(json.loads(settings_json)["seed"]), progress=_progress
    )
    return {
        "label": f"{v.method} cross-validation" if method == "kfold" else v.method,
        "metrics": v.metrics,
        "predicted": np.asarray(v.predicted, float),
    }


def _in_thread(fn, on_message, args: tuple):
    """Run ``fn(*args, progress)`` in a worker thread; ``on_message`` draws each queued message."""
    messages: queue.SimpleQueue = queue.SimpleQueue()
    cancel = threading.Event()
    out: dict = {}

    def progress(*msg):
        messages.put(msg)
        return cancel.is_set()

    def work():
        try:
            out["value"] = fn(*args, progress)
        except BaseException as exc:
            out["error"] = exc

    worker = threading.Thread(target=work, name="perfmodel-fit", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
            last = None
            while not messages.empty():
                last = messages.get()
            if last is not None and on_message is not None:
                on_message(*last)
    finally:
        if worker.is_alive():  # the script run was interrupted: stop the search early
            cancel.set()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def run_fit(bar=None, on_fitted=None, validate: bool = True) -> bool:
    """Fit the current terms and settings to the current data; validate; store in the session.

    ``bar`` is an ``st.progress`` element (or None); ``on_fitted(result)``, when given, is called
    as soon as the fit is done, before the cross-validation (to show the new constants at once).
    ``validate=False`` leaves the cross-validation to :func:`ensure_validation` (after the page is
    drawn). Returns True on success; on a
    :class:`PerfModelError` the message is kept in ``st.session_state["fit_error"]`` and the
    previous result stays.
    """
    ss = st.session_state
    meas = ss.get("meas")
    if meas is None:
        ss["fit_error"] = "no data: load a dataset or upload a file on the Data page"
        return False
    settings = state.fit_settings()
    key = state.settings_key(settings)
    method = _validation_method()

    def on_generation(gen, maxiter, cost):
        if bar is not None:
            bar.progress(
                min(gen / max(maxiter, 1), 1.0),
                text=f"Differential evolution: generation {gen} (at most {maxiter}), cost {cost:.4g}",
            )

    try:
        expr_error = state.parsed_expression()[1]
        if expr_error:
            raise PerfModelError(expr_error)
        res = _in_thread(_fit, on_generation, (ss["data_key"], key, meas))
        res.rate = dict((ss.get("data") or {}).get("rate") or {})  # a throughput's column and work, for the export
        if on_fitted is not None:
            on_fitted(res)
        cv = None
        if method != "none" and validate:
            if bar is not None:
                bar.progress(1.0, text="Cross-validating…")

            def on_fold(i, n):
                if bar is not None:
                    bar.progress(i / n, text=f"Cross-validating: fold {i} of {n}")

            try:
                cv = _in_thread(_validate, on_fold, (ss["data_key"], key, method, meas))
            except PerfModelError as exc:
                cv = {"label": state.VALIDATION_METHODS[method], "metrics": None, "predicted": None, "error": str(exc)}
    except PerfModelError as exc:
        ss["fit_error"] = str(exc)
        return False
    if cv is not None and cv.get("metrics"):
        res.validation = {cv["label"]: cv["metrics"]}
    ss["result"], ss["cv"], ss["fit_error"] = res, cv, None
    ss["fit_key"] = (ss["data_key"], key)
    ss["cv:pending"] = method != "none" and not validate
    return True


def _validation_method() -> str:
    """The cross-validation the Model page's settings ask for ("kfold", "loco" or "none")."""
    return st.session_state["settings"].get("validation", "kfold")


def _validate_current(method: str, cached_only: bool = False) -> dict:
    """The cross-validation of the current fit (``cached_only``: only if known, else NotCached)."""
    ss = st.session_state
    args = (ss["data_key"], state.settings_key(state.fit_settings()), method, ss["meas"])
    try:
        if cached_only:
            return _validate(*args, _cached_only=True)
        return _in_thread(_validate, None, args)
    except PerfModelError as exc:
        return {"label": state.VALIDATION_METHODS[method], "metrics": None, "predicted": None, "error": str(exc)}


def ensure_fit() -> None:
    """Fit once when there is data but no result yet (first start, new data, a link).

    A quick fit (:func:`quick`) is cross-validated at once; a slower fit's cross-validation (several
    refits) follows the page's draw (:func:`ensure_validation`), so the first charts do not wait."""
    ss = st.session_state
    if ss.get("meas") is None or ss.get("result") is not None or ss.get("fit_error"):
        return
    with st.spinner("Fitting the model to the data…"):
        run_fit(validate=False)
    if ss.get("cv:pending"):
        method = _validation_method()
        try:  # validated before (another session, the same fit): no need to wait
            _store_validation(_validate_current(method, cached_only=True))
        except NotCached:
            if quick(ss["result"]):
                _store_validation(_validate_current(method))


def _store_validation(cv: dict) -> None:
    ss = st.session_state
    if cv.get("metrics"):
        ss["result"].validation = {cv["label"]: cv["metrics"]}
    ss["cv"], ss["cv:pending"] = cv, False


def ensure_validation() -> bool:
    """Cross-validate the shown fit when :func:`ensure_fit` left it for after the page. True when it
    was computed: the page and the sidebar then need a rerun to show the out-of-sample metrics
    (``app.py`` reruns once for it and the intervals together)."""
    ss = st.session_state
    res = ss.get("result")
    if not ss.get("cv:pending") or res is None:
        return False
    if is_stale():  # the terms or settings changed since: the next fit validates
        ss["cv:pending"] = False
        return False
    method = _validation_method()
    with st.spinner("Cross-validating the fit…"):
        _store_validation(_validate_current(method))
    return True


def is_stale() -> bool:
    """True when the shown result was fitted with other terms/settings than the current ones."""
    ss = st.session_state
    if ss.get("result") is None:
        return False
    return ss.get("fit_key") != (ss.get("data_key"), state.settings_key(state.fit_settings()))
