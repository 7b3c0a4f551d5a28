"""Per-session state of the dashboard: defaults, the current data, the model terms and settings,
and the query parameters that make a link reproduce a view.

Everything lives in ``st.session_state`` (never in module-level mutable objects), so two browser
tabs never see each other's data. Keys:

``data``       dict: source ("bundled"/"upload"), name, title, description, origin, frame (the table
               as read), time, factors, region/metric (Extra-P uploads)
``meas``       the validated :class:`perfmodel.Measurements` (None when the mapping is invalid)
``data_key``   hash of everything in the measurements that reaches an output (cache key of every fit)
``lib_terms``  {library key: term text} of the checked library terms
``custom_terms`` the other terms, as typed ("+"-separated)
``bounds``     {free parameter: (low, high)}
``settings``   λ, penalty, loss, seed, DE settings and the validation method
``result``     the current :class:`perfmodel.FitResult` (its ``validation`` filled), ``cv`` its
               out-of-sample predictions; ``fit_error`` the last fit's error message
"""

from __future__ import annotations

import hashlib
import json
import math
import re

import numpy as np
import pandas as pd
import streamlit as st

from perfmodel import Measurements, PerfModelError
from perfmodel.data import guess_roles, read_table
from perfmodel.data.datasets import DEFAULT_DATASET, get_dataset, list_datasets, load_frame
from perfmodel.data.measurements import sparse_columns
from perfmodel.data.throughput import guess_throughput, time_from_throughput
from perfmodel.data.time_units import TIME_UNITS, check_unit, time_in_seconds
from perfmodel.fitting import DEFAULT_LAM, defaults
from perfmodel.fitting.model import MAX_SCALE_WEIGHT, MAX_SEED
from perfmodel.language import PRESETS, library, parse_expression, preset_bounds, preset_spec
from perfmodel.language.expression import FUNCTIONS
from perfmodel.language.overlap import assemble, join_signed
from perfmodel.language.terms import effective_symbols
from perfmodel.uncertainty.prior import topology, with_topology

from . import links
from .text import md

#: λ choices of the log-scale slider (0 included).
LAMBDAS = (0.0, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0)
#: The λ of a new session (the one place the app reads its default λ from).
DEFAULT_LAMBDA = DEFAULT_LAM  # the library's, so the app, the CLI and the library fit alike
DEFAULT_SETTINGS = {
    "lam": DEFAULT_LAMBDA,
    "penalty": "l1",
    "loss": "relative",
    "seed": 0,
    # Modest differential-evolution settings: a fit of the default dataset takes well under a second.
    "strategy": "best1bin",
    "popsize": 15,
    "maxiter": 300,
    "tol": 0.01,
    "validation": "kfold",
    "scale_weight": 1.0,  # every row alike (the weighted power law of the automatic search uses more)
}
VALIDATION_METHODS = {
    "kfold": "5-fold cross-validation (by configuration)",
    "loco": "leave-one-configuration-out",
    "none": "none",
}
KFOLD_K = 5
#: Largest upload in MB (2^20 bytes); ``server.maxUploadSize`` in .streamlit/config.toml says the same,
#: so the server refuses a larger file before it is read.
MAX_UPLOAD_MB = 50

SYMBOL_ROLES = ("p", "N", "b", "B", "E")


