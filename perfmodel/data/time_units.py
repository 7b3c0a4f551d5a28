"""Times in seconds: a time column measured in another unit (``step_time_ms``, ``epoch time (min)``) is
read in seconds, as the model, its charts, ``plan``'s deadlines and GPU-hours take every time.

:func:`unit_from_name` reads the unit a column's name states; :func:`time_in_seconds` adds the column
``"<column> in s"`` (the values times the unit's seconds) that the model is fitted to, as
:func:`perfmodel.data.throughput.time_from_throughput` adds the time a rate stands for. Nothing is
dropped here: a value that is not a number keeps its text, and the
:class:`~perfmodel.data.measurements.Measurements` validation lists it by row and column.

Imports from :mod:`perfmodel.errors` only.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..errors import PerfModelError, did_you_mean

#: unit -> seconds per unit
TIME_UNITS = {
    "ps": 1e-12,
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "week": 604800.0,
}
#: how each unit reads in a column's name, as a whole token (``time_ms``, ``time (ms)``, ``ms/step``)
_NAMED = {
    "ps": r"ps|psec|picosec(ond)?s?",
    "ns": r"ns|nsec|nanosec(ond)?s?",
    "us": r"us|µs|μs|usec|microsec(ond)?s?",
    "ms": r"ms|msec|millisec(ond)?s?",
    "s": r"s|sec|secs|seconds?",
    "min": r"min|mins|minutes?",
    "h": r"h|hr|hrs|hours?",
    "d": r"d|days?",
    "week": r"wk|wks|weeks?",
}
_UNIT_OF = [(unit, re.compile(f"(?:{pattern})")) for unit, pattern in _NAMED.items()]
#: Tokens that name a measure of time the reader does not convert: refused by name rather than read
#: as seconds (``m`` could be minutes or metres; cycles and ticks need a clock rate).
_UNKNOWN = re.compile(
    r"m|fs|femtosec(ond)?s?|cycles?|ticks?|clocks?|clk|jiffies|months?|mo|yrs?|years?|fortnights?|decades?"
)
#: A token of a name: letters or digits (µ and μ are letters); anything else separates them.
TOKENS = re.compile(r"[0-9a-zµμ]+")


def named_unit(token: str) -> str | None:
    """The unit of :data:`TIME_UNITS` a whole token names (``ms``, ``msec``, ``minutes``), or None."""
    return next((unit for unit, pattern in _UNIT_OF if pattern.fullmatch(token)), None)


def _unit_of(token: str, name: str) -> str | None:
    """The unit ``token`` names (None for a word that is no unit); a measure of time the reader does not
    convert raises a PerfModelError naming it and the units it knows."""
    unit = named_unit(token)
    if unit:
        return unit
    if _UNKNOWN.fullmatch(token):
        raise PerfModelError(
            f"the time column {name!r} states the unit {token!r}, which is not one the reader converts; "
            f"known: {', '.join(TIME_UNITS)} (set it with --time-unit, or convert the column to one of them)"
        )
    return None


def unit_from_name(name: str) -> str | None:
    """The time unit a column's name states (:data:`TIME_UNITS`), or None: ``step_time_ms`` → ms,
    ``epoch time (min)`` → min, ``time_s`` → s, ``ms/step`` → ms, ``duration`` → None.

    A unit is read only where the name states it as one: a whole token in brackets, or the last token
    before a rate's ``/`` or ``per`` (the name's last token when it has neither): ``time_min_s`` (the
    minimum over ranks, in seconds) → s, ``time_us_east`` → None, ``time_s_per_100_ms`` → s. A token
    that names a measure of time the reader does not convert (``time_m``, ``latency_cycles``) is a
    PerfModelError naming it with the units it knows."""
    text = str(name).lower()
    for inner in re.findall(r"[(\[]([^()\[\]]*)[)\]]", text):  # "time (ms)", "time [s, median]"
        tokens = TOKENS.findall(re.split(r"[/,;]", inner)[0])
        unit = _unit_of(tokens[0], name) if tokens else None
        if unit:
            return unit
    tokens = TOKENS.findall(re.sub(r"[(\[][^()\[\]]*[)\]]", " ", text).replace("/", " per "))
    head = tokens[: tokens.index("per")] if "per" in tokens else tokens
    unit = _unit_of(head[-1], name) if head else None
    tail = tokens[len(head) + 1 :]
    if unit is None and tail and not (len(tail) > 1 and tail[-2].isdigit()):  # "time_per_step_ms", not "per 100 ms"
        unit = _unit_of(tail[-1], name)
    return unit


def check_unit(unit: str) -> str:
    """``unit`` if it is one of :data:`TIME_UNITS` ("µs" is "us"), else a :class:`PerfModelError`."""
    u = "us" if unit in ("µs", "μs") else str(unit)
    if u not in TIME_UNITS:
        raise PerfModelError(
            f"unknown time unit {unit!r}{did_you_mean(str(unit), list(TIME_UNITS))}; known: {', '.join(TIME_UNITS)}"
        )
    return u


def seconds_column(column: str) -> str:
    """The name of the column of a time read in seconds: ``"step_time_ms in s"``."""
    return f"{column} in s"


def time_in_seconds(frame: pd.DataFrame, column: str, unit: str) -> tuple[pd.DataFrame, str]:
    """``(frame with the time in seconds added, its name)`` for a time ``column`` measured in ``unit``
    (the frame itself and ``column`` when the unit is seconds). A value that is not a number keeps its
    text (reported as non-numeric when the measurements are validated)."""
    unit = check_unit(unit)
    cols = [str(c) for c in frame.columns]
    if column not in cols:
        raise PerfModelError(
            f"time column {column!r} not found{did_you_mean(column, cols)}; columns are: {', '.join(cols)}"
        )
    if unit == "s":
        return frame, column
    name = seconds_column(column)
    return add_time_column(frame, column, name, lambda v, _: v * TIME_UNITS[unit]), name


def add_time_column(frame: pd.DataFrame, source: str, name: str, seconds) -> pd.DataFrame:
    """A copy of ``frame`` (its column names as text) with the time column ``name`` made from column
    ``source``: ``seconds(v, copy)`` of its values as numbers ``v`` (NaN where not a number). A value of
    ``source`` that is not a number keeps its text there, so the row is reported with it when the
    measurements are validated; nothing is dropped. The time made from a throughput
    (:func:`perfmodel.data.throughput.time_from_throughput`) is added the same way."""
    cols = [str(c) for c in frame.columns]
    if name in cols:
        raise PerfModelError(f"the data already has a column {name!r}, the name of the time made from {source!r}")
    out = frame.copy()
    out.columns = cols
    v = pd.to_numeric(out[source], errors="coerce")
    with np.errstate(divide="ignore", invalid="ignore"):
        t = pd.Series(seconds(v, out), index=out.index).astype(object)
    text = out[source].notna() & v.isna()  # not a number: kept as written, so the row is reported with it
    t[text] = out.loc[text, source]
    out[name] = t
    return out
