"""Is a fit good enough to quote? The judgement every headline makes before it states a number.

A headline ("at p = 32 it predicts 3.2 min") reads as a fact; from a fit that misses the measured
runs by half their time it is not one. :func:`judge` looks at the fit's errors and says whether a
headline may be quoted, and why not.

The thresholds are generic, not fitted to any dataset: they are where a reader of the number would
stop trusting it.

* :data:`POOR_MAPE` = 25 %: the typical error (cross-validated when known, else in-sample) is a
  quarter of the time. A model of execution time that far off cannot rank configurations whose
  times differ by less than that, and most scaling questions (is 16 GPUs worth it over 8?) are
  about differences of that size.
* :data:`POOR_R2` = 0.5: the fit explains less than half of the variation of the measured times; a
  model with only an intercept scores 0.
* :data:`POOR_MAX_ERROR` = 100 %: some measured run is predicted at twice (or less than half) its time.

A fit is *poor* when any one holds; the reasons name each value and its threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: Typical error (%) above which a fit is poor (cross-validated when known, else in-sample).
POOR_MAPE = 25.0
#: R² (in-sample) below which a fit is poor.
POOR_R2 = 0.5
#: Largest error (%, in-sample) above which a fit is poor.
POOR_MAX_ERROR = 100.0


@dataclass(frozen=True)
class Verdict:
    """``poor``: the fit should not be quoted as a prediction; ``reasons``: each value past its threshold."""

    poor: bool
    reasons: list = field(default_factory=list)

    def sentence(self) -> str:
        """The reasons as one clause: ``cross-validated error 58 % (above 25 %), R² 0.04 (below 0.5)``."""
        return ", ".join(self.reasons)


def _finite(v) -> float | None:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def judge(metrics: dict, validation: dict | None = None) -> Verdict:
    """Judge a fit from its in-sample ``metrics`` and, when known, one cross-validation's metrics
    (``validation``: a dict with ``mape``; e.g. a value of ``FitResult.validation``)."""
    reasons = []
    cv = _finite((validation or {}).get("mape"))
    mape = cv if cv is not None else _finite(metrics.get("mape"))
    if mape is not None and mape > POOR_MAPE:
        what = "cross-validated error" if cv is not None else "typical error"
        reasons.append(f"{what} {mape:.0f} % (above {POOR_MAPE:.0f} %)")
    r2 = _finite(metrics.get("r2"))
    if r2 is not None and r2 < POOR_R2:
        reasons.append(f"R² {r2:.2f} (below {POOR_R2:g})")
    worst = _finite(metrics.get("max_pct_error"))
    if worst is not None and worst > POOR_MAX_ERROR:
        reasons.append(f"largest error {worst:.0f} % (above {POOR_MAX_ERROR:.0f} %)")
    return Verdict(bool(reasons), reasons)


def judge_result(result) -> Verdict:
    """:func:`judge` of a :class:`~perfmodel.fitting.result.FitResult` with its first stored
    cross-validation (k-fold or leave-one-configuration-out; not a hold-out)."""
    cv = next((m for name, m in (result.validation or {}).items() if not name.startswith("hold-out")), None)
    return judge(result.metrics, cv)