# -- initialisation -----------------------------------------------------------------------------
def init() -> None:
    """Set the session defaults once: the default (or linked) dataset and model."""
    ss = st.session_state
    if ss.get("initialised"):
        return
    ss["settings"] = dict(DEFAULT_SETTINGS)
    ss["bounds"] = {}
    ss["lib_terms"], ss["custom_terms"] = {}, ""
    ss["result"], ss["cv"], ss["fit_error"], ss["notice"] = None, None, None, None
    ss["meas"], ss["data"], ss["data_key"], ss["data_error"] = None, None, None, None
    qp = st.query_params
    notices = []
    lam = _float(qp.get("lam"))
    if lam is not None and math.isfinite(lam) and lam >= 0:
        ss["settings"]["lam"] = lam
    elif "lam" in qp:
        notices.append(f"ignored the link's λ {md(repr(qp.get('lam')))} (not a number ≥ 0)")
    weight = _float(qp.get("weight"))
    if weight is not None and 0 < weight <= MAX_SCALE_WEIGHT:
        ss["settings"]["scale_weight"] = weight
    elif "weight" in qp:
        notices.append(
            f"ignored the link's scale weight {md(repr(qp.get('weight')))} (not a number in (0, {MAX_SCALE_WEIGHT:g}])"
        )
    seed = _int(qp.get("seed"))
    if seed is not None and 0 <= seed <= MAX_SEED:
        ss["settings"]["seed"] = seed
    elif "seed" in qp:
        notices.append(f"ignored the link's seed {md(repr(qp.get('seed')))} (not an integer within [0, {MAX_SEED}])")
    gpn = _int(qp.get("gpus_per_node"))  # before the data: its topology (nodes from p) is made from it
    if gpn is not None and 0 <= gpn <= 4096:  # the GPUs per node the link's author set on the Data page
        ss["gpus_per_node"] = ss["w:gpus_per_node"] = gpn
    elif "gpus_per_node" in qp:
        notices.append(f"ignored the link's GPUs per node {md(repr(qp.get('gpus_per_node')))} (not 0 to 4096)")
    opened = _open_linked_data(qp, notices)
    terms = qp.get("terms")
    if terms and opened:
        set_spec(terms)
    ss["notice"] = "; ".join(notices) or None
    ss["initialised"] = True


def take_notice() -> str | None:
    """The link's notice for this run: shown once, and again in a run that only redraws the same view
    with more results (:func:`rerun_same_view`), so such a rerun does not take it away."""
    ss = st.session_state
    notice = ss.pop("notice", None)
    if notice is None and ss.pop("rerun:same_view", False):
        notice = ss.get("notice:shown")
    ss["notice:shown"] = notice
    return notice


def rerun_same_view() -> None:
    """Rerun to draw the same view again with results computed after it was drawn (intervals,
    cross-validation)."""
    st.session_state["rerun:same_view"] = True
    st.rerun()


def _link_rate(mapping: dict) -> dict:
    """A link's throughput ({"column", "work"}; {} when its time is a time), checked (raises TypeError)."""
    rate = mapping.get("rate") or {}
    if rate and not (
        isinstance(rate, dict)
        and isinstance(rate.get("column"), str)
        and isinstance(rate.get("work"), (int, float))
        and not isinstance(rate.get("work"), bool)
        and rate.get("unit", "s") in TIME_UNITS
    ):
        raise TypeError(f"its throughput {rate!r} is not a column, a work per run and a time unit")
    unit = {"unit": rate["unit"]} if rate and rate.get("unit", "s") != "s" else {}
    return {"column": rate["column"], "work": float(rate["work"]), **unit} if rate else {}


def fitted_table(data: dict) -> tuple[pd.DataFrame, str]:
    """(table, time column) of the current data as it is fitted: with a throughput's time (work / rate)
    or a time read in seconds added, and the column it was made from left out (else it would be one
    more column to group by); the table and time as they are otherwise."""
    time = data["time"]
    out, fit_time = _time_as_fitted(data["frame"], time, data.get("rate"), data.get("unit") or "s")
    return (out.drop(columns=[time]) if fit_time != time else out), fit_time


def _time_as_fitted(frame: pd.DataFrame, time: str, rate: dict | None, unit: str) -> tuple[pd.DataFrame, str]:
    """(frame, the column fitted as the time): a throughput's time (work / rate) or the time read in
    seconds added to ``frame``."""
    if rate:
        return time_from_throughput(frame, rate["column"], rate["work"], rate.get("unit", "s"))
    return time_in_seconds(frame, time, unit)


