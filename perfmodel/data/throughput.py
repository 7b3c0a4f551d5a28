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
from .time_units import add_time_column

#: Column names that read as a rate of work: "throughput", "images/s", "tokens_per_sec", "samples per second".
_RATE = re.compile(r"throughput|/\s*s(ec(ond)?)?\b|per[ _-]?s(ec(ond)?)?\b|_per_s\b|\bips\b", re.I)


def looks_like_throughput(name: str) -> bool:
    """Whether a column's name reads as a rate of work per second."""
    return bool(_RATE.search(str(name)))


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


def time_column(rate: str, work=1.0) -> str:
    """The name of the derived time column: ``"1 / images_per_sec"``, ``"1281167 / img/s"``,
    ``"samples / tokens/s"``."""
    w = work_per_run(work)
    return f"{w:.12g} / {rate}" if isinstance(w, float) else f"{w} / {rate}"


def time_from_throughput(frame: pd.DataFrame, rate: str, work=1.0) -> tuple[pd.DataFrame, str]:
    """``(frame with the time column added, its name)``: each row's ``work / rate``, ``work`` a number
    (units of work per run; 1: seconds per unit) or a column of the frame. A rate that is not a number
    keeps its text (reported as non-numeric), a rate of zero gives an infinite time and a negative one a
    negative time, each reported by row when the measurements are validated."""
    cols = [str(c) for c in frame.columns]
    if rate not in cols:
        raise PerfModelError(
            f"throughput column {rate!r} not found{did_you_mean(rate, cols)}; columns are: {', '.join(cols)}"
        )
    w = work_per_run(work)
    if isinstance(w, str) and w not in cols:
        raise PerfModelError(f"work column {w!r} not found{did_you_mean(w, cols)}; columns are: {', '.join(cols)}")
    name = time_column(rate, w)

    def seconds(r, out):
        return (pd.to_numeric(out[w], errors="coerce") if isinstance(w, str) else w) / r

    return add_time_column(frame, rate, name, seconds), name


def throughput_from_time(time, work_values=1.0) -> np.ndarray:
    """Rates from times: ``work / time`` (a lower time bound gives the upper rate bound)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(work_values, float) / np.asarray(time, float)
