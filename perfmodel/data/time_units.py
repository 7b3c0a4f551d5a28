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
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0}
#: how each unit reads in a column's name, as a word of its own (``time_ms``, ``time (ms)``, ``ms/step``)
_NAMED = {
    "us": r"us|µs|μs|usec|microsec(ond)?s?",
    "ms": r"ms|msec|millisec(ond)?s?",
    "min": r"min|mins|minutes?",
    "h": r"h|hr|hrs|hours?",
    "s": r"s|sec|secs|seconds?",
}
_WORD = r"(?<![a-z0-9]){}(?![a-z0-9])"


def unit_from_name(name: str) -> str | None:
    """The time unit a column's name states (:data:`TIME_UNITS`), or None: ``step_time_ms`` → ms,
    ``epoch time (min)`` → min, ``time_s`` → s, ``duration`` → None. Underscores count as word
    breaks; the first unit named, reading from the smallest, wins."""
    text = str(name).lower().replace("_", " ")
    for unit, pattern in _NAMED.items():
        if re.search(_WORD.format(f"({pattern})"), text):
            return unit
    return None


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