def _link_where(mapping: dict) -> dict:
    """A link's group ({column: value} of the rows it shows; {} for the whole table), checked (raises TypeError)."""
    where = mapping.get("where") or {}
    if not isinstance(where, dict) or not all(isinstance(v, (str, int, float)) for v in where.values()):
        raise TypeError(f"its group {where!r} is not columns and values")
    return {str(k): str(v) for k, v in where.items()}


def _where_title(where: dict) -> str:
    return ": " + ", ".join(f"{k} = {v}" for k, v in where.items()) if where else ""


def open_group(table: dict, where: dict, terms: str) -> None:
    """Make one group of the Groups page's ``table`` the current data ({column: value} ``where``), with
    the mapping of that table kept (its time, throughput and work per run, time unit and factors) and
    the group's own ``terms`` (raises PerfModelError)."""
    ss = st.session_state
    data = ss.get("data") or {}
    if table.get("key") == ss.get("data_key") and data.get("frame") is not None:  # the current data
        kept = links.store().get(data.get("upload_key")) if data.get("upload_key") else None
        apply_upload(
            data.get("file_name") or data["name"],
            data["frame"],
            data["time"],
            data["factors"],
            data.get("region"),
            data.get("metric"),
            title=str(data.get("title") or data["name"]).replace(" (uploaded)", "") + _where_title(where),
            source="upload" if data.get("source") == "upload" else "remapped",
            content=kept.content if kept is not None else None,
            rate=data.get("rate") or None,
            unit=data.get("unit") or "s",
            where=where,
        )
    else:  # the bundled table the Groups page opened on
        ds = get_dataset(str(table["key"]))
        apply_upload(
            ds.name,
            load_frame(ds.name),
            ds.time_column,
            dict(ds.factors),
            title=ds.title + _where_title(where),
            source="remapped",
            where=where,
        )
    set_spec(terms)


def _link_unit(mapping: dict) -> str:
    """A link's time unit (seconds when it names none), checked (raises PerfModelError)."""
    return check_unit(str(mapping.get("unit", "s")))


def _open_linked_data(qp, notices: list) -> bool:
    """Open the data a link names (a bundled dataset, one remapped, or a kept upload); on failure
    the default dataset, with a notice that says so. True when the link's data was opened."""
    mapping = _json(qp.get("map"))
    if qp.get("upload"):
        kept = links.store().get(qp.get("upload"))
        if kept is not None:
            try:
                apply_upload(
                    kept.name,
                    read_upload(kept.name, kept.content),
                    mapping["time"],
                    mapping["factors"],
                    mapping.get("region"),
                    mapping.get("metric"),
                    content=kept.content,
                    rate=_link_rate(mapping),
                    unit=_link_unit(mapping),
                    where=_link_where(mapping),
                )
                return True
            except (PerfModelError, KeyError, TypeError) as exc:
                notices.append(f"could not reopen the linked upload {md(kept.name)}: {md(exc)}")
        else:
            notices.append(
                f"this link was made on an uploaded file, which this server no longer holds (uploads "
                f"are kept {links.TTL_DAYS} days, not across restarts, and only up to "
                f"{links.MAX_BYTES // 1_000_000} MB): the bundled default dataset is shown instead, "
                "without the link's terms; upload the file again to see the linked view"
            )
        load_bundled(DEFAULT_DATASET)
        return False
    name = qp.get("dataset") or DEFAULT_DATASET
    try:
        load_bundled(name)
    except PerfModelError as exc:
        notices.append(f"could not open the linked dataset: {md(exc)}")
        load_bundled(DEFAULT_DATASET)
        return False
    if mapping:
        data = st.session_state["data"]
        try:
            apply_upload(
                name,
                data["frame"],
                mapping["time"],
                mapping["factors"],
                title=f"{data['title']} (your column mapping)" + _where_title(_link_where(mapping)),
                source="remapped",
                rate=_link_rate(mapping),
                unit=_link_unit(mapping),
                where=_link_where(mapping),
            )
        except (PerfModelError, KeyError, TypeError) as exc:
            notices.append(
                f"could not apply the link's column mapping ({md(exc)}): the dataset's own mapping and terms are shown"
            )
            load_bundled(name)
            return False
    return True


