"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time


def timed(fn, repeat: int):
    """(median seconds over ``repeat`` calls of ``fn()``, the last return value)."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out
