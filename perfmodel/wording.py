"""One source for each number and its words: what the app, the command line and the report say.

A stakeholder reads the same model in three places — the dashboard's headline, ``perfmodel predict``
or ``plan`` on a terminal, and the HTML report someone forwards — and the three must say the same
thing in the same words. Every sentence built from a prediction goes through this module:

* :func:`fmt_range` — a value with its range, rounded to what the range supports: the range's
  half-width with one significant digit, and the value with at least two (``1.3 min (0.7–3.0 min)``,
  not ``1 min (1–3 min)``); value and range in one unit.
* :func:`fmt_time` — a time in the unit that reads well for the value (ms, s, min, h), with its range
  in the same unit: ``27 min (25–32 min)``, never ``0.4 (0.4–0.5) h``.
* :func:`fmt_band` — a range relative to its value: ``±12 %`` when it is close to symmetric, and
  ``−48 %/+91 %`` when it is not (a band is never quoted as ``±91 %`` when its low side is −48 %).
* :func:`poor_fit` — the verdict on a fit too poor to quote (:mod:`perfmodel.fitting.quality`) as one
  sentence; :func:`headline` — the prediction at the largest measured value and at the end of the
  curve, with ranges, the share of the largest part and the crossover; :func:`sentence` — a line
  (e.g. a recommendation of :func:`perfmodel.plan.recommend`) as a sentence, a symbol never capitalised.

Sentences are :class:`Words`: plain text with the numbers marked, so the app can make them bold in
Markdown (its user text escaped), the report in HTML, and the terminal prints them as they are.

A use of fitted models (the layer of :mod:`perfmodel.plan`): imports from the fitting and uncertainty
layers only.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from .fitting.categories import term_categories
from .fitting.members import DEFAULT_LEVEL
from .fitting.quality import judge_result
from .uncertainty.ranges import range_at

#: Seconds in each time unit a sentence uses.
TIME_UNITS = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
MINUS = "−"  # U+2212, the minus sign of a printed number


# -- numbers -----------------------------------------------------------------------------------------------
def _decimals(value: float, low: float | None = None, high: float | None = None) -> int:
    """Decimals that show the half-width of [low, high] with one significant digit and ``value`` with
    at least two (three without a range, never fewer than 0 decimals); a large value keeps three
    significant digits (18,748 (17,699–19,821) is written 18,700 (17,700–19,800))."""

    def digits(v: float, significant: int) -> int:
        return significant - 1 - math.floor(math.log10(abs(v))) if v and math.isfinite(v) else 0

    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return max(0, digits(value, 3))
    return max(digits((high - low) / 2, 1), digits(value, 2), min(0, digits(value, 3)))


def _num(v: float, decimals: int) -> str:
    """``v`` with ``decimals`` decimals (below 0: rounded to tens, hundreds, ...), thousands separated
    (``18,700``), a true minus sign."""
    if decimals < 0:
        v, decimals = round(v, decimals), 0
    text = f"{v:,.{decimals}f}" if abs(v) >= 10_000 else f"{v:.{decimals}f}"
    return text.replace("-", MINUS)


def fmt_range(value: float, low: float | None = None, high: float | None = None, unit: str = "") -> str:
    """``31× (27–34×)``, ``1.3 min (0.7–3.0 min)``: the value and its range in one unit, rounded to what
    the range supports (see the module doc); without a range, three significant digits (``31.2×``)."""
    value = float(value)
    if not math.isfinite(value):
        return f"{value}{unit}"
    ok = low is not None and high is not None and math.isfinite(low) and math.isfinite(high) and high > low
    d = _decimals(value, low if ok else None, high if ok else None)
    if not ok:  # three significant digits, without trailing zeros: 2 h, 31.2×
        text = _num(value, d)
        return (text.rstrip("0").rstrip(".") if "." in text else text) + unit
    assert low is not None and high is not None  # ok above
    return f"{_num(value, d)}{unit} ({_num(low, d)}–{_num(high, d)}{unit})"


def time_unit(seconds: float) -> str:
    """The unit that reads well for ``seconds``: ms below 1 s, s below 2 min, min below 2 h, else h."""
    a = abs(float(seconds)) if math.isfinite(float(seconds)) else 0.0
    return "ms" if a < 1 else "s" if a < 120 else "min" if a < 7200 else "h"


def fmt_time(seconds: float, low: float | None = None, high: float | None = None, unit: str | None = None) -> str:
    """A time (seconds) with its range, in ``unit`` (default: the one :func:`time_unit` gives for the
    value) for the value and both ends: ``27 min (25–32 min)``, ``4.8 s (2.4–9.0 s)``."""
    unit = unit or time_unit(seconds)
    k = TIME_UNITS[unit]
    lo = None if low is None else float(low) / k
    hi = None if high is None else float(high) / k
    return fmt_range(float(seconds) / k, lo, hi, f" {unit}")


def band(value: float, low: float, high: float) -> tuple[float, float]:
    """(how far below, how far above) ``value`` the range reaches, in % of the value."""
    return (1 - low / value) * 100, (high / value - 1) * 100


def fmt_band(value: float, low: float, high: float) -> str:
    """The range as a share of the value: ``±12 %`` when its two sides differ by less than a fifth,
    else each side, ``−48 %/+91 %``."""
    below, above = band(value, low, high)
    if max(below, above) <= 0 or abs(above - below) <= 0.2 * max(below, above):
        return f"±{(below + above) / 2:.0f} %"
    return f"{MINUS}{below:.0f} %/+{above:.0f} %"


def fmt_band_log(halfwidth_log: float) -> str:
    """A band of half-width ``halfwidth_log`` in log units around its value (advise's expected band after
    a measurement), as :func:`fmt_band` writes it."""
    return fmt_band(1.0, math.exp(-halfwidth_log), math.exp(halfwidth_log))


def fmt_value(v: float) -> str:
    """A factor's value in a sentence: ``64``, ``1281167``, ``0.125`` (no thousands separator: ``p = 16,384``
    would read as a list)."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.4g}"