def _json(v) -> dict | None:
    try:
        out = json.loads(v) if v else None
    except (TypeError, ValueError):
        return None
    return out if isinstance(out, dict) else None


def _float(v) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def _int(v) -> int | None:
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


# -- data -------------------------------------------------------------------------------------------
def bundled_names() -> list[str]:
    return [d.name for d in list_datasets()]


def data_key(meas: Measurements) -> str:
    """Hash of everything of the measurements that can reach an output: the kept rows (every
    column, values and types, row numbers), the dropped rows and their reasons, the mapping and
    the name. Two sessions share a cached fit only when all of it is equal."""
    frame = meas.frame
    h = hashlib.sha256()
    h.update(
        json.dumps(
            {
                "time": meas.time,
                "factors": meas.factors,
                "name": meas.name,
                "columns": [str(c) for c in frame.columns],
                "dtypes": [str(t) for t in frame.dtypes],
                "dropped": [str(d) for d in meas.dropped],
            },
            sort_keys=True,
        ).encode()
    )
    h.update(np.ascontiguousarray(pd.util.hash_pandas_object(frame, index=True).to_numpy()).tobytes())
    return h.hexdigest()[:32]


def set_gpus_per_node(value: int | None) -> None:
    """The Data page's GPUs per node (0: unknown, None: the guess): the current data takes it as its
    topology (a nodes column made from p, :func:`perfmodel.uncertainty.prior.with_topology`), so the fits,
    as the CLI's with ``--gpus-per-node``, know where a run crosses nodes."""
    ss = st.session_state
    ss["gpus_per_node"] = value
    raw = ss.get("meas_raw")
    if raw is None:
        return
    meas = with_topology(raw, value)
    key = data_key(meas)
    if key != ss.get("data_key"):
        ss["meas"], ss["data_key"] = meas, key
        ss["result"], ss["cv"], ss["fit_error"] = None, None, None


def _set_data(data: dict, meas: Measurements, spec: str | None) -> None:
    ss = st.session_state
    ss["meas_raw"] = meas  # as mapped; the fits see it with its topology (nodes from p), as the CLI's do
    meas = with_topology(meas, ss.get("gpus_per_node"))
    ss["data"], ss["meas"], ss["data_key"], ss["data_error"] = data, meas, data_key(meas), None
    ss["result"], ss["cv"], ss["fit_error"] = None, None, None
    ss["bounds"] = {}
    ss.pop("scaling_view", None)  # the last data's Scaling view is not this data's (the Export page's report)
    set_spec(spec or default_spec(meas))


def load_bundled(name: str) -> None:
    """Open bundled dataset ``name`` with its suggested mapping and terms."""
    ds = get_dataset(name)
    frame = load_frame(name)
    meas = Measurements.from_frame(frame, ds.time_column, dict(ds.factors), name=ds.name)
    _set_data(
        {
            "source": "bundled",
            "name": ds.name,
            "title": ds.title,
            "description": ds.description,
            "origin": ds.source,
            "frame": frame,
            "time": ds.time_column,
            "factors": dict(ds.factors),
            "region": None,
            "metric": None,
            "unit": ds.time_unit,  # stated by the catalogue, never read from the column's name
        },
        meas,
        ds.terms,
    )


