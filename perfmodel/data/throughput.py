"""Throughputs as run times: most published training measurements are rates (images/s, tokens/s,
samples/s), and at a fixed amount of work a run's time is the work over the rate.

``time_from_throughput`` adds the column ``W / rate`` (seconds per run for ``W`` units of work per run,
or seconds per unit for ``W = 1``) that the model is fitted to, and :func:`throughput_from_time` turns
predicted times back into rates. Nothing is dropped here: a rate that is not a positive number gives a
time the :class:`~perfmodel.data.measurements.Measurements` validation lists by row and column.

Imports from :mod:`perfmodel.errors` and :mod:`perfmodel.data.time_units` only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import PerfModelError, did_you_mean
from .time_units import TIME_UNITS, TOKENS, add_time_column, check_unit, named_unit

#: Column names that read as a rate of work: "throughput", "images/s", "tokens_per_sec", "samples per second",
#: "images/min", "tokens per hour".
_PER = r"(s|sec|secs|seconds?|ms|msec|min|mins|minutes?|h|hr|hrs|hours?)"
_RATE = re.compile(rf"throughput|/\s*{_PER}(?![a-z0-9])|per[ _-]?{_PER}(?![a-z0-9])|\bips\b", re.I)


def looks_like_throughput(name: str) -> bool:
    """Whether a column's name reads as a rate of work per unit of time."""
    return bool(_RATE.search(str(name)))


def rate_unit_from_name(name: str) -> str | None:
    """The time unit a rate's name divides by (:data:`perfmodel.data.time_units.TIME_UNITS`), or None
    when it names none: ``images/s`` → s, ``images/min`` → min, ``tokens_per_hour`` → h, ``img/ms`` → ms,
    ``tokens/s/gpu`` → s, ``throughput`` → None. Only a whole token after ``/`` or ``per`` counts."""
    tokens = TOKENS.findall(str(name).lower().replace("/", " per "))
    if "ips" in tokens:
        return "s"
    for before, token in zip(tokens[:-1], tokens[1:], strict=True):
        if before == "per":
            unit = named_unit(token)
            if unit:
                return unit
    return None


_PER_WORKER = re.compile(r"(/|\bper[ _-]?|_per_)(gpu|device|worker|chip|accelerator|rank|core)s?(?![a-z])", re.I)


def looks_per_worker(name: str) -> bool:
    """Whether a rate's name reads as a rate per GPU (or per worker): ``tokens/s/gpu``, ``img_per_gpu``."""
    return bool(_PER_WORKER.search(str(name)))


def guess_throughput(columns: Iterable[str]) -> str | None:
    """The first column whose name reads as a throughput, or None."""
    return next((str(c) for c in columns if looks_like_throughput(c)), None)


def work_per_run(work) -> float | str:
    """``work`` as a positive finite number, or a column name (a string that is not a number)."""
    if isinstance(work, str):
        try:
            work = float(work)
        except ValueError:
            return work
    try:
        w = float(work)
    except (TypeError, ValueError):
        raise PerfModelError(f"the work per run must be a positive number or a column, got {work!r}") from None
    if not (math.isfinite(w) and w > 0):
        raise PerfModelError(f"the work per run must be a positive number or a column, got {work!r}")
    return w


def time_column(rate: str, work=1.0, unit: str = "s") -> str:
    """The name of the derived time column: ``"1 / images_per_sec"``, ``"1281167 / img/s"``,
    ``"samples / tokens/s"``; ``"1 / images/min in s"`` for a rate per another unit than the second."""
    w = work_per_run(work)
    name = f"{w:.12g} / {rate}" if isinstance(w, float) else f"{w} / {rate}"
    return name if unit == "s" else f"{name} in s"


def time_from_throughput(frame: pd.DataFrame, rate: str, work=1.0, unit: str = "s") -> tuple[pd.DataFrame, str]:
    """``(frame with the time column added, its name)``: each row's ``work / rate`` in seconds, ``work`` a
    number (units of work per run; 1: seconds per unit) or a column of the frame, ``unit`` the time unit
    the rate is per (images/min: ``"min"``). A rate that is not a number keeps its text (reported as
    non-numeric), a rate of zero gives an infinite time and a negative one a negative time, each reported
    by row when the measurements are validated; so is a work cell that is not a positive number."""
    unit = check_unit(unit)
    cols = [str(c) for c in frame.columns]
    if rate not in cols:
        raise PerfModelError(
            f"throughput column {rate!r} not found{did_you_mean(rate, cols)}; columns are: {', '.join(cols)}"
        )
    w = work_per_run(work)
    if isinstance(w, str) and w not in cols:
        raise PerfModelError(f"work column {w!r} not found{did_you_mean(w, cols)}; columns are: {', '.join(cols)}")
    name = time_column(rate, w, unit)

    def seconds(r, out):
        return (pd.to_numeric(out[w], errors="coerce") if isinstance(w, str) else w) * TIME_UNITS[unit] / r

    out = add_time_column(frame, rate, name, seconds)
    if isinstance(w, str):  # a work cell that is not a positive number: the row is reported with it
        bad = ~positive_work(out[w])
        out.loc[out.index[bad], name] = [f"work {v!r} of column {w!r}, not a positive number" for v in out.loc[bad, w]]
    return out, name


def positive_work(values) -> np.ndarray:
    """True where a work cell is a positive finite number (text, empty, 0, negative and inf are not)."""
    with np.errstate(invalid="ignore"):
        v = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(float)
        return np.isfinite(v) & (v > 0)


def throughput_from_time(time, work_values=1.0, unit: str = "s") -> np.ndarray:
    """Rates per ``unit`` from times in seconds: ``work / time`` (a lower time bound gives the upper
    rate bound), per minute ×60 and so on."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(work_values, float) / np.asarray(time, float) * TIME_UNITS[check_unit(unit)]