def sentence(line: str) -> str:
    """A line as a sentence: a capital first word (never a symbol: ``p = 1024 saves …`` stays as it is,
    a symbol is two characters at most or followed by ``=``), a full stop."""
    line = line.strip()
    if re.match(r"[a-z]{2,}\b(?!\s*=)", line):
        line = line[:1].upper() + line[1:]
    return line.rstrip(".") + "."


# -- sentences with their numbers marked ----------------------------------------------------------------
@dataclass(frozen=True)
class Words:
    """A sentence as (text, is a number) pieces: ``str()`` is the plain text; :meth:`markdown` and
    :meth:`html` mark the numbers bold, escaping the rest."""

    parts: tuple[tuple[str, bool], ...]

    def __str__(self) -> str:
        return "".join(t for t, _ in self.parts)

    def markdown(self, escape: Callable[[str], str]) -> str:
        return "".join(f"**{escape(t)}**" if strong else escape(t) for t, strong in self.parts)

    def html(self) -> str:
        return "".join(f"<strong>{html.escape(t)}</strong>" if strong else html.escape(t) for t, strong in self.parts)


def poor_fit(result) -> str | None:
    """The sentence said instead of a prediction when the fit is too poor to quote
    (:func:`perfmodel.fitting.quality.judge_result`), None for a usable fit."""
    verdict = judge_result(result)
    if not verdict.poor:
        return None
    return f"This fit is too poor to quote a prediction: {verdict.sentence()}."


def split_at(result, config: dict) -> dict[str, float]:
    """{category: seconds} of the prediction at ``config`` (start-up, compute, communication, other)."""
    contrib = result.contributions({s: [float(config[s])] for s in result.factors if s in config})
    out: dict[str, float] = {}
    for category, term in zip(term_categories(result), contrib.columns, strict=True):
        out[category] = out.get(category, 0.0) + float(contrib[term].iloc[0])
    return out


def _rate(result) -> tuple[str, float] | None:
    rate = getattr(result, "rate", None) or {}
    work = rate.get("work")
    if isinstance(work, (int, float)) and not isinstance(work, bool) and work > 0 and rate.get("column"):
        return str(rate["column"]), float(work)
    return None


def prediction(result, config: dict, unit: str | None = None, level: float = DEFAULT_LEVEL) -> list:
    """The predicted time at ``config`` with its ``level`` range (when the fit has intervals), and for a
    throughput fit the rate it stands for: pieces of :class:`Words`."""
    r = range_at(result, config, level)
    if r is None:
        t = float(result.predict({s: [float(config[s])] for s in result.factors if s in config})[0])
        lo = hi = None
    else:
        t, lo, hi = r.point, r.low, r.high
    value, _, rest = fmt_time(t, lo, hi, unit).partition(" (")
    parts = [(value, True)] + ([(f" ({rest}", False)] if rest else [])  # the value marked, its range after it
    rate = _rate(result)
    if rate is not None:
        column, work = rate
        text = fmt_range(work / t, *((work / hi, work / lo) if lo and hi else (None, None)))
        parts.append((f", that is {text} {column}", False))
    return parts


def headline(
    result,
    symbol: str,
    fixed: dict,
    measured_max: float,
    x_end: float,
    unit: str | None = None,
    crossover: float | None = None,
    level: float = DEFAULT_LEVEL,
) -> Words:
    """The sentence a stakeholder reads first: the prediction at the largest measured ``symbol`` and at
    ``x_end`` (the end of the curve), each with its range, the largest part of the time at ``x_end``
    and, when given, where communication overtakes compute. Times in ``unit`` (default: each its own)."""
    fixed = {s: float(v) for s, v in fixed.items() if s != symbol}
    split = split_at(result, {**fixed, symbol: x_end})
    total = sum(split.values())
    top = max(split, key=lambda k: split[k]) if split else None
    parts: list = [(f"At the largest measured {symbol} = {fmt_value(measured_max)} the model predicts ", False)]
    parts += prediction(result, {**fixed, symbol: measured_max}, unit, level)
    if not math.isclose(float(x_end), float(measured_max), rel_tol=1e-9):  # else it would say it twice
        parts.append((f"; at {symbol} = {fmt_value(x_end)} it predicts ", False))
        parts += prediction(result, {**fixed, symbol: x_end}, unit, level)
    if top and total > 0:
        parts.append((f", {split[top] / total * 100:.0f} % of it {top}", False))
    parts.append((".", False))
    if getattr(result, "has_intervals", False):
        parts.append((f" Ranges are {level * 100:.0f} % intervals.", False))
    if crossover is not None:
        parts.append((f" Communication overtakes compute from {symbol} ≈ {fmt_value(crossover)}.", False))
    return Words(tuple(parts))


def single_value_note(values: dict) -> str:
    """The note said when a factor measured at one value only is taken at it
    (:func:`perfmodel.plan.single_values`)."""
    shown = ", ".join(f"{s} = {fmt_value(v)}" for s, v in values.items())
    which = "its only measured value" if len(values) == 1 else "their only measured values"
    return f"{shown} taken at {which} (give another with --grid or --at)"