def read_upload(file_name: str, content: bytes) -> pd.DataFrame:
    """Read uploaded bytes (CSV or Extra-P text, guessed); raises PerfModelError."""
    if not content:
        raise PerfModelError(f"{file_name}: the file is empty")
    if len(content) > MAX_UPLOAD_MB * 1024 * 1024:
        raise PerfModelError(f"{file_name}: the file is {len(content) / 2**20:.1f} MB; the limit is {MAX_UPLOAD_MB} MB")
    frame = read_table(content, name=file_name)
    if frame.shape[0] == 0:
        raise PerfModelError(f"{file_name}: the table has a header but no rows")
    return frame


def is_extrap_frame(frame: pd.DataFrame) -> bool:
    cols = list(frame.columns)
    return cols[-4:] == ["region", "metric", "repetition", "time"]


def guess_mapping(frame: pd.DataFrame, works: dict | None = None) -> dict:
    """First guess of the mapping: {"time": col, "factors": {symbol: col}}, with {"rate": {"column",
    "work"}} when ``works`` ({throughput column: work per run} the user gave before) knows the guessed
    time column as a throughput (the work per run is not asked again for the next upload)."""
    if is_extrap_frame(frame):
        params = [c for c in frame.columns if c not in ("region", "metric", "repetition", "time")]
        return {"time": "time", "factors": {p: p for p in params}}
    roles = guess_roles([str(c) for c in frame.columns], skip=sparse_columns(frame))  # it would drop most rows
    time = roles.pop("time", None)
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    if time is None:  # a rate of work (images/s, ...) is fitted as a time; else the last numeric column
        time = guess_throughput(frame.columns) or (numeric[-1] if numeric else str(frame.columns[-1]))
    factors = {sym: col for sym, col in roles.items() if col != time and "time" not in str(col).lower()}
    work = (works or {}).get(str(time))
    return {"time": time, "factors": factors, **({"rate": {"column": time, "work": work}} if work else {})}


def apply_upload(
    file_name: str,
    frame: pd.DataFrame,
    time: str,
    factors: dict,
    region: str | None = None,
    metric: str | None = None,
    title: str | None = None,
    source: str = "upload",
    content: bytes | None = None,
    rate: dict | None = None,
    unit: str = "s",
    where: dict | None = None,
) -> Measurements:
    """Validate the mapping of a table (uploaded, or a bundled one remapped: ``source="remapped"``)
    and make it the current data (raises PerfModelError). ``content``: the uploaded bytes, kept
    on the server so that a link to this view can bring them (see :mod:`ui.links`). ``rate``:
    ``{"column", "work"}`` when ``time`` is a throughput, fitted as work / rate
    (:func:`perfmodel.data.throughput.time_from_throughput`); else ``unit`` the time's unit, read in
    seconds (:func:`perfmodel.data.time_units.time_in_seconds`). ``where``: {column: value} of one group's
    rows (a group opened from the Groups page; the table is kept whole, so its mapping can change)."""
    if not isinstance(time, str) or not isinstance(factors, dict):  # a link's mapping is typed text
        raise PerfModelError(
            f"the mapping needs a time column's name and factors as {{symbol: column}}, got time {time!r:.60} "
            f"and factors {factors!r:.60}"
        )
    bad = next((f"{k!r}: {v!r}" for k, v in factors.items() if not (isinstance(k, str) and isinstance(v, str))), None)
    if bad or not all(x is None or isinstance(x, str) for x in (region, metric)):
        raise PerfModelError(
            f"the mapping's factors must map symbols to column names, got {bad or (region, metric)!r:.60}"
        )
    unit = "s" if rate else check_unit(unit)
    if not factors:
        raise PerfModelError("map at least one column to a factor (p, N, b, E or another symbol)")
    used = [c for c in factors.values()]
    dup = sorted({c for c in used if used.count(c) > 1})
    if dup:
        raise PerfModelError(f"column(s) {', '.join(map(repr, dup))} mapped to more than one symbol")
    sub = frame
    if region is not None and "region" in frame.columns:
        sub = sub[sub["region"] == region]
    if metric is not None and "metric" in frame.columns:
        sub = sub[sub["metric"] == metric]
    where = {str(k): str(v) for k, v in (where or {}).items()}
    for col, value in where.items():
        if col not in sub.columns:
            raise PerfModelError(f"column {col!r} (of the group) is not in the table")
        sub = sub[sub[col].astype(str) == value]
        if sub.empty:
            raise PerfModelError(f"no row has {col} = {value!r}")
    name = file_name + (f" [{region}" + (f" / {metric}" if metric else "") + "]" if region else "")
    if where:  # the fit's name says which group it is (its exports are named after it)
        name = file_name + " [" + ", ".join(f"{k} = {v}" for k, v in where.items()) + "]"
    if rate and rate["column"] in factors.values():
        raise PerfModelError(f"column {rate['column']!r} is the throughput and a factor")
    sub, fit_time = _time_as_fitted(sub, time, rate, unit)
    if rate:  # the next upload with this throughput column starts from this work per run
        st.session_state.setdefault("works", {})[str(rate["column"])] = float(rate["work"])
    meas = Measurements.from_frame(sub.reset_index(drop=True), fit_time, dict(factors), name=name)
    _set_data(
        {
            "source": source,
            "name": name if not where else file_name,  # a bundled dataset's own name (its link reopens it)
            "title": title or f"{name} (uploaded)",
            "description": f"{len(frame)} rows; time column {time!r}",
            "origin": "uploaded by you" if source == "upload" else "your column mapping",
            "frame": frame,
            "time": time,
            "factors": dict(factors),
            "region": region,
            "metric": metric,
            "rate": dict(rate or {}),
            "unit": unit,
            "file_name": file_name,
            "where": where,
            "upload_key": links.store().keep(file_name, content) if content is not None else None,
        },
        meas,
        None,
    )
    return meas


# -- terms ----------------------------------------------------------------------------------------
def symbols() -> list[str]:
    meas = st.session_state.get("meas")
    return list(meas.factors) if meas is not None else []


def model_symbols(meas: Measurements) -> list[str]:
    """The symbols terms may use: the mapped factors (and b = B/p when only B is mapped)."""
    return effective_symbols(meas.factors)


def symbol_for(column: str, taken) -> str:
    """The symbol of an "other factor" column: its name when that is a usable identifier, else the
    name with every run of other characters made an underscore ("message size" -> message_size),
    never a function name, a role symbol or one already ``taken``."""
    name = re.sub(r"\W+", "_", str(column)).strip("_") or "x"
    if name[0].isdigit():
        name = f"x_{name}"
    reserved = set(FUNCTIONS) | set(SYMBOL_ROLES) | {"I"} | set(taken)
    base, k = name, 2
    while name in reserved or not name.isidentifier():
        name, k = f"{base}_{k}", k + 1
    return name


def positive_symbols(meas: Measurements) -> list[str]:
    return defaults.positive_symbols(meas)


def default_spec(meas: Measurements) -> str:
    """The terms proposed for new data: :func:`perfmodel.fitting.defaults.default_spec`, the model
    ``perfmodel fit`` fits when no model is named (the data-parallel preset from 3 configurations on)."""
    return defaults.default_spec(meas)


def _canon(text: str, params) -> str:
    for p in sorted(params, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(p)}(?![A-Za-z0-9_])", "#", text)
    return text


def library_terms() -> list:
    """The library terms for the current symbols (perfmodel.language.terms.LibraryTerm)."""
    return library(symbols())


def split_spec(spec: str, syms: list[str]) -> tuple[dict, str]:
    """Split an expression into ({library key: term text}, custom text).

    Terms that equal a library term up to the names of their free exponents tick that term;
    the rest stay custom. An expression that does not parse is kept whole as custom text, so
    the user sees its error."""
    try:
        expr, _ = parse_expression(spec, syms)
    except PerfModelError:
        return {}, spec
    lib = {}
    for t in library(syms):
        try:
            le, _ = parse_expression(t.expr, syms)
        except PerfModelError:  # pragma: no cover
            continue
        lib[_canon(le.terms[0].text, le.params)] = t.key
    checked, custom = {}, []
    inside = {k for grp in expr.overlaps for k in grp.terms}  # an overlap's terms stay in it, as custom text
    for k, term in enumerate(expr.terms):
        key = lib.get(_canon(term.text, term.params)) if term.sign > 0 and k not in inside else None
        if key is not None and key not in checked:
            checked[key] = term.text
            custom.append(None)
        else:
            custom.append((term.sign < 0, term.text))
    text = (
        assemble(
            expr.overlaps, len(expr.terms), custom, join_signed, lambda a, b, g: (False, f"overlap({a}, {b}; {g})")
        )
        if any(custom)
        else ""
    )
    return checked, text


def compose_spec(lib_terms: dict, custom: str, syms: list[str]) -> str:
    """Library terms (in library order), then the custom text."""
    order = [t.key for t in library(syms)]
    spec = " + ".join(lib_terms[k] for k in order if k in lib_terms)
    custom = (custom or "").strip()
    if not custom:
        return spec
    if not spec:
        return custom
    if custom.startswith("-"):
        return f"{spec} - {custom[1:].lstrip()}"
    return f"{spec} + {custom}"


def set_spec(spec: str) -> None:
    """Make ``spec`` the current expression (ticks library terms, keeps the rest custom)."""
    ss = st.session_state
    checked, custom = split_spec(spec, symbols())
    ss["lib_terms"], ss["custom_terms"] = checked, custom


def current_spec() -> str:
    ss = st.session_state
    return compose_spec(ss.get("lib_terms", {}), ss.get("custom_terms", ""), symbols())


def apply_preset(name: str) -> None:
    meas = st.session_state.get("meas")
    if meas is None or name not in PRESETS:
        return
    spec = preset_spec(name, list(meas.factors), positive_symbols(meas), meas.scaling_factors(), env=meas.env())
    set_spec(spec)
    params = parse_expression(spec, list(meas.factors), {})[0].params  # none for a factor that never varies
    st.session_state["bounds"] = {
        k: tuple(v) for k, v in preset_bounds(name, list(meas.factors)).items() if k in params
    }


def default_bounds(param: str) -> tuple[float, float]:
    """Bounds of a free exponent: the presets' defaults for their names, else the core's [-3, 3]."""
    return default_bounds_for(param, symbols())


def default_bounds_for(param: str, syms: list[str]) -> tuple[float, float]:
    return defaults.default_bounds_for(param, syms)


def parsed_expression():
    """(Expression, None) for the current terms, or (None, error message)."""
    meas = st.session_state.get("meas")
    if meas is None:
        return None, "no data loaded"
    spec = current_spec()
    try:
        expr, _ = parse_expression(spec, list(meas.factors), effective_bounds(spec), columns=list(meas.frame.columns))
        expr.check_domain(meas.env(), meas.rows)
    except PerfModelError as exc:
        return None, _in_the_box(str(exc), meas)
    return expr, None


def _in_the_box(message: str, meas) -> str:
    """A position in an error refers to the whole expression (library terms first); when the custom
    terms alone fail with a position, that error is the one to show: its position is in the box the
    user typed in."""
    custom = (st.session_state.get("custom_terms") or "").strip()
    if "position" not in message or not custom:
        return message
    try:
        parse_expression(custom, list(meas.factors), columns=list(meas.frame.columns))
    except PerfModelError as exc:
        if "position" in str(exc):
            return f"{exc} (in the custom terms box)"
    return message


def effective_bounds(spec: str | None = None) -> dict:
    """{param: (lo, hi)} for the free parameters of ``spec`` (user's bounds, else defaults)."""
    meas = st.session_state.get("meas")
    spec = spec if spec is not None else current_spec()
    if meas is None:
        return {}
    try:
        expr, _ = parse_expression(spec, list(meas.factors))
    except PerfModelError:
        return {}
    user = st.session_state.get("bounds", {})
    gammas = {grp.param for grp in expr.overlaps}  # an overlap's γ defaults to [1, 10] (the parser's)
    out = {p: tuple(user.get(p, expr.bounds[p] if p in gammas else default_bounds(p))) for p in expr.params}
    if spec == st.session_state.get("bounds_spec"):  # a coefficient the search held (an inter-node cost)
        out.update({k: tuple(v) for k, v in user.items() if k.startswith("c") and k[1:].isdigit()})
    return out


# -- settings and query parameters ------------------------------------------------------------------
def fit_settings() -> dict:
    """Everything a fit depends on besides the data (JSON-ready, the cache key)."""
    ss = st.session_state
    spec = current_spec()
    s = dict(ss["settings"])
    return {
        "terms": spec,
        "bounds": {k: list(v) for k, v in sorted(effective_bounds(spec).items())},
        "lam": float(s["lam"]),
        "penalty": s["penalty"],
        "loss": s["loss"],
        "seed": int(s["seed"]),
        "strategy": s["strategy"],
        "popsize": int(s["popsize"]),
        "maxiter": int(s["maxiter"]),
        "tol": float(s["tol"]),
        "scale_weight": float(s.get("scale_weight", 1.0)),
    }


def linked_gpus_per_node(meas, value) -> str | None:
    """The GPUs per node a link carries: the value set on the Data page when it differs from the guess
    (:func:`perfmodel.uncertainty.prior.topology`), else None (the link leaves it to the guess)."""
    if value is None or meas is None or "p" not in meas.factors or "nodes" in meas.factors:
        return None
    guess = topology(meas)
    return None if guess and int(value) == int(guess["gpus_per_node"]) else str(int(value))


def settings_key(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True)


def sync_query_params() -> None:
    """Write dataset, terms, λ and seed of the current view, and the settings the page registered
    (:func:`ui.links.set_page_params`), into the URL (a link reproduces it)."""
    ss = st.session_state
    data = ss.get("data") or {}
    want = {}
    mapping = json.dumps(
        {
            "time": data.get("time"),
            "factors": data.get("factors"),
            **({"region": data["region"], "metric": data["metric"]} if data.get("region") else {}),
            **({"rate": data["rate"]} if data.get("rate") else {}),
            **({"unit": data["unit"]} if data.get("unit", "s") != "s" else {}),
            **({"where": data["where"]} if data.get("where") else {}),
        },
        separators=(",", ":"),
    )
    if data.get("source") == "bundled" and not data.get("where"):
        want["dataset"] = data["name"]
    elif data.get("source") in ("remapped", "bundled"):
        want["dataset"], want["map"] = data["name"], mapping
    elif data.get("source") == "upload" and data.get("upload_key"):
        want["upload"], want["map"] = data["upload_key"], mapping
    gpn = linked_gpus_per_node(ss.get("meas_raw", ss.get("meas")), ss.get("gpus_per_node"))  # as mapped
    if gpn is not None:
        want["gpus_per_node"] = gpn
    res = ss.get("result")
    if res is not None:
        want["terms"] = res.settings.get("terms") or res.expression
        want["lam"] = f"{float(res.settings.get('lam', 0)):g}"
        want["seed"] = str(res.settings.get("seed", 0))
        weight = res.scale_weight
    else:
        want["terms"] = current_spec()
        want["lam"] = f"{float(ss['settings']['lam']):g}"
        want["seed"] = str(ss["settings"]["seed"])
        weight = float(ss["settings"].get("scale_weight", 1.0))
    if weight != 1.0:
        want["weight"] = f"{weight:g}"
    want.update({k: v for k, v in links.take_page_params().items() if k not in want})  # the page's own settings
    have = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if have != want:
        st.query_params.from_dict(want)
